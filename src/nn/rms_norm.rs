//! [`RmsNorm`]: divides by the root mean square along one named dim, then scales.

use super::layer_norm::{along, one_hot};
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::Result;
use crate::named::{Dim, DimTuple, HasDim};
use crate::named_tensor::Tensor;
use crate::tensor::or_panic;

/// `x / sqrt(mean(x²) + eps) · weight` along the dim `D`, as PyTorch's `nn.RMSNorm(size)`;
/// the shape and names are kept. Parameter `weight` `(D,)`, ones; `eps` is the machine
/// epsilon of `E` (PyTorch's default).
///
/// ```
/// use namedtensor::nn::RmsNorm;
/// use namedtensor::{dims, Tensor};
/// dims! { Model }
/// let norm = RmsNorm::<Model, f64>::new(2);
/// let y = norm.forward(&Tensor::<f64, (Model,)>::from_vec(vec![3.0, 4.0], [2]));
/// let rms = (12.5f64).sqrt();
/// assert!((y.to_vec()[0] - 3.0 / rms).abs() < 1e-12);
/// ```
pub struct RmsNorm<D: Dim, E: Float = f32> {
    /// `(D,)`, ones.
    pub weight: Tensor<E, (D,)>,
    /// Added to the mean square.
    pub eps: f64,
}

impl<D: Dim, E: Float> RmsNorm<D, E> {
    /// A layer over `size` features; its weight requires grad.
    pub fn new(size: usize) -> Self {
        RmsNorm {
            weight: Tensor::ones([size]).requires_grad_(true),
            eps: 0.5f64.powi(E::MANTISSA_DIGITS as i32 - 1),
        }
    }

    /// Normalises `x` along `D`. Panics where [`RmsNorm::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P>
    where
        S: HasDim<D, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`RmsNorm::forward`], or an error when `x`'s `D` size is not the layer's.
    pub fn try_forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<D, P>,
    {
        let axis = <S as HasDim<D, P>>::AXIS;
        let x = x.as_dyn();
        let normed = crate::ops::normalize("RmsNorm", x, &one_hot(axis, x.dim()), self.eps, false)?;
        Ok(Tensor::wrap(normed.try_mul(&along(
            &self.weight,
            axis,
            x.dim(),
        )?)?))
    }
}

impl<D: Dim, E: Float> Module<E> for RmsNorm<D, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight", &self.weight);
    }
}
