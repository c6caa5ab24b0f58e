//! Where a tensor's storage lives.

use crate::error::{Error, ErrorKind, Result};

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

/// Reads PyTorch's device strings: `cpu`, `cuda` (device 0) and `cuda:N`.
///
/// ```
/// use namedtensor::Device;
/// assert_eq!("cuda:1".parse::<Device>().unwrap(), Device::Cuda(1));
/// assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda(0));
/// assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
/// assert!("gpu".parse::<Device>().is_err());
/// ```
impl std::str::FromStr for Device {
    type Err = Error;

    fn from_str(s: &str) -> Result<Device> {
        let ordinal = match s.strip_prefix("cuda") {
            Some("") => Some(0),
            Some(rest) => rest.strip_prefix(':').and_then(|n| n.parse().ok()),
            None => None,
        };
        match (s, ordinal) {
            ("cpu", _) => Ok(Device::Cpu),
            (_, Some(n)) => Ok(Device::Cuda(n)),
            _ => Err(Error::new(
                ErrorKind::InvalidArgument,
                "Device::from_str",
                format!("`{s}` is no device: write cpu, cuda or cuda:N"),
            )),
        }
    }
}

impl Device {
    /// The number of CUDA devices this process can use: 0 without the `cuda` feature, without
    /// an NVIDIA driver or without a GPU. Never panics.
    ///
    /// ```
    /// let n = namedtensor::Device::cuda_count();
    /// assert_eq!(n > 0, namedtensor::cuda_is_available());
    /// ```
    pub fn cuda_count() -> usize {
        #[cfg(feature = "cuda")]
        {
            crate::backend::cuda::device::device_count()
        }
        #[cfg(not(feature = "cuda"))]
        {
            0
        }
    }

    /// `Ok` if tensors can be placed on this device, else an [`ErrorKind::Device`] error that
    /// says why not (no `cuda` feature, no driver, no such ordinal, …). Never panics.
    ///
    /// ```
    /// use namedtensor::Device;
    /// assert!(Device::Cpu.check_available().is_ok());
    /// if let Err(e) = Device::Cuda(0).check_available() {
    ///     println!("no GPU: {}", e.message());
    /// }
    /// assert!(Device::Cuda(usize::MAX).check_available().is_err());
    /// ```
    pub fn check_available(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => {
                crate::backend::cuda::device::check("check_available", ordinal).map(|_| ())
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(no_cuda_feature("check_available")),
        }
    }

    /// Waits until all work issued to this device has finished (PyTorch's
    /// `torch.cuda.synchronize`), reporting an error of earlier asynchronous work. Operations
    /// on the CPU finish before they return, so for [`Device::Cpu`] this does nothing. Use it
    /// to time GPU work on the host clock; reading a tensor's values back waits by itself.
    ///
    /// Fails with [`ErrorKind::Device`] where the device is unavailable.
    ///
    /// ```
    /// use namedtensor::{Device, DynTensor};
    /// assert!(Device::Cpu.synchronize().is_ok());
    /// if namedtensor::cuda_is_available() {
    ///     let x = DynTensor::<f32>::ones(&[1 << 20]).cuda(0).unwrap();
    ///     let y = x.exp(); // queued on the GPU
    ///     Device::Cuda(0).synchronize().unwrap(); // finished here
    ///     drop(y);
    /// } else {
    ///     assert!(Device::Cuda(0).synchronize().is_err());
    /// }
    /// ```
    pub fn synchronize(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => crate::backend::cuda::device::get("synchronize", ordinal)?
                .synchronize("synchronize"),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(no_cuda_feature("synchronize")),
        }
    }

    /// Whether tensors can be placed on this device ([`Device::check_available`] is `Ok`).
    ///
    /// ```
    /// use namedtensor::Device;
    /// assert!(Device::Cpu.is_available());
    /// assert_eq!(Device::Cuda(0).is_available(), namedtensor::cuda_is_available());
    /// ```
    pub fn is_available(self) -> bool {
        self.check_available().is_ok()
    }
}

/// Whether at least one CUDA device can be used: the crate was built with the `cuda` feature,
/// the NVIDIA driver library loads, and it reports a GPU. Never panics; the answer is
/// determined once per process.
///
/// ```
/// use namedtensor::{Device, DynTensor};
/// let device = if namedtensor::cuda_is_available() { Device::Cuda(0) } else { Device::Cpu };
/// let t = DynTensor::<f32>::ones(&[2, 2]).to_device(device).unwrap();
/// assert_eq!(t.device(), device);
/// ```
pub fn cuda_is_available() -> bool {
    Device::cuda_count() > 0
}

/// The error for a CUDA device in a build without the `cuda` feature.
#[cfg_attr(feature = "cuda", allow(dead_code))]
pub fn no_cuda_feature(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Device,
        op,
        "namedtensor was built without the `cuda` feature; rebuild with `--features cuda` to \
         use CUDA devices",
    )
}

/// Fails with an [`ErrorKind::Device`] error naming both devices unless `a == b`.
pub fn same_device(op: &'static str, a: Device, b: Device) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(mixed_devices(op, a, b))
    }
}

/// The error for an operation on buffers of two devices.
pub fn mixed_devices(op: &'static str, a: Device, b: Device) -> Error {
    Error::new(
        ErrorKind::Device,
        op,
        format!(
            "expected all tensors on one device, but found tensors on {a} and on {b}; move one \
             with to_device() first"
        ),
    )
}
