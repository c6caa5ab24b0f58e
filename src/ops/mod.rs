//! Operations on [`DynTensor`](crate::DynTensor) beyond the core views: one file per concept,
//! each a set of `DynTensor` methods (or functions) over the kernels in `backend`.

mod matmul;
