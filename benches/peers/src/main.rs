//! Peer comparison: the same work through namedtensor, ndarray, candle-core, the `gemm` crate
//! called directly, and NumPy (python3, if installed), in one run, with ratios.
//!
//! ```sh
//! cd benches/peers && cargo run --release -- --threads 2
//! ```
//! `--threads N` sets every library's thread count (namedtensor's pool, rayon's global pool
//! used by ndarray/candle/gemm, `MATMUL_NUM_THREADS` for ndarray's matrixmultiply,
//! `OPENBLAS_NUM_THREADS` for NumPy). Times are medians of repeated runs, in milliseconds.

use half::{bf16, f16};
use namedtensor::DynTensor;
use ndarray::{Array1, Array2, Axis};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t[t.len() / 2]
}

/// Results: case -> library -> median ms.
type Table = BTreeMap<String, BTreeMap<&'static str, f64>>;

fn record(table: &mut Table, case: &str, lib: &'static str, ms: f64) {
    println!("{case:<34} {lib:<12} {ms:>10.3} ms");
    table.entry(case.to_string()).or_default().insert(lib, ms);
}

fn numpy(table: &mut Table, threads: usize, only: &[String]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/numpy_bench.py");
    let out = Command::new("python3")
        .arg(script)
        .args(only)
        .env("OPENBLAS_NUM_THREADS", threads.to_string())
        .env("OMP_NUM_THREADS", threads.to_string())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                if let Some((case, ms)) = line.split_once('\t') {
                    record(table, case, "numpy", ms.parse().unwrap());
                }
            }
        }
        Ok(o) => eprintln!("numpy skipped: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => eprintln!("numpy skipped: python3 not runnable ({e})"),
    }
}

/// A STREAM-like read: the sum of 16M f32 split across the pool, with independent
/// accumulators. Returns GB/s.
fn stream_read_gbs() -> f64 {
    let data: Vec<f32> = (0..16 << 20).map(|i| (i % 7) as f32).collect();
    let ms = median_ms(15, || {
        let s: f32 = data
            .par_chunks(1 << 16)
            .map(|c| {
                let mut acc = [0f32; 16];
                for ch in c.chunks_exact(16) {
                    for k in 0..16 {
                        acc[k] += ch[k];
                    }
                }
                acc.iter().sum::<f32>()
            })
            .sum();
        std::hint::black_box(s);
    });
    (data.len() * 4) as f64 / (ms * 1e-3) / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads: usize = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let only: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
        .cloned()
        .collect();
    let want = |c: &str| only.is_empty() || only.iter().any(|o| o == c);
    // SAFETY: set before any other thread exists (first statements of main).
    unsafe {
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
        std::env::set_var("MATMUL_NUM_THREADS", threads.to_string());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    namedtensor::set_num_threads(threads);
    println!("threads: {threads}");
    let mut table = Table::new();
    let dev = candle_core::Device::Cpu;

    let gbs = stream_read_gbs();
    println!("stream-like read of 64 MiB: {gbs:.1} GB/s");

    const N16: usize = 16 << 20;
    // ---- elementwise add into a new tensor
    if want("add_f32_16M_new") {
        let c = "add_f32_16M_new";
        let a = DynTensor::<f32>::randn(&[N16], 1);
        let b = DynTensor::<f32>::randn(&[N16], 2);
        record(
            &mut table,
            c,
            "namedtensor",
            median_ms(15, || drop(&a + &b)),
        );
        let (x, y) = (Array1::from(a.to_vec()), Array1::from(b.to_vec()));
        record(&mut table, c, "ndarray", median_ms(15, || drop(&x + &y)));
        let (x, y) = (
            candle_core::Tensor::new(a.to_vec(), &dev).unwrap(),
            candle_core::Tensor::new(b.to_vec(), &dev).unwrap(),
        );
        record(
            &mut table,
            c,
            "candle",
            median_ms(15, || drop((&x + &y).unwrap())),
        );
    }
    if want("add_f16_16M_new") || want("add_bf16_16M_new") {
        let a = DynTensor::<f32>::randn(&[N16], 1);
        let b = DynTensor::<f32>::randn(&[N16], 2);
        let (ha, hb) = (a.to_dtype::<f16>(), b.to_dtype::<f16>());
        record(
            &mut table,
            "add_f16_16M_new",
            "namedtensor",
            median_ms(7, || drop(&ha + &hb)),
        );
        let (ba, bb) = (a.to_dtype::<bf16>(), b.to_dtype::<bf16>());
        record(
            &mut table,
            "add_bf16_16M_new",
            "namedtensor",
            median_ms(7, || drop(&ba + &bb)),
        );
        let x = candle_core::Tensor::new(a.to_vec(), &dev).unwrap();
        let y = candle_core::Tensor::new(b.to_vec(), &dev).unwrap();
        for (case, dt) in [
            ("add_f16_16M_new", candle_core::DType::F16),
            ("add_bf16_16M_new", candle_core::DType::BF16),
        ] {
            let (x, y) = (x.to_dtype(dt).unwrap(), y.to_dtype(dt).unwrap());
            record(
                &mut table,
                case,
                "candle",
                median_ms(7, || drop((&x + &y).unwrap())),
            );
        }
    }
    // ---- broadcast add, reductions, transpose copy on 4096²
    let m = DynTensor::<f32>::randn(&[4096, 4096], 3);
    let col = DynTensor::<f32>::randn(&[4096, 1], 4);
    let xm = Array2::from_shape_vec((4096, 4096), m.to_vec()).unwrap();
    let xc = Array2::from_shape_vec((4096, 1), col.to_vec()).unwrap();
    let cm = candle_core::Tensor::new(m.to_vec(), &dev)
        .unwrap()
        .reshape((4096, 4096))
        .unwrap();
    let cc = candle_core::Tensor::new(col.to_vec(), &dev)
        .unwrap()
        .reshape((4096, 1))
        .unwrap();
    if want("bcast_add_4096x4096+4096x1") {
        let c = "bcast_add_4096x4096+4096x1";
        record(
            &mut table,
            c,
            "namedtensor",
            median_ms(15, || drop(&m + &col)),
        );
        record(&mut table, c, "ndarray", median_ms(15, || drop(&xm + &xc)));
        record(
            &mut table,
            c,
            "candle",
            median_ms(15, || drop(cm.broadcast_add(&cc).unwrap())),
        );
    }
    for (c, dim) in [("sum_last_4096x4096", 1usize), ("sum_first_4096x4096", 0)] {
        if !want(c) {
            continue;
        }
        record(
            &mut table,
            c,
            "namedtensor",
            median_ms(15, || drop(m.sum_dim(dim as isize, false))),
        );
        record(
            &mut table,
            c,
            "ndarray",
            median_ms(15, || drop(xm.sum_axis(Axis(dim)))),
        );
        record(
            &mut table,
            c,
            "candle",
            median_ms(15, || drop(cm.sum(dim).unwrap())),
        );
        let ms = table[c]["namedtensor"];
        let read_gbs = 4096.0 * 4096.0 * 4.0 / (ms * 1e-3) / 1e9;
        println!(
            "{c}: namedtensor reads at {read_gbs:.1} GB/s = {:.0} % of the stream-like loop",
            100.0 * read_gbs / gbs
        );
    }
    if want("transpose_contiguous_4096x4096") {
        let c = "transpose_contiguous_4096x4096";
        record(
            &mut table,
            c,
            "namedtensor",
            median_ms(7, || drop(m.t().contiguous())),
        );
        record(
            &mut table,
            c,
            "ndarray",
            median_ms(7, || drop(xm.t().as_standard_layout().into_owned())),
        );
        record(
            &mut table,
            c,
            "candle",
            median_ms(7, || drop(cm.t().unwrap().contiguous().unwrap())),
        );
    }
    // ---- matmul
    for n in [256usize, 1024, 2048] {
        let reps = if n <= 256 {
            100
        } else if n <= 1024 {
            11
        } else {
            5
        };
        for dt in ["f32", "f64"] {
            let c = format!("matmul_{dt}_{n}");
            if !want(&c) {
                continue;
            }
            if dt == "f32" {
                matmul_case::<f32>(&mut table, &c, n, reps, threads, &dev);
            } else {
                matmul_case::<f64>(&mut table, &c, n, reps, threads, &dev);
            }
        }
    }

    numpy(&mut table, threads, &only);

    // ---- the table of ratios: peer time / namedtensor time (> 1 means namedtensor is faster)
    let peers = ["numpy", "ndarray", "candle", "gemm"];
    println!(
        "\n| case | namedtensor ms | {} |",
        peers.map(|p| format!("{p} ms (ratio)")).join(" | ")
    );
    println!("|---|---:|{}", "---:|".repeat(peers.len()));
    for (case, libs) in &table {
        let Some(&ours) = libs.get("namedtensor") else {
            continue;
        };
        let cells: Vec<String> = peers
            .iter()
            .map(|p| {
                libs.get(p)
                    .map_or("–".into(), |&t| format!("{t:.2} ({:.2}×)", t / ours))
            })
            .collect();
        println!("| {case} | {ours:.2} | {} |", cells.join(" | "));
    }
    println!("\nstream-like read: {gbs:.1} GB/s, threads: {threads}");
}

trait MatElem:
    namedtensor::Float + candle_core::WithDType + ndarray::LinalgScalar + Default + Copy
{
}
impl MatElem for f32 {}
impl MatElem for f64 {}

fn matmul_case<T: MatElem>(
    table: &mut Table,
    c: &str,
    n: usize,
    reps: usize,
    threads: usize,
    dev: &candle_core::Device,
) {
    let a = DynTensor::<T>::randn(&[n, n], 5);
    let b = DynTensor::<T>::randn(&[n, n], 6);
    record(
        table,
        c,
        "namedtensor",
        median_ms(reps, || drop(a.matmul(&b))),
    );
    let (va, vb) = (a.to_vec(), b.to_vec());
    let mut dst = vec![T::default(); n * n];
    record(
        table,
        c,
        "gemm",
        median_ms(reps, || {
            // SAFETY: all three buffers hold n*n elements in row-major order (row stride n,
            // column stride 1) and `dst` does not alias the inputs.
            unsafe {
                gemm::gemm(
                    n,
                    n,
                    n,
                    dst.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    va.as_ptr(),
                    1,
                    n as isize,
                    vb.as_ptr(),
                    1,
                    n as isize,
                    T::default(),
                    <T as namedtensor::Element>::ONE,
                    false,
                    false,
                    false,
                    if threads > 1 {
                        gemm::Parallelism::Rayon(threads)
                    } else {
                        gemm::Parallelism::None
                    },
                )
            }
        }),
    );
    let xa = Array2::from_shape_vec((n, n), va.clone()).unwrap();
    let xb = Array2::from_shape_vec((n, n), vb.clone()).unwrap();
    record(table, c, "ndarray", median_ms(reps, || drop(xa.dot(&xb))));
    let ca = candle_core::Tensor::from_vec(va, (n, n), dev).unwrap();
    let cb = candle_core::Tensor::from_vec(vb, (n, n), dev).unwrap();
    record(
        table,
        c,
        "candle",
        median_ms(reps, || drop(ca.matmul(&cb).unwrap())),
    );
}
