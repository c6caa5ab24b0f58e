//! Where a tensor's storage lives.

/// A compute device.
///
/// ```
/// use namedtensor::{Device, DynTensor};
/// assert_eq!(DynTensor::<f32>::zeros(&[2]).device(), Device::Cpu);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory; kernels run on the library's CPU thread pool.
    #[default]
    Cpu,
    /// The CUDA device with this ordinal (needs the `cuda` feature and a driver at run time).
    Cuda(usize),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}
