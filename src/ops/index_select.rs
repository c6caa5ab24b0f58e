//! Selection by index tensors: `index_select` (whole slices, e.g. embedding rows) and
//! `gather` (one element per index).
//!
//! Indices are `i64` and must lie in `0..size` of the indexed dim (as in PyTorch, negative
//! indices are out of range); every index is checked before anything is copied, and one out
//! of range is an [`ErrorKind::IndexOutOfRange`] error, never a panic or an out-of-bounds read.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::normalize_dim;
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// The entries `index` of dim `dim`, in that order (repeats allowed): the result has the
    /// shape of `self` with dim `dim` of size `index.numel()`. `index` is 1-D (or 0-d).
    /// A new contiguous tensor. Panics where [`DynTensor::try_index_select`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let embeddings = tensor!([[0., 0.], [1., 1.], [2., 2.]]);
    /// let ids = tensor!([2, 0, 2]; i64);
    /// assert_eq!(embeddings.index_select(0, &ids).to_vec(), vec![2., 2., 0., 0., 2., 2.]);
    /// assert_eq!(embeddings.index_select(1, &tensor!([1]; i64)).shape(), &[3, 1]);
    /// ```
    #[track_caller]
    pub fn index_select(&self, dim: isize, index: &DynTensor<i64>) -> DynTensor<E> {
        or_panic(self.try_index_select(dim, index))
    }

    /// [`DynTensor::index_select`], or an error: [`ErrorKind::IndexOutOfRange`] for an index
    /// outside `0..size`, [`ErrorKind::InvalidArgument`] for an index of rank > 1,
    /// [`ErrorKind::DimOutOfRange`].
    ///
    /// ```
    /// use namedtensor::{tensor, ErrorKind};
    /// let t = tensor!([1., 2., 3.]);
    /// let err = t.try_index_select(0, &tensor!([0, 3]; i64)).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
    /// assert!(err.to_string().contains("index 3 is out of range for dim 0 of size 3"));
    /// ```
    pub fn try_index_select(&self, dim: isize, index: &DynTensor<i64>) -> Result<DynTensor<E>> {
        const OP: &str = "index_select";
        let d = normalize_dim(OP, dim, self.dim())?;
        if index.dim() > 1 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                OP,
                format!(
                    "the index must be 1-D (or 0-d), got shape {:?}",
                    index.shape()
                ),
            ));
        }
        crate::autograd::refuse(OP, crate::autograd::tracks(self))?;
        let mut shape = self.shape().to_vec();
        shape[d] = index.numel();
        let (src, idx) = (self.storage(), index.storage());
        let buf = dispatch::index_select(OP, src, self.layout(), d, idx, index.layout())?;
        DynTensor::from_contiguous_buffer(buf, &shape)
    }

    /// PyTorch's `gather`: `out[i][j][k] = self[index[i][j][k]][j][k]` for `dim = 0` (and
    /// likewise for other dims). `index` has the rank of `self` and, in every dim other than
    /// `dim`, a size no larger than `self`'s; the result has the shape of `index`.
    /// Panics where [`DynTensor::try_gather`] fails.
    ///
    /// ```
    /// use namedtensor::tensor;
    /// let t = tensor!([[1, 2], [3, 4]]; i32);
    /// let picked = t.gather(1, &tensor!([[0, 0], [1, 0]]; i64));
    /// assert_eq!(picked.to_vec(), vec![1, 1, 4, 3]);
    /// ```
    #[track_caller]
    pub fn gather(&self, dim: isize, index: &DynTensor<i64>) -> DynTensor<E> {
        or_panic(self.try_gather(dim, index))
    }

    /// [`DynTensor::gather`], or an error: [`ErrorKind::IndexOutOfRange`] for an index
    /// outside `0..size` of `dim`, [`ErrorKind::ShapeMismatch`] for an index of another rank
    /// or larger in another dim, [`ErrorKind::DimOutOfRange`].
    ///
    /// ```
    /// use namedtensor::{tensor, ErrorKind};
    /// let t = tensor!([[1, 2], [3, 4]]; i32);
    /// let err = t.try_gather(0, &tensor!([[2, 0]]; i64)).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
    /// ```
    pub fn try_gather(&self, dim: isize, index: &DynTensor<i64>) -> Result<DynTensor<E>> {
        const OP: &str = "gather";
        let d = normalize_dim(OP, dim, self.dim())?;
        let fits = index.dim() == self.dim()
            && (0..self.dim()).all(|e| e == d || index.shape()[e] <= self.shape()[e]);
        if !fits {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                OP,
                format!(
                    "the index must have the rank of the input and sizes no larger in every dim \
                     but {d}; got index shape {:?} for input shape {:?}",
                    index.shape(),
                    self.shape()
                ),
            ));
        }
        crate::autograd::refuse(OP, crate::autograd::tracks(self))?;
        let (src, idx) = (self.storage(), index.storage());
        let buf = dispatch::gather(OP, src, self.layout(), d, idx, index.layout())?;
        DynTensor::from_contiguous_buffer(buf, index.shape())
    }
}
