//! Mixed precision, as PyTorch's `torch.amp`: [`autocast`] runs the matrix products of a
//! region in `bf16` or `f16` while the model, its parameters (the master weights) and every
//! other op stay in `f32`, and [`GradScaler`] scales an `f16` loss so that its gradients do
//! not underflow, skipping the steps whose gradients overflowed.
//!
//! What runs in the low dtype inside [`autocast`] is PyTorch's CPU list of "lower precision"
//! ops as this library has them: every matrix product of two `f32` tensors (`matmul`, `mm`,
//! `bmm`, `mv`, `dot`, the contractions of `einsum` and of named `dot`), and so `Linear`,
//! `Conv1d`, `Conv2d`, `MultiHeadAttention`, `Lstm` and `Gru`. Their operands are cast to the
//! low dtype and their results back to `f32`, as recorded ops, so the backward pass runs the
//! products' gradients in the low dtype as well. Reductions, softmax, normalisation and
//! losses (PyTorch's "float32" list) are computed in `f32` as everywhere else. Since a
//! tensor's dtype is part of its type here, a product's result is an `f32` tensor holding
//! low-precision values, where PyTorch's is a low-precision tensor.
//!
//! ```
//! use namedtensor::{amp, bf16, DynTensor};
//! let a = DynTensor::<f32>::from_vec(vec![1.0 + 2f32.powi(-9), 2.0], &[1, 2]);
//! let b = DynTensor::<f32>::from_vec(vec![3.0, 1.0], &[2, 1]);
//! let low = amp::autocast::<bf16, _>(|| a.matmul(&b));
//! // 1 + 2⁻⁹ rounds to 1 in bf16 (8 bits of mantissa): 1·3 + 2·1.
//! assert_eq!(low.item(), 5.0);
//! assert_eq!(a.matmul(&b).item(), 5.0 + 3.0 * 2f32.powi(-9));
//! ```

mod grad_scaler;

pub use crate::dtype::autocast::autocast_dtype;
pub use grad_scaler::{GradScaler, GradScalerConfig};

use crate::dtype::Float;
use crate::dtype::autocast::AutocastGuard;

/// The dtypes [`autocast`] computes in: `bf16` and `f16`.
pub trait LowPrecision: Float + sealed::Sealed {}
impl LowPrecision for half::bf16 {}
impl LowPrecision for half::f16 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// Runs `f` with the matrix products of `f32` tensors on this thread computed in `L`
/// (PyTorch's `with torch.autocast("cpu", dtype=L):`); the switch is thread-local and is
/// restored when `f` returns or panics. Run the backward pass inside or outside: the casts
/// are in the graph either way.
///
/// ```
/// use namedtensor::{amp, f16, DType};
/// assert_eq!(amp::autocast_dtype(), None);
/// amp::autocast::<f16, _>(|| assert_eq!(amp::autocast_dtype(), Some(DType::F16)));
/// assert_eq!(amp::autocast_dtype(), None);
/// ```
pub fn autocast<L: LowPrecision, R>(f: impl FnOnce() -> R) -> R {
    let _guard = AutocastGuard::set(Some(L::DTYPE));
    f()
}

/// Runs `f` with autocast off on this thread, inside an [`autocast`] region (PyTorch's
/// `torch.autocast(..., enabled=False)`): for a product that needs full precision.
///
/// ```
/// use namedtensor::{amp, bf16};
/// amp::autocast::<bf16, _>(|| amp::full_precision(|| assert_eq!(amp::autocast_dtype(), None)));
/// ```
pub fn full_precision<R>(f: impl FnOnce() -> R) -> R {
    let _guard = AutocastGuard::set(None);
    f()
}
