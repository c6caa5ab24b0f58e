//! Operations on [`DynTensor`](crate::DynTensor) beyond the core views: one file per concept,
//! each a set of `DynTensor` methods (or functions) over the kernels in `backend`.

mod flip;
mod index_select;
mod join;
mod matmul;
mod repeat;
mod serialize;
mod split;
mod triangular;

pub use serialize::{load_tensors, save_tensors};
