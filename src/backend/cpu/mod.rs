//! CPU kernels over strided slices.

mod copy;
pub mod num;
pub(crate) mod parallel;
pub(crate) mod pointwise;
pub(crate) mod reduce;
pub(crate) mod scan;

pub(crate) use copy::{copy_strided, fill_strided, gather_to_vec, map_to_vec};
