//! `load_parameters` on arbitrary file contents (`checks::load_parameters_into_mlp`): an
//! error leaves the model unchanged.
#![no_main]

use std::sync::LazyLock;

/// One scratch directory per fuzzing process, removed by the OS's temp cleaning.
static DIR: LazyLock<std::path::PathBuf> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("nt-fuzz-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    namedtensor_fuzz::load_parameters_into_mlp(data, &DIR);
});
