//! [`GroupNorm`]: normalises groups of channels within each sample.

use super::layer_norm::affine;
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim};
use crate::named_tensor::Tensor;
use crate::tensor::{DynTensor, or_panic};

/// Group normalisation, as PyTorch's `nn.GroupNorm(groups, channels)`: the channels `C` are
/// split into `groups` equal groups, and each group of each entry of the sample dim `B` is
/// normalised over its channels and every other dim of the input (the biased variance),
/// then scaled and shifted per channel. The same in training and evaluation; no buffers.
/// Parameters `weight` (ones) and `bias` (zeros), `(C,)`; `eps` 1e-5.
///
/// ```
/// use namedtensor::nn::GroupNorm;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Channels, Length }
/// let norm = GroupNorm::<Batch, Channels, f64>::new(2, 4);
/// let x = Tensor::<f64, (Batch, Length, Channels)>::randn([3, 5, 4], 0); // found by name
/// let y = norm.forward(&x);
/// // Channels 0 and 1 of sample 0 have mean 0 over all of its positions.
/// let group: f64 = y.as_dyn().select(0, 0).narrow(1, 0, 2).sum().item();
/// assert!(group.abs() < 1e-12);
/// assert!(GroupNorm::<Batch, Channels>::try_new(3, 4).is_err());
/// ```
pub struct GroupNorm<B: Dim, C: Dim, E: Float = f32> {
    /// `(C,)`, ones; `None` without the affine step (`affine=False`).
    pub weight: Option<Tensor<E, (C,)>>,
    /// `(C,)`, zeros; `None` without the affine step.
    pub bias: Option<Tensor<E, (C,)>>,
    /// How many groups the channels form.
    pub groups: usize,
    /// Added to the variance.
    pub eps: f64,
    sample: std::marker::PhantomData<fn() -> B>,
}

impl<B: Dim, C: Dim, E: Float> GroupNorm<B, C, E> {
    /// A layer splitting `channels` channels into `groups` groups; its parameters require
    /// grad. Panics where [`GroupNorm::try_new`] fails.
    #[track_caller]
    pub fn new(groups: usize, channels: usize) -> Self {
        or_panic(GroupNorm::try_new(groups, channels))
    }

    /// [`GroupNorm::new`], or an error unless `groups` (at least 1) divides `channels`.
    pub fn try_new(groups: usize, channels: usize) -> Result<Self> {
        if groups == 0 || !channels.is_multiple_of(groups) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "GroupNorm",
                format!(
                    "{groups} groups do not divide {channels} channels of {}",
                    C::NAME
                ),
            ));
        }
        Ok(GroupNorm {
            weight: Some(Tensor::ones([channels]).try_requires_grad_(true)?),
            bias: Some(Tensor::zeros([channels]).try_requires_grad_(true)?),
            groups,
            eps: 1e-5,
            sample: std::marker::PhantomData,
        })
    }

    /// The layer without `weight` and `bias` (`affine=False`).
    pub fn without_affine(mut self) -> Self {
        self.weight = None;
        self.bias = None;
        self
    }

    /// Normalises `x`. Panics where [`GroupNorm::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P>
    where
        S: HasDim<B, P> + HasDim<C, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`GroupNorm::forward`], or an error when `x`'s `C` size is not the layer's or `B` and
    /// `C` are the same dim.
    pub fn try_forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<B, P> + HasDim<C, P>,
    {
        const OP: &str = "GroupNorm";
        let (b, c) = (
            <S as HasDim<B, P>>::AXIS as usize,
            <S as HasDim<C, P>>::AXIS as usize,
        );
        super::conv::distinct_axes(OP, &[b, c], &[B::NAME, C::NAME])?;
        let x = x.as_dyn();
        let channels = self.weight.as_ref().map_or(x.shape()[c], |w| w.shape()[0]);
        if x.shape()[c] != channels || self.groups == 0 || !channels.is_multiple_of(self.groups) {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                OP,
                format!(
                    "the input has {} entries along {} for {} groups of a layer of {channels}",
                    x.shape()[c],
                    C::NAME,
                    self.groups
                ),
            ));
        }
        // C as (groups, channels per group): normalised over all but B and the group axis.
        let mut grouped: Vec<isize> = x.shape().iter().map(|&s| s as isize).collect();
        grouped.splice(
            c..=c,
            [self.groups as isize, (channels / self.groups) as isize],
        );
        let sample = b + usize::from(b > c);
        let over: Vec<bool> = (0..grouped.len()).map(|i| i != sample && i != c).collect();
        let normed = crate::ops::normalize(OP, &x.try_reshape(&grouped)?, &over, self.eps, true)?;
        let sizes: Vec<isize> = x.shape().iter().map(|&s| s as isize).collect();
        let normed: DynTensor<E> = normed.try_reshape(&sizes)?;
        Ok(Tensor::wrap(affine(
            normed,
            &self.weight,
            &self.bias,
            c as isize,
        )?))
    }
}

impl<B: Dim, C: Dim, E: Float> Module<E> for GroupNorm<B, C, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param_opt("weight", &self.weight);
        v.param_opt("bias", &self.bias);
    }
}
