//! CUDA benchmarks: each case on `cuda:0`, with the same cases timed in PyTorch on the same GPU
//! by `benches/cuda_torch.py` (run it beside this one; BENCHMARKS.md has the ratios).
//!
//! Method (the same on both sides, so that the ratio compares the libraries, not the clocks):
//! inputs are random (never zeros), made once; each case runs 3 times to warm up (kernel
//! compilation, allocator), then `REPS` times, each timed alone on the host clock from the call
//! to the end of `Device::synchronize` / `torch.cuda.synchronize`; the median is reported,
//! with the bandwidth (bytes read once plus bytes written once) or the arithmetic rate it
//! implies. The sizes are large enough (256 MiB per f32 operand) that launch and sync
//! latency (~10 µs) is a few percent at most.
//!
//! Run: `cargo bench --features cuda --bench cuda` (a machine with an NVIDIA GPU and its
//! driver; NVRTC and cuBLAS libraries on the library path). Filter by case name:
//! `cargo bench --features cuda --bench cuda -- sum`.

use namedtensor::{Device, DynTensor};
use std::hint::black_box;
use std::time::Instant;

const REPS: usize = 20;
const DEV: Device = Device::Cuda(0);

/// The median time of `f` in milliseconds (see the module docs).
fn median_ms<R>(mut f: impl FnMut() -> R) -> f64 {
    for _ in 0..3 {
        black_box(f());
        DEV.synchronize().unwrap();
    }
    let mut times: Vec<f64> = (0..REPS)
        .map(|_| {
            let start = Instant::now();
            let r = f();
            DEV.synchronize().unwrap();
            let ms = start.elapsed().as_secs_f64() * 1e3;
            drop(r);
            ms
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[REPS / 2]
}

fn randn(shape: &[usize], seed: u64) -> DynTensor<f32> {
    DynTensor::<f32>::randn(shape, seed).cuda(0).unwrap()
}

/// A case's timing run: its median in milliseconds (NaN where the case does not run).
type Timer<'a> = Box<dyn Fn() -> f64 + 'a>;

/// One case: its name, the time, and what it moved (bytes) or computed (flop).
struct Case {
    name: &'static str,
    ms: f64,
    bytes: f64,
    flop: f64,
}

fn report(c: &Case) {
    let rate = if c.flop > 0.0 {
        format!("{:8.1} TFLOP/s", c.flop / c.ms / 1e9)
    } else {
        format!("{:8.0} GB/s   ", c.bytes / c.ms / 1e6)
    };
    println!("{:<28} {:>10.3} ms  {rate}", c.name, c.ms);
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f));
    if let Err(e) = DEV.check_available() {
        println!("no CUDA device: {}", e.message());
        return;
    }
    let n = 1usize << 26; // 64 Mi elements, 256 MiB in f32
    let side = 8192usize; // side * side == n
    let f = 4.0; // bytes per f32
    let nf = n as f64;
    let a = randn(&[n], 1);
    let b = randn(&[n], 2);
    let m = randn(&[side, side], 3);
    let row = randn(&[side], 4);
    let cases: Vec<(&'static str, f64, f64, Timer<'_>)> = vec![
        (
            "add_f32_64M",
            3.0 * nf * f,
            0.0,
            Box::new(|| median_ms(|| &a + &b)),
        ),
        (
            "exp_f32_64M",
            2.0 * nf * f,
            0.0,
            Box::new(|| median_ms(|| a.exp())),
        ),
        (
            "add_row_broadcast_8192sq",
            2.0 * nf * f,
            0.0,
            Box::new(|| median_ms(|| &m + &row)),
        ),
        (
            "sum_all_f32_64M",
            nf * f,
            0.0,
            Box::new(|| median_ms(|| a.sum())),
        ),
        (
            "sum_rows_8192sq",
            nf * f,
            0.0,
            Box::new(|| median_ms(|| m.sum_dim(1, false))),
        ),
        (
            "sum_cols_8192sq",
            nf * f,
            0.0,
            Box::new(|| median_ms(|| m.sum_dim(0, false))),
        ),
        (
            "argmax_rows_8192sq",
            nf * f,
            0.0,
            Box::new(|| median_ms(|| m.argmax_dim(1, false))),
        ),
        (
            "softmax_rows_8192sq",
            2.0 * nf * f,
            0.0,
            Box::new(|| median_ms(|| m.softmax(-1))),
        ),
        (
            "cumsum_rows_8192sq",
            2.0 * nf * f,
            0.0,
            Box::new(|| median_ms(|| m.cumsum(-1))),
        ),
        (
            "transpose_copy_8192sq",
            2.0 * nf * f,
            0.0,
            Box::new(|| median_ms(|| m.t().contiguous())),
        ),
        (
            "cast_f32_bf16_64M",
            nf * (f + 2.0),
            0.0,
            Box::new(|| median_ms(|| a.to_dtype::<half::bf16>())),
        ),
        (
            "sort_rows_4096sq",
            4096.0 * 4096.0 * (2.0 * f + 8.0),
            0.0,
            Box::new(|| {
                let s = randn(&[4096, 4096], 5);
                match s.try_sort(-1, false) {
                    Ok(_) => median_ms(|| s.sort(-1, false)),
                    Err(e) => {
                        println!("sort_rows_4096sq: {}", e.message());
                        f64::NAN
                    }
                }
            }),
        ),
        (
            "sort_rows_16384x1024",
            16384.0 * 1024.0 * (2.0 * f + 8.0),
            0.0,
            Box::new(|| {
                let s = randn(&[16384, 1024], 11);
                median_ms(|| s.sort(-1, false))
            }),
        ),
        (
            "sort_1_row_16M",
            nf / 4.0 * (2.0 * f + 8.0),
            0.0,
            Box::new(|| {
                let s = randn(&[1 << 24], 12);
                median_ms(|| s.sort(-1, false))
            }),
        ),
        (
            "index_select_rows_64k_of_32k",
            2.0 * 65536.0 * 1024.0 * f,
            0.0,
            Box::new(|| {
                let table = randn(&[32768, 1024], 6);
                let ids = DynTensor::<i64>::from_vec(
                    (0..65536).map(|i| (i * 7919) % 32768).collect(),
                    &[65536],
                )
                .cuda(0)
                .unwrap();
                median_ms(|| table.index_select(0, &ids))
            }),
        ),
        (
            "matmul_f32_4096",
            0.0,
            2.0 * 4096f64.powi(3),
            Box::new(|| {
                let x = randn(&[4096, 4096], 7);
                let y = randn(&[4096, 4096], 8);
                median_ms(|| x.matmul(&y))
            }),
        ),
        (
            "matmul_bf16_8192",
            0.0,
            2.0 * 8192f64.powi(3),
            Box::new(|| {
                let x = randn(&[8192, 8192], 9).to_dtype::<half::bf16>();
                let y = randn(&[8192, 8192], 10).to_dtype::<half::bf16>();
                median_ms(|| x.matmul(&y))
            }),
        ),
    ];
    println!("{:<28} {:>13}  rate", "case (namedtensor)", "median");
    for (name, bytes, flop, run) in &cases {
        if !wanted(name) {
            continue;
        }
        let ms = run();
        if ms.is_nan() {
            continue;
        }
        report(&Case {
            name,
            ms,
            bytes: *bytes,
            flop: *flop,
        });
    }
}
