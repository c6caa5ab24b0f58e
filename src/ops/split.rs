//! Splitting into views: `split`, `split_with_sizes`, `chunk`, `unbind`. No element is
//! copied; every piece shares the tensor's storage.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::normalize_dim;
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// Views of consecutive pieces of `size` entries along `dim` (the last piece may be
    /// shorter). Panics where [`DynTensor::try_split`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i64>::arange(0, 5, 1);
    /// let parts: Vec<Vec<i64>> = t.split(2, 0).iter().map(|p| p.to_vec()).collect();
    /// assert_eq!(parts, vec![vec![0, 1], vec![2, 3], vec![4]]);
    /// assert!(t.split(2, 0)[1].shares_storage(&t));
    /// ```
    #[track_caller]
    pub fn split(&self, size: usize, dim: isize) -> Vec<DynTensor<E>> {
        or_panic(self.try_split(size, dim))
    }

    /// [`DynTensor::split`], or an error for a dim out of range or a size of 0 (allowed only
    /// for a dim of size 0, which gives one empty piece).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[4]);
    /// assert!(t.try_split(0, 0).is_err());
    /// ```
    pub fn try_split(&self, size: usize, dim: isize) -> Result<Vec<DynTensor<E>>> {
        let d = normalize_dim("split", dim, self.dim())?;
        let total = self.shape()[d];
        if size == 0 && total > 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "split",
                format!("split size must be positive for dim {d} of size {total}"),
            ));
        }
        let sizes: Vec<usize> = if total == 0 {
            vec![0]
        } else {
            (0..total)
                .step_by(size)
                .map(|s| size.min(total - s))
                .collect()
        };
        self.pieces(d, &sizes)
    }

    /// Views of consecutive pieces along `dim` with the given sizes, which must add up to the
    /// dim's size. Panics where [`DynTensor::try_split_with_sizes`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 6]);
    /// let parts = t.split_with_sizes(&[1, 5], 1);
    /// assert_eq!((parts[0].shape(), parts[1].shape()), (&[2, 1][..], &[2, 5][..]));
    /// ```
    #[track_caller]
    pub fn split_with_sizes(&self, sizes: &[usize], dim: isize) -> Vec<DynTensor<E>> {
        or_panic(self.try_split_with_sizes(sizes, dim))
    }

    /// [`DynTensor::split_with_sizes`], or an error when the sizes do not add up.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[6]);
    /// assert!(t.try_split_with_sizes(&[1, 2], 0).is_err());
    /// ```
    pub fn try_split_with_sizes(&self, sizes: &[usize], dim: isize) -> Result<Vec<DynTensor<E>>> {
        let d = normalize_dim("split_with_sizes", dim, self.dim())?;
        let sum = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
        if sum != Some(self.shape()[d]) {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "split_with_sizes",
                format!(
                    "sizes {sizes:?} do not add up to the size {} of dim {d} (shape {:?})",
                    self.shape()[d],
                    self.shape()
                ),
            ));
        }
        self.pieces(d, sizes)
    }

    /// `chunks` views of (nearly) equal size along `dim`: each holds `⌈size / chunks⌉`
    /// entries but the last, so there may be fewer than `chunks` pieces (as in PyTorch).
    /// Panics where [`DynTensor::try_chunk`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i64>::arange(0, 6, 1);
    /// let sizes: Vec<usize> = t.chunk(4, 0).iter().map(|p| p.numel()).collect();
    /// assert_eq!(sizes, vec![2, 2, 2]);
    /// ```
    #[track_caller]
    pub fn chunk(&self, chunks: usize, dim: isize) -> Vec<DynTensor<E>> {
        or_panic(self.try_chunk(chunks, dim))
    }

    /// [`DynTensor::chunk`], or an error for `chunks == 0` or a dim out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[3]).try_chunk(0, 0).is_err());
    /// ```
    pub fn try_chunk(&self, chunks: usize, dim: isize) -> Result<Vec<DynTensor<E>>> {
        if chunks == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "chunk",
                "the number of chunks must be positive",
            ));
        }
        let d = normalize_dim("chunk", dim, self.dim())?;
        self.try_split(self.shape()[d].div_ceil(chunks), d as isize)
    }

    /// The views `select(dim, i)` for every `i`: the tensor taken apart along `dim`.
    /// Panics where [`DynTensor::try_unbind`] fails.
    ///
    /// ```
    /// let t = namedtensor::tensor!([[1, 2], [3, 4]]; i32);
    /// let cols: Vec<Vec<i32>> = t.unbind(1).iter().map(|c| c.to_vec()).collect();
    /// assert_eq!(cols, vec![vec![1, 3], vec![2, 4]]);
    /// ```
    #[track_caller]
    pub fn unbind(&self, dim: isize) -> Vec<DynTensor<E>> {
        or_panic(self.try_unbind(dim))
    }

    /// [`DynTensor::unbind`], or an error for a dim out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[3]).try_unbind(1).is_err());
    /// ```
    pub fn try_unbind(&self, dim: isize) -> Result<Vec<DynTensor<E>>> {
        let d = normalize_dim("unbind", dim, self.dim())?;
        (0..self.shape()[d])
            .map(|i| self.try_select(d as isize, i as isize))
            .collect()
    }

    /// Narrowed views of consecutive pieces of `sizes` along dim `d` (which they fill).
    fn pieces(&self, d: usize, sizes: &[usize]) -> Result<Vec<DynTensor<E>>> {
        let mut start = 0;
        sizes
            .iter()
            .map(|&len| {
                let piece = self.try_narrow(d as isize, start as isize, len);
                start += len;
                piece
            })
            .collect()
    }
}
