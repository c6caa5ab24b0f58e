//! The emulated context and its stream: work is queued and runs at a synchronisation, in
//! issue order, like work on a real stream.
//!
//! # Invariants
//! - Everything issued to a stream runs in issue order, under the stream's lock, on the thread
//!   that synchronises (or that issues the work item that makes the queue too long): kernels
//!   never run concurrently with each other or with a copy.
//! - Work runs late: a launch or a host-to-device copy returns before it has happened, as on a
//!   GPU. A copy to the host first runs everything queued (cudarc copies to pageable host
//!   memory, which the driver also completes before returning); `synchronize` runs the rest.
//! - Kernel argument values are copied when the launch is issued (`cuLaunchKernel` does the
//!   same), host data when a host-to-device copy is issued (the driver stages pageable memory).
//! - The first failure of queued work (a kernel fault, a barrier reached by part of a block,
//!   an argument of the wrong size, a write past an allocation) is sticky, as a kernel fault
//!   is on a GPU: every later call on the context returns it, and its message is kept for the
//!   error the library reports (`last_failure`; private test contexts keep theirs to
//!   themselves).

use super::kernel_build::{Entry, LaunchParams};
use super::memory::{Allocation, CudaSlice, CudaView, CudaViewMut};
use cudarc::driver::sys::CUresult;
use cudarc::driver::{DeviceRepr, DriverError, LaunchConfig, PushKernelArg};
use std::ffi::{c_char, c_void};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// Queued work items beyond which issuing runs the queue (a real GPU works while the host
/// issues; an unbounded queue would only hold freed memory back).
const MAX_QUEUED: usize = 256;

/// The compute capability the emulated device reports (sm_90).
pub const COMPUTE_CAPABILITY: (i32, i32) = (9, 0);

type Work = Box<dyn FnOnce() -> Result<(), (CUresult, String)> + Send>;

/// A queued item: work, or the release of memory, which happens even on a failed stream.
enum Item {
    Run(Work),
    Free(Allocation),
}

/// Frees `alloc`, checking its red zones first.
fn free_checked(alloc: Allocation) -> Result<(), (CUresult, String)> {
    // SAFETY: a free is queued once its slice was dropped, after all work that used the
    // allocation: this is its last use.
    let intact = unsafe { alloc.redzones_intact() };
    // SAFETY: as above.
    unsafe { alloc.free() };
    if intact {
        Ok(())
    } else {
        Err((
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            format!(
                "emulated device memory of {} bytes was written outside its bounds",
                alloc.len
            ),
        ))
    }
}

/// The message of the latest failure of emulated work in this process, for error messages.
pub fn last_failure() -> Option<String> {
    LAST_FAILURE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

static LAST_FAILURE: Mutex<Option<String>> = Mutex::new(None);

thread_local! {
    /// How often this thread waited for a stream (a synchronisation or a copy to the host).
    static WAITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How often the calling thread has waited for a stream: tests use it to prove that an
/// operation issues work without waiting.
pub fn waits_on_this_thread() -> u64 {
    WAITS.with(|w| w.get())
}

fn count_wait() {
    WAITS.with(|w| w.set(w.get() + 1));
}

/// The emulated device context (one per `CudaContext::new` call).
pub struct CudaContext {
    ordinal: usize,
    stream: OnceLock<Arc<CudaStream>>,
    /// Whether failures go to [`last_failure`] (not for the emulator's own tests).
    reports: bool,
}

impl CudaContext {
    /// The number of emulated devices: one.
    pub fn device_count() -> Result<i32, DriverError> {
        Ok(1)
    }

    /// A context on emulated device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Arc<CudaContext>, DriverError> {
        if ordinal >= 1 {
            return Err(DriverError(CUresult::CUDA_ERROR_INVALID_DEVICE));
        }
        Ok(Arc::new(CudaContext {
            ordinal,
            stream: OnceLock::new(),
            reports: true,
        }))
    }

    /// A context whose failures stay out of [`last_failure`], for tests that provoke them.
    #[cfg(test)]
    pub fn new_private() -> Arc<CudaContext> {
        Arc::new(CudaContext {
            ordinal: 0,
            stream: OnceLock::new(),
            reports: false,
        })
    }

    /// [`COMPUTE_CAPABILITY`].
    pub fn compute_capability(&self) -> Result<(i32, i32), DriverError> {
        Ok(COMPUTE_CAPABILITY)
    }

    /// Nothing to disable: the emulator has one stream per context and no events.
    ///
    /// # Safety
    /// None needed; `unsafe` to match cudarc's signature.
    pub unsafe fn disable_event_tracking(&self) {}

    /// The context's stream (created on first use).
    pub fn default_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        Arc::clone(self.stream.get_or_init(|| {
            Arc::new(CudaStream {
                ordinal: self.ordinal,
                reports: self.reports,
                state: Mutex::new(Queue {
                    work: Vec::new(),
                    failure: None,
                    message: None,
                }),
            })
        }))
    }

    /// Fails with the sticky error, if any (the emulator has no per-thread current context).
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        match self.stream.get() {
            Some(s) => s.check(),
            None => Ok(()),
        }
    }

    /// The sticky error, if any: the emulator records no errors apart from its stream's.
    pub fn check_err(&self) -> Result<(), DriverError> {
        self.bind_to_thread()
    }
}

struct Queue {
    work: Vec<Item>,
    /// The sticky error: the code of the first failed work item.
    failure: Option<CUresult>,
    /// What went wrong in that item, in words.
    message: Option<String>,
}

/// A stream of the emulated device.
pub struct CudaStream {
    ordinal: usize,
    reports: bool,
    state: Mutex<Queue>,
}

impl std::fmt::Debug for CudaStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaStream(emulated cuda:{})", self.ordinal)
    }
}

impl Drop for CudaStream {
    /// Runs what is still queued, so queued frees return their memory (a stream outlives
    /// every slice on it, so nothing can wait on that work any more).
    fn drop(&mut self) {
        let mut q = self.lock();
        let _ = self.drain(&mut q);
    }
}

impl CudaStream {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs the queued work; the sticky error if any item failed (now or before).
    fn drain(&self, queue: &mut Queue) -> Result<(), DriverError> {
        for item in std::mem::take(&mut queue.work) {
            let result = match item {
                // A faulted context runs nothing more...
                Item::Run(_) if queue.failure.is_some() => continue,
                Item::Run(work) => work(),
                // ...but its memory still returns to the host.
                Item::Free(alloc) => free_checked(alloc),
            };
            if queue.failure.is_some() {
                continue;
            }
            if let Err((code, message)) = result {
                queue.failure = Some(code);
                if self.reports {
                    *LAST_FAILURE.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(message.clone());
                }
                queue.message = Some(message);
            }
        }
        match queue.failure {
            Some(code) => Err(DriverError(code)),
            None => Ok(()),
        }
    }

    fn check(&self) -> Result<(), DriverError> {
        match self.lock().failure {
            Some(code) => Err(DriverError(code)),
            None => Ok(()),
        }
    }

    /// Queues `work`; runs the queue if it is long.
    fn issue(&self, work: Work) -> Result<(), DriverError> {
        let mut q = self.lock();
        if let Some(code) = q.failure {
            return Err(DriverError(code));
        }
        q.work.push(Item::Run(work));
        if q.work.len() > MAX_QUEUED {
            // Errors of the drained work are sticky and reported by a later call.
            let _ = self.drain(&mut q);
        }
        Ok(())
    }

    /// What made this stream fail, once it has.
    #[cfg(test)]
    pub fn failure_message(&self) -> Option<String> {
        self.lock().message.clone()
    }

    /// Waits for (runs) all issued work.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        count_wait();
        self.drain(&mut self.lock())
    }

    /// Runs the work issued so far, then `f`, under the stream's lock: `f` sees what that
    /// work wrote and runs before any work issued after it, as a call issued to a real stream
    /// would (the emulated NCCL's collectives). The sticky error, if any, instead of `f`.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(super) fn run_now<R>(&self, f: impl FnOnce() -> R) -> Result<R, DriverError> {
        count_wait();
        let mut q = self.lock();
        self.drain(&mut q)?;
        Ok(f())
    }

    /// Queues the release of `alloc` after the work issued so far.
    pub(super) fn free(&self, alloc: Allocation) {
        let mut q = self.lock();
        q.work.push(Item::Free(alloc));
        if q.work.len() > MAX_QUEUED {
            let _ = self.drain(&mut q);
        }
    }

    /// `len` elements of `T`, poisoned (see `memory.rs`).
    ///
    /// # Safety
    /// The memory is not initialised to any value of `T` (as with cudarc).
    pub unsafe fn alloc<T>(self: &Arc<Self>, len: usize) -> Result<CudaSlice<T>, DriverError> {
        self.check()?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY))?;
        let alloc =
            Allocation::new(bytes).ok_or(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY))?;
        Ok(CudaSlice {
            alloc,
            len,
            stream: Arc::clone(self),
            marker: PhantomData,
        })
    }

    /// Sets every byte of `dst` to zero.
    pub fn memset_zeros<T>(self: &Arc<Self>, dst: &mut CudaSlice<T>) -> Result<(), DriverError> {
        let (ptr, len) = (dst.alloc.ptr, dst.alloc.len);
        self.issue(Box::new(move || {
            // SAFETY: `dst` is live until a free queued after this item.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, len) };
            Ok(())
        }))
    }

    /// Copies `src` into `dst` (same length), after the work issued before.
    pub fn memcpy_htod(
        self: &Arc<Self>,
        src: &[u8],
        dst: &mut CudaViewMut<'_, u8>,
    ) -> Result<(), DriverError> {
        if src.len() != dst.len {
            return Err(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        let (staged, ptr) = (src.to_vec(), dst.ptr);
        self.issue(Box::new(move || {
            // SAFETY: `dst` is a live range of `staged.len()` bytes until a free queued after
            // this item.
            unsafe { std::ptr::copy_nonoverlapping(staged.as_ptr(), ptr as *mut u8, staged.len()) };
            Ok(())
        }))
    }

    /// Copies `src` to the host once the work issued before has run.
    pub fn memcpy_dtoh(
        self: &Arc<Self>,
        src: &CudaView<'_, u8>,
        dst: &mut [u8],
    ) -> Result<(), DriverError> {
        if src.len != dst.len() {
            return Err(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        count_wait();
        let mut q = self.lock();
        self.drain(&mut q)?;
        // SAFETY: the view's memory is live (borrowed from its slice) and no work is pending.
        unsafe { std::ptr::copy_nonoverlapping(src.ptr as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// A launch of `func` on this stream; arguments are pushed with `arg`.
    pub fn launch_builder<'a>(&'a self, func: &'a CudaFunction) -> LaunchArgs<'a> {
        LaunchArgs {
            stream: self,
            func,
            values: Vec::new(),
            checked: Vec::new(),
            seed: None,
        }
    }

    /// Queues `work`, which returns the cuBLAS-level failure message (used by `cublas.rs`).
    pub(super) fn issue_work(
        &self,
        work: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Result<(), DriverError> {
        self.issue(Box::new(move || {
            work().map_err(|m| (CUresult::CUDA_ERROR_LAUNCH_FAILED, m))
        }))
    }
}

/// A kernel of a compiled emulator library (`kernel_build.rs`).
#[derive(Clone)]
pub struct CudaFunction {
    pub(super) name: Arc<str>,
    pub(super) entry: Entry,
}

/// The launches issued so far in the process (each launch's thread order derives from it).
static LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// The base seed of the thread order: `NAMEDTENSOR_CUDA_EMU_SEED` (0 runs every block's
/// threads in index order), else a fixed default.
fn base_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        std::env::var("NAMEDTENSOR_CUDA_EMU_SEED")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0x9e37_79b9_7f4a_7c15)
    })
}

/// Refuses what `cuLaunchKernel` refuses up front (`CUDA_ERROR_INVALID_VALUE`, not sticky):
/// empty or oversized grids and blocks, and dynamic shared memory, which the emulator lacks
/// (no kernel of the library uses it).
fn check_config(cfg: &LaunchConfig) -> Result<(), DriverError> {
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    let threads = b.0 as u64 * b.1 as u64 * b.2 as u64;
    let valid = (1..=1024).contains(&threads)
        && b.2 <= 64
        && g.0 >= 1
        && g.0 < 1 << 31
        && (1..=65535).contains(&g.1)
        && (1..=65535).contains(&g.2)
        && cfg.shared_mem_bytes == 0;
    if valid {
        Ok(())
    } else {
        Err(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE))
    }
}

/// A kernel launch being assembled.
pub struct LaunchArgs<'a> {
    stream: &'a CudaStream,
    func: &'a CudaFunction,
    /// Each argument's bytes.
    values: Vec<Vec<u8>>,
    /// The allocations passed, checked for writes outside them after the launch.
    checked: Vec<Allocation>,
    /// The thread-order seed of this launch, if not derived from [`base_seed`].
    seed: Option<u64>,
}

impl LaunchArgs<'_> {
    /// Runs this launch's threads in the order `seed` gives (0: index order), for tests.
    #[cfg(test)]
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.seed = Some(seed);
        self
    }

    /// Issues the launch.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number and meaning (the emulator
    /// checks number and sizes, not meaning), and every pointer must cover what the kernel
    /// reads and writes.
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<(), DriverError> {
        check_config(&cfg)?;
        let launch = LAUNCHES.fetch_add(1, Ordering::Relaxed);
        let seed = self.seed.unwrap_or(match base_seed() {
            0 => 0,
            s => (s ^ launch.wrapping_mul(0x2545_f491_4f6c_dd1d)) | 1,
        });
        let params = LaunchParams {
            grid: [cfg.grid_dim.0, cfg.grid_dim.1, cfg.grid_dim.2],
            block: [cfg.block_dim.0, cfg.block_dim.1, cfg.block_dim.2],
            shared_mem_bytes: cfg.shared_mem_bytes,
            reserved: 0,
            seed,
        };
        let values = std::mem::take(&mut self.values);
        let checked = std::mem::take(&mut self.checked);
        let (name, entry) = (Arc::clone(&self.func.name), self.func.entry);
        self.stream.issue(Box::new(move || {
            let mut pointers: Vec<*mut c_void> =
                values.iter().map(|v| v.as_ptr() as *mut c_void).collect();
            let sizes: Vec<u64> = values.iter().map(|v| v.len() as u64).collect();
            let mut message = vec![0u8; 1024];
            // SAFETY: `entry` is the emulator entry point of kernel `name` (NT_EMU_ENTRY in
            // shim.h); it reads `sizes.len()` argument values of the given sizes from
            // `pointers`, checks them against the kernel's signature, and writes at most
            // `message.len()` bytes (NUL-terminated) into `message`. Pointer arguments are
            // live allocations (the caller's contract; frees are queued after this item).
            let status = unsafe {
                entry(
                    &params,
                    pointers.as_mut_ptr(),
                    sizes.as_ptr(),
                    sizes.len() as u32,
                    message.as_mut_ptr() as *mut c_char,
                    message.len(),
                )
            };
            if status != 0 {
                let end = message
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(message.len());
                return Err((
                    CUresult::CUDA_ERROR_LAUNCH_FAILED,
                    String::from_utf8_lossy(&message[..end]).into_owned(),
                ));
            }
            for a in &checked {
                // SAFETY: the allocation is live during this item (see above).
                if !unsafe { a.redzones_intact() } {
                    return Err((
                        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
                        format!(
                            "{name} wrote outside an allocation of {} bytes (its red zone \
                             changed)",
                            a.len
                        ),
                    ));
                }
            }
            Ok(())
        }))
    }
}

// SAFETY: the value's bytes are copied now; `T: DeviceRepr` promises they are what the kernel
// parameter expects.
unsafe impl<'a, 'b: 'a, T: DeviceRepr> PushKernelArg<&'b T> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b T) -> &mut Self {
        // SAFETY: `DeviceRepr` types are plain data; the view covers exactly `*arg`.
        let bytes = unsafe {
            std::slice::from_raw_parts(arg as *const T as *const u8, std::mem::size_of::<T>())
        };
        self.values.push(bytes.to_vec());
        self
    }
}

// SAFETY: passes the device address, as cudarc does.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b CudaSlice<T>> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b CudaSlice<T>) -> &mut Self {
        self.values.push(arg.alloc.ptr.to_ne_bytes().to_vec());
        self.checked.push(arg.alloc);
        self
    }
}

// SAFETY: passes the device address, as cudarc does.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b mut CudaSlice<T>> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b mut CudaSlice<T>) -> &mut Self {
        self.values.push(arg.alloc.ptr.to_ne_bytes().to_vec());
        self.checked.push(arg.alloc);
        self
    }
}
