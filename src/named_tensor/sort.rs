//! Sorting by name: `sort`, `argsort` and `topk` along a named dim, which the results keep.

use super::Tensor;
use super::binary::full_names;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::DimTuple;
use crate::named::HasDim;
use crate::tensor::or_panic;

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
    /// first, and their indices; `D` keeps its name with size `k`. Panics where
    /// [`Tensor::try_topk`] fails.
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
        or_panic(self.try_topk::<D>(k, largest))
    }

    /// [`Tensor::topk`], or an error when `k` is above the size of `D`, naming `D`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let logits = Tensor::<f32, (Batch, Classes)>::zeros([2, 3]);
    /// let err = logits.try_topk::<Classes>(4, true).unwrap_err();
    /// assert!(err.to_string().contains("`Classes`"), "{err}");
    /// ```
    pub fn try_topk<D>(&self, k: usize, largest: bool) -> Result<SortedAlong<E, S, P>>
    where
        S: HasDim<D, P>,
    {
        let axis = <S as HasDim<D, P>>::AXIS;
        let n = self.raw.shape()[axis as usize];
        if k > n {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "topk",
                format!(
                    "k = {k} is more than the {n} entries along `{}` (dims {:?}, sizes {:?})",
                    full_names::<S, P>()[axis as usize],
                    full_names::<S, P>(),
                    self.raw.shape()
                ),
            ));
        }
        let (v, i) = self.raw.try_topk(k, axis, largest)?;
        Ok((Tensor::wrap(v), Tensor::wrap(i)))
    }
}
