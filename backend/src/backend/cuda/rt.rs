//! The seam between the CUDA backend and the runtime it runs on: cudarc on a real GPU or, with
//! the `cuda-emu` feature, the CPU emulator of `emu/`. The backend names every runtime item
//! through this module, so the same host code runs on both; the emulator implements cudarc's
//! traits and returns cudarc's error types. NCCL's items (feature `nccl`) are in the submodule
//! `nccl`, as in cudarc.

#[cfg(not(feature = "cuda-emu"))]
pub use cudarc::cublas::CudaBlas;
#[cfg(not(feature = "cuda-emu"))]
pub use cudarc::cublas::result::gemm_strided_batched_ex;
#[cfg(not(feature = "cuda-emu"))]
pub use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
};

#[cfg(feature = "cuda-emu")]
pub use super::emu::{
    CudaBlas, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    gemm_strided_batched_ex,
};

pub use cudarc::driver::{DeviceRepr, DriverError, LaunchConfig, PushKernelArg};

/// NCCL's items (feature `nccl`), by cudarc's names: cudarc's, or the emulator's, which
/// returns cudarc's error type.
#[cfg(feature = "nccl")]
pub mod nccl {
    pub use cudarc::nccl::result::NcclError;
    #[cfg(not(feature = "cuda-emu"))]
    pub use cudarc::nccl::{Comm, Id, NcclType, ReduceOp};

    #[cfg(feature = "cuda-emu")]
    pub use super::super::emu::nccl::{Comm, Id, NcclType, ReduceOp, last_failure};

    /// Whether libnccl can be loaded (always, for the emulator).
    pub fn present() -> bool {
        #[cfg(feature = "cuda-emu")]
        return true;
        // SAFETY: only tries to `dlopen` the candidate library names.
        #[cfg(not(feature = "cuda-emu"))]
        return unsafe { cudarc::nccl::sys::is_culib_present() };
    }
}

/// Whether the driver library can be loaded (always, for the emulator).
pub fn driver_present() -> bool {
    #[cfg(feature = "cuda-emu")]
    return true;
    // SAFETY: only tries to `dlopen` the candidate library names.
    #[cfg(not(feature = "cuda-emu"))]
    return unsafe { cudarc::driver::sys::is_culib_present() };
}

/// Whether cuBLAS can be loaded (always, for the emulator).
pub fn cublas_present() -> bool {
    #[cfg(feature = "cuda-emu")]
    return super::emu::cublas_present();
    // SAFETY: only tries to `dlopen` the candidate library names.
    #[cfg(not(feature = "cuda-emu"))]
    return unsafe { cudarc::cublas::sys::is_culib_present() };
}

/// The device's default memory pool (where cudarc's stream-ordered allocations come from),
/// with the context bound to the calling thread; `None` for a device without memory pools
/// (cudarc then allocates synchronously).
#[cfg(not(feature = "cuda-emu"))]
fn default_pool(
    ctx: &CudaContext,
) -> Result<Option<cudarc::driver::sys::CUmemoryPool>, DriverError> {
    use cudarc::driver::sys;
    let supported =
        ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?;
    if supported == 0 {
        return Ok(None);
    }
    ctx.bind_to_thread()?;
    let mut pool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer; the device handle comes from a live context.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }.result()?;
    Ok(Some(pool))
}

/// Makes the device's default memory pool keep memory that the library frees, for reuse by
/// later allocations, instead of handing it back to the driver at every synchronisation (the
/// pool's default release threshold is 0 bytes), as PyTorch's caching allocator keeps
/// memory. It made no measurable difference in the H200 benchmarks (BENCHMARKS.md, "CUDA"),
/// which allocate and free the same sizes in a loop; it spares remapping pages where the
/// driver would otherwise release them. [`trim_pool`] gives the memory back
/// (`namedtensor::storage::release_buffer_pool`).
#[cfg(not(feature = "cuda-emu"))]
pub fn keep_freed_memory(ctx: &CudaContext) -> Result<(), DriverError> {
    use cudarc::driver::sys;
    let Some(pool) = default_pool(ctx)? else {
        return Ok(());
    };
    let mut threshold = u64::MAX;
    // SAFETY: the release threshold attribute takes a pointer to a u64, which `threshold` is.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
}

/// Gives the memory the device's default pool holds for reuse back to the driver (memory in
/// use stays). The caller synchronises first, so that no freed buffer is still in use.
#[cfg(not(feature = "cuda-emu"))]
pub fn trim_pool(ctx: &CudaContext) -> Result<(), DriverError> {
    let Some(pool) = default_pool(ctx)? else {
        return Ok(());
    };
    // SAFETY: `pool` is the live default pool of this context's device.
    unsafe { cudarc::driver::sys::cuMemPoolTrimTo(pool, 0) }.result()
}

/// The emulator frees device memory at once: nothing to configure.
#[cfg(feature = "cuda-emu")]
pub fn keep_freed_memory(_ctx: &CudaContext) -> Result<(), DriverError> {
    Ok(())
}

/// The emulator holds no freed memory: nothing to trim.
#[cfg(feature = "cuda-emu")]
pub fn trim_pool(_ctx: &CudaContext) -> Result<(), DriverError> {
    Ok(())
}
