//! `tril` and `triu`: copies keeping the lower or upper triangle of the last two dims.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// A contiguous copy keeping the elements on and below diagonal `diagonal` of each matrix
    /// (the last two dims: element `(i, j)` is kept when `j ≤ i + diagonal`) and zeroing the
    /// rest. Panics where [`DynTensor::try_tril`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i32>::ones(&[3, 3]);
    /// assert_eq!(t.tril(0).to_vec(), vec![1, 0, 0, 1, 1, 0, 1, 1, 1]);
    /// assert_eq!(t.tril(-1).to_vec(), vec![0, 0, 0, 1, 0, 0, 1, 1, 0]);
    /// ```
    #[track_caller]
    pub fn tril(&self, diagonal: isize) -> DynTensor<E> {
        or_panic(self.try_tril(diagonal))
    }

    /// [`DynTensor::tril`], or an error for a tensor of rank < 2.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[3]).try_tril(0).is_err());
    /// ```
    pub fn try_tril(&self, diagonal: isize) -> Result<DynTensor<E>> {
        self.triangle("tril", diagonal, true)
    }

    /// A contiguous copy keeping the elements on and above diagonal `diagonal` of each matrix
    /// (element `(i, j)` is kept when `j ≥ i + diagonal`) and zeroing the rest. Panics where
    /// [`DynTensor::try_triu`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[2, 3]);
    /// assert_eq!(t.triu(1).to_vec(), vec![0., 1., 1., 0., 0., 1.]);
    /// ```
    #[track_caller]
    pub fn triu(&self, diagonal: isize) -> DynTensor<E> {
        or_panic(self.try_triu(diagonal))
    }

    /// [`DynTensor::triu`], or an error for a tensor of rank < 2.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::scalar(1.0).try_triu(0).is_err());
    /// ```
    pub fn try_triu(&self, diagonal: isize) -> Result<DynTensor<E>> {
        self.triangle("triu", diagonal, false)
    }

    fn triangle(&self, op: &'static str, diagonal: isize, lower: bool) -> Result<DynTensor<E>> {
        let r = self.dim();
        if r < 2 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!(
                    "expects a tensor of at least 2 dims, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        // Past the corners every row is kept or cleared whole; clamping there keeps `i + k`
        // from overflowing in the kernels for any `diagonal`, even near isize::MAX.
        let (m, n) = (self.shape()[r - 2] as isize, self.shape()[r - 1] as isize);
        let diagonal = diagonal.clamp(-m - 1, n + 1);
        let buf = dispatch::triangle(op, self.storage(), self.layout(), diagonal, lower)?;
        let out = DynTensor::from_contiguous_buffer(buf, self.shape())?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        Ok(crate::autograd::same_op(op, self, out, move |g| {
            g.triangle(op, diagonal, lower)
        }))
    }
}
