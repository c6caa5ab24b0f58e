//! The autocast switch: a per-thread dtype in which matrix products of `f32` tensors are
//! computed (`amp::autocast` sets it; `ops::matmul` reads it).
//!
//! # Invariants
//! - The switch is thread-local, as grad mode is: autocast on one thread never changes the
//!   products of another.
//! - Every change is undone by a guard's `Drop`, so a panic or an early `?` inside an
//!   autocast region leaves the switch as it was.

use super::DType;
use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static LOW: Cell<Option<DType>> = const { Cell::new(None) };
}

/// The dtype matrix products of `f32` tensors run in on this thread: `None` (their own)
/// outside an autocast region.
pub fn autocast_dtype() -> Option<DType> {
    LOW.with(Cell::get)
}

/// Restores the switch it replaced when dropped.
#[must_use = "the switch is restored when the guard is dropped"]
#[doc(hidden)]
pub struct AutocastGuard {
    previous: Option<DType>,
    _not_send: PhantomData<*const ()>,
}

impl AutocastGuard {
    /// Sets the switch of this thread to `low` until the guard is dropped.
    #[doc(hidden)]
    pub fn set(low: Option<DType>) -> AutocastGuard {
        AutocastGuard {
            previous: LOW.with(|c| c.replace(low)),
            _not_send: PhantomData,
        }
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        LOW.with(|c| c.set(self.previous));
    }
}
