//! CPU kernels over strided slices.

pub(crate) mod convert;
mod copy;
mod elementwise;
mod half_lines;
mod instances;
mod matmul;
pub(crate) mod parallel;
pub(crate) mod pointwise;
pub(crate) mod pool;
pub(crate) mod reduce;
mod reduction;
pub(crate) mod scan;
mod select;
mod shape;
mod sort;
pub(crate) mod stream;
mod transpose;
pub(crate) mod vmath;
mod words;

pub(crate) use copy::copy_cast;
pub(crate) use instances::Cpu;
