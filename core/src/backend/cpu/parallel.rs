//! The CPU thread pool and the rule for when work is split across it.
//!
//! Kernels run on a pool owned by the library (not rayon's global pool), sized by
//! [`set_num_threads`] (default: the number of logical CPUs, or `NAMEDTENSOR_NUM_THREADS`).
//! Work smaller than [`parallel_threshold`] elements stays on the calling thread, where the
//! cost of waking workers would exceed the gain. Larger work is split into tasks that the
//! calling thread runs too ([`for_each_with_caller`]): it takes the first task and every task
//! no worker has claimed yet, instead of sleeping until the pool is done (on a 2-core virtual
//! machine, waking the caller back cost more than the split of a 32 Ki-element add gained;
//! BENCHMARKS.md, session 12).

use super::env_setting;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// How long [`for_each_with_caller`]'s caller spins for the workers' last items before it parks.
const CALLER_SPIN: Duration = Duration::from_micros(200);

/// How long a worker that has run its share of a [`for_each_with_caller`] call stays awake,
/// spinning, to join the next call at once ([`spin_for_calls`]) before it returns to the pool
/// (where it sleeps until woken, tens of microseconds later on a virtual machine).
const WORKER_SPIN: Duration = Duration::from_micros(200);

/// Workers spinning in [`spin_for_calls`] (at most `num_threads() − 1`, so that with the
/// caller they never outnumber the threads the pool was given), and how many of them no call
/// has reserved. A spinner leaves only by taking one of the unreserved places, so every
/// reservation has a spinner that will take it.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);
static UNRESERVED: AtomicUsize = AtomicUsize::new(0);

/// Calls that reserved spinners, each with how many of its reservations no spinner has
/// taken yet, and the sum of those counts (read by spinners without the lock).
static WAITING: Mutex<Vec<Waiting>> = Mutex::new(Vec::new());
static PENDING: AtomicUsize = AtomicUsize::new(0);

struct Waiting {
    state: Arc<Claims>,
    run: RunPtr,
    reserved: usize,
}

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
    env_setting("NAMEDTENSOR_NUM_THREADS")
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn cell() -> &'static RwLock<Arc<rayon::ThreadPool>> {
    POOL.get_or_init(|| RwLock::new(build_pool(default_threads())))
}

/// The pool kernels run on.
pub fn pool() -> Arc<rayon::ThreadPool> {
    cell()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Sets the number of threads CPU kernels use (at least 1: 0 counts as 1), as PyTorch's
/// `torch.set_num_threads`. Operations already running finish on the previous pool.
///
/// The kernels run on a pool of the library's own, not on rayon's global pool, so this does
/// not change the threads of the caller's own rayon work, nor does rayon's
/// `RAYON_NUM_THREADS` change the library's. Until it is first called, the pool has the
/// number of threads that `NAMEDTENSOR_NUM_THREADS` gives (a positive integer, read once, at
/// the pool's first use; PyTorch reads `OMP_NUM_THREADS` likewise), or else one per logical
/// CPU (`std::thread::available_parallelism`). Work below [`parallel_threshold`] elements
/// stays on the calling thread whatever the count.
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

/// The number of threads CPU kernels use: the last [`set_num_threads`], or else
/// `NAMEDTENSOR_NUM_THREADS`, or else one per logical CPU (see [`set_num_threads`]).
///
/// ```
/// assert!(namedtensor::num_threads() >= 1);
/// ```
pub fn num_threads() -> usize {
    if ON_THIS_THREAD.get() {
        return 1;
    }
    pool().current_num_threads()
}

thread_local! {
    /// Whether kernels called on this thread run on it alone (inside [`on_this_thread`]).
    static ON_THIS_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every kernel it calls on the calling thread alone ([`num_threads`] is 1
/// inside): for work that is itself one of several items run in parallel, whose kernels are
/// too small to gain from splitting again.
///
/// ```
/// use namedtensor::{DynTensor, num_threads, on_this_thread, set_num_threads};
/// set_num_threads(2);
/// let x = DynTensor::<f32>::ones(&[1000, 1000]);
/// let sum = on_this_thread(|| {
///     assert_eq!(num_threads(), 1);
///     x.sum().item()                  // summed on this thread alone
/// });
/// assert_eq!(sum, 1e6);
/// assert_eq!(num_threads(), 2);
/// ```
pub fn on_this_thread<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the flag, also when `f` unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON_THIS_THREAD.set(self.0);
        }
    }
    let _restore = Restore(ON_THIS_THREAD.replace(true));
    f()
}

/// `f` over `items` (in order), on the pool with each call inside [`on_this_thread`]: the items
/// are split between the threads rather than each item's kernels. On one thread, and inside
/// `on_this_thread`, the calls run one after the other on the calling thread.
pub fn map_on_threads<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 || num_threads() <= 1 {
        return items.into_iter().map(f).collect();
    }
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    for_each_with_caller(items.into_iter().enumerate(), |(i, item)| {
        let r = on_this_thread(|| f(item));
        *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .expect("for_each_with_caller runs every item")
        })
        .collect()
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
#[inline(always)]
pub fn for_each_row_range(rows: usize, row_len: usize, f: impl Fn(Range<usize>) + Sync) {
    row_ranges(rows, row_len, &f)
}

/// [`for_each_row_range`] through `&dyn Fn` (compiled once; see [`for_each_chunk_mut`]).
fn row_ranges(rows: usize, row_len: usize, f: &(dyn Fn(Range<usize>) + Sync)) {
    let work = rows.saturating_mul(row_len.max(1));
    // The threshold first: reading the pool takes a lock (a fifth of a small reduction).
    if rows <= 1 || work < parallel_threshold() {
        return f(0..rows);
    }
    let threads = num_threads();
    if threads <= 1 {
        return f(0..rows);
    }
    let tasks = (threads * 4).min(rows);
    let per = rows.div_ceil(tasks);
    on_pool(tasks, &|t| {
        let start = t * per;
        let end = (start + per).min(rows);
        if start < end {
            f(start..end);
        }
    });
}

/// Calls `f(t)` for every `t < tasks`, on the pool and the calling thread.
///
/// The closure is passed as `&dyn Fn`, so the job machinery is compiled once for the
/// whole library rather than once per kernel (rayon's was a fifth of the library's code); the
/// indirect call is made once per task, never per element.
fn on_pool(tasks: usize, f: &(dyn Fn(usize) + Sync)) {
    for_each_with_caller(0..tasks, f);
}

/// Calls `f(t, chunk)` for the chunks of `out` of `per` elements, on the pool and the calling
/// thread (see [`on_pool`] for why `f` is a `&dyn Fn`).
fn chunks_on_pool<T: Send>(out: &mut [T], per: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    for_each_with_caller(out.chunks_mut(per).enumerate(), |(t, chunk)| f(t, chunk));
}

/// Splits `out` (a row-major buffer of `rows` rows of `row_len` elements) into row ranges and
/// calls `f(row_range, chunk)` on each, in parallel when the work is large enough. The chunks
/// are disjoint, so `f` can write its chunk without synchronisation.
pub fn for_each_row_chunk<T: Send>(
    out: &mut [T],
    rows: usize,
    row_len: usize,
    f: impl Fn(Range<usize>, &mut [T]) + Sync,
) {
    debug_assert_eq!(out.len(), rows * row_len);
    // One `dyn` closure for every path, as in `for_each_chunk_mut`.
    let f: &(dyn Fn(Range<usize>, &mut [T]) + Sync) = &f;
    // The cheap tests first: reading the pool takes a lock.
    if rows <= 1 || out.len() < parallel_threshold() || row_len == 0 {
        return f(0..rows, out);
    }
    let threads = num_threads();
    if threads <= 1 {
        return f(0..rows, out);
    }
    let tasks = (threads * 4).min(rows);
    let per = rows.div_ceil(tasks);
    chunks_on_pool(out, per * row_len, &|t, chunk| {
        let start = t * per;
        f(start..start + chunk.len() / row_len, chunk)
    });
}

/// The number of parallel tasks for `work` elements: 1 below [`parallel_threshold`], else a
/// few per thread (so that a busy core does not hold the others up), each of at least
/// `min_per_task` elements.
pub fn task_count(work: usize, min_per_task: usize) -> usize {
    // The threshold first: reading the pool takes a lock (a fifth of a small reduction).
    if work < parallel_threshold() {
        return 1;
    }
    let threads = num_threads();
    if threads <= 1 {
        return 1;
    }
    (threads * 4).min(work / min_per_task.max(1)).max(1)
}

/// Splits `0..n` into `tasks` contiguous ranges of nearly equal length (each a multiple of
/// `align` elements except the last) and calls `f(task_index, range)` on each, on the pool when
/// `tasks > 1`.
#[inline(always)]
pub fn for_each_split(
    n: usize,
    tasks: usize,
    align: usize,
    f: impl Fn(usize, Range<usize>) + Sync,
) {
    split_in_ranges(n, tasks, align, &f)
}

/// [`for_each_split`] through `&dyn Fn` (compiled once; see [`for_each_chunk_mut`]).
fn split_in_ranges(n: usize, tasks: usize, align: usize, f: &(dyn Fn(usize, Range<usize>) + Sync)) {
    let align = align.max(1);
    let per = n.div_ceil(tasks.max(1)).next_multiple_of(align).max(align);
    let tasks = n.div_ceil(per).max(1);
    let run: &(dyn Fn(usize) + Sync) = &|t| f(t, t * per..((t + 1) * per).min(n));
    if tasks == 1 {
        return run(0);
    }
    on_pool(tasks, run);
}

/// Splits `a` and `b`, which hold the same number of units of `a_unit` and `b_unit` elements
/// (both > 0), into runs of whole units and calls `f(units, a_run, b_run)` on each, in
/// parallel when `a` is large enough ([`task_count`]): kernels with two outputs per unit (a
/// pooling window's value and tap, a normalised lane and its statistic).
pub fn for_each_unit_run_pair<A: Send, B: Send>(
    a: &mut [A],
    a_unit: usize,
    b: &mut [B],
    b_unit: usize,
    f: impl Fn(Range<usize>, &mut [A], &mut [B]) + Sync,
) {
    let units = a.len() / a_unit;
    debug_assert_eq!(b.len(), units * b_unit);
    if units == 0 {
        return;
    }
    let per = units.div_ceil(task_count(a.len(), 1 << 14).min(units));
    let runs = a.chunks_mut(per * a_unit).zip(b.chunks_mut(per * b_unit));
    for_each_with_caller(runs.enumerate(), |(t, (a, b))| {
        f(t * per..t * per + a.len() / a_unit, a, b)
    });
}

/// Calls `f` on every item, on the pool when there are several, with the calling thread taking
/// part instead of sleeping until the pool is done. The caller counts as one of the pool's
/// threads: it asks `min(threads, items) − 1` workers to help, and it and they claim items
/// in order from a shared counter until none is left (so at most [`num_threads`] threads
/// run items, as `set_num_threads` promises, and more items than threads balance the load).
/// Then the caller waits (spinning for `CALLER_SPIN`, then parked) for the items workers
/// did claim. So a worker that wakes late (tens of microseconds on a virtual machine) or not
/// at all (its core busy with another process) costs at most its share of the work, never a
/// wait for it to wake. Workers that ran a share stay awake for `WORKER_SPIN`
/// (`spin_for_calls`): a call reserves as many of them as it wants helpers (`WAITING`),
/// and spawns jobs on the pool for the rest, so that a training step's products, a few tens
/// of microseconds apart, find their helpers awake, and a reserved spinner always comes
/// (items may wait for each other). Reserved spinners and spawned jobs together are the
/// `min(threads, items) − 1` helpers: untaken reservations are handed back, not joined.
///
/// Panics if `f` panics, once every item has finished (no worker is left holding a reference
/// into this call's frame).
pub fn for_each_with_caller<T: Send>(items: impl IntoIterator<Item = T>, f: impl Fn(T) + Sync) {
    let mut items: Vec<T> = items.into_iter().collect();
    if items.len() <= 1 {
        if let Some(item) = items.pop() {
            f(item);
        }
        return;
    }
    // Each item is moved out by the one thread that claims it (see `Claims::claimed`).
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let take = |i: usize| {
        slots[i]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    };
    let pool = pool();
    let helpers = num_threads().min(slots.len()).saturating_sub(1);
    let state = Arc::new(Claims {
        next: AtomicUsize::new(0),
        items: slots.len(),
        remaining: AtomicUsize::new(slots.len()),
        panic: Mutex::new(None),
        caller: std::thread::current(),
    });
    // Runs item `i`; called once per item, by whoever claimed it.
    let run = |i: usize| {
        if let Some(item) = take(i) {
            f(item)
        }
    };
    let run: *const (dyn Fn(usize) + Sync + '_) = &run;
    // SAFETY: only the lifetime is erased, from a raw pointer. It is dereferenced only by a
    // thread that has just claimed an item (`run_claims`), and this function returns only
    // after every item has been claimed and its run has finished (`remaining == 0`), so `run`
    // and what it borrows outlive every dereference. Jobs that start after the last claim, and
    // spinners that take a reservation after it (`WAITING` holds the pointer until then),
    // touch only the `Arc`'d state.
    let run = RunPtr(unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
            run,
        )
    });
    let mut reserved = 0;
    while reserved < helpers
        && UNRESERVED
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    {
        reserved += 1;
    }
    if reserved > 0 {
        let mut waiting = WAITING.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.push(Waiting {
            state: Arc::clone(&state),
            run,
            reserved,
        });
        PENDING.fetch_add(reserved, Ordering::AcqRel);
    }
    for _ in reserved..helpers {
        let state = Arc::clone(&state);
        pool.spawn(move || {
            state.run_claims(run);
            drop(state);
            spin_for_calls();
        });
    }
    state.run_claims(run);
    if reserved > 0 {
        // Every item is claimed: reservations no spinner has taken are handed back.
        let mut waiting = WAITING.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = waiting.iter().position(|w| Arc::ptr_eq(&w.state, &state)) {
            let left = waiting.swap_remove(i).reserved;
            PENDING.fetch_sub(left, Ordering::AcqRel);
            UNRESERVED.fetch_add(left, Ordering::AcqRel);
        }
    }
    let start = Instant::now();
    while state.remaining.load(Ordering::Acquire) > 0 {
        if start.elapsed() < CALLER_SPIN {
            std::hint::spin_loop();
        } else {
            // Woken by the run that brings `remaining` to 0 (or spuriously: checked again).
            std::thread::park();
        }
    }
    let panic = state
        .panic
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// The shared state of one [`for_each_with_caller`] call.
struct Claims {
    /// The next item to claim (values from `items` on: nothing left).
    next: AtomicUsize,
    items: usize,
    /// Items not yet run to the end.
    remaining: AtomicUsize,
    /// The first panic of a run, resumed by the caller.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    caller: std::thread::Thread,
}

impl Claims {
    /// Claims items one at a time and runs each through `run`, until none is left.
    fn run_claims(&self, run: RunPtr) {
        loop {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            if i >= self.items {
                return;
            }
            // SAFETY: this thread has claimed item `i`, so the caller of
            // `for_each_with_caller` is still inside it (it waits for `remaining == 0`, which
            // needs this run to end) and the closure behind `run` is alive.
            let run = unsafe { &*run.0 };
            if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(i)))
            {
                let mut first = self.panic.lock().unwrap_or_else(PoisonError::into_inner);
                first.get_or_insert(payload);
            }
            if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.caller.unpark();
            }
        }
    }
}

/// On a worker that has run its share of a call: spins, taking the reservations of calls
/// ([`WAITING`]) and joining them, until none has come for [`WORKER_SPIN`] and it can leave
/// by taking an unreserved place (else a call counts on it: it stays); unless
/// `num_threads() − 1` workers spin already (then it returns to the pool at once).
fn spin_for_calls() {
    let limit = num_threads().saturating_sub(1);
    let entered = SPINNERS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < limit).then_some(n + 1)
    });
    if entered.is_err() {
        return;
    }
    UNRESERVED.fetch_add(1, Ordering::AcqRel);
    let mut since = Instant::now();
    loop {
        if PENDING.load(Ordering::Acquire) > 0
            && let Some((state, run)) = take_reservation()
        {
            state.run_claims(run);
            UNRESERVED.fetch_add(1, Ordering::AcqRel);
            since = Instant::now();
        } else if since.elapsed() >= WORKER_SPIN
            && UNRESERVED
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        {
            break;
        } else {
            std::hint::spin_loop();
        }
    }
    SPINNERS.fetch_sub(1, Ordering::AcqRel);
}

/// One reservation of the oldest call in [`WAITING`] that has one left, taken.
fn take_reservation() -> Option<(Arc<Claims>, RunPtr)> {
    let mut waiting = WAITING.lock().unwrap_or_else(PoisonError::into_inner);
    let i = waiting.iter().position(|w| w.reserved > 0)?;
    let w = &mut waiting[i];
    w.reserved -= 1;
    PENDING.fetch_sub(1, Ordering::AcqRel);
    let taken = (Arc::clone(&w.state), w.run);
    if w.reserved == 0 {
        waiting.remove(i);
    }
    Some(taken)
}

/// The per-item closure of a [`for_each_with_caller`] call, with its lifetime erased; see the
/// SAFETY notes there and in [`Claims::run_claims`].
#[derive(Clone, Copy)]
struct RunPtr(*const (dyn Fn(usize) + Sync));

// SAFETY: the closure behind the pointer is `Sync`, so calling it from another thread is
// sound while it is alive, which `Claims::run_if_unclaimed` ensures.
unsafe impl Send for RunPtr {}

/// Splits `out` into `tasks` contiguous chunks of nearly equal length (multiples of `align`
/// elements except the last) and calls `f(element_range, chunk)` on each, on the pool when
/// `tasks > 1`. The chunks are disjoint, so `f` can write its chunk without synchronisation.
///
/// `f` is called through `&dyn Fn`, once per chunk: the splitting is compiled once per element
/// type, not once per kernel, and `f`, a whole kernel inlined, once for both paths.
#[inline(always)]
pub fn for_each_chunk_mut<T: Send>(
    out: &mut [T],
    tasks: usize,
    align: usize,
    f: impl Fn(Range<usize>, &mut [T]) + Sync,
) {
    chunks_in_ranges(out, tasks, align, &f)
}

fn chunks_in_ranges<T: Send>(
    out: &mut [T],
    tasks: usize,
    align: usize,
    f: &(dyn Fn(Range<usize>, &mut [T]) + Sync),
) {
    let n = out.len();
    let align = align.max(1);
    let per = n.div_ceil(tasks.max(1)).next_multiple_of(align).max(align);
    let run: &(dyn Fn(usize, &mut [T]) + Sync) =
        &|t, chunk| f(t * per..t * per + chunk.len(), chunk);
    if per >= n {
        return run(0, out);
    }
    chunks_on_pool(out, per, run);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results come back in the items' order, and inside an item kernels see one thread.
    #[test]
    fn map_on_threads_keeps_the_order_and_runs_items_on_one_thread_each() {
        set_num_threads(2);
        let out = map_on_threads((0..40).collect(), |i: usize| {
            // Inside, kernels see one thread: nested splits run inline.
            assert_eq!(num_threads(), 1);
            let seen: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            for_each_row_range(100, 1 << 20, |r| {
                r.for_each(|j| {
                    seen[j].fetch_add(1, Ordering::Relaxed);
                })
            });
            assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
            i * i
        });
        assert_eq!(out, (0..40).map(|i| i * i).collect::<Vec<_>>());
    }

    /// Every item runs exactly once and sees its own data, for 0 to 5 items, from several
    /// calling threads at once (their jobs interleave on the one pool).
    #[test]
    fn with_caller_runs_every_item_once() {
        std::thread::scope(|scope| {
            for caller in 0..3 {
                scope.spawn(move || {
                    for round in 0..200 {
                        let items = (caller + round) % 6;
                        let mut out = vec![0usize; items * 64];
                        for_each_with_caller(out.chunks_mut(64).enumerate(), |(i, chunk)| {
                            for (j, x) in chunk.iter_mut().enumerate() {
                                *x += i * 1000 + j + 1;
                            }
                        });
                        for (k, &x) in out.iter().enumerate() {
                            assert_eq!(x, (k / 64) * 1000 + k % 64 + 1, "caller {caller}");
                        }
                    }
                });
            }
        });
    }

    /// The splitting helpers, which run on the caller and the pool, give every element to
    /// exactly one task, with more tasks than threads, and when called from inside a pool
    /// task (nested: the inner caller is a worker).
    #[test]
    fn helpers_cover_every_element_once_with_the_caller_taking_part() {
        set_parallel_threshold(1 << 15);
        let n = (1 << 16) + 13;
        let check = |v: &[usize]| v.iter().enumerate().all(|(i, &x)| x == i + 1);
        let run = || {
            let mut v = vec![0usize; n];
            for_each_chunk_mut(&mut v, 9, 4, |range, chunk| {
                for (x, i) in chunk.iter_mut().zip(range) {
                    *x += i + 1;
                }
            });
            assert!(check(&v), "for_each_chunk_mut");
            let mut v = vec![0usize; n];
            let rows = n / 7;
            for_each_row_chunk(&mut v[..rows * 7], rows, 7, |range, chunk| {
                for (x, i) in chunk.iter_mut().zip(range.start * 7..) {
                    *x += i + 1;
                }
            });
            assert!(check(&v[..rows * 7]), "for_each_row_chunk");
            let (mut a, mut b) = (vec![0usize; rows * 7], vec![0usize; rows * 2]);
            for_each_unit_run_pair(&mut a, 7, &mut b, 2, |units, a, b| {
                assert_eq!((a.len(), b.len()), (units.len() * 7, units.len() * 2));
                for (x, i) in a.iter_mut().zip(units.start * 7..) {
                    *x += i + 1;
                }
                for (x, i) in b.iter_mut().zip(units.start * 2..) {
                    *x += i + 1;
                }
            });
            assert!(check(&a) && check(&b), "for_each_unit_run_pair");
            let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            for_each_split(n, 11, 8, |_, range| {
                for i in range {
                    seen[i].fetch_add(i + 1, Ordering::Relaxed);
                }
            });
            let v: Vec<usize> = seen.iter().map(|a| a.load(Ordering::Relaxed)).collect();
            assert!(check(&v), "for_each_split");
        };
        run();
        if num_threads() < 2 {
            return;
        }
        // Two items that wait for each other: one runs on the caller, the other on a worker,
        // and each calls the helpers from there.
        let both = std::sync::Barrier::new(2);
        let on_worker = std::sync::atomic::AtomicBool::new(false);
        for_each_with_caller(0..2, |_| {
            both.wait();
            let name = std::thread::current().name().map(str::to_owned);
            if name.is_some_and(|n| n.starts_with("namedtensor-")) {
                on_worker.store(true, Ordering::SeqCst);
            }
            run();
        });
        assert!(on_worker.load(Ordering::SeqCst), "no item ran on a worker");
    }

    /// At most `num_threads` threads run the items of one call, the caller included.
    #[test]
    fn with_caller_uses_at_most_the_pool_size() {
        let threads = num_threads();
        for _ in 0..20 {
            let running = AtomicUsize::new(0);
            let most = AtomicUsize::new(0);
            for_each_with_caller(0..4 * threads + 3, |_| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_micros(200));
                running.fetch_sub(1, Ordering::SeqCst);
            });
            assert!(
                most.load(Ordering::SeqCst) <= threads,
                "more than {threads} threads ran"
            );
        }
    }

    /// Calls in quick succession, whose two items wait for each other (so each call needs a
    /// helper): every call gets one, whether a spinning worker it reserved joins it or its
    /// spawned job does, and no call runs on more than two threads; the spinning workers
    /// never number more than `num_threads() − 1`.
    #[test]
    fn back_to_back_calls_each_get_one_helper() {
        set_num_threads(2);
        for round in 0..2000 {
            let both = std::sync::Barrier::new(2);
            let running = AtomicUsize::new(0);
            let most = AtomicUsize::new(0);
            let ran = AtomicUsize::new(0);
            for_each_with_caller(0..2, |_| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                both.wait();
                running.fetch_sub(1, Ordering::SeqCst);
                ran.fetch_add(1, Ordering::SeqCst);
            });
            assert_eq!(ran.load(Ordering::SeqCst), 2, "round {round}");
            assert_eq!(most.load(Ordering::SeqCst), 2, "round {round}");
            assert!(SPINNERS.load(Ordering::SeqCst) < num_threads().max(2));
        }
    }

    /// A panicking item reaches the caller, after the other items have run (none is left
    /// running against the caller's frame), and the pool stays usable.
    #[test]
    fn with_caller_resumes_a_panic_after_every_item_ran() {
        for bad in 0..3 {
            let done = AtomicUsize::new(0);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                for_each_with_caller(0..3, |i| {
                    std::thread::sleep(Duration::from_millis(2));
                    if i == bad {
                        panic!("item {i} failed");
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                })
            }));
            let payload = result.expect_err("the panic must reach the caller");
            assert_eq!(
                payload.downcast_ref::<String>().map(String::as_str),
                Some(format!("item {bad} failed").as_str())
            );
            assert_eq!(done.load(Ordering::SeqCst), 2);
        }
        let count = AtomicUsize::new(0);
        for_each_with_caller(0..2, |_| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }
}
