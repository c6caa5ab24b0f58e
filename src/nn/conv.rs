//! Layers over two named spatial dims: [`Conv2d`], [`MaxPool2d`], [`AvgPool2d`].
//!
//! The spatial dims and the channel dims are named in the layer's type, found in the input by
//! name (any order, any other dims kept as batch dims), and keep their positions in the
//! output: a `Conv2d<Channels, Features, Height, Width>` turns `(Batch, Channels, Height,
//! Width)` into `(Batch, Features, Height, Width)`, and `(Height, Width, Channels)` into
//! `(Height, Width, Features)`. The sizes of `Height` and `Width` change as the window says.

use super::init::{derive_seed, fan_in_bound, uniform};
use super::module::{Module, Visitor};
use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim, Rename, Shape};
use crate::named_tensor::Tensor;
use crate::ops::Window2d;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};
use std::marker::PhantomData;

crate::dims! {
    /// The kernel's row taps (a convolution weight's third dim).
    pub KernelRows,
    /// The kernel's column taps (a convolution weight's last dim).
    pub KernelCols,
}

/// A convolution weight: `(Out, In, KernelRows, KernelCols)`, PyTorch's layout.
pub type ConvWeight<E, In, Out> = Tensor<E, (Out, In, KernelRows, KernelCols)>;

/// `Conv2d<In, Out, H, W>` on a tensor of dims `S`: `S` with `In` renamed `Out`.
pub type ConvOut<E, S, P, In, Out> = Tensor<E, <S as Rename<In, Out, P>>::Out, P>;

/// A 2-d convolution (PyTorch's `nn.Conv2d`, without groups): channels `In` become `Out`
/// over the spatial dims `H` and `W`. Parameters `weight` `(Out, In, KernelRows,
/// KernelCols)` and `bias` `(Out,)`, uniform on `±1/sqrt(in·kh·kw)` as in PyTorch.
///
/// ```
/// use namedtensor::nn::Conv2d;
/// use namedtensor::ops::Window2d;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Channels, Features, Height, Width }
/// let conv = Conv2d::<Channels, Features, Height, Width>::new(3, 8, Window2d::new(3, 3).padding(1));
/// let img = Tensor::<f32, (Batch, Channels, Height, Width)>::ones([2, 3, 8, 8]);
/// let y = conv.forward(&img);
/// assert_eq!(y.names(), ["Batch", "Features", "Height", "Width"]);
/// assert_eq!(y.shape(), &[2, 8, 8, 8]);
/// // channels last: the same layer, the same names
/// let hwc = img.align_to::<(Batch, Height, Width, Channels)>();
/// assert_eq!(conv.forward(&hwc).names(), ["Batch", "Height", "Width", "Features"]);
/// ```
pub struct Conv2d<In: Dim, Out: Dim, H: Dim, W: Dim, E: Float = f32> {
    /// `(Out, In, KernelRows, KernelCols)`.
    pub weight: ConvWeight<E, In, Out>,
    /// `(Out,)`, or none.
    pub bias: Option<Tensor<E, (Out,)>>,
    /// Stride, padding and dilation (the kernel size is the weight's).
    pub window: Window2d,
    spatial: PhantomData<fn() -> (H, W)>,
}

impl<In: Dim, Out: Dim, H: Dim, W: Dim, E: Float> Conv2d<In, Out, H, W, E> {
    /// A layer from `in_size` to `out_size` channels with the kernel and geometry of
    /// `window`, initialised as PyTorch does from the process's generator
    /// ([`manual_seed`](crate::random::manual_seed)). Panics where [`Conv2d::try_new`] fails.
    #[track_caller]
    pub fn new(in_size: usize, out_size: usize, window: Window2d) -> Self
    where
        (Out, In, KernelRows, KernelCols): Shape,
    {
        or_panic(Conv2d::try_new(in_size, out_size, window))
    }

    /// [`Conv2d::new`], or an error as [`Conv2d::try_seeded`].
    pub fn try_new(in_size: usize, out_size: usize, window: Window2d) -> Result<Self>
    where
        (Out, In, KernelRows, KernelCols): Shape,
    {
        Conv2d::try_seeded(in_size, out_size, window, next_seed())
    }

    /// [`Conv2d::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(in_size: usize, out_size: usize, window: Window2d, seed: u64) -> Self
    where
        (Out, In, KernelRows, KernelCols): Shape,
    {
        or_panic(Conv2d::try_seeded(in_size, out_size, window, seed))
    }

    /// [`Conv2d::seeded`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::Overflow`] when the fan-in `in_size · kh · kw` or the weight's element
    /// count overflows `usize`; [`ErrorKind::OutOfMemory`] when the host cannot hold the
    /// weight.
    ///
    /// ```
    /// use namedtensor::nn::Conv2d;
    /// use namedtensor::ops::Window2d;
    /// use namedtensor::{dims, ErrorKind};
    /// dims! { Channels, Features, Height, Width }
    /// let huge = Window2d::new(1 << 32, 1 << 32);
    /// let err = Conv2d::<Channels, Features, Height, Width>::try_seeded(3, 8, huge, 0).err().unwrap();
    /// assert_eq!(err.kind(), ErrorKind::Overflow);
    /// ```
    pub fn try_seeded(in_size: usize, out_size: usize, window: Window2d, seed: u64) -> Result<Self>
    where
        (Out, In, KernelRows, KernelCols): Shape,
    {
        let (kh, kw) = window.kernel;
        let fan_in = crate::layout::checked_numel(&[in_size, kh, kw]).ok_or_else(|| {
            Error::overflow(
                "Conv2d",
                format!("the fan-in in_size × kernel rows × kernel cols = {in_size} × {kh} × {kw}"),
            )
        })?;
        let bound = fan_in_bound(fan_in);
        let weight = uniform(&[out_size, in_size, kh, kw], bound, derive_seed(seed, 0))
            .map_err(|e| in_layer(e, "the weight"))?;
        let bias = uniform(&[out_size], bound, derive_seed(seed, 1))
            .map_err(|e| in_layer(e, "the bias"))?;
        Conv2d::try_from_parameters(weight, Some(bias), window)
    }

    /// A layer with the given parameters (detached, then marked as leaves that require
    /// grad); an error when the weight's kernel is not `window`'s or the bias's size is not
    /// the weight's `Out` size.
    pub fn try_from_parameters(
        weight: ConvWeight<E, In, Out>,
        bias: Option<Tensor<E, (Out,)>>,
        window: Window2d,
    ) -> Result<Self> {
        let ws = weight.shape();
        if (ws[2], ws[3]) != window.kernel || bias.as_ref().is_some_and(|b| b.shape()[0] != ws[0]) {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "Conv2d",
                format!(
                    "weight {ws:?} (dims {:?}), bias {:?} and kernel {:?} do not fit together",
                    <(Out, In, KernelRows, KernelCols) as DimTuple>::NAMES,
                    bias.as_ref().map(|b| b.shape().to_vec()),
                    window.kernel
                ),
            ));
        }
        Ok(Conv2d {
            weight: weight.detach().try_requires_grad_(true)?,
            bias: bias
                .map(|b| b.detach().try_requires_grad_(true))
                .transpose()?,
            window,
            spatial: PhantomData,
        })
    }

    /// The convolution of `x`. Panics where [`Conv2d::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> ConvOut<E, S, P, In, Out>
    where
        S: HasDim<In, P> + HasDim<H, P> + HasDim<W, P> + Rename<In, Out, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`Conv2d::forward`], or an error when `x`'s `In` size is not the layer's or the
    /// window does not fit `x`'s `H` × `W`.
    pub fn try_forward<S, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
    ) -> Result<ConvOut<E, S, P, In, Out>>
    where
        S: HasDim<In, P> + HasDim<H, P> + HasDim<W, P> + Rename<In, Out, P>,
    {
        let axes = [
            <S as HasDim<In, P>>::AXIS,
            <S as HasDim<H, P>>::AXIS,
            <S as HasDim<W, P>>::AXIS,
        ];
        let bias = self.bias.as_ref().map(Tensor::as_dyn);
        let y = with_last(
            "Conv2d",
            x.as_dyn(),
            &axes,
            [In::NAME, H::NAME, W::NAME],
            |t| t.try_conv2d(self.weight.as_dyn(), bias, self.window),
        )?;
        Ok(Tensor::wrap(y))
    }
}

impl<In: Dim, Out: Dim, H: Dim, W: Dim, E: Float> Module<E> for Conv2d<In, Out, H, W, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight", &self.weight);
        v.param_opt("bias", &self.bias);
    }
}

/// `e`, raised while making `what` of a [`Conv2d`], as the layer's error: the caller called
/// `Conv2d::try_new`, not the `rand` inside it.
fn in_layer(e: Error, what: &str) -> Error {
    Error::new(e.kind(), "Conv2d", format!("{} (for {what})", e.message()))
}

/// Runs `f` on `x` with the axes `axes` moved last and every other axis flattened into one
/// leading batch axis, and puts the result's axes back where `x` had them (`f` keeps the
/// rank: `[N, a, b, c] → [N, a', b', c']`).
pub(super) fn with_last<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    axes: &[isize],
    names: impl AsRef<[&'static str]>,
    f: impl FnOnce(&DynTensor<E>) -> Result<DynTensor<E>>,
) -> Result<DynTensor<E>> {
    let axes: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
    distinct_axes(op, &axes, names.as_ref())?;
    let rank = x.dim();
    let (rest, perm) = last_order(rank, &axes);
    let n: usize = rest.iter().map(|&a| x.shape()[a]).product();
    let mut batched: Vec<isize> = vec![n as isize];
    batched.extend(axes.iter().map(|&a| x.shape()[a] as isize));
    let y = f(&x.try_permute(&perm)?.try_reshape(&batched)?)?;
    let mut unbatched: Vec<isize> = rest.iter().map(|&a| x.shape()[a] as isize).collect();
    unbatched.extend(y.shape()[1..].iter().map(|&s| s as isize));
    let y = y.try_reshape(&unbatched)?;
    // Axis `a` of `x` is at position `perm⁻¹[a]` of `y`.
    let mut back = vec![0isize; rank];
    for (pos, &a) in perm.iter().enumerate() {
        back[a as usize] = pos as isize;
    }
    y.try_permute(&back)
}

/// An error naming the dim when an axis of `axes` (the dims `names`) repeats an earlier one:
/// a layer given the same dim for two roles.
pub(super) fn distinct_axes(
    op: &'static str,
    axes: &[usize],
    names: &[&'static str],
) -> Result<()> {
    match (1..axes.len()).find(|&i| axes[..i].contains(&axes[i])) {
        Some(i) => Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("the layer names the dim `{}` twice", names[i]),
        )),
        None => Ok(()),
    }
}

/// The axes of a rank-`rank` tensor other than `axes`, in order, and the permutation that
/// puts them first and `axes` last (in `axes`' order): [`with_last`]'s layout.
pub(super) fn last_order(rank: usize, axes: &[usize]) -> (Vec<usize>, Vec<isize>) {
    let rest: Vec<usize> = (0..rank).filter(|a| !axes.contains(a)).collect();
    let perm = rest.iter().chain(axes).map(|&a| a as isize).collect();
    (rest, perm)
}

/// `t`, which broadcasts against `x` (same rank, each size `x`'s or 1), in the layout
/// [`with_last`] gives `x`: expanded to `x`'s sizes on the axes other than `axes`, which are
/// flattened into one leading axis, and `axes` last with `t`'s own sizes.
pub(super) fn batched_like<E: Element, F: Element>(
    x: &DynTensor<F>,
    axes: &[usize],
    t: &DynTensor<E>,
) -> Result<DynTensor<E>> {
    let (rest, perm) = last_order(x.dim(), axes);
    let mut sizes: Vec<isize> = t.shape().iter().map(|&s| s as isize).collect();
    for &a in &rest {
        sizes[a] = x.shape()[a] as isize;
    }
    let n: usize = rest.iter().map(|&a| x.shape()[a]).product();
    let mut batched: Vec<isize> = vec![n as isize];
    batched.extend(axes.iter().map(|&a| t.shape()[a] as isize));
    t.try_expand(&sizes)?
        .try_permute(&perm)?
        .try_reshape(&batched)
}

macro_rules! pool_layer {
    ($(#[$doc:meta])* $name:ident, $op:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<H: Dim, W: Dim> {
            /// Kernel, stride, padding and dilation.
            pub window: Window2d,
            spatial: PhantomData<fn() -> (H, W)>,
        }

        impl<H: Dim, W: Dim> $name<H, W> {
            /// A `k × k` window with stride `k` (PyTorch's default stride), no padding.
            pub fn new(k: usize) -> Self {
                $name::with_window(Window2d::new(k, k).stride(k))
            }

            /// Any window.
            pub fn with_window(window: Window2d) -> Self {
                $name { window, spatial: PhantomData }
            }

            /// Pools `x` over `H` × `W`. Panics where `try_forward` fails.
            #[track_caller]
            pub fn forward<E: Float, S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P>
            where
                S: HasDim<H, P> + HasDim<W, P>,
            {
                or_panic(self.try_forward(x))
            }

            /// Pools `x`, or an error when the window does not fit.
            pub fn try_forward<E: Float, S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Result<Tensor<E, S, P>>
            where
                S: HasDim<H, P> + HasDim<W, P>,
            {
                let axes = [<S as HasDim<H, P>>::AXIS, <S as HasDim<W, P>>::AXIS];
                let y = with_last(stringify!($name), x.as_dyn(), &axes, [H::NAME, W::NAME], |t| t.$op(self.window))?;
                Ok(Tensor::wrap(y))
            }
        }

        impl<E: Float, H: Dim, W: Dim> Module<E> for $name<H, W> {
            fn visit(&self, _: &mut Visitor<'_, E>) {}
        }
    };
}

pool_layer! {
    /// The maximum over each window of the dims `H` × `W` (PyTorch's `nn.MaxPool2d`); other
    /// dims and all names are kept.
    ///
    /// ```
    /// use namedtensor::nn::MaxPool2d;
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let x = Tensor::<f32, (Rows, Cols)>::from_vec((0..16).map(|v| v as f32).collect(), [4, 4]);
    /// assert_eq!(MaxPool2d::<Rows, Cols>::new(2).forward(&x).to_vec(), vec![5.0, 7.0, 13.0, 15.0]);
    /// ```
    MaxPool2d, try_max_pool2d
}

pool_layer! {
    /// The mean over each window of the dims `H` × `W` (PyTorch's `nn.AvgPool2d`, padding
    /// counted as zeros); other dims and all names are kept.
    ///
    /// ```
    /// use namedtensor::nn::AvgPool2d;
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let x = Tensor::<f32, (Rows, Cols)>::from_vec((0..16).map(|v| v as f32).collect(), [4, 4]);
    /// assert_eq!(AvgPool2d::<Rows, Cols>::new(2).forward(&x).to_vec(), vec![2.5, 4.5, 10.5, 12.5]);
    /// ```
    AvgPool2d, try_avg_pool2d
}
