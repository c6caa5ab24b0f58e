//! The seam between the CUDA backend and the runtime it runs on: cudarc on a real GPU or, with
//! the `cuda-emu` feature, the CPU emulator of `emu/`. The backend names every runtime item
//! through this module, so the same host code runs on both; the emulator implements cudarc's
//! traits and returns cudarc's error types.

#[cfg(not(feature = "cuda-emu"))]
pub(crate) use cudarc::cublas::CudaBlas;
#[cfg(not(feature = "cuda-emu"))]
pub(crate) use cudarc::cublas::result::gemm_strided_batched_ex;
#[cfg(not(feature = "cuda-emu"))]
pub(crate) use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
};

#[cfg(feature = "cuda-emu")]
pub(crate) use super::emu::{
    CudaBlas, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    gemm_strided_batched_ex,
};

pub(crate) use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};

/// Whether the driver library can be loaded (always, for the emulator).
pub(crate) fn driver_present() -> bool {
    #[cfg(feature = "cuda-emu")]
    return true;
    // SAFETY: only tries to `dlopen` the candidate library names.
    #[cfg(not(feature = "cuda-emu"))]
    return unsafe { cudarc::driver::sys::is_culib_present() };
}

/// Whether cuBLAS can be loaded (always, for the emulator).
pub(crate) fn cublas_present() -> bool {
    #[cfg(feature = "cuda-emu")]
    return super::emu::cublas_present();
    // SAFETY: only tries to `dlopen` the candidate library names.
    #[cfg(not(feature = "cuda-emu"))]
    return unsafe { cudarc::cublas::sys::is_culib_present() };
}
