//! Hooks on a leaf's gradient: code that runs inside a backward pass as soon as the pass has
//! added a leaf's gradient (PyTorch's `register_post_accumulate_grad_hook`). Data-parallel
//! training starts reducing a bucket of gradients there, while the rest of the pass runs.
//!
//! # Invariants
//! - A hook runs once per backward pass that reaches its leaf (the engine sums every
//!   contribution to a leaf before the leaf's node runs), after the gradient is stored and
//!   with no lock of the graph held: it may read `grad()` or set it.
//! - Hooks run for `backward`, not for [`grad`](super::grad), which stores nothing.
//! - A hook lives in the leaf's node: every handle of the leaf shares it. A closure that holds
//!   the leaf itself keeps the leaf alive for as long as the hook is registered; hold a `Weak`
//!   or remove the hook.

use super::node::{GradHook, Meta, Node, NodeKind, lock};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Ids of hooks, unique in the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A registered hook, to remove it with [`GradHookHandle::remove`] (dropping the handle
/// keeps the hook, as PyTorch's `RemovableHandle`).
#[derive(Debug)]
pub struct GradHookHandle {
    node: Weak<Node>,
    id: u64,
}

impl GradHookHandle {
    /// Removes the hook (nothing happens if its leaf is gone).
    pub fn remove(self) {
        if let Some(node) = self.node.upgrade()
            && let NodeKind::Accumulate { hooks, .. } = &node.kind
        {
            lock(hooks).retain(|(id, _)| *id != self.id);
        }
    }
}

impl<E: Element> DynTensor<E> {
    /// Runs `hook` in every backward pass, right after the pass has added this leaf's
    /// gradient into [`DynTensor::grad`]. An error from the hook ends the pass with that error.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// let seen = Arc::new(AtomicUsize::new(0));
    /// let s = seen.clone();
    /// let handle = w
    ///     .register_post_accumulate_grad_hook(move || {
    ///         s.fetch_add(1, Ordering::SeqCst);
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// (&w * &w).sum().backward(); // w is used twice, its hook runs once
    /// assert_eq!(seen.load(Ordering::SeqCst), 1);
    /// handle.remove();
    /// w.sum().backward();
    /// assert_eq!(seen.load(Ordering::SeqCst), 1);
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Autograd`] for a tensor that is not a leaf requiring grad (only leaves
    /// accumulate gradients).
    pub fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn() -> Result<()> + Send + Sync + 'static,
    ) -> Result<GradHookHandle> {
        let Some(Meta::Leaf { node }) = self.meta().map(|m| &**m) else {
            return Err(Error::new(
                ErrorKind::Autograd,
                "register_post_accumulate_grad_hook",
                "only a leaf that requires grad accumulates a gradient; mark the tensor with \
                 requires_grad_(true)",
            ));
        };
        let NodeKind::Accumulate { hooks, .. } = &node.kind else {
            unreachable!("a leaf's node accumulates")
        };
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let hook: GradHook = Arc::new(hook);
        lock(hooks).push((id, hook));
        Ok(GradHookHandle {
            node: Arc::downgrade(node),
            id,
        })
    }
}
