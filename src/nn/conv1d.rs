//! [`Conv1d`]: a convolution over one named dim, run as a one-row [`Conv2d`](super::Conv2d).

use super::conv::{ConvOut, KernelCols, with_last};
use super::init::{derive_seed, fan_in_bound, uniform};
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim, Rename, Shape};
use crate::named_tensor::Tensor;
use crate::ops::Window2d;
use crate::random::next_seed;
use crate::tensor::or_panic;
use std::marker::PhantomData;

/// A 1-d convolution (PyTorch's `nn.Conv1d`, without groups): channels `In` become `Out`
/// along the dim `L`, found by name; other dims are batch dims and every dim keeps its place.
/// Parameters `weight` `(Out, In, KernelCols)` and `bias` `(Out,)`, uniform on
/// `±1/sqrt(in·k)` as in PyTorch.
///
/// ```
/// use namedtensor::nn::Conv1d;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Channels, Features, Time }
/// let conv = Conv1d::<Channels, Features, Time>::new(3, 8, 5).padding(2).stride(2);
/// let x = Tensor::<f32, (Batch, Time, Channels)>::ones([2, 9, 3]);
/// let y = conv.forward(&x);
/// assert_eq!(y.names(), ["Batch", "Time", "Features"]);
/// assert_eq!(y.shape(), &[2, 5, 8]);
/// ```
pub struct Conv1d<In: Dim, Out: Dim, L: Dim, E: Float = f32> {
    /// `(Out, In, KernelCols)`.
    pub weight: Tensor<E, (Out, In, KernelCols)>,
    /// `(Out,)`, or none.
    pub bias: Option<Tensor<E, (Out,)>>,
    /// Step between windows.
    pub stride: usize,
    /// Zeros added at both ends.
    pub padding: usize,
    /// Spacing between kernel taps.
    pub dilation: usize,
    along: PhantomData<fn() -> L>,
}

impl<In: Dim, Out: Dim, L: Dim, E: Float> Conv1d<In, Out, L, E> {
    /// A layer from `in_size` to `out_size` channels with a kernel of `kernel` taps, stride
    /// 1, no padding, initialised as PyTorch does from the process's generator. Panics where
    /// [`Conv1d::try_new`] fails.
    #[track_caller]
    pub fn new(in_size: usize, out_size: usize, kernel: usize) -> Self
    where
        (Out, In, KernelCols): Shape,
    {
        or_panic(Conv1d::try_new(in_size, out_size, kernel))
    }

    /// [`Conv1d::new`], or an error as [`Conv1d::try_seeded`].
    pub fn try_new(in_size: usize, out_size: usize, kernel: usize) -> Result<Self>
    where
        (Out, In, KernelCols): Shape,
    {
        Conv1d::try_seeded(in_size, out_size, kernel, next_seed())
    }

    /// [`Conv1d::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(in_size: usize, out_size: usize, kernel: usize, seed: u64) -> Self
    where
        (Out, In, KernelCols): Shape,
    {
        or_panic(Conv1d::try_seeded(in_size, out_size, kernel, seed))
    }

    /// [`Conv1d::seeded`], or an error ([`ErrorKind::Overflow`]) when the fan-in
    /// `in_size · kernel` or the weight's element count overflows.
    pub fn try_seeded(in_size: usize, out_size: usize, kernel: usize, seed: u64) -> Result<Self>
    where
        (Out, In, KernelCols): Shape,
    {
        let fan_in = in_size
            .checked_mul(kernel)
            .ok_or_else(|| Error::overflow("Conv1d", format!("the fan-in {in_size} × {kernel}")))?;
        let bound = fan_in_bound(fan_in);
        let weight: Tensor<E, (Out, In, KernelCols)> =
            uniform(&[out_size, in_size, kernel], bound, derive_seed(seed, 0))?;
        let bias: Tensor<E, (Out,)> = uniform(&[out_size], bound, derive_seed(seed, 1))?;
        Ok(Conv1d {
            weight: weight.try_requires_grad_(true)?,
            bias: Some(bias.try_requires_grad_(true)?),
            stride: 1,
            padding: 0,
            dilation: 1,
            along: PhantomData,
        })
    }

    /// The layer with another stride.
    pub fn stride(mut self, stride: usize) -> Self {
        self.stride = stride;
        self
    }

    /// The layer with `padding` zeros at both ends.
    pub fn padding(mut self, padding: usize) -> Self {
        self.padding = padding;
        self
    }

    /// The layer with another dilation.
    pub fn dilation(mut self, dilation: usize) -> Self {
        self.dilation = dilation;
        self
    }

    /// The layer without its bias (`bias=False`).
    pub fn without_bias(mut self) -> Self {
        self.bias = None;
        self
    }

    /// The convolution of `x`. Panics where [`Conv1d::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> ConvOut<E, S, P, In, Out>
    where
        S: HasDim<In, P> + HasDim<L, P> + Rename<In, Out, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`Conv1d::forward`], or an error when `x`'s `In` size is not the layer's or the
    /// window does not fit `x`'s `L`.
    pub fn try_forward<S, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
    ) -> Result<ConvOut<E, S, P, In, Out>>
    where
        S: HasDim<In, P> + HasDim<L, P> + Rename<In, Out, P>,
    {
        let ws = self.weight.shape();
        let in_axis = <S as HasDim<In, P>>::AXIS;
        if x.shape()[in_axis as usize] != ws[1] {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "Conv1d",
                format!(
                    "the input has {} entries along `{}` but the weight {ws:?} takes {}",
                    x.shape()[in_axis as usize],
                    In::NAME,
                    ws[1]
                ),
            ));
        }
        let window = Window2d {
            kernel: (1, ws[2]),
            stride: (1, self.stride),
            padding: (0, self.padding),
            dilation: (1, self.dilation),
        };
        let weight = self.weight.as_dyn().try_unsqueeze(2)?;
        let bias = self.bias.as_ref().map(Tensor::as_dyn);
        let axes = [in_axis, <S as HasDim<L, P>>::AXIS];
        let y = with_last("Conv1d", x.as_dyn(), &axes, [In::NAME, L::NAME], |t| {
            // [N, In, L] as one row of an image: [N, In, 1, L].
            t.try_unsqueeze(2)?
                .try_conv2d(&weight, bias, window)?
                .try_squeeze_dim(2)
        })?;
        Ok(Tensor::wrap(y))
    }
}

impl<In: Dim, Out: Dim, L: Dim, E: Float> Module<E> for Conv1d<In, Out, L, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight", &self.weight);
        v.param_opt("bias", &self.bias);
    }
}
