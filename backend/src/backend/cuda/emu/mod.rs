//! A CPU emulator of the CUDA runtime the backend uses (feature `cuda-emu`, for tests): with
//! it, `Device::Cuda(0)` is an emulated device and the backend's host code (`storage.rs`,
//! `copy.rs`, `compute.rs`, `blas.rs`, `launch.rs`, `kernels.rs`) and its CUDA C kernels run
//! unchanged on the CPU. Only device start-up and kernel compilation differ (`device.rs`).
//!
//! | file | what is there |
//! |---|---|
//! | `shim.h` | CUDA's keywords and built-ins for host C++: fibers per thread, barriers, shared memory |
//! | `kernel_build.rs` | each kernel source compiled once with the host C++ compiler, cached, loaded |
//! | `stream.rs` | context and stream: deferred work in issue order, sticky failures, launches |
//! | `memory.rs` | device memory as poisoned host memory between red zones |
//! | `asan.rs` | the red zones made unaddressable when AddressSanitizer runs |
//! | `cublas.rs` | a reference strided-batched GEMM with cuBLAS's argument checks |
//! | `nccl.rs` | (feature `nccl`) NCCL between the processes of one machine, through files |
//! | `tests.rs` | kernels with the bugs above, and proof that each is reported |
//!
//! What it finds: kernels that read elements nobody wrote (poison), write outside their
//! buffers (red zones) or read outside them (under AddressSanitizer, as `.ci/run` does), reach
//! a barrier with part of a block, depend on the order of a block's threads (the seed), take
//! arguments of the wrong size; host code that passes wrong leading dimensions to cuBLAS,
//! reads results without waiting for the stream, or launches with an invalid configuration.
//! What it cannot find: anything of the real driver, NVRTC or cuBLAS (numerics, limits), warp
//! lockstep and warp intrinsics, memory-model subtleties between blocks (blocks run one after
//! another), and speed.
//!
//! # Invariants
//! - The types here mirror the cudarc items the backend uses, method for method, so the
//!   backend compiles against either through `rt.rs`; errors are cudarc's own types.
//! - Exactly one emulated device, `cuda:0`, with compute capability 9.0.

mod asan;
mod cublas;
mod kernel_build;
mod memory;
#[cfg(feature = "nccl")]
pub mod nccl;
mod stream;
#[cfg(test)]
mod tests;

pub use cublas::{CudaBlas, gemm_strided_batched_ex, is_present as cublas_present};
pub use kernel_build::function;
pub use memory::{CudaSlice, DevicePtr, DevicePtrMut};
pub use stream::waits_on_this_thread;
pub use stream::{CudaContext, CudaFunction, CudaStream, last_failure};
