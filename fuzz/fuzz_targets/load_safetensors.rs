//! The safetensors loader on arbitrary bytes (`checks::load_safetensors`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    namedtensor_fuzz::load_safetensors(data);
});
