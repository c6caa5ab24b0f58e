//! Peak memory of saving and loading a 64 MiB tensor in safetensors and NumPy files: loading
//! needs the tensor's own memory and little more (the bytes go from the file straight into
//! the new buffer), saving one row-major copy. Measured on Linux through the process's peak
//! resident set (`VmHWM`, reset by writing 5 to /proc/self/clear_refs); this binary holds
//! one test so that nothing else allocates meanwhile.

use namedtensor::{DynTensor, NpzFile, save_npz};

const N: usize = 16 << 20; // f32 elements: 64 MiB
const BYTES: f64 = (N * 4) as f64;

#[cfg(target_os = "linux")]
fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// Bytes by which the peak resident set rises above the current one while `f` runs.
#[cfg(target_os = "linux")]
fn peak_rise<T>(f: impl FnOnce() -> T) -> (T, f64) {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let base = status_kib("VmRSS:");
    let out = f();
    (out, (status_kib("VmHWM:") - base) * 1024.0)
}

#[test]
#[cfg(target_os = "linux")]
fn loading_needs_the_tensor_and_saving_one_copy() {
    let dir = std::env::temp_dir().join(format!("nt-file-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = DynTensor::<f32>::rand(&[N / 1024, 1024], 7);
    // Touch every page of the source before measuring.
    let probe: Vec<f32> = (0..N)
        .step_by(N / 7)
        .map(|i| t.get(&[i / 1024, i % 1024]))
        .collect();

    let st = dir.join("big.safetensors");
    let ((), save) = peak_rise(|| t.save(&st).unwrap());
    let (back, load) = peak_rise(|| DynTensor::<f32>::load(&st).unwrap());
    let npy = dir.join("big.npy");
    let ((), save_npy) = peak_rise(|| t.save_npy(&npy).unwrap());
    let (back_npy, load_npy) = peak_rise(|| DynTensor::<f32>::load_npy(&npy).unwrap());
    let npz = dir.join("big.npz");
    let ((), save_npz_rise) = peak_rise(|| save_npz(&npz, &[("t", &t)]).unwrap());
    let (back_npz, load_npz) = peak_rise(|| NpzFile::open(&npz).unwrap().get::<f32>("t").unwrap());

    for (what, rise, copies) in [
        ("safetensors save", save, 1.1),
        ("safetensors load", load, 1.1),
        ("npy save", save_npy, 1.1),
        ("npy load", load_npy, 1.1),
        ("npz save", save_npz_rise, 1.1),
        ("npz load", load_npz, 1.1),
    ] {
        println!("{what}: peak rise {:.2}x the tensor", rise / BYTES);
        assert!(
            rise < copies * BYTES,
            "{what}: peak rose by {:.0} MiB for a {:.0} MiB tensor (limit {copies}x)",
            rise / 1048576.0,
            BYTES / 1048576.0
        );
    }
    for b in [&back, &back_npy, &back_npz] {
        let got: Vec<f32> = (0..N)
            .step_by(N / 7)
            .map(|i| b.get(&[i / 1024, i % 1024]))
            .collect();
        assert_eq!(got, probe);
        assert_eq!(b.shape(), t.shape());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
