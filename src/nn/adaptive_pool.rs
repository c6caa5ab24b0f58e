//! [`AdaptiveAvgPool2d`]: averages over a grid of bins that covers two named dims.

use super::conv::with_last;
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim};
use crate::named_tensor::Tensor;
use crate::tensor::{DynTensor, or_panic};
use std::marker::PhantomData;

/// The average over each of `out.0 × out.1` bins of the dims `H` × `W`, whatever their
/// sizes (PyTorch's `nn.AdaptiveAvgPool2d`): bin `i` of `n` over a dim of size `s` spans
/// `⌊i·s/n⌋ .. ⌈(i+1)·s/n⌉`, so bins may overlap by one. `(1, 1)` is global average
/// pooling. Other dims and all names are kept.
///
/// ```
/// use namedtensor::nn::AdaptiveAvgPool2d;
/// use namedtensor::{dims, Tensor};
/// dims! { Rows, Cols }
/// let x = Tensor::<f32, (Rows, Cols)>::from_vec((0..6).map(|v| v as f32).collect(), [2, 3]);
/// let pool = AdaptiveAvgPool2d::<Rows, Cols>::new(1, 2);
/// // columns 0..2 and 1..3 of both rows
/// assert_eq!(pool.forward(&x).to_vec(), vec![2.0, 3.0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveAvgPool2d<H: Dim, W: Dim> {
    /// The number of bins along `H` and along `W`.
    pub out: (usize, usize),
    spatial: PhantomData<fn() -> (H, W)>,
}

impl<H: Dim, W: Dim> AdaptiveAvgPool2d<H, W> {
    /// `rows × cols` bins.
    pub fn new(rows: usize, cols: usize) -> Self {
        AdaptiveAvgPool2d {
            out: (rows, cols),
            spatial: PhantomData,
        }
    }

    /// Pools `x`. Panics where [`AdaptiveAvgPool2d::try_forward`] fails.
    #[track_caller]
    pub fn forward<E: Float, S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P>
    where
        S: HasDim<H, P> + HasDim<W, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`AdaptiveAvgPool2d::forward`], or an error for 0 bins or an empty `H` or `W`.
    pub fn try_forward<E: Float, S, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
    ) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<H, P> + HasDim<W, P>,
    {
        const OP: &str = "AdaptiveAvgPool2d";
        let axes = [<S as HasDim<H, P>>::AXIS, <S as HasDim<W, P>>::AXIS];
        let y = with_last(OP, x.as_dyn(), &axes, [H::NAME, W::NAME], |t| {
            // A rectangle's mean is the mean over its columns of the means over its rows.
            let rows = bins(OP, t, 1, self.out.0, H::NAME)?;
            bins(OP, &rows, 2, self.out.1, W::NAME)
        })?;
        Ok(Tensor::wrap(y))
    }
}

/// `t` with axis `axis` replaced by the means over `n` adaptive bins of it.
fn bins<E: Float>(
    op: &'static str,
    t: &DynTensor<E>,
    axis: usize,
    n: usize,
    name: &str,
) -> Result<DynTensor<E>> {
    let size = t.shape()[axis];
    if n == 0 || size == 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("{n} bins over `{name}` of size {size}: both must be at least 1"),
        ));
    }
    let parts = (0..n)
        .map(|i| {
            let (start, end) = (i * size / n, ((i + 1) * size).div_ceil(n));
            t.try_narrow(axis as isize, start as isize, end - start)?
                .try_mean_dim(axis as isize, true)
        })
        .collect::<Result<Vec<_>>>()?;
    let parts: Vec<&DynTensor<E>> = parts.iter().collect();
    DynTensor::try_cat(&parts, axis as isize)
}

impl<E: Float, H: Dim, W: Dim> Module<E> for AdaptiveAvgPool2d<H, W> {
    fn visit(&self, _: &mut Visitor<'_, E>) {}
}
