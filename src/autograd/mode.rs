//! Grad mode: a per-thread switch saying whether ops record graph nodes.
//!
//! # Invariants
//! - The switch is thread-local: `no_grad` on one thread never affects another, so two
//!   threads can run a training step and an evaluation side by side.
//! - Every change is undone by a guard's `Drop`, so a panic or an early `?` inside a
//!   `no_grad` region leaves the mode as it was before the region.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops on this thread record the graph for [`DynTensor::backward`](crate::DynTensor)
/// (PyTorch's `torch.is_grad_enabled()`); `true` unless inside [`no_grad`].
///
/// ```
/// use namedtensor::autograd::{is_grad_enabled, no_grad};
/// assert!(is_grad_enabled());
/// no_grad(|| assert!(!is_grad_enabled()));
/// assert!(is_grad_enabled());
/// ```
pub fn is_grad_enabled() -> bool {
    ENABLED.with(Cell::get)
}

/// Runs `f` with recording switched off on this thread (PyTorch's `with torch.no_grad():`):
/// results computed inside do not require grad, and in-place updates of parameters (an
/// optimiser step) are allowed.
///
/// ```
/// use namedtensor::{DynTensor, autograd::no_grad};
/// let w = DynTensor::<f32>::ones(&[2]).requires_grad_(true);
/// let y = no_grad(|| w.exp());
/// assert!(!y.requires_grad());
/// no_grad(|| w.sub_scalar_(0.5)); // an optimiser step on a leaf
/// assert_eq!(w.to_vec(), vec![0.5, 0.5]);
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _guard = GradMode::set(false);
    f()
}

/// Restores the grad mode it replaced when dropped; made by [`GradMode::set`] or
/// [`GradMode::no_grad`]. Not `Send`: the mode belongs to the thread that set it.
///
/// ```
/// use namedtensor::autograd::{GradMode, is_grad_enabled};
/// {
///     let _g = GradMode::no_grad();
///     assert!(!is_grad_enabled());
/// }
/// assert!(is_grad_enabled());
/// ```
#[must_use = "the mode is restored when the guard is dropped"]
pub struct GradMode {
    previous: bool,
    _not_send: PhantomData<*const ()>,
}

impl GradMode {
    /// Sets the mode of this thread to `enabled` until the guard is dropped (PyTorch's
    /// `torch.set_grad_enabled`).
    pub fn set(enabled: bool) -> GradMode {
        let previous = ENABLED.with(|c| c.replace(enabled));
        GradMode {
            previous,
            _not_send: PhantomData,
        }
    }

    /// Switches recording off until the guard is dropped.
    pub fn no_grad() -> GradMode {
        GradMode::set(false)
    }
}

impl Drop for GradMode {
    fn drop(&mut self) {
        ENABLED.with(|c| c.set(self.previous));
    }
}
