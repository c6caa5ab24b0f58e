//! [`ElementsRef`]: a borrowed slice of a host storage's elements, read without a copy and
//! without holding the storage's lock.
//!
//! # Invariants
//! - An `ElementsRef` exists only for a host (`Buffer::Cpu`) storage and a range inside it;
//!   it holds a handle to the storage, so the buffer outlives it.
//! - From its creation to its drop the storage's borrow count is positive. The count is
//!   raised while the shared lock is held, and every write takes the exclusive lock and
//!   then refuses to run while the count is positive (`Storage::write`), so no element in
//!   the range changes, and the buffer is neither moved nor reallocated, while it is alive.
//!   Readers are unaffected: they take the shared lock as usual.

use super::{Buffer, Storage};
use crate::dtype::Element;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::Ordering;

/// A contiguous run of a tensor's elements, borrowed from its storage without copying (see
/// `DynTensor::as_slice`); it dereferences to `&[E]`.
///
/// While it is alive, writes into the storage (through any view, on any thread) fail with
/// [`ErrorKind::Borrowed`](crate::ErrorKind), as a `RefCell` refuses a `borrow_mut`; reads
/// are not affected.
///
/// ```
/// use namedtensor::{DynTensor, ErrorKind};
/// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
/// let row = t.select(0, 1);
/// {
///     let s = row.as_slice().unwrap();
///     assert_eq!(&*s, &[3.0, 4.0]);
///     assert_eq!(t.sum().item(), 10.0); // reading goes on
///     assert_eq!(t.try_fill_(0.0).unwrap_err().kind(), ErrorKind::Borrowed);
/// }
/// t.fill_(0.0); // the borrow has ended
/// ```
pub struct ElementsRef<'a, E: Element> {
    storage: Storage<E>,
    ptr: *const E,
    len: usize,
    _tensor: PhantomData<&'a [E]>,
}

impl<E: Element> Storage<E> {
    /// The elements `start..start + len` borrowed as a slice, or `None` for a storage that is
    /// not in host memory or a range outside it.
    #[doc(hidden)]
    pub fn borrow_elements(&self, start: usize, len: usize) -> Option<ElementsRef<'_, E>> {
        let guard = self.read();
        #[cfg_attr(not(feature = "cuda"), allow(irrefutable_let_patterns))]
        let Buffer::Cpu(v) = &*guard else {
            return None;
        };
        let range = v.get(start..start.checked_add(len)?)?;
        // Raised under the shared lock: no write is running, and every later write sees it.
        self.shared.borrows.fetch_add(1, Ordering::Relaxed);
        Some(ElementsRef {
            storage: self.clone(),
            ptr: range.as_ptr(),
            len,
            _tensor: PhantomData,
        })
    }
}

// SAFETY: an `ElementsRef` is a shared view of `E`s plus a storage handle (itself Send and
// Sync) whose drop is an atomic decrement; sending or sharing it across threads is sending or
// sharing `&[E]`, which needs `E: Sync`.
unsafe impl<E: Element + Sync> Send for ElementsRef<'_, E> {}
// SAFETY: as above: `&ElementsRef` only gives out `&[E]`.
unsafe impl<E: Element + Sync> Sync for ElementsRef<'_, E> {}

impl<E: Element> Deref for ElementsRef<'_, E> {
    type Target = [E];

    fn deref(&self) -> &[E] {
        // SAFETY: `ptr..ptr + len` was a slice of the host buffer when the borrow began; the
        // buffer lives as long as `self.storage` does, and while the borrow count is positive
        // (until `drop` below) no write runs and the buffer is not moved or reallocated
        // (module invariants), so the elements are initialised and not mutated meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<E: Element> Drop for ElementsRef<'_, E> {
    fn drop(&mut self) {
        // Release: the reads through this borrow happen before a write that sees the count
        // fall (its Acquire load in `Storage::write`).
        self.storage.shared.borrows.fetch_sub(1, Ordering::Release);
    }
}

impl<E: Element + std::fmt::Debug> std::fmt::Debug for ElementsRef<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<E: Element> AsRef<[E]> for ElementsRef<'_, E> {
    fn as_ref(&self) -> &[E] {
        self
    }
}
