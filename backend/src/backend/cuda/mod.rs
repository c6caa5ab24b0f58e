//! The CUDA backend (feature `cuda`), built on `cudarc` with every CUDA library loaded at run
//! time, so the crate builds and its tests pass on machines without CUDA.
//!
//! | file | what is there |
//! |---|---|
//! | `device.rs` | driver detection, a context per ordinal, the per-device kernel cache |
//! | `nvrtc.rs` | run-time compilation of the kernels for the device's architecture |
//! | `disk_cache.rs` | compiled kernels kept on disk, keyed by program, compiler and target |
//! | `kernels.rs`, `kernels/*.cu` | the CUDA C sources and the kernels they define |
//! | `launch.rs` | kernel layouts, launch configurations, scalar arguments |
//! | `storage.rs` | the device allocation behind a [`Storage`](crate::Storage) |
//! | `copy.rs` | gather/cast, strided copy, fill (the core operations) |
//! | `backend.rs` | the [`Backend`](crate::backend::Backend) methods, built on the kernels below |
//! | `compute.rs` | unary, binary, comparison, reduction and softmax kernels |
//! | `blas.rs` | matrix products through cuBLAS |
//! | `kernels/select.cu` (via `compute.rs`) | `where`/`masked_fill`/`tril` select, `index_select`/`gather` reads and their adjoint `scatter_add` (indices range-checked on the device before launch; one thread per lane, no atomics), `cumsum`/`cumprod` scans (one thread per lane) |
//! | `kernels/sort.cu` (via `compute.rs`) | `sort` (and so `argsort`, `topk`): stable, on (entry, position) pairs; tiles of up to 4096 sorted by a bitonic network in shared memory, longer rows by merge passes |
//! | `error.rs` | driver/NVRTC/cuBLAS codes as [`ErrorKind::Device`](crate::ErrorKind) errors; the first kernel fault of a device, named by every later error |
//! | `nccl.rs` | (feature `nccl`) NCCL's collectives on a contiguous storage's device buffer, for `dist/` |
//! | `rt.rs` | the seam: every runtime item (context, stream, memory, cuBLAS, NCCL) from cudarc or from the emulator |
//! | `emu/` | (feature `cuda-emu`) the CPU emulator of that runtime, which runs the kernels as host C++ |
//!
//! What a machine needs at run time: the NVIDIA driver (`libcuda.so`) for any CUDA tensor,
//! NVRTC (`libnvrtc.so.12`, from a CUDA 12 toolkit or `pip install nvidia-cuda-nvrtc-cu12`)
//! for the kernels, and cuBLAS (`libcublas.so.12`) for matrix products, all on the dynamic
//! loader's search path. Each is looked for before use; a missing one is an
//! [`ErrorKind::Device`](crate::ErrorKind) error naming it, never a panic. With the `nccl`
//! feature, `Communicator::with_nccl` also needs NCCL (`libnccl.so`, loaded the same way; its
//! absence is an [`ErrorKind::Distributed`](crate::ErrorKind) error).
//!
//! Tested on hardware on an NVIDIA H200 (driver 580.159.04) with NVRTC and cuBLAS 13 from
//! PyTorch's `nvidia-*` wheels, linked as `libnvrtc.so`, `libcublas.so` and `libcublasLt.so`
//! into a folder on `LD_LIBRARY_PATH` (cudarc looks for the unversioned names first): the
//! device tests and the CUDA unit tests pass, also under `compute-sanitizer`.
//!
//! # Running the CUDA tests
//!
//! On a machine with a GPU:
//!
//! ```sh
//! nvidia-smi                                  # the driver sees the GPU
//! export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH   # NVRTC and cuBLAS
//! cargo test --features cuda --lib  # unit tests and tests/device: cpu and cuda:0
//! ```
//!
//! Without a GPU the same command passes: each CUDA test prints why it skips
//! (`skipping on cuda:0: no CUDA driver found …`). NVRTC needs no GPU, so with only
//! `libnvrtc.so.12` on `LD_LIBRARY_PATH` (the pip wheel `nvidia-cuda-nvrtc-cu12` provides it)
//! `cargo test --features cuda --lib nvrtc` compiles every kernel for sm_80 and sm_90 and checks
//! the sources; without it that test skips too. The f16/bf16 conversions of the kernels are
//! also compiled for the host with `c++` and compared with the `half` crate bit for bit.
//!
//! Without a GPU, `--features cuda-emu` instead of `--features cuda` runs every CUDA test on
//! an emulated `cuda:0` (see `emu/mod.rs`): the same host code and kernels, executed on the
//! CPU, compared with the CPU backend.

pub mod backend;
pub mod blas;
pub mod compute;
pub mod copy;
pub mod device;
mod disk_cache;
#[cfg(feature = "cuda-emu")]
pub mod emu;
mod error;
pub mod kernels;
mod launch;
#[cfg(feature = "nccl")]
pub mod nccl;
// The emulator compiles kernels with the host compiler; NVRTC stays for its compile tests.
#[cfg_attr(feature = "cuda-emu", allow(dead_code))]
mod nvrtc;
mod rt;
pub mod storage;
#[cfg(test)]
mod tests;
mod window;

pub use backend::Cuda;
pub use storage::CudaBuffer;

/// Whether every byte of `value` is zero (such fills are a memset, no kernel).
pub fn is_all_zero_bits<E: crate::dtype::Element>(value: E) -> bool {
    launch::scalar_bits(value) == 0
}
