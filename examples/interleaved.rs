//! Interleaved timings for noisy machines: `DynTensor::matmul` against gemm's kernel called
//! directly, `t().contiguous()` of a 4096² f32 matrix, and sums over either dim of a 4096² f32
//! against a read loop over a copy of the same matrix (AVX-512 where the CPU has it). The two matmul variants alternate
//! and each keeps its best time, so a busy neighbour slows both alike; criterion's means
//! (`cargo bench --bench matmul`) drift with the load instead.
//!
//! `cargo run --release --example interleaved [REPS] [MAX_N]` (defaults 20 and 1024).

use namedtensor::{DynTensor, Float};
use std::time::Instant;

#[path = "../benches/support/gemm_direct.rs"]
mod gemm_baseline;
use gemm_baseline::gemm_direct;

#[path = "../benches/support/read_loop.rs"]
mod read_loop;
use read_loop::read_sum;

fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

fn matmul<E: Float>(name: &str, n: usize, reps: usize) {
    let a = DynTensor::<E>::randn(&[n, n], 1);
    let b = DynTensor::<E>::randn(&[n, n], 2);
    let (va, vb) = (a.to_vec(), b.to_vec());
    let mut out = vec![E::ZERO; n * n];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        namedtensor::set_num_threads(threads);
        let (mut direct, mut ours) = (f64::MAX, f64::MAX);
        for _ in 0..reps {
            direct = direct.min(best(1, || gemm_direct(&pool, n, &va, &vb, &mut out)));
            ours = ours.min(best(1, || drop(std::hint::black_box(a.matmul(&b)))));
        }
        // The baseline computes the same product (it calls gemm's kernel by hand).
        let ours_values = a.matmul(&b).to_vec();
        let scale = ours_values
            .iter()
            .map(|v| v.to_f64().abs())
            .fold(1.0, f64::max);
        let worst = out
            .iter()
            .zip(&ours_values)
            .map(|(p, q)| (p.to_f64() - q.to_f64()).abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-3 * scale,
            "the gemm baseline and matmul differ by {worst} (largest value {scale})"
        );
        let gflops = |s: f64| 2.0 * (n as f64).powi(3) / s / 1e9;
        println!(
            "matmul {name} n={n} {threads}t: gemm {:.3} ms ({:.0} GFLOP/s), namedtensor {:.3} ms \
             ({:.0} GFLOP/s): {:.0} % of gemm",
            direct * 1e3,
            gflops(direct),
            ours * 1e3,
            gflops(ours),
            100.0 * direct / ours
        );
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let reps = args.first().copied().unwrap_or(20);
    let max_n = args.get(1).copied().unwrap_or(1024);
    for n in [256, 1024, 2048].into_iter().filter(|&n| n <= max_n) {
        matmul::<f32>("f32", n, reps);
        matmul::<f64>("f64", n, reps);
    }
    let x = DynTensor::<f32>::randn(&[4096, 4096], 1);
    for threads in [1, 2] {
        namedtensor::set_num_threads(threads);
        let t = best(reps.min(10), || {
            drop(std::hint::black_box(x.t().contiguous()))
        });
        println!(
            "transpose→contiguous 4096² f32 {threads}t: {:.1} ms",
            t * 1e3
        );
    }
    sums_against_a_read_loop(&x, reps);
}

/// One thread: `sum_dim(1)`, `sum_dim(0)` and the read loop in turn, medians.
fn sums_against_a_read_loop(x: &DynTensor<f32>, reps: usize) {
    namedtensor::set_num_threads(1);
    let data = x.to_vec();
    let mut times = [vec![], vec![], vec![]];
    for _ in 0..reps.max(5) {
        times[0].push(best(1, || drop(std::hint::black_box(x.sum_dim(1, false)))));
        times[1].push(best(1, || drop(std::hint::black_box(x.sum_dim(0, false)))));
        times[2].push(best(1, || {
            std::hint::black_box(read_sum(&data));
        }));
    }
    let [last, first, read] = times.map(|mut t| {
        t.sort_by(|a, b| a.partial_cmp(b).unwrap());
        t[t.len() / 2]
    });
    let gbs = |s: f64| (data.len() * 4) as f64 / s / 1e9;
    for (name, t) in [
        ("sum over the last dim", last),
        ("sum over the first dim", first),
    ] {
        println!(
            "{name} 4096² f32 1t: {:.2} ms ({:.1} GB/s) = {:.0} % of the read loop ({:.2} ms, {:.1} GB/s)",
            t * 1e3,
            gbs(t),
            100.0 * read / t,
            read * 1e3,
            gbs(read)
        );
    }
}
