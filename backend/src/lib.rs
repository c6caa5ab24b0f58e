//! # namedtensor-backend
//!
//! The layers of [namedtensor](https://docs.rs/namedtensor) between its element types and its
//! operations: the shared buffer and its aliasing rules ([`storage`]), and the backend seam
//! with the CPU and CUDA kernels (`backend`), over `namedtensor-core` (element types, layouts,
//! the elementwise kernels), whose modules it re-exports at the same paths. Users depend on
//! `namedtensor`, which re-exports what is public here; the library is three crates so that a
//! cold build compiles it in three processes, none near the peak memory of one crate holding
//! everything.
//!
//! Items marked `#[doc(hidden)]` are the library's internals, public only so that the
//! `namedtensor` crate can reach them; they are not part of any stable API.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod backend;
pub mod storage;

#[doc(hidden)]
pub use namedtensor_core::error;
pub use namedtensor_core::{dtype, layout};

pub use backend::device::{Device, cuda_is_available};
pub use dtype::{DType, Element, Float, Numeric};
pub use error::{Error, ErrorKind, Result};
pub use layout::Layout;
pub use storage::Storage;
