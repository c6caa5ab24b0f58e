//! Autograd: gradients of the ops recorded on tensors that require grad (PyTorch's model).
//!
//! - A tensor made with [`DynTensor::requires_grad_`] is a *leaf*; every differentiable op
//!   on it records a node holding the formula of its gradient and just what the formula
//!   needs (`exp` its output, `mul` its inputs, `add` nothing). A tensor that does not
//!   require grad carries nothing, so inference pays one branch per op.
//! - [`DynTensor::backward`] runs the nodes from a scalar back to the leaves and adds the
//!   gradients into their [`grad`](DynTensor::grad) (gradients accumulate across calls, as
//!   in PyTorch; clear them with [`DynTensor::zero_grad`]). The nodes' saved tensors are
//!   freed as the pass goes, unless [`BackwardOptions::retain_graph`] is set.
//! - Gradient formulas are written with the same ops, so a pass with
//!   [`BackwardOptions::create_graph`] records itself and gives higher derivatives.
//! - [`no_grad`] (thread-local) switches recording off, for evaluation and optimiser steps.
//!
//! # In-place writes
//! Every storage counts its writes ([`Storage::version`](crate::Storage::version)); a saved
//! tensor remembers the count, and a backward pass that would use elements overwritten since
//! is an error naming the op. In-place ops (`exp_`, `add_`, `copy_`, …) on a tensor that
//! requires grad, or with a source that does, are refused while grad mode is on: they are
//! never differentiated into a wrong gradient. Write parameters inside [`no_grad`].
//!
//! ```
//! use namedtensor::DynTensor;
//! let w = DynTensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).requires_grad_(true);
//! let loss = (&w * &w).sum();           // Σ w²
//! loss.backward();
//! assert_eq!(w.grad().unwrap().to_vec(), vec![2.0, 4.0, 6.0]);
//! ```

mod any;
mod engine;
mod formulas;
mod hook;
mod mode;
mod node;
mod record;
mod tensor;

pub use engine::BackwardOptions;
pub use hook::GradHookHandle;
pub use mode::{GradMode, is_grad_enabled, no_grad};
pub use tensor::grad;

#[cfg(doc)]
use crate::DynTensor;

pub(crate) use any::same_type;
pub(crate) use formulas::{
    binary, cat, clamp, constant, cumprod, cumsum, extreme, gather, identity, index_select, matmul,
    normalize, pick, pnorm, reduce, root, same_op, scatter_add, select, softmax, unary, view,
    view_grad::ViewGrad,
};
pub(crate) use node::Meta;
pub(crate) use record::{check_inplace, tracks};
