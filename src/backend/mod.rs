//! Kernels, one module per device. They work on raw slices plus [`Layout`](crate::Layout)s and
//! know nothing of tensors or names.

pub mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod device;
