//! Reading a tensor's elements as a Rust slice without copying them: `as_slice` borrows them
//! from the storage when the tensor is contiguous in host memory, `with_contiguous` falls
//! back to a row-major copy otherwise.
//!
//! # Invariants
//! - A borrowed slice holds the tensor's elements in row-major order of its shape, exactly
//!   what `to_vec` would return, and no other element of the storage.
//! - While the borrow ([`ElementsRef`]) lives, writes into the storage fail with
//!   [`ErrorKind::Borrowed`](crate::ErrorKind) (see `storage/elements_ref.rs`); nothing
//!   blocks, so a write in the closure given to `with_contiguous` is an error, not a deadlock.

use super::DynTensor;
use crate::dtype::Element;
use crate::error::Result;
use crate::storage::ElementsRef;
use crate::tensor::or_panic;

impl<E: Element> DynTensor<E> {
    /// The elements as a borrowed slice in row-major order, without copying: `Some` when the
    /// tensor is contiguous (a row-major run of its storage, at any offset) and in host
    /// memory, `None` otherwise (see [`DynTensor::with_contiguous`] for any tensor). Writes
    /// into the storage fail with [`ErrorKind::Borrowed`](crate::ErrorKind) while the slice
    /// is alive.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<i32>::arange(0, 6, 1).view(&[2, 3]);
    /// assert_eq!(&*t.as_slice().unwrap(), &[0, 1, 2, 3, 4, 5]);
    /// assert_eq!(&*t.narrow(0, 1, 1).as_slice().unwrap(), &[3, 4, 5]); // at an offset
    /// assert!(t.t().as_slice().is_none()); // transposed: not row-major
    /// let total: i32 = t.as_slice().unwrap().iter().sum();
    /// assert_eq!(total, 15);
    /// ```
    pub fn as_slice(&self) -> Option<ElementsRef<'_, E>> {
        if !self.is_contiguous() {
            return None;
        }
        // An empty view may sit at any offset, even past the storage's end.
        let start = if self.numel() == 0 {
            0
        } else {
            self.storage_offset()
        };
        self.storage.borrow_elements(start, self.numel())
    }

    /// Runs `f` on the elements in row-major order: borrowed from the storage when the tensor
    /// is contiguous in host memory ([`DynTensor::as_slice`]), otherwise a contiguous copy
    /// made for the call (copied from the device for a GPU tensor). Panics where
    /// [`DynTensor::try_with_contiguous`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.with_contiguous(|s| s.to_vec()), vec![1.0, 2.0, 3.0, 4.0]); // borrowed
    /// assert_eq!(t.t().with_contiguous(|s| s.to_vec()), vec![1.0, 3.0, 2.0, 4.0]); // copied
    /// ```
    #[track_caller]
    pub fn with_contiguous<R>(&self, f: impl FnOnce(&[E]) -> R) -> R {
        or_panic(self.try_with_contiguous(f))
    }

    /// [`DynTensor::with_contiguous`], or an error when the elements cannot be read (a device
    /// that fails to copy them back).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<u8>::ones(&[3]).expand(&[2, 3]);
    /// assert_eq!(t.try_with_contiguous(|s| s.len()).unwrap(), 6);
    /// ```
    pub fn try_with_contiguous<R>(&self, f: impl FnOnce(&[E]) -> R) -> Result<R> {
        match self.as_slice() {
            Some(s) => Ok(f(&s)),
            None => Ok(f(&self.try_to_vec()?)),
        }
    }
}
