//! namedtensor

pub mod named;

pub use named::{Dim, Dims, Shape};
