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
//! ```
//! use namedtensor::DynTensor;
//! let w = DynTensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).requires_grad_(true);
//! let loss = (&w * &w).sum();           // Σ w²
//! loss.backward();
//! assert_eq!(w.grad().unwrap().to_vec(), vec![2.0, 4.0, 6.0]);
//! ```
//!
//! # In-place writes
//! In-place ops (`relu_`, `add_`, `copy_`, `fill_`, `index_add_`, …) on a tensor made by a
//! recorded op are recorded as PyTorch records them: the tensor continues from a node of the
//! op, so its gradient is the out-of-place form's. A write through a view changes the
//! viewed tensor too, which continues from a `CopySlices` node (the gradient of the
//! overwritten elements goes through the op, the rest passes through), and the other views of
//! it follow. Every storage counts its writes ([`Storage::version`](crate::Storage::version));
//! a node that saved a tensor remembers the count, and a backward pass that would read
//! elements overwritten since is an error naming that node. A leaf that requires grad (or a
//! view of one) is written only inside [`no_grad`]: update parameters there. Writing a tensor
//! that requires grad into one that does not is refused: use the out-of-place form.
//!
//! ```
//! use namedtensor::DynTensor;
//! let x = DynTensor::from_vec(vec![1.0f64, -2.0, 3.0], &[3]).requires_grad_(true);
//! let h = &x * 2.0;
//! h.narrow(0, 1, 2).relu_();               // h = [2, 0, 6]
//! (&h * &h).sum().backward();              // Σ h²
//! assert_eq!(x.grad().unwrap().to_vec(), vec![8.0, 0.0, 24.0]);
//!
//! let y = x.exp();                         // saves its output
//! y.mul_scalar_(2.0);                      // overwrites it
//! let err = y.sum().try_backward().unwrap_err();
//! assert!(err.to_string().contains("`exp`"));
//! ```

mod any;
mod engine;
mod formulas;
mod hook;
mod inplace;
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
    binary, cat, clamp, constant, conv2d, cumprod, cumsum, extreme, gather, identity, index_select,
    matmul, normalize, pick, pnorm, reduce, root, same_op, scatter_add, select, softmax, unary,
    view, view_grad::ViewGrad,
};
pub(crate) use inplace::{record_inplace, unary_inplace, view_of, write_in_place};
pub(crate) use node::Meta;
pub(crate) use record::{check_inplace, inplace_recorded, tracks};
