//! The CPU thread pool and the rule for when work is split across it.
//!
//! Kernels run on a pool owned by the library (not rayon's global pool), sized by
//! [`set_num_threads`] (default: the number of logical CPUs, or `NAMEDTENSOR_NUM_THREADS`).
//! Work smaller than [`parallel_threshold`] elements stays on the calling thread, where the
//! cost of waking workers would exceed the gain.

use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

static POOL: OnceLock<RwLock<Arc<rayon::ThreadPool>>> = OnceLock::new();
static THRESHOLD: AtomicUsize = AtomicUsize::new(1 << 15);

fn build_pool(threads: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("namedtensor-{i}"))
            .build()
            .expect("the operating system refused to start worker threads"),
    )
}

fn default_threads() -> usize {
    std::env::var("NAMEDTENSOR_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn cell() -> &'static RwLock<Arc<rayon::ThreadPool>> {
    POOL.get_or_init(|| RwLock::new(build_pool(default_threads())))
}

/// The pool kernels run on.
pub(crate) fn pool() -> Arc<rayon::ThreadPool> {
    cell()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Sets the number of threads CPU kernels use (at least 1). Operations already running finish
/// on the previous pool.
///
/// ```
/// namedtensor::set_num_threads(1);
/// assert_eq!(namedtensor::num_threads(), 1);
/// namedtensor::set_num_threads(2);
/// assert_eq!(namedtensor::num_threads(), 2);
/// ```
pub fn set_num_threads(threads: usize) {
    let pool = build_pool(threads);
    *cell().write().unwrap_or_else(PoisonError::into_inner) = pool;
}

/// The number of threads CPU kernels use.
///
/// ```
/// assert!(namedtensor::num_threads() >= 1);
/// ```
pub fn num_threads() -> usize {
    pool().current_num_threads()
}

/// Sets the element count below which an operation runs on the calling thread only.
///
/// ```
/// namedtensor::set_parallel_threshold(1 << 16);
/// assert_eq!(namedtensor::parallel_threshold(), 1 << 16);
/// ```
pub fn set_parallel_threshold(elements: usize) {
    THRESHOLD.store(elements, Ordering::Relaxed);
}

/// The element count below which an operation runs on the calling thread only.
///
/// ```
/// assert!(namedtensor::parallel_threshold() > 0);
/// ```
pub fn parallel_threshold() -> usize {
    THRESHOLD.load(Ordering::Relaxed)
}

/// Splits `rows` rows of `row_len` elements each into contiguous row ranges and calls `f` on
/// each, in parallel when the work is large enough. `f` sees every row exactly once.
#[allow(dead_code)] // first users: the reduction kernels
pub(crate) fn for_each_row_range(rows: usize, row_len: usize, f: impl Fn(Range<usize>) + Sync) {
    let work = rows.saturating_mul(row_len.max(1));
    let pool = pool();
    let threads = pool.current_num_threads();
    if threads <= 1 || rows <= 1 || work < parallel_threshold() {
        f(0..rows);
        return;
    }
    let tasks = (threads * 4).min(rows);
    let per = rows.div_ceil(tasks);
    pool.install(|| {
        (0..tasks).into_par_iter().for_each(|t| {
            let start = t * per;
            let end = (start + per).min(rows);
            if start < end {
                f(start..end);
            }
        })
    });
}

/// Splits `out` (a row-major buffer of `rows` rows of `row_len` elements) into row ranges and
/// calls `f(row_range, chunk)` on each, in parallel when the work is large enough. The chunks
/// are disjoint, so `f` can write its chunk without synchronisation.
#[allow(dead_code)] // the pointwise kernels split by element ranges instead (`for_each_chunk_mut`)
pub(crate) fn for_each_row_chunk<T: Send>(
    out: &mut [T],
    rows: usize,
    row_len: usize,
    f: impl Fn(Range<usize>, &mut [T]) + Sync,
) {
    debug_assert_eq!(out.len(), rows * row_len);
    let pool = pool();
    let threads = pool.current_num_threads();
    if threads <= 1 || rows <= 1 || out.len() < parallel_threshold() || row_len == 0 {
        f(0..rows, out);
        return;
    }
    let tasks = (threads * 4).min(rows);
    let per = rows.div_ceil(tasks);
    pool.install(|| {
        out.par_chunks_mut(per * row_len)
            .enumerate()
            .for_each(|(t, chunk)| {
                let start = t * per;
                f(start..start + chunk.len() / row_len, chunk)
            })
    });
}

/// The number of parallel tasks for `work` elements: 1 below [`parallel_threshold`], else a
/// few per thread (so that a busy core does not hold the others up), each of at least
/// `min_per_task` elements.
pub(crate) fn task_count(work: usize, min_per_task: usize) -> usize {
    let threads = pool().current_num_threads();
    if threads <= 1 || work < parallel_threshold() {
        return 1;
    }
    (threads * 4).min(work / min_per_task.max(1)).max(1)
}

/// Splits `0..n` into `tasks` contiguous ranges of nearly equal length (each a multiple of
/// `align` elements except the last) and calls `f(task_index, range)` on each, on the pool when
/// `tasks > 1`.
pub(crate) fn for_each_split(
    n: usize,
    tasks: usize,
    align: usize,
    f: impl Fn(usize, Range<usize>) + Sync,
) {
    let align = align.max(1);
    let per = n.div_ceil(tasks.max(1)).next_multiple_of(align).max(align);
    let tasks = n.div_ceil(per).max(1);
    if tasks == 1 {
        f(0, 0..n);
        return;
    }
    pool().install(|| {
        (0..tasks)
            .into_par_iter()
            .for_each(|t| f(t, t * per..((t + 1) * per).min(n)))
    });
}

/// Calls `f` on every item, on the pool when there are several, with the calling thread taking
/// the first item itself instead of sleeping until the pool is done. Against `install`, that is
/// one worker fewer to wake and no wake-up of the caller at the end, which matters for work of a
/// few hundred microseconds (measured on a 256³ f32 product split in two: median 0.18–0.20 ms
/// against 0.23–0.26 ms for `gemm`'s own two-thread split run through `install`). Give it at most as many
/// items as the pool has threads: the caller waits for the spawned items rather than steal them.
pub(crate) fn for_each_with_caller<T: Send>(
    items: impl IntoIterator<Item = T>,
    f: impl Fn(T) + Sync,
) {
    let mut items = items.into_iter().peekable();
    let Some(first) = items.next() else {
        return;
    };
    if items.peek().is_none() {
        f(first);
        return;
    }
    let f = &f;
    pool().in_place_scope(|scope| {
        for item in items {
            scope.spawn(move |_| f(item));
        }
        f(first);
    });
}

/// Splits `out` into `tasks` contiguous chunks of nearly equal length (multiples of `align`
/// elements except the last) and calls `f(element_range, chunk)` on each, on the pool when
/// `tasks > 1`. The chunks are disjoint, so `f` can write its chunk without synchronisation.
pub(crate) fn for_each_chunk_mut<T: Send>(
    out: &mut [T],
    tasks: usize,
    align: usize,
    f: impl Fn(Range<usize>, &mut [T]) + Sync,
) {
    let n = out.len();
    let align = align.max(1);
    let per = n.div_ceil(tasks.max(1)).next_multiple_of(align).max(align);
    if per >= n {
        f(0..n, out);
        return;
    }
    pool().install(|| {
        out.par_chunks_mut(per)
            .enumerate()
            .for_each(|(t, chunk)| f(t * per..t * per + chunk.len(), chunk))
    });
}
