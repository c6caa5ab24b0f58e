//! PyTorch's default initialisations, seeded: every layer draws its parameters from a seed,
//! the caller's or one from the process's generator ([`crate::random`]), so a model is the
//! same on every machine and run.

use crate::dtype::Float;
use crate::error::Result;
use crate::named::Shape;
use crate::named_tensor::Tensor;
use crate::tensor::DynTensor;

pub use crate::random::derive_seed;

/// Samples of the uniform distribution on `[-bound, bound)`, named `S`.
///
/// # Errors
/// The errors of [`DynTensor::try_rand`] (a shape whose element count overflows, or that the
/// host cannot hold), and [`ErrorKind`](crate::ErrorKind)`::ShapeMismatch` when `sizes` does
/// not have the rank of `S`.
///
/// ```
/// use namedtensor::{dims, nn::init::uniform};
/// dims! { Out, In }
/// let w = uniform::<f64, (Out, In)>(&[20, 30], 0.25, 3).unwrap();
/// assert!(w.to_vec().iter().all(|x| x.abs() <= 0.25));
/// ```
pub fn uniform<E: Float, S: Shape>(sizes: &[usize], bound: f64, seed: u64) -> Result<Tensor<E, S>> {
    let unit = DynTensor::<E>::try_rand(sizes, seed)?;
    unit.try_mul_scalar(2.0 * bound)?
        .try_sub_scalar(bound)?
        .try_refine_names()
}

/// PyTorch's `Linear`/`Conv` default: the uniform distribution on
/// `[-1/sqrt(fan_in), 1/sqrt(fan_in)]` (`kaiming_uniform_(a=sqrt(5))` for weights, the same
/// bound for biases).
///
/// ```
/// assert_eq!(namedtensor::nn::init::fan_in_bound(16), 0.25);
/// ```
pub fn fan_in_bound(fan_in: usize) -> f64 {
    if fan_in == 0 {
        0.0
    } else {
        1.0 / (fan_in as f64).sqrt()
    }
}
