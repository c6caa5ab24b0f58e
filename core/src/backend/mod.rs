//! The parts of the backends that need no storage: the op tokens and the CPU's elementwise
//! engines. `namedtensor-backend` adds the [`Backend`](../../namedtensor_backend) seam, the
//! other CPU kernels and CUDA, and re-exports these modules at the same paths.

pub mod cpu;
pub mod op;
