//! [`clip_grad_norm_`]: rescales gradients whose joint norm is too large.

use crate::autograd::no_grad;
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::nn::Parameter;
use crate::tensor::DynTensor;

/// Scales the gradients of `params` in place so that their joint 2-norm (the norm of all
/// their entries together) is at most `max_norm`, and returns the norm before scaling.
/// PyTorch's rule: every gradient is multiplied by `min(1, max_norm / (norm + 1e-6))`.
/// Parameters without a gradient are skipped; a non-finite norm is an error (nothing is
/// scaled), as with PyTorch's `error_if_nonfinite=True`.
///
/// ```
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::clip_grad_norm_;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, In, Out }
/// let fc = Linear::<In, Out, f64>::new(4, 3);
/// let y = fc.forward(&Tensor::<f64, (Batch, In)>::ones([2, 4]));
/// (y.sum::<(Batch, Out)>() * 100.0).backward();
/// let before = clip_grad_norm_(&fc.parameters(), 1.0).unwrap();
/// assert!(before > 1.0);
/// assert!((clip_grad_norm_(&fc.parameters(), 1.0).unwrap() - 1.0).abs() < 1e-5);
/// ```
pub fn clip_grad_norm_<E: Float>(params: &[Parameter<E>], max_norm: f64) -> Result<f64> {
    if max_norm.is_nan() || max_norm < 0.0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "clip_grad_norm_",
            format!(
                "max_norm = {max_norm} must be a number ≥ 0 (inf measures the norm without \
                 clipping)"
            ),
        ));
    }
    let grads: Vec<DynTensor<E>> = params.iter().filter_map(|p| p.tensor.grad()).collect();
    if grads.is_empty() {
        return Ok(0.0);
    }
    no_grad(|| {
        let norms = grads
            .iter()
            .map(|g| g.try_norm_dims(2.0, &[], false))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&DynTensor<E>> = norms.iter().collect();
        let total = DynTensor::try_stack(&refs, 0)?.norm(2.0).item().to_f64();
        if !total.is_finite() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "clip_grad_norm_",
                format!("the total norm of the gradients is {total}"),
            ));
        }
        let coef = (max_norm / (total + 1e-6)).min(1.0);
        for g in &grads {
            g.try_mul_scalar_(coef)?;
        }
        Ok(total)
    })
}
