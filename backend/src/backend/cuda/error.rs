//! Turning driver, NVRTC and cuBLAS status codes into the library's [`Error`]
//! ([`ErrorKind::Device`]). The codes are named from their enum (no call into a CUDA library,
//! which may be the very thing that is missing).

use crate::backend::device::Device;
use crate::error::{Error, ErrorKind};
use cudarc::cublas::result::CublasError;
use cudarc::driver::DriverError;
use cudarc::driver::sys::CUresult;
use cudarc::nvrtc::result::NvrtcError;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// A [`ErrorKind::Device`] error.
pub fn device_error(op: &'static str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Device, op, message)
}

/// A driver failure while doing `what` on `device`; out-of-memory is said in plain words.
pub fn driver(op: &'static str, device: Device, what: &str, e: DriverError) -> Error {
    match e.0 {
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            device_error(op, format!("out of device memory on {device} while {what}"))
        }
        CUresult::CUDA_ERROR_NO_DEVICE => device_error(
            op,
            format!("no CUDA device found while {what} (CUDA_ERROR_NO_DEVICE)"),
        ),
        CUresult::CUDA_ERROR_INVALID_DEVICE => device_error(
            op,
            format!("{device} is not a valid CUDA device (CUDA_ERROR_INVALID_DEVICE)"),
        ),
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => device_error(
            op,
            format!(
                "{what} on {device} failed: the driver is older than the NVRTC library that \
                 compiled the kernel (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); update the driver or \
                 use an NVRTC no newer than it"
            ),
        ),
        code if corrupts_context(code) => {
            let this = format!("`{op}` ({what}) failed with {code:?}{}", emulator_detail());
            let first = first_fault(device, &this);
            let message = if first == this {
                format!("{this}; {device} is unusable from now on, as after any kernel fault")
            } else {
                format!(
                    "{what} on {device} failed ({code:?}): the device has been unusable since \
                     {first}"
                )
            };
            device_error(op, message)
        }
        code => device_error(op, format!("{what} on {device} failed ({code:?})")),
    }
}

/// The errors after which CUDA refuses all further work of the context (a kernel fault): the
/// driver's documentation says the process must be restarted to use the device again.
fn corrupts_context(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_ECC_UNCORRECTABLE
    )
}

/// The first kernel fault on `device`, recording `this` if there was none: every later error
/// names the op that broke the device, not just the one that noticed.
fn first_fault(device: Device, this: &str) -> String {
    static FAULTS: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    FAULTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(device.to_string())
        .or_insert_with(|| this.to_string())
        .clone()
}

/// The emulator's words for the latest failure of device work (which kernel, what it did),
/// appended to a kernel fault; nothing on a real device.
fn emulator_detail() -> String {
    #[cfg(feature = "cuda-emu")]
    if let Some(m) = super::emu::last_failure() {
        return format!(": {m}");
    }
    String::new()
}

/// An NVRTC failure while doing `what`.
#[cfg_attr(feature = "cuda-emu", allow(dead_code))]
pub fn nvrtc(op: &'static str, what: &str, e: NvrtcError) -> Error {
    device_error(op, format!("NVRTC failed while {what} ({:?})", e.0))
}

/// A cuBLAS failure while doing `what` on `device`.
pub fn cublas(op: &'static str, device: Device, what: &str, e: CublasError) -> Error {
    use cudarc::cublas::sys::cublasStatus_t;
    match e.0 {
        cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED => device_error(
            op,
            format!("out of device memory on {device} while {what} (cuBLAS)"),
        ),
        code => device_error(
            op,
            format!("cuBLAS failed while {what} on {device} ({code:?})"),
        ),
    }
}

/// The message of a caught panic (cudarc panics when a library or symbol is missing).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::nvrtc::sys::nvrtcResult;

    #[test]
    fn driver_errors_are_device_errors_in_plain_words() {
        let e = driver(
            "to_device",
            Device::Cuda(1),
            "allocating 4096 bytes",
            DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
        );
        assert_eq!(e.kind(), ErrorKind::Device);
        assert_eq!(
            e.to_string(),
            "to_device: out of device memory on cuda:1 while allocating 4096 bytes"
        );
        let e = driver(
            "fill_",
            Device::Cuda(9), // no other test's device: this records its first fault
            "launching nt_fill_f32",
            DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED),
        );
        assert!(
            e.message().starts_with(
                "`fill_` (launching nt_fill_f32) failed with CUDA_ERROR_LAUNCH_FAILED"
            ),
            "{e}"
        );
        let e = driver(
            "cuda",
            Device::Cuda(0),
            "initialising the driver",
            DriverError(CUresult::CUDA_ERROR_NO_DEVICE),
        );
        assert!(e.message().starts_with("no CUDA device found"), "{e}");
    }

    #[test]
    fn nvrtc_and_cublas_errors_name_the_code() {
        let e = nvrtc(
            "contiguous",
            "creating a program",
            NvrtcError(nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY),
        );
        assert_eq!(e.kind(), ErrorKind::Device);
        assert!(e.message().contains("NVRTC_ERROR_OUT_OF_MEMORY"), "{e}");
        let e = cublas(
            "matmul",
            Device::Cuda(0),
            "running gemm",
            CublasError(cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED),
        );
        assert!(
            e.message().starts_with("out of device memory on cuda:0"),
            "{e}"
        );
    }

    #[test]
    fn panic_messages_are_recovered() {
        let p = std::panic::catch_unwind(|| panic!("Unable to load {}", "libcuda")).unwrap_err();
        assert_eq!(panic_message(&*p), "Unable to load libcuda");
        let p = std::panic::catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(panic_message(&*p), "static");
    }

    #[test]
    fn after_a_kernel_fault_every_error_names_the_op_that_caused_it() {
        // cuda:7 is used by no other test: the record of its first fault is this test's.
        let dev = Device::Cuda(7);
        let fault = DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        let first = driver("exp", dev, "launching nt_unary_exp_f32", fault);
        assert!(
            first.message().starts_with(
                "`exp` (launching nt_unary_exp_f32) failed with CUDA_ERROR_ILLEGAL_ADDRESS"
            ) && first.message().contains("cuda:7 is unusable from now on"),
            "{first}"
        );
        let later = driver("sum", dev, "waiting for the device", fault);
        assert_eq!(later.op(), "sum");
        assert!(
            later.message().starts_with(
                "waiting for the device on cuda:7 failed (CUDA_ERROR_ILLEGAL_ADDRESS): the \
                 device has been unusable since `exp` (launching nt_unary_exp_f32) failed"
            ),
            "{later}"
        );
        // Errors that leave the context usable are not recorded as its fault.
        let oom = driver(
            "zeros",
            Device::Cuda(8),
            "allocating",
            DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
        );
        assert!(oom.message().starts_with("out of device memory"), "{oom}");
        let bad = driver(
            "add",
            Device::Cuda(8),
            "launching",
            DriverError(CUresult::CUDA_ERROR_INVALID_VALUE),
        );
        assert_eq!(
            bad.message(),
            "launching on cuda:8 failed (CUDA_ERROR_INVALID_VALUE)"
        );
    }
}
