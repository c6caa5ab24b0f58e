//! One test body, run on every device: `device_tests!` instantiates each test for the CPU and
//! for `cuda:0`. Without a usable GPU (no `cuda` feature, no driver, no device) the CUDA
//! instance prints why it skips and passes.
//!
//! ```ignore
//! device_tests! {
//!     fn fill_writes_through_views(dev: Device) {
//!         let t = DynTensor::<f32>::zeros_on(&[2, 3], dev).unwrap();
//!         t.select(1, 0).fill_(1.0);
//!         assert_eq!(t.to_vec(), vec![1., 0., 0., 1., 0., 0.]);
//!     }
//! }
//! ```
//! makes the tests `fill_writes_through_views::cpu` and `fill_writes_through_views::cuda0`.

use namedtensor::Device;

/// `Some(dev)` if tests can run on `dev`, else `None` after printing why they skip.
pub fn available(dev: Device) -> Option<Device> {
    match dev.check_available() {
        Ok(()) => Some(dev),
        Err(e) => {
            eprintln!("skipping on {dev}: {}", e.message());
            None
        }
    }
}

/// Instantiates each `fn name(dev: Device) { … }` as `name::cpu` and `name::cuda0`.
#[allow(unused_macros)] // each test file that includes `common` may not use it
macro_rules! device_tests {
    ($( $(#[$meta:meta])* fn $name:ident($dev:ident: Device) $body:block )*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$meta])*
            fn body($dev: namedtensor::Device) $body

            #[test]
            fn cpu() {
                body(namedtensor::Device::Cpu);
            }

            #[test]
            fn cuda0() {
                if let Some(dev) = super::super::common::devices::available(namedtensor::Device::Cuda(0)) {
                    body(dev);
                }
            }
        }
    )*};
}
