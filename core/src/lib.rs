//! # namedtensor-core
//!
//! The bottom of [namedtensor](https://docs.rs/namedtensor): element types and promotion
//! ([`dtype`]), pure index math ([`layout`]), the library's error type, and the CPU's
//! elementwise engines (`backend::cpu`) with their per-dtype instances. Users depend on
//! `namedtensor`, which re-exports what is public here; the library is three crates so that a
//! cold build compiles it in three processes, none near the peak memory of one crate holding
//! everything.
//!
//! Items marked `#[doc(hidden)]` are the library's internals, public only so that the crates
//! above can reach them; they are not part of any stable API.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod backend;
pub mod dtype;
#[doc(hidden)]
pub mod error;
pub mod layout;

pub use dtype::{DType, Element, Float, Numeric};
pub use error::{Error, ErrorKind, Result};
pub use layout::Layout;
