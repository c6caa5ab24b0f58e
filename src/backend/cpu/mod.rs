//! CPU kernels over strided slices.

mod copy;
mod matmul;
pub(crate) mod parallel;
mod transpose;

pub(crate) use copy::{copy_strided, fill_strided, gather_to_vec, map_to_vec};
pub(crate) use matmul::{matmul, Batched};
