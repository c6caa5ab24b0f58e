//! The `.npy` reader on arbitrary bytes (`checks::load_npy`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    namedtensor_fuzz::load_npy(data);
});
