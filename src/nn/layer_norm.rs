//! [`LayerNorm`]: normalises along one named dim, then scales and shifts.

use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::Result;
use crate::named::{Dim, DimTuple, HasDim};
use crate::named_tensor::Tensor;
use crate::tensor::{DynTensor, or_panic};

/// `(x − mean) / sqrt(var + eps) · weight + bias` along the dim `D` (the biased variance),
/// as PyTorch's `nn.LayerNorm(size)`; the shape and names are kept. Parameters `weight`
/// (ones) and `bias` (zeros), both `(D,)`; `eps` is 1e-5.
///
/// ```
/// use namedtensor::nn::LayerNorm;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Model }
/// let norm = LayerNorm::<Model, f64>::new(4);
/// let x = Tensor::<f64, (Batch, Model)>::from_vec(vec![1., 2., 3., 4., 0., 0., 0., 8.], [2, 4]);
/// let y = norm.forward(&x);
/// let row: Vec<f64> = y.to_vec()[..4].to_vec();
/// assert!(row.iter().sum::<f64>().abs() < 1e-12);            // mean 0
/// assert!((row.iter().map(|v| v * v).sum::<f64>() / 4.0 - 1.0).abs() < 1e-5); // variance 1
/// ```
pub struct LayerNorm<D: Dim, E: Float = f32> {
    /// `(D,)`, ones.
    pub weight: Tensor<E, (D,)>,
    /// `(D,)`, zeros.
    pub bias: Tensor<E, (D,)>,
    /// Added to the variance.
    pub eps: f64,
}

impl<D: Dim, E: Float> LayerNorm<D, E> {
    /// A layer over `size` features; its parameters require grad.
    pub fn new(size: usize) -> Self {
        LayerNorm {
            weight: Tensor::ones([size]).requires_grad_(true),
            bias: Tensor::zeros([size]).requires_grad_(true),
            eps: 1e-5,
        }
    }

    /// Normalises `x` along `D`. Panics where [`LayerNorm::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P>
    where
        S: HasDim<D, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`LayerNorm::forward`], or an error when `x`'s `D` size is not the layer's.
    pub fn try_forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<D, P>,
    {
        let axis = <S as HasDim<D, P>>::AXIS;
        Ok(Tensor::wrap(self.normalize(x.as_dyn(), axis)?))
    }

    /// The normalisation along axis `axis` (from 0) of a positional tensor (layers built on
    /// this one call it on their batched views).
    pub(super) fn normalize(&self, x: &DynTensor<E>, axis: isize) -> Result<DynTensor<E>> {
        debug_assert!((0..x.dim() as isize).contains(&axis));
        let normed =
            crate::ops::normalize("LayerNorm", x, &one_hot(axis, x.dim()), self.eps, true)?;
        let scaled = normed.try_mul(&along(&self.weight, axis, x.dim())?)?;
        scaled.try_add(&along(&self.bias, axis, x.dim())?)
    }
}

/// The mask of the one axis `axis` of a rank-`rank` tensor, for `ops::normalize`.
pub(super) fn one_hot(axis: isize, rank: usize) -> Vec<bool> {
    (0..rank).map(|i| i as isize == axis).collect()
}

/// `normed · weight + bias` along axis `axis` for a layer with the affine step (both
/// parameters), else `normed`: the last step of `BatchNorm` and `GroupNorm`.
pub(super) fn affine<E: Float, D: Dim>(
    normed: DynTensor<E>,
    weight: &Option<Tensor<E, (D,)>>,
    bias: &Option<Tensor<E, (D,)>>,
    axis: isize,
) -> Result<DynTensor<E>> {
    let rank = normed.dim();
    match (weight, bias) {
        (Some(w), Some(b)) => normed
            .try_mul(&along(w, axis, rank)?)?
            .try_add(&along(b, axis, rank)?),
        _ => Ok(normed),
    }
}

/// A `(D,)` parameter as a view that broadcasts along axis `axis` of a rank-`rank` tensor.
pub(super) fn along<E: Float, D: Dim>(
    p: &Tensor<E, (D,)>,
    axis: isize,
    rank: usize,
) -> Result<DynTensor<E>> {
    let mut shape = vec![-1isize];
    shape.resize(rank - axis as usize, 1);
    p.as_dyn().try_reshape(&shape)
}

impl<D: Dim, E: Float> Module<E> for LayerNorm<D, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight", &self.weight);
        v.param("bias", &self.bias);
    }
}
