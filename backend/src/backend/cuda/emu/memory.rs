//! Emulated device memory: host allocations that look like device allocations.
//!
//! # Invariants
//! - A device pointer is the host address of the first byte of an allocation's payload, as a
//!   `u64`; kernels and the stand-in for cuBLAS dereference it on the host.
//! - Every allocation is `[REDZONE][payload][REDZONE]`: the red zones hold [`REDZONE_BYTE`] and
//!   are checked after every launch that was passed the allocation and when it is freed, so a
//!   kernel that writes past either end fails the stream instead of corrupting the heap.
//!   Under AddressSanitizer the red zones are also poisoned (`asan.rs`), so a kernel's read
//!   past either end is reported too.
//! - A new payload holds [`POISON_BYTE`] in every byte (NaN for every float type, -1 for every
//!   signed integer, `true` for bool), so an element no kernel wrote shows in the results.
//! - Memory is freed on its stream, after all work issued before the free (as `cuMemFreeAsync`
//!   does): a queued launch never sees freed memory.

use super::asan;
use super::stream::CudaStream;
use std::alloc::{Layout, alloc, dealloc};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// The byte every new allocation's payload holds.
pub const POISON_BYTE: u8 = 0xff;
/// The byte of the guard regions around a payload.
pub const REDZONE_BYTE: u8 = 0xa5;
/// Bytes of guard on each side of a payload (also the payload's alignment).
pub const REDZONE: usize = 64;

/// One host allocation standing in for device memory.
#[derive(Debug, Clone, Copy)]
pub struct Allocation {
    /// The address of the payload (the device pointer).
    pub ptr: u64,
    /// Payload bytes.
    pub len: usize,
}

impl Allocation {
    fn layout(len: usize) -> Option<Layout> {
        let total = len.checked_add(2 * REDZONE)?;
        Layout::from_size_align(total, REDZONE).ok()
    }

    /// A poisoned payload of `len` bytes between two red zones, or `None` if the host is out
    /// of memory (or `len` is absurd).
    pub fn new(len: usize) -> Option<Allocation> {
        let layout = Allocation::layout(len)?;
        // SAFETY: the layout has a non-zero size (two red zones).
        let base = unsafe { alloc(layout) };
        if base.is_null() {
            return None;
        }
        // SAFETY: `base` is a fresh allocation of `len + 2 * REDZONE` bytes.
        unsafe {
            std::ptr::write_bytes(base, REDZONE_BYTE, REDZONE);
            std::ptr::write_bytes(base.add(REDZONE), POISON_BYTE, len);
            std::ptr::write_bytes(base.add(REDZONE + len), REDZONE_BYTE, REDZONE);
            asan::poison(base, REDZONE);
            asan::poison(base.add(REDZONE + len), REDZONE);
        }
        Some(Allocation {
            ptr: base as u64 + REDZONE as u64,
            len,
        })
    }

    /// Whether both red zones are intact.
    ///
    /// # Safety
    /// The allocation must not have been freed.
    pub unsafe fn redzones_intact(&self) -> bool {
        let payload = self.ptr as *const u8;
        // SAFETY: the red zones lie inside the live allocation (caller's contract).
        let (before, after) = unsafe {
            (
                std::slice::from_raw_parts(payload.sub(REDZONE), REDZONE),
                std::slice::from_raw_parts(payload.add(self.len), REDZONE),
            )
        };
        before.iter().chain(after).all(|&b| b == REDZONE_BYTE)
    }

    /// Frees the allocation.
    ///
    /// # Safety
    /// It must be live, and nothing may use it afterwards.
    pub unsafe fn free(self) {
        let layout = Allocation::layout(self.len).expect("checked when allocated");
        // SAFETY: `ptr - REDZONE` is the base returned by `alloc` with this layout.
        unsafe {
            let base = (self.ptr as *mut u8).sub(REDZONE);
            asan::unpoison(base, layout.size());
            dealloc(base, layout)
        }
    }
}

/// Device memory for `len` elements of `T` (the backend uses `T = u8`).
pub struct CudaSlice<T> {
    pub(super) alloc: Allocation,
    pub(super) len: usize,
    pub(super) stream: Arc<CudaStream>,
    pub(super) marker: PhantomData<*const T>,
}

// SAFETY: the slice owns its allocation exclusively (like a `Box<[T]>`); every access goes
// through the stream, which serialises work under its lock.
unsafe impl<T> Send for CudaSlice<T> {}
// SAFETY: shared access only reads the address and length; the memory is reached through the
// stream.
unsafe impl<T> Sync for CudaSlice<T> {}

impl<T> Drop for CudaSlice<T> {
    fn drop(&mut self) {
        self.stream.free(self.alloc);
    }
}

fn byte_bounds(bounds: impl RangeBounds<usize>, len: usize) -> (usize, usize) {
    let start = match bounds.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s + 1,
        Bound::Unbounded => 0,
    };
    let end = match bounds.end_bound() {
        Bound::Included(&e) => e + 1,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(
        start <= end && end <= len,
        "range {start}..{end} of a device slice of {len}"
    );
    (start, end)
}

impl<T> CudaSlice<T> {
    /// Elements `bounds`, read-only (panics outside the slice, as cudarc does).
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> CudaView<'_, T> {
        let (start, end) = byte_bounds(bounds, self.len);
        CudaView {
            ptr: self.alloc.ptr + (start * std::mem::size_of::<T>()) as u64,
            len: end - start,
            marker: PhantomData,
        }
    }

    /// Elements `bounds`, writable (panics outside the slice, as cudarc does).
    pub fn slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        let (start, end) = byte_bounds(bounds, self.len);
        CudaViewMut {
            ptr: self.alloc.ptr + (start * std::mem::size_of::<T>()) as u64,
            len: end - start,
            marker: PhantomData,
        }
    }

    /// The first `len` elements of `S` of the memory, read-only; `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S` where they are read (as with cudarc).
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        let fits =
            len.checked_mul(std::mem::size_of::<S>())? <= self.len * std::mem::size_of::<T>();
        fits.then_some(CudaView {
            ptr: self.alloc.ptr,
            len,
            marker: PhantomData,
        })
    }

    /// The first `len` elements of `S` of the memory, writable; `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S` where they are read (as with cudarc).
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        let fits =
            len.checked_mul(std::mem::size_of::<S>())? <= self.len * std::mem::size_of::<T>();
        fits.then_some(CudaViewMut {
            ptr: self.alloc.ptr,
            len,
            marker: PhantomData,
        })
    }
}

/// A read-only range of a [`CudaSlice`].
pub struct CudaView<'a, T> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    marker: PhantomData<&'a T>,
}

/// A writable range of a [`CudaSlice`].
pub struct CudaViewMut<'a, T> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    marker: PhantomData<&'a mut T>,
}

/// The device pointer of memory that is read (cudarc's trait of the same name; the second
/// value is cudarc's synchronisation guard, which the emulator does not need).
pub trait DevicePtr<T> {
    /// The device address, for use on `stream`.
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, ());
}

/// The device pointer of memory that is written.
pub trait DevicePtrMut<T> {
    /// The device address, for use on `stream`.
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, ());
}

impl<T> DevicePtr<T> for CudaSlice<T> {
    fn device_ptr<'a>(&'a self, _stream: &'a CudaStream) -> (u64, ()) {
        (self.alloc.ptr, ())
    }
}

impl<T> DevicePtrMut<T> for CudaSlice<T> {
    fn device_ptr_mut<'a>(&'a mut self, _stream: &'a CudaStream) -> (u64, ()) {
        (self.alloc.ptr, ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_allocations_are_poisoned_between_intact_redzones() {
        let a = Allocation::new(10).unwrap();
        assert_eq!(a.ptr % REDZONE as u64, 0);
        // SAFETY: `a` is live; its payload is 10 bytes.
        unsafe {
            let payload = std::slice::from_raw_parts(a.ptr as *const u8, 10);
            assert!(payload.iter().all(|&b| b == POISON_BYTE));
            assert!(a.redzones_intact());
            let payload = a.ptr as *const u8;
            if asan::active() {
                // Kernels (instrumented) may touch the payload, never the red zones.
                assert_eq!(asan::is_poisoned(payload), Some(false));
                assert_eq!(asan::is_poisoned(payload.add(9)), Some(false));
                assert_eq!(asan::is_poisoned(payload.add(10)), Some(true));
                assert_eq!(asan::is_poisoned(payload.add(10 + REDZONE - 1)), Some(true));
                assert_eq!(asan::is_poisoned(payload.sub(1)), Some(true));
                assert_eq!(asan::is_poisoned(payload.sub(REDZONE)), Some(true));
            } else {
                assert_eq!(asan::is_poisoned(payload), None);
            }
            *(a.ptr as *mut u8).add(10) = 0; // one past the end
            assert!(!a.redzones_intact());
            *(a.ptr as *mut u8).add(10) = REDZONE_BYTE;
            *(a.ptr as *mut u8).sub(1) = 0; // one before the start
            assert!(!a.redzones_intact());
            *(a.ptr as *mut u8).sub(1) = REDZONE_BYTE;
            assert!(a.redzones_intact());
            a.free();
        }
    }

    #[test]
    fn empty_allocations_still_have_redzones() {
        let a = Allocation::new(0).unwrap();
        // SAFETY: `a` is live.
        unsafe {
            assert!(a.redzones_intact());
            a.free();
        }
    }
}
