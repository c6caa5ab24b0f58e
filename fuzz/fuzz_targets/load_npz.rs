//! The `.npz` reader on arbitrary bytes (`checks::load_npz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    namedtensor_fuzz::load_npz(data);
});
