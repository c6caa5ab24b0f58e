//! A process-wide pool of large host buffers.
//!
//! Writing a fresh multi-megabyte output costs more in page faults than in arithmetic: the
//! operating system maps and zeroes every 4 KiB page on first touch (several times the cost
//! of the additions of an add; BENCHMARKS.md, "Machine ceilings"). So large buffers are
//! recycled:
//!
//! - When a [`Storage`](crate::Storage) whose host buffer is at least [`MIN_POOLED_BYTES`]
//!   (1 MiB) is dropped, the allocation goes into this pool instead of back to the allocator.
//! - Kernels that create an output of at least that size first look for a pooled allocation of
//!   exactly the same byte size and alignment (the element type may differ: an `f32` buffer
//!   can come back as an `i32` one). Its old contents are never read: kernels write every
//!   element before the buffer becomes visible.
//! - The pool holds at most [`buffer_pool_capacity`] bytes (default 1 GiB, or
//!   `NAMEDTENSOR_POOL_BYTES`); beyond that the least recently pooled buffers are freed.
//!   [`set_buffer_pool_capacity`]`(0)` frees everything and turns pooling off.
//! - Before a kernel runs, [`reserve`] allocates a large output fallibly and pools it, so the
//!   kernel's [`take`] finds it: an allocation the system refuses is an
//!   [`ErrorKind::OutOfMemory`] error of the `try_` form, not an abort.
//! - On Linux, a new allocation of at least 4 MiB is marked `MADV_HUGEPAGE`, so that the
//!   kernel backs it with 2 MiB pages where it can: 512 times fewer faults on first touch, and
//!   fewer TLB misses for every later pass. Kernels write outputs from all pool threads,
//!   so the first touch is parallel as well. Tensors made by the library (`full`, `zeros`,
//!   `rand`, every op's result) get such buffers; a `Vec` handed to `from_vec` keeps its own.

use crate::error::{Error, ErrorKind, Result};
use std::alloc::Layout as AllocLayout;
use std::collections::VecDeque;
use std::mem::{ManuallyDrop, align_of, size_of};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Buffers smaller than this (in bytes) are left to the allocator.
///
/// ```
/// assert_eq!(namedtensor::storage::MIN_POOLED_BYTES, 1 << 20);
/// ```
pub const MIN_POOLED_BYTES: usize = 1 << 20;

/// New allocations at least this large are advised to use huge pages.
const HUGE_PAGE_BYTES: usize = 4 << 20;

const DEFAULT_CAPACITY: usize = 1 << 30;

static CAPACITY: OnceLock<AtomicUsize> = OnceLock::new();

fn capacity_cell() -> &'static AtomicUsize {
    CAPACITY.get_or_init(|| {
        let bytes = std::env::var("NAMEDTENSOR_POOL_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_CAPACITY);
        AtomicUsize::new(bytes)
    })
}

/// One pooled allocation, as made by the global allocator for `Vec`: `bytes` bytes aligned to
/// `align`.
struct Entry {
    ptr: NonNull<u8>,
    bytes: usize,
    align: usize,
}

// SAFETY: an entry is an owned, unaliased heap allocation; it carries no thread affinity.
unsafe impl Send for Entry {}

impl Entry {
    fn free(self) {
        // SAFETY: the allocation was made by the global allocator with exactly this layout
        // (a `Vec` of capacity `bytes / size_of::<E>()` and alignment `align_of::<E>()`).
        unsafe {
            std::alloc::dealloc(
                self.ptr.as_ptr(),
                AllocLayout::from_size_align_unchecked(self.bytes, self.align),
            )
        }
    }
}

#[derive(Default)]
struct Pool {
    /// Oldest first.
    entries: VecDeque<Entry>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    entries: VecDeque::new(),
    bytes: 0,
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An empty `Vec` with room for exactly `n` elements: a pooled allocation of the same byte size
/// and alignment if there is one, else a new one.
pub(crate) fn take<E>(n: usize) -> Vec<E> {
    let bytes = n.saturating_mul(size_of::<E>());
    if bytes < MIN_POOLED_BYTES || size_of::<E>() == 0 {
        return Vec::with_capacity(n);
    }
    let found = {
        let mut p = pool();
        let i = p
            .entries
            .iter()
            .rposition(|e| e.bytes == bytes && e.align == align_of::<E>());
        i.and_then(|i| {
            let e = p.entries.remove(i)?;
            p.bytes -= e.bytes;
            Some(e)
        })
    };
    if let Some(e) = found {
        let e = ManuallyDrop::new(e);
        // SAFETY: the allocation came from the global allocator with size `bytes`
        // (= n * size_of::<E>()) and alignment align_of::<E>(); it is owned by the pool
        // entry we just removed, and length 0 makes no claim about its contents.
        return unsafe { Vec::from_raw_parts(e.ptr.as_ptr().cast::<E>(), 0, n) };
    }
    let v: Vec<E> = Vec::with_capacity(n);
    advise_huge_pages(v.as_ptr().cast::<u8>(), bytes);
    v
}

/// Makes sure that an output of `n` elements of `E` can be allocated, so that a `try_` form
/// returns an [`ErrorKind::OutOfMemory`] error where the allocator would abort the process.
///
/// A large allocation (at least [`MIN_POOLED_BYTES`]) is attempted fallibly and handed to the
/// pool, where the kernel's [`take`] finds it: nothing is allocated twice (unless it exceeds
/// the pool's capacity, where the second allocation costs a system call next to the
/// gigabyte-sized fill). Smaller ones are left to the kernel: failing them means the process
/// is out of memory anyway.
///
/// ```ignore
/// assert!(reserve::<f64>("full", 1 << 60).is_err());
/// ```
pub(crate) fn reserve<E>(op: &'static str, n: usize) -> Result<()> {
    let size = size_of::<E>();
    let fail = || {
        Error::new(
            ErrorKind::OutOfMemory,
            op,
            format!(
                "cannot allocate {n} elements of {size} bytes ({}) on the host",
                human_bytes(n as f64 * size as f64)
            ),
        )
    };
    let bytes = n
        .checked_mul(size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(fail)?;
    if bytes < MIN_POOLED_BYTES || size == 0 {
        return Ok(());
    }
    let pooled = pool()
        .entries
        .iter()
        .any(|e| e.bytes == bytes && e.align == align_of::<E>());
    if pooled {
        return Ok(());
    }
    let mut v: Vec<E> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| fail())?;
    advise_huge_pages(v.as_ptr().cast::<u8>(), bytes);
    give(v);
    Ok(())
}

/// `bytes` with a binary unit, for messages.
fn human_bytes(bytes: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

/// Takes ownership of `v`'s allocation: pools it if it is large and fits the capacity,
/// otherwise frees it.
pub(crate) fn give<E>(v: Vec<E>) {
    let bytes = v.capacity().saturating_mul(size_of::<E>());
    let cap = capacity_cell().load(Ordering::Relaxed);
    if bytes < MIN_POOLED_BYTES || bytes > cap || size_of::<E>() == 0 {
        return;
    }
    let mut v = ManuallyDrop::new(v);
    // Element types are plain values without drop glue; clearing only resets the length.
    v.clear();
    let entry = Entry {
        // SAFETY: a `Vec` with non-zero capacity of a non-zero-sized type has a non-null pointer.
        ptr: unsafe { NonNull::new_unchecked(v.as_mut_ptr().cast::<u8>()) },
        bytes,
        align: align_of::<E>(),
    };
    let mut evicted = Vec::new();
    {
        let mut p = pool();
        p.bytes += bytes;
        p.entries.push_back(entry);
        while p.bytes > cap {
            let e = p.entries.pop_front().expect("pool bytes count its entries");
            p.bytes -= e.bytes;
            evicted.push(e);
        }
    }
    // Freed outside the lock.
    evicted.into_iter().for_each(Entry::free);
}

/// Sets the most bytes the buffer pool keeps (see [`crate::storage`]); buffers beyond it are
/// freed, oldest first. `0` frees every pooled buffer and stops pooling.
///
/// ```
/// use namedtensor::storage::{buffer_pool_bytes, buffer_pool_capacity, set_buffer_pool_capacity};
/// let before = buffer_pool_capacity();
/// set_buffer_pool_capacity(0);
/// assert_eq!(buffer_pool_bytes(), 0);
/// set_buffer_pool_capacity(before);
/// ```
pub fn set_buffer_pool_capacity(bytes: usize) {
    capacity_cell().store(bytes, Ordering::Relaxed);
    let mut evicted = Vec::new();
    {
        let mut p = pool();
        while p.bytes > bytes {
            let e = p.entries.pop_front().expect("pool bytes count its entries");
            p.bytes -= e.bytes;
            evicted.push(e);
        }
    }
    evicted.into_iter().for_each(Entry::free);
}

/// The most bytes the buffer pool keeps.
///
/// ```
/// assert!(namedtensor::storage::buffer_pool_capacity() > 0 || std::env::var("NAMEDTENSOR_POOL_BYTES").is_ok());
/// ```
pub fn buffer_pool_capacity() -> usize {
    capacity_cell().load(Ordering::Relaxed)
}

/// The bytes the buffer pool holds now.
///
/// ```
/// use namedtensor::DynTensor;
/// let t = DynTensor::<f32>::zeros(&[1 << 19]); // 2 MiB
/// drop(t);
/// // the buffer was pooled, unless pooling is turned off
/// assert!(namedtensor::storage::buffer_pool_bytes() >= (1 << 21)
///     || namedtensor::storage::buffer_pool_capacity() < (1 << 21));
/// ```
pub fn buffer_pool_bytes() -> usize {
    pool().bytes
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    if bytes < HUGE_PAGE_BYTES {
        return;
    }
    // madvise needs a page-aligned start; the advice covers whole pages inside the buffer.
    const PAGE: usize = 4096;
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + bytes) & !(PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation we own; MADV_HUGEPAGE only changes how
        // the kernel backs those pages, never their contents or validity. Failure (e.g. a
        // kernel without transparent huge pages) is harmless and ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *const u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_of_equal_size_and_alignment_are_reused() {
        let v: Vec<f32> = take(1 << 20);
        let p = v.as_ptr() as usize;
        give(v);
        // Same bytes and alignment, other element type.
        let w: Vec<i32> = take(1 << 20);
        assert_eq!(w.capacity(), 1 << 20);
        // Another test may have taken it first; when it did not, the allocation is reused.
        let reused = w.as_ptr() as usize == p;
        give(w);
        let small: Vec<u8> = take(10);
        assert!(small.capacity() >= 10);
        let _ = reused;
    }
}
