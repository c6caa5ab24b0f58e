//! # namedtensor
//!
//! Strided tensors in the PyTorch model — a tensor is a view of a shared one-dimensional
//! storage through sizes, strides and an offset — with dimension names that the compiler
//! checks.
//!
//! ```
//! use namedtensor::{Tensor, dims};
//! dims! { Batch, Channels, Rows, Cols }
//!
//! let img = Tensor::<f32, (Batch, Channels, Rows, Cols)>::ones([2, 3, 4, 4]);
//! let luma = Tensor::<f32, (Channels,)>::from_vec(vec![0.2126, 0.7152, 0.0722], [3]);
//! let gray = (&img * &luma.align_as(&img)).sum::<Channels>(); // (Batch, Rows, Cols)
//! assert_eq!(gray.names(), ["Batch", "Rows", "Cols"]);
//! // img.sum::<Hidden>() would not compile: "dimension `Hidden` is not in tensor of dims
//! // `(Batch, Channels, Rows, Cols)`"
//! ```
//!
//! Models are structs of typed layers ([`nn::Linear`]`<In, Out>` maps `(…, In)` to
//! `(…, Out)`), trained with [`autograd`] (gradients keep their tensors' names) and [`optim`];
//! NumPy (`.npy`, `.npz`) and safetensors files are read and written. Underneath, the
//! positional [`DynTensor`] has PyTorch's API and strided model:
//!
//! ```
//! use namedtensor::DynTensor;
//! let points = namedtensor::tensor!([[4., 1.], [5., 3.], [2., 1.]]);
//! let second = points.i(1);               // a view: no copy
//! second.set(&[0], 10.0);                 // visible through `points`
//! assert_eq!(points.get(&[1, 0]), 10.0);
//! assert_eq!(points.t().stride(), &[1, 2]);
//! ```
//!
//! The crate is layered; each layer only uses the ones below it (`ARCHITECTURE.md` in the
//! repository draws them and says where a new operation or backend goes):
//!
//! | layer | module | what it is |
//! |---|---|---|
//! | named tensor | [`Tensor`], [`named`] | dims as types, resolved to axes at compile time |
//! | positional tensor | [`DynTensor`] | PyTorch's positional API with a run-time rank |
//! | autograd | [`autograd`] | the graph the ops record on tensors that require grad, and backward |
//! | operations | [`ops`] | semantics of the compute ops: validate, promote, broadcast, call the seam |
//! | storage | [`storage`] | the shared buffer, its aliasing rules, the dispatch to a backend |
//! | backends | `backend` | the `Backend` trait, op tokens, CPU and CUDA kernels |
//! | bottom | [`dtype`], [`layout`] | element types and promotion; pure index math |
//!
//! The last three rows are the crates `namedtensor-backend` (storage, backends) and
//! `namedtensor-core` (op tokens, the CPU's elementwise kernels, dtypes, layouts), re-exported
//! here at the same paths; depend on `namedtensor` alone.

#![warn(missing_docs)]

pub mod amp;
pub mod autograd;
pub mod data;
#[cfg(feature = "mpi")]
pub mod dist;
pub mod named;
mod named_tensor;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod random;
mod tensor;

// The layers below the operations live in `namedtensor-backend` (backend/) and
// `namedtensor-core` (core/); the paths are the same as when they were modules here.
use namedtensor_backend::{backend, error};
pub use namedtensor_backend::{dtype, layout};

/// The shared buffer of tensors: [`Storage`], borrowed elements ([`ElementsRef`]) and the
/// host buffer pool's settings. (The storage layer's internals, below the tensors, are
/// reachable from this crate's code only: they trust layouts that the tensors check.)
pub mod storage {
    #[cfg(feature = "mpi")]
    pub(crate) use namedtensor_backend::storage::give_buffer;
    #[cfg(feature = "nccl")]
    pub(crate) use namedtensor_backend::storage::nccl;
    pub(crate) use namedtensor_backend::storage::{
        Buffer, dispatch, reserve_buffer, take_buffer, with_write_read_buffers,
    };
    pub use namedtensor_backend::storage::{
        ElementsRef, HostBuffer, MIN_POOLED_BYTES, POOLED_ALIGN, Storage, buffer_pool_bytes,
        buffer_pool_capacity, buffer_pool_idle, release_buffer_pool, set_buffer_pool_capacity,
        set_buffer_pool_idle,
    };
}

pub use backend::cpu::parallel::{
    num_threads, on_this_thread, parallel_threshold, set_num_threads, set_parallel_threshold,
};
pub use backend::cpu::stream::{set_streaming_threshold, streaming_threshold};
pub use backend::device::{Device, cuda_is_available};
pub use dtype::{DType, Element, Float, Numeric};
pub use dtype::{
    DivOutput, Promote, Promoted, ScalarDivOutput, ScalarPromote, ScalarPromoted, SumOutput,
};
pub use error::{Error, ErrorKind, Result};
/// The 16-bit float types (`half`'s), so that `Tensor<bf16, …>` needs no other dependency.
pub use half::{bf16, f16};
pub use layout::Layout;
pub use named::{Dim, DimTuple, Dims, Shape};
pub use named_tensor::{Leading, ShapeSizes, Tensor};
pub use ops::{NpzFile, SafetensorsFile, SaveTensor, load_npz, save_npz};
pub use ops::{einsum, try_einsum, where_};
pub use ops::{load_tensors, load_tensors_from_bytes, save_tensors};
pub use storage::{ElementsRef, Storage};
pub use tensor::index_spec::IndexSpec;
pub use tensor::{DynTensor, Idx, NestedData, NewAxis};

/// The device tests (`tests/device`) and the MPI tests (`tests/dist`), in the unit-test binary
/// of a build with the CUDA backend or MPI, where they reach the library by its name as a test
/// crate would (one build of the library serves both; CI runs the MPI ones under `mpirun`).
#[cfg(all(test, any(feature = "cuda", feature = "mpi")))]
extern crate self as namedtensor;
#[cfg(all(test, feature = "cuda"))]
#[path = "../tests/device/mod.rs"]
mod device_tests;
#[cfg(all(test, feature = "mpi"))]
#[path = "../tests/dist/mod.rs"]
mod dist_tests;

/// The README's example, compiled and run as a doctest so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
