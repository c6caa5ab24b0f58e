//! Selection by index tensors: `index_select` (whole slices, e.g. embedding rows) and
//! `gather` (one element per index).
//!
//! Indices are `i64` and must lie in `0..size` of the indexed dim (as in PyTorch, negative
//! indices are out of range); every index is checked before anything is copied, and one out
//! of range is an [`ErrorKind::IndexOutOfRange`] error, never a panic or an out-of-bounds read.

use super::on_cuda;
use crate::backend::cpu;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{for_each_block, normalize_dim};
use crate::storage::with_read2;
use crate::tensor::{DynTensor, or_panic};

/// Fails unless every element of `index` (over `slice`) is in `0..size`.
fn check_indices(
    op: &'static str,
    index: &DynTensor<i64>,
    slice: &[i64],
    dim: usize,
    shape: &[usize],
) -> Result<()> {
    let size = shape[dim];
    let mut bad = None;
    for_each_block(index.layout(), |b| {
        if bad.is_none() {
            let (start, stride) = (b.starts[0], b.strides[0]);
            bad = (0..b.len)
                .map(|i| slice[start + i * stride])
                .find(|&v| v < 0 || v as u64 >= size as u64);
        }
    });
    match bad {
        Some(v) => Err(Error::new(
            ErrorKind::IndexOutOfRange,
            op,
            format!("index {v} is out of range for dim {dim} of size {size} (shape {shape:?})"),
        )),
        None => Ok(()),
    }
}

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
        on_cuda!([self, index], super::cuda::index_select(OP, self, d, index));
        let idx: Vec<usize> = {
            let guard = index.storage().read();
            let slice = guard.cpu(OP)?;
            check_indices(OP, index, slice, d, self.shape())?;
            cpu::gather_to_vec(slice, index.layout())
                .into_iter()
                .map(|v| v as usize)
                .collect()
        };
        let mut shape = self.shape().to_vec();
        shape[d] = idx.len();
        let data = {
            let guard = self.storage().read();
            cpu::index_select(guard.cpu(OP)?, self.layout(), d, &idx)
        };
        DynTensor::from_contiguous_vec(data, &shape)
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
        on_cuda!([self, index], super::cuda::gather(OP, self, d, index));
        let data = with_read2(OP, self.storage(), index.storage(), |src, idx| {
            check_indices(OP, index, idx, d, self.shape())?;
            Ok::<_, Error>(cpu::gather(src, self.layout(), d, idx, index.layout()))
        })??;
        DynTensor::from_contiguous_vec(data, index.shape())
    }
}
