//! `flip`: a copy with some dims reversed.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::normalize_dim;
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// A contiguous copy with the order of entries reversed along each dim in `dims` (strides
    /// are never negative here, so unlike NumPy this is not a view, as in PyTorch).
    /// Panics where [`DynTensor::try_flip`] fails.
    ///
    /// ```
    /// let t = namedtensor::tensor!([[1, 2, 3], [4, 5, 6]]; i32);
    /// assert_eq!(t.flip(&[1]).to_vec(), vec![3, 2, 1, 6, 5, 4]);
    /// assert_eq!(t.flip(&[0, -1]).to_vec(), vec![6, 5, 4, 3, 2, 1]);
    /// ```
    #[track_caller]
    pub fn flip(&self, dims: &[isize]) -> DynTensor<E> {
        or_panic(self.try_flip(dims))
    }

    /// [`DynTensor::flip`], or an error for a dim out of range or given twice.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// assert!(t.try_flip(&[1, -1]).is_err());
    /// ```
    pub fn try_flip(&self, dims: &[isize]) -> Result<DynTensor<E>> {
        let mut flip = vec![false; self.dim()];
        for &dim in dims {
            let d = normalize_dim("flip", dim, self.dim())?;
            if std::mem::replace(&mut flip[d], true) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "flip",
                    format!("dim {d} appears more than once in {dims:?}"),
                ));
            }
        }
        let buf = dispatch::flip("flip", self.storage(), self.layout(), &flip)?;
        let out = DynTensor::from_contiguous_buffer(buf, self.shape())?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        let dims = dims.to_vec();
        Ok(crate::autograd::same_op("flip", self, out, move |g| {
            g.try_flip(&dims)
        }))
    }
}
