//! Sorting by name: `sort`, `argsort` and `topk` along a named dim, which the results keep.

use super::Tensor;
use crate::dtype::Element;
use crate::named::DimTuple;
use crate::named::HasDim;

/// Sorted values and the indices they came from, with `Self`'s dims.
type SortedAlong<E, S, P> = (Tensor<E, S, P>, Tensor<i64, S, P>);

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// The entries sorted along `D` (ascending, or descending), stably, NaN above every
    /// number, and the index along `D` each came from (see [`DynTensor::sort`](crate::DynTensor::sort)).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Height, Width }
    /// let ex = Tensor::<f32, (Height, Width)>::from_vec(vec![3.0, 1.0, 2.0, 0.0, 5.0, 4.0], [2, 3]);
    /// let (values, indices) = ex.sort::<Width>(false);
    /// assert_eq!(values.names(), ["Height", "Width"]);
    /// assert_eq!(values.to_vec(), vec![1.0, 2.0, 3.0, 0.0, 4.0, 5.0]);
    /// assert_eq!(indices.to_vec(), vec![1, 2, 0, 0, 2, 1]);
    /// ```
    pub fn sort<D>(&self, descending: bool) -> SortedAlong<E, S, P>
    where
        S: HasDim<D, P>,
    {
        let (v, i) = self.raw.sort(<S as HasDim<D, P>>::AXIS, descending);
        (Tensor::wrap(v), Tensor::wrap(i))
    }

    /// The indices that sort `self` along `D` ([`Tensor::sort`]'s second result).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let scores = Tensor::<f32, (Batch, Classes)>::from_vec(vec![0.1, 0.7, 0.2], [1, 3]);
    /// assert_eq!(scores.argsort::<Classes>(true).to_vec(), vec![1, 2, 0]);
    /// ```
    pub fn argsort<D>(&self, descending: bool) -> Tensor<i64, S, P>
    where
        S: HasDim<D, P>,
    {
        Tensor::wrap(self.raw.argsort(<S as HasDim<D, P>>::AXIS, descending))
    }

    /// The `k` largest (or, with `largest` false, smallest) entries along `D`, most extreme
    /// first, and their indices; `D` keeps its name with size `k`. Panics if `k` is above
    /// the size of `D`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let logits = Tensor::<f32, (Batch, Classes)>::from_vec(vec![0.1, 0.7, 0.2, 0.9, 0.0, 0.5], [2, 3]);
    /// let (best, classes) = logits.topk::<Classes>(2, true);
    /// assert_eq!(best.shape(), &[2, 2]);
    /// assert_eq!(classes.to_vec(), vec![1, 2, 0, 2]);
    /// ```
    #[track_caller]
    pub fn topk<D>(&self, k: usize, largest: bool) -> SortedAlong<E, S, P>
    where
        S: HasDim<D, P>,
    {
        let (v, i) = self.raw.topk(k, <S as HasDim<D, P>>::AXIS, largest);
        (Tensor::wrap(v), Tensor::wrap(i))
    }
}
