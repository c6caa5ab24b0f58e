//! CUDA devices: driver detection, one context per ordinal (created on first use and kept for
//! the life of the process), and each device's cache of compiled kernels.
//!
//! Every device runs all of the library's work on one stream (the context's default stream),
//! so operations execute in the order they were issued; that order follows the storage locks
//! (see [`crate::storage`]), which keeps the aliasing rules on the GPU. Copies to the host wait
//! for the stream.
//!
//! cudarc panics when the driver library is missing; this module checks for it first and
//! turns every failure into an [`ErrorKind::Device`](crate::ErrorKind) error.

use super::error::{device_error, driver, panic_message};
use super::kernels::Kernel;
#[cfg(not(feature = "cuda-emu"))]
use super::nvrtc::Image;
use super::nvrtc::{self, Target};
use super::rt::{self, CudaBlas, CudaContext, CudaFunction, CudaStream};
use crate::backend::device::Device;
use crate::error::Result;
use std::collections::HashMap;
#[cfg(not(feature = "cuda-emu"))]
use std::panic::AssertUnwindSafe;
use std::panic::catch_unwind;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The number of CUDA devices, or why there are none usable. Determined once per process.
pub fn driver_state() -> &'static Result<usize, String> {
    static STATE: OnceLock<Result<usize, String>> = OnceLock::new();
    STATE.get_or_init(init_driver)
}

fn init_driver() -> Result<usize, String> {
    if !super::rt::driver_present() {
        return Err(
            "no CUDA driver found (libcuda.so could not be loaded; it comes with the NVIDIA \
             driver)"
                .to_string(),
        );
    }
    match catch_unwind(CudaContext::device_count) {
        Ok(Ok(n)) if n > 0 => Ok(n as usize),
        Ok(Ok(_)) => Err("no CUDA device found (the driver reports 0 devices)".to_string()),
        Ok(Err(e)) => Err(
            driver("cuda", Device::Cuda(0), "initialising the driver", e)
                .message()
                .to_string(),
        ),
        Err(p) => Err(format!(
            "the CUDA driver library could not be used: {}",
            panic_message(&*p)
        )),
    }
}

/// The number of usable CUDA devices (0 without a driver).
pub fn device_count() -> usize {
    *driver_state().as_ref().unwrap_or(&0)
}

/// `Ok` if `cuda:ordinal` exists, else why not.
pub fn check(op: &'static str, ordinal: usize) -> Result<usize> {
    let count = driver_state()
        .as_ref()
        .map_err(|m| device_error(op, m.clone()))?;
    if ordinal >= *count {
        return Err(device_error(
            op,
            format!(
                "cuda:{ordinal} does not exist: {count} CUDA device(s) found (cuda:0 to cuda:{})",
                count - 1
            ),
        ));
    }
    Ok(*count)
}

/// One CUDA device as the library uses it.
pub struct CudaDevice {
    ordinal: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Compute capability as NVRTC numbers it (8.6 → 86).
    arch: u32,
    /// What NVRTC compiles for this device, decided on first compile.
    #[cfg_attr(feature = "cuda-emu", allow(dead_code))]
    target: OnceLock<Result<Target, String>>,
    /// Compiled kernels by symbol name.
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// The cuBLAS handle, created on first use (`blas.rs`).
    pub(super) blas: Mutex<Option<Arc<CudaBlas>>>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice(cuda:{}, sm_{})", self.ordinal, self.arch)
    }
}

/// The devices initialised so far, by ordinal.
fn devices() -> std::sync::MutexGuard<'static, HashMap<usize, Arc<CudaDevice>>> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<CudaDevice>>>> = OnceLock::new();
    DEVICES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Waits for every initialised device and gives the memory their pools hold for reuse back
/// to the driver (`namedtensor::storage::release_buffer_pool`, PyTorch's
/// `torch.cuda.empty_cache`). A device that fails is skipped: the next operation on it
/// reports the error.
pub fn release_cached_memory() {
    for dev in devices().values() {
        if dev.synchronize("release_buffer_pool").is_ok() {
            let _ = rt::trim_pool(&dev.ctx);
        }
    }
}

/// The device `cuda:ordinal`, initialised on first use.
pub fn get(op: &'static str, ordinal: usize) -> Result<Arc<CudaDevice>> {
    check(op, ordinal)?;
    let mut devices = devices();
    if let Some(d) = devices.get(&ordinal) {
        return Ok(Arc::clone(d));
    }
    let dev = Device::Cuda(ordinal);
    let ctx = match catch_unwind(|| CudaContext::new(ordinal)) {
        Ok(Ok(ctx)) => ctx,
        Ok(Err(e)) => return Err(driver(op, dev, "creating a context", e)),
        Err(p) => {
            return Err(device_error(
                op,
                format!("creating a context on {dev} failed: {}", panic_message(&*p)),
            ));
        }
    };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| driver(op, dev, "reading the compute capability", e))?;
    // SAFETY: the library issues all work of this context to one stream (below), so the
    // per-allocation events cudarc records to order work across streams are not needed.
    unsafe { ctx.disable_event_tracking() };
    rt::keep_freed_memory(&ctx).map_err(|e| driver(op, dev, "configuring the memory pool", e))?;
    let stream = ctx.default_stream();
    let device = Arc::new(CudaDevice {
        ordinal,
        ctx,
        stream,
        arch: nvrtc::arch_number(major, minor),
        target: OnceLock::new(),
        functions: Mutex::new(HashMap::new()),
        blas: Mutex::new(None),
    });
    devices.insert(ordinal, Arc::clone(&device));
    Ok(device)
}

impl CudaDevice {
    /// `Device::Cuda(ordinal)`.
    pub fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    /// The stream all of this device's work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes this device's context current on the calling thread (cudarc's own calls do it;
    /// raw library calls such as cuBLAS's need it).
    pub fn bind(&self, op: &'static str) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver(op, self.device(), "making the context current", e))
    }

    /// Waits for all work issued to the device; reports an error of earlier asynchronous work,
    /// including one cudarc could only record (a failed free in a `Drop`).
    pub fn synchronize(&self, op: &'static str) -> Result<()> {
        let what = "waiting for the device";
        self.stream
            .synchronize()
            .map_err(|e| driver(op, self.device(), what, e))?;
        self.ctx
            .check_err()
            .map_err(|e| driver(op, self.device(), what, e))
    }

    /// What NVRTC compiles for this device.
    #[cfg_attr(feature = "cuda-emu", allow(dead_code))]
    fn target(&self, op: &'static str) -> Result<Target> {
        self.target
            .get_or_init(|| {
                let supported = nvrtc::supported_archs(op).map_err(|e| e.message().to_string())?;
                nvrtc::choose_target(self.arch, &supported).ok_or_else(|| {
                    format!(
                        "{} (sm_{}) is older than every architecture this NVRTC supports \
                         ({supported:?})",
                        self.device(),
                        self.arch
                    )
                })
            })
            .clone()
            .map_err(|m| device_error(op, m))
    }

    /// The compiled `kernel`, compiling and loading it on first use. The compile runs without
    /// the device's lock, so threads that need other kernels are not held up behind it (two
    /// threads that need the same new kernel may both compile it; the first one is kept).
    pub fn function(&self, op: &'static str, kernel: &Kernel) -> Result<CudaFunction> {
        let lock = || {
            self.functions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(f) = lock().get(&kernel.name) {
            return Ok(f.clone());
        }
        let f = self.load(op, kernel)?;
        Ok(lock().entry(kernel.name.clone()).or_insert(f).clone())
    }

    /// Compiles `kernel` with NVRTC for this device (or reads it from the disk cache, see
    /// `disk_cache.rs`) and loads it. One kernel per program: NVRTC takes 0.1-0.15 s for one,
    /// up to 7 s for all of a source file's, and a program uses a few of each file.
    #[cfg(not(feature = "cuda-emu"))]
    fn load(&self, op: &'static str, kernel: &Kernel) -> Result<CudaFunction> {
        let target = self.target(op)?;
        let cache = super::disk_cache::dir();
        let image = nvrtc::compile_cached(
            op,
            &kernel.program(),
            kernel.source.file_name(),
            target,
            cache.as_deref(),
        )?;
        let ptx = match image {
            Image::Cubin(bytes) => cudarc::nvrtc::Ptx::from_binary(bytes),
            Image::Ptx(text) => cudarc::nvrtc::Ptx::from_src(text),
        };
        let what = format!("loading kernel {}", kernel.name);
        let module = catch_unwind(AssertUnwindSafe(|| self.ctx.load_module(ptx)))
            .map_err(|p| device_error(op, format!("{what} failed: {}", panic_message(&*p))))?
            .map_err(|e| driver(op, self.device(), &what, e))?;
        module
            .load_function(&kernel.name)
            .map_err(|e| driver(op, self.device(), &what, e))
    }

    /// The emulator's build of `kernel` (its whole source file, compiled once per process
    /// with the host C++ compiler).
    #[cfg(feature = "cuda-emu")]
    fn load(&self, op: &'static str, kernel: &Kernel) -> Result<CudaFunction> {
        super::emu::function(kernel)
            .map_err(|m| device_error(op, format!("{} (emulated): {m}", self.device())))
    }
}
