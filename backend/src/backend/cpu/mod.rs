//! CPU kernels over strided slices: the reductions, matrix products, indexing, windows and
//! sorting here, the elementwise engines in `namedtensor-core` (re-exported at the same paths),
//! and the [`Cpu`] backend that dispatches to both.

pub use namedtensor_core::backend::cpu::{
    convert, copy, copy_cast, elementwise, elementwise_instances, env_setting, half_lines,
    host_buffer, parallel, pointwise, pool, stream, transpose, vmath,
};
mod adam;
mod dot_products;
mod instances;
mod matmul;
mod normalize;
pub mod reduce;
mod reduction;
pub mod scan;
mod select;
mod shape;
mod sort;
mod window;
mod words;

pub use instances::Cpu;
