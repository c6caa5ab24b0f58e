//! A process-wide pool of large host buffers.
//!
//! Writing a fresh output costs more in page faults than in arithmetic: the operating system
//! maps and zeroes every 4 KiB page on first touch (several times the cost of the additions
//! of an add; BENCHMARKS.md, "Machine ceilings"). The system allocator hands out such fresh
//! pages again and again for buffers of a few hundred KiB too: glibc serves them by `mmap`
//! and gives them back on free, or trims its heap top once more than a few hundred KiB of it
//! are free (a training step's activations and gradients; BENCHMARKS.md, session 12). So
//! buffers from 64 KiB up are recycled:
//!
//! - Buffers of at least [`MIN_POOLED_BYTES`] (64 KiB) are allocated aligned to a cache line
//!   ([`POOLED_ALIGN`], as PyTorch's allocator does; glibc's large blocks start 16 bytes past
//!   one, which makes every 64-byte load of a streaming kernel straddle two lines). That is
//!   why the CPU buffer is a [`HostBuffer`], not a `Vec`.
//! - When a `Storage` whose host buffer is such an allocation is dropped, the allocation goes
//!   into this pool instead of back to the allocator.
//! - Kernels that create an output of at least that size first look for a pooled allocation of
//!   exactly the same byte size (the element type may differ: an `f32` buffer can come back as
//!   an `i32` one). Its old contents are never read: kernels write every element before the
//!   buffer becomes visible.
//! - The pool holds at most [`buffer_pool_capacity`] bytes (default 1 GiB, or
//!   `NAMEDTENSOR_POOL_BYTES`); beyond that the least recently pooled buffers are freed.
//!   [`set_buffer_pool_capacity`]`(0)` frees everything and turns pooling off;
//!   [`release_buffer_pool`] frees everything now (PyTorch's `empty_cache`).
//! - What it holds is bounded by what the process recently used: a buffer that no output has
//!   asked for within [`buffer_pool_idle`] (default 5 s, or `NAMEDTENSOR_POOL_IDLE_MS`) of
//!   being pooled is freed, by a background thread (`namedtensor-pool`, started with the
//!   first pooled buffer, asleep in between), so a process that stops computing, or moves on
//!   to other sizes, gives the memory back within that time.
//! - Under memory pressure it gives memory back at once: on Linux, where `MemAvailable` in
//!   `/proc/meminfo` (read at most every 100 ms) is below twice what the pool would hold, the
//!   pool is cut to half of what is available, oldest buffers first (a dropped buffer larger
//!   than that is freed, not pooled).
//! - Before a kernel runs, [`reserve`] allocates a large output fallibly and pools it, so the
//!   kernel's [`take`] finds it: an allocation the system refuses is an
//!   [`ErrorKind::OutOfMemory`] error of the `try_` form, not an abort.
//! - On Linux, a new allocation of at least 4 MiB is marked `MADV_HUGEPAGE`, so that the
//!   kernel backs it with 2 MiB pages where it can: 512 times fewer faults on first touch, and
//!   fewer TLB misses for every later pass. Kernels write outputs from all pool threads,
//!   so the first touch is parallel as well. Tensors made by the library (`full`, `zeros`,
//!   `rand`, every op's result) get such buffers; a `Vec` handed to `from_vec` keeps its own.

use super::env_setting;
use super::host_buffer::HostBuffer;
use crate::error::{Error, ErrorKind, Result};
use std::alloc::Layout as AllocLayout;
use std::collections::{BTreeMap, VecDeque};
use std::mem::{ManuallyDrop, size_of};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Buffers smaller than this (in bytes) are left to the allocator, whose free lists serve
/// them from memory already mapped.
///
/// ```
/// assert_eq!(namedtensor::storage::MIN_POOLED_BYTES, 1 << 16);
/// ```
pub const MIN_POOLED_BYTES: usize = 1 << 16;

/// New allocations at least this large are advised to use huge pages.
const HUGE_PAGE_BYTES: usize = 4 << 20;

const DEFAULT_CAPACITY: usize = 1 << 30;

static CAPACITY: OnceLock<AtomicUsize> = OnceLock::new();

fn capacity_cell() -> &'static AtomicUsize {
    CAPACITY.get_or_init(|| {
        AtomicUsize::new(env_setting("NAMEDTENSOR_POOL_BYTES").unwrap_or(DEFAULT_CAPACITY))
    })
}

const DEFAULT_IDLE_MS: u64 = 5_000;

static IDLE_MS: OnceLock<AtomicU64> = OnceLock::new();

fn idle_cell() -> &'static AtomicU64 {
    IDLE_MS.get_or_init(|| {
        AtomicU64::new(env_setting("NAMEDTENSOR_POOL_IDLE_MS").unwrap_or(DEFAULT_IDLE_MS))
    })
}

/// One pooled allocation, as made by the global allocator for a [`HostBuffer`]: `bytes` bytes
/// aligned to `align`, pooled at `since`.
struct Entry {
    ptr: NonNull<u8>,
    bytes: usize,
    align: usize,
    since: Instant,
}

// SAFETY: an entry is an owned, unaliased heap allocation; it carries no thread affinity.
unsafe impl Send for Entry {}

impl Entry {
    fn free(self) {
        // SAFETY: the allocation was made by the global allocator with exactly this layout
        // (a `HostBuffer`'s, given up by `into_raw_allocation`).
        unsafe {
            std::alloc::dealloc(
                self.ptr.as_ptr(),
                AllocLayout::from_size_align_unchecked(self.bytes, self.align),
            )
        }
    }
}

/// The pooled entries, indexed two ways so that neither lookup scans the pool (which may
/// hold thousands of entries: its capacity over [`MIN_POOLED_BYTES`]).
///
/// Invariants: `by_age` and `by_size` hold the same sequence numbers; each `by_size` list is
/// in increasing order (most recently pooled last); `bytes` is the sum of the entries' sizes.
struct Pool {
    /// Every entry by the sequence number it was pooled with: oldest first.
    by_age: BTreeMap<u64, Entry>,
    /// The sequence numbers of the entries of each (byte size, alignment).
    by_size: BTreeMap<(usize, usize), VecDeque<u64>>,
    next: u64,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    by_age: BTreeMap::new(),
    by_size: BTreeMap::new(),
    next: 0,
    bytes: 0,
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The alignment of every pooled allocation: a cache line (as PyTorch's allocator aligns),
/// so that a streaming kernel's 64-byte loads and stores never straddle two lines.
///
/// ```
/// assert_eq!(namedtensor::storage::POOLED_ALIGN, 64);
/// ```
pub const POOLED_ALIGN: usize = 64;

/// An empty buffer with room for exactly `n` elements: for [`MIN_POOLED_BYTES`] and more, a
/// pooled allocation of the same byte size if there is one, else a new one, aligned to
/// [`POOLED_ALIGN`] either way; a smaller one from the allocator at `E`'s alignment.
pub fn take<E>(n: usize) -> HostBuffer<E> {
    let bytes = n.saturating_mul(size_of::<E>());
    if bytes < MIN_POOLED_BYTES || size_of::<E>() == 0 {
        return Vec::with_capacity(n).into();
    }
    let found = pool().take_newest(bytes, POOLED_ALIGN);
    if let Some(e) = found {
        let e = ManuallyDrop::new(e);
        // SAFETY: the allocation came from the global allocator with size `bytes`
        // (= n * size_of::<E>()) and alignment POOLED_ALIGN (>= align_of::<E>() for every
        // element type); it is owned by the pool entry we just removed.
        return unsafe { HostBuffer::from_raw_allocation(e.ptr, n, e.align) };
    }
    let v = HostBuffer::<E>::with_capacity_aligned(n, POOLED_ALIGN);
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
pub fn reserve<E>(op: &'static str, n: usize) -> Result<()> {
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
    if pool().holds(bytes, POOLED_ALIGN) {
        return Ok(());
    }
    let v = HostBuffer::<E>::try_with_capacity_aligned(n, POOLED_ALIGN).ok_or_else(fail)?;
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

/// Takes ownership of `v`'s allocation: pools it if it is large, aligned as [`take`] makes
/// them, and fits the capacity; otherwise frees it.
pub fn give<E>(v: HostBuffer<E>) {
    let bytes = v.capacity().saturating_mul(size_of::<E>());
    let cap = capacity_cell().load(Ordering::Relaxed);
    if bytes < MIN_POOLED_BYTES || bytes > cap || v.alignment() != POOLED_ALIGN {
        return;
    }
    let limit = match memory_available() {
        Some(available) => cap.min(pressure_limit(available)),
        None => cap,
    };
    if bytes > limit {
        // Dropping `v` frees it; the pool is cut to the limit as well.
        trim_to(limit);
        return;
    }
    let Some((ptr, bytes, align)) = v.into_raw_allocation() else {
        return;
    };
    pool().push(Entry {
        ptr,
        bytes,
        align,
        since: Instant::now(),
    });
    trim_to(limit);
    start_idle_trimmer();
}

impl Pool {
    fn push(&mut self, e: Entry) {
        let seq = self.next;
        self.next += 1;
        self.bytes += e.bytes;
        self.by_size
            .entry((e.bytes, e.align))
            .or_default()
            .push_back(seq);
        self.by_age.insert(seq, e);
    }

    /// Whether an entry of `bytes` bytes aligned to `align` is pooled.
    fn holds(&self, bytes: usize, align: usize) -> bool {
        self.by_size
            .get(&(bytes, align))
            .is_some_and(|s| !s.is_empty())
    }

    /// Removes and returns the most recently pooled entry of `bytes` bytes aligned to `align`
    /// (the likeliest to be still in cache).
    fn take_newest(&mut self, bytes: usize, align: usize) -> Option<Entry> {
        let seqs = self.by_size.get_mut(&(bytes, align))?;
        let seq = seqs.pop_back()?;
        if seqs.is_empty() {
            self.by_size.remove(&(bytes, align));
        }
        let e = self.by_age.remove(&seq).expect("by_size and by_age agree");
        self.bytes -= e.bytes;
        Some(e)
    }

    /// Removes the oldest entries while `evict` says so.
    fn evict_while(&mut self, mut evict: impl FnMut(&Pool, &Entry) -> bool) -> Vec<Entry> {
        let mut out = Vec::new();
        while let Some((_, e)) = self.by_age.first_key_value() {
            if !evict(self, e) {
                break;
            }
            let (seq, e) = self.by_age.pop_first().expect("checked non-empty");
            let key = (e.bytes, e.align);
            let seqs = self
                .by_size
                .get_mut(&key)
                .expect("by_size and by_age agree");
            // The oldest entry overall is the oldest of its size: first in its list.
            debug_assert_eq!(seqs.front(), Some(&seq));
            seqs.pop_front();
            if seqs.is_empty() {
                self.by_size.remove(&key);
            }
            self.bytes -= e.bytes;
            out.push(e);
        }
        out
    }
}

/// Frees the oldest pooled buffers until the pool holds at most `limit` bytes.
fn trim_to(limit: usize) {
    let evicted = pool().evict_while(|p, _| p.bytes > limit);
    // Freed outside the lock.
    evicted.into_iter().for_each(Entry::free);
}

/// Frees the buffers pooled longer than the idle time ago; returns how long until the
/// oldest remaining one reaches it (the idle time itself when the pool is empty).
fn trim_idle() -> Duration {
    let idle = buffer_pool_idle();
    let now = Instant::now();
    let mut p = pool();
    let evicted = p.evict_while(|_, e| now.duration_since(e.since) >= idle);
    let next = p.by_age.first_key_value().map_or(idle, |(_, e)| {
        idle.saturating_sub(now.duration_since(e.since))
    });
    drop(p);
    evicted.into_iter().for_each(Entry::free);
    next
}

/// Starts, once per process, the thread that frees idle buffers. It sleeps until the oldest
/// buffer would become idle (at least 10 ms, so a zero idle time does not spin). If the thread
/// cannot be started, buffers are still bounded by the capacity and freed under pressure.
fn start_idle_trimmer() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("namedtensor-pool".into())
            .spawn(|| {
                loop {
                    let wait = trim_idle().max(Duration::from_millis(10));
                    std::thread::sleep(wait);
                }
            });
        drop(spawned);
    });
}

/// The most a pool may hold when `available` bytes of memory are left to the system: half of
/// it (so that the pool is never more than what remains available).
///
/// ```ignore
/// assert_eq!(pressure_limit(8 << 30), 4 << 30);
/// ```
fn pressure_limit(available: usize) -> usize {
    available / 2
}

/// The system's available memory in bytes (Linux: `MemAvailable` of `/proc/meminfo`), read
/// at most every 100 ms; `None` where it cannot be read.
fn memory_available() -> Option<usize> {
    static LAST: Mutex<Option<(Instant, Option<usize>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((at, value)) = *last
        && at.elapsed() < Duration::from_millis(100)
    {
        return value;
    }
    let value = read_mem_available();
    *last = Some((Instant::now(), value));
    value
}

#[cfg(target_os = "linux")]
fn read_mem_available() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(not(target_os = "linux"))]
fn read_mem_available() -> Option<usize> {
    None
}

/// Sets the most bytes the buffer pool keeps (see `namedtensor::storage`); buffers beyond it are
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
    trim_to(bytes);
}

/// Frees every pooled buffer now; pooling goes on (`storage::release_buffer_pool` calls it,
/// and releases device memory too).
pub fn release_buffer_pool() {
    trim_to(0);
}

/// How long a pooled buffer may wait for reuse before it is freed (default 5 s, or
/// `NAMEDTENSOR_POOL_IDLE_MS` milliseconds).
///
/// ```
/// assert!(namedtensor::storage::buffer_pool_idle() > std::time::Duration::ZERO
///     || std::env::var("NAMEDTENSOR_POOL_IDLE_MS").is_ok());
/// ```
pub fn buffer_pool_idle() -> Duration {
    Duration::from_millis(idle_cell().load(Ordering::Relaxed))
}

/// Sets [`buffer_pool_idle`]; buffers already pooled longer than that are freed within the
/// background thread's next wake-up (at most the previous idle time).
///
/// ```
/// use namedtensor::storage::{buffer_pool_idle, set_buffer_pool_idle};
/// let before = buffer_pool_idle();
/// set_buffer_pool_idle(std::time::Duration::from_secs(30));
/// assert_eq!(buffer_pool_idle().as_secs(), 30);
/// set_buffer_pool_idle(before);
/// ```
pub fn set_buffer_pool_idle(idle: Duration) {
    let ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    idle_cell().store(ms, Ordering::Relaxed);
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
        let v: HostBuffer<f32> = take(1 << 20);
        let p = v.as_ptr() as usize;
        assert_eq!(p % POOLED_ALIGN, 0);
        give(v);
        // Same bytes and alignment, other element type.
        let w: HostBuffer<i32> = take(1 << 20);
        assert_eq!(w.capacity(), 1 << 20);
        // Another test may have taken it first; when it did not, the allocation is reused.
        let reused = w.as_ptr() as usize == p;
        give(w);
        let small: HostBuffer<u8> = take(10);
        assert!(small.capacity() >= 10);
        let _ = reused;
    }

    /// An entry owning a fresh allocation of `bytes` bytes aligned to `align`.
    fn entry(bytes: usize, align: usize) -> Entry {
        let layout = AllocLayout::from_size_align(bytes, align).unwrap();
        // SAFETY: `bytes` > 0 in every call below.
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) }).unwrap();
        Entry {
            ptr,
            bytes,
            align,
            since: Instant::now(),
        }
    }

    #[test]
    fn the_index_finds_the_newest_of_a_size_and_evicts_the_oldest_overall() {
        let mut p = Pool {
            by_age: BTreeMap::new(),
            by_size: BTreeMap::new(),
            next: 0,
            bytes: 0,
        };
        let (a, b) = (1 << 16, 3 << 16);
        let first_a = entry(a, 4);
        let first_ptr = first_a.ptr;
        p.push(first_a);
        p.push(entry(b, 4));
        let second_a = entry(a, 4);
        let second_ptr = second_a.ptr;
        p.push(second_a);
        p.push(entry(a, 8)); // same size, other alignment: a different key
        assert_eq!(p.bytes, 3 * a + b);
        assert!(p.holds(a, 4) && p.holds(b, 4) && p.holds(a, 8) && !p.holds(b, 8));
        // The most recent of the size comes back first.
        let got = p.take_newest(a, 4).unwrap();
        assert_eq!(got.ptr, second_ptr);
        got.free();
        assert_eq!(p.bytes, 2 * a + b);
        // Eviction goes by age across sizes: the first `a`, then `b`.
        let evicted = p.evict_while(|p, _| p.bytes > a);
        assert_eq!(evicted.len(), 2);
        assert_eq!(evicted[0].ptr, first_ptr);
        assert_eq!(evicted[1].bytes, b);
        evicted.into_iter().for_each(Entry::free);
        assert!(!p.holds(a, 4) && !p.holds(b, 4) && p.holds(a, 8));
        assert!(p.take_newest(a, 4).is_none());
        assert_eq!(p.by_size.len(), 1, "emptied sizes leave the index");
        p.evict_while(|_, _| true).into_iter().for_each(Entry::free);
        assert_eq!((p.bytes, p.by_age.len(), p.by_size.len()), (0, 0, 0));
    }

    #[test]
    fn buffers_from_the_threshold_up_are_pooled() {
        if buffer_pool_capacity() < (4 << 20) {
            return;
        }
        let _serial = POLICY.lock().unwrap_or_else(PoisonError::into_inner);
        // Sizes no other test uses.
        let at = MIN_POOLED_BYTES + 7 * 8;
        give(HostBuffer::<u8>::with_capacity_aligned(at, POOLED_ALIGN));
        give(HostBuffer::<u8>::with_capacity_aligned(
            MIN_POOLED_BYTES - 8,
            POOLED_ALIGN,
        ));
        // A user's vector keeps its own alignment: freed, not pooled.
        give(HostBuffer::from(Vec::<u8>::with_capacity(at + 8)));
        assert!(!holds(at + 8), "a buffer of another alignment was pooled");
        let pooled = holds(at);
        assert!(
            !holds(MIN_POOLED_BYTES - 8),
            "a buffer below the threshold was pooled"
        );
        assert!(
            pooled || memory_available().is_some_and(|b| b < 2 * at),
            "not pooled"
        );
        let v: HostBuffer<u8> = take(at);
        assert_eq!(v.capacity(), at);
        assert!(!holds(at) || !pooled, "take left the entry in the pool");
    }

    /// Serializes the tests that empty the pool or change its idle time.
    static POLICY: Mutex<()> = Mutex::new(());

    /// Whether the pool holds an entry of exactly `bytes` bytes.
    fn holds(bytes: usize) -> bool {
        pool().by_age.values().any(|e| e.bytes == bytes)
    }

    #[test]
    fn idle_buffers_are_freed_by_the_background_thread() {
        if buffer_pool_capacity() < (4 << 20) {
            return; // pooling is off (valgrind runs set NAMEDTENSOR_POOL_BYTES=0)
        }
        let _serial = POLICY.lock().unwrap_or_else(PoisonError::into_inner);
        // A size no other test uses, so that nothing else takes or pools it meanwhile.
        let n = (1 << 20) + 3 * 4096 + 8;
        let before = buffer_pool_idle();
        set_buffer_pool_idle(Duration::from_millis(50));
        give(HostBuffer::<u8>::with_capacity_aligned(n, POOLED_ALIGN));
        let pooled = holds(n);
        let deadline = Instant::now() + Duration::from_secs(10);
        while holds(n) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let freed = !holds(n);
        set_buffer_pool_idle(before);
        assert!(
            pooled || memory_available().is_some_and(|b| b < 2 * n),
            "not pooled"
        );
        assert!(freed, "a buffer idle for 10 s is still pooled");
    }

    #[test]
    fn release_frees_everything_and_pooling_goes_on() {
        if buffer_pool_capacity() < (4 << 20) {
            return;
        }
        let _serial = POLICY.lock().unwrap_or_else(PoisonError::into_inner);
        let n = (1 << 20) + 5 * 4096 + 8;
        give(HostBuffer::<u8>::with_capacity_aligned(n, POOLED_ALIGN));
        release_buffer_pool();
        assert!(!holds(n));
        assert!(buffer_pool_capacity() >= (4 << 20));
    }

    #[test]
    fn the_pool_keeps_at_most_half_of_what_is_available() {
        assert_eq!(pressure_limit(8 << 30), 4 << 30);
        assert_eq!(pressure_limit(0), 0);
        #[cfg(target_os = "linux")]
        assert!(memory_available().is_some_and(|b| b > 0));
    }
}
