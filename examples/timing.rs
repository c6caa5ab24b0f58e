//! Min-of-N timings of the compute benchmarks, interleaved with their machine baselines, for a
//! noisy shared machine (where the minimum is the best estimate of what the code can do), with
//! operands evicted from the caches before each timing.
//!
//! Run: `cargo run --release --example timing [reps] [filter]` (only the cases whose name
//! contains one of the comma-separated words of `filter`; `NAMEDTENSOR_NUM_THREADS=1` for one thread). `benches/numpy_timing.py`
//! times NumPy's side of the exp, softmax and transpose cases the same way.

use half::{bf16, f16};
use namedtensor::DynTensor;
use std::hint::black_box;
use std::time::Instant;

const N: usize = 1 << 24;

/// A named operation to time.
type Case<'a> = (&'static str, Box<dyn FnMut() + 'a>);

#[path = "../benches/support/read_loop.rs"]
mod read_loop;
use read_loop::read_sum;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let a = DynTensor::<f32>::rand(&[N], 1);
    let b = DynTensor::<f32>::rand(&[N], 2);
    let av = a.to_vec();
    let bv = b.to_vec();
    let mut out = vec![0.0f32; N];
    let m = DynTensor::<f32>::rand(&[4096, 4096], 4);
    let col = DynTensor::<f32>::rand(&[4096, 1], 3);
    let (h1, h2) = (a.to_dtype::<f16>(), b.to_dtype::<f16>());
    let (z1, z2) = (a.to_dtype::<bf16>(), b.to_dtype::<bf16>());
    // Inputs of exp-based cases: standard normal values, as in NumPy's script.
    let g = DynTensor::<f32>::randn(&[N], 5);
    let gv = g.to_vec();
    let g64 = g.to_dtype::<f64>();
    let gm = DynTensor::<f32>::randn(&[4096, 4096], 6);
    let dst = DynTensor::<f32>::zeros(&[4096, 4096]);
    let mut copy_out = vec![0.0f32; N];
    let mut exp_out = vec![0.0f32; N];
    let mut cases: Vec<Case> = vec![
        (
            "baseline: read loop 64 MiB, 1 thread",
            Box::new(|| {
                black_box(read_sum(&av));
            }),
        ),
        (
            "baseline: add into existing 16M, 1 thread",
            Box::new(|| {
                for ((o, &x), &y) in out.iter_mut().zip(&av).zip(&bv) {
                    *o = x + y;
                }
                black_box(out[7]);
            }),
        ),
        (
            "baseline: libm expf loop into existing 16M, 1 thread",
            Box::new(|| {
                for (o, &x) in exp_out.iter_mut().zip(&gv) {
                    *o = x.exp();
                }
                black_box(exp_out[7]);
            }),
        ),
        (
            "baseline: memcpy 64 MiB into existing, 1 thread",
            Box::new(|| {
                copy_out.copy_from_slice(&gv);
                black_box(copy_out[7]);
            }),
        ),
        (
            "exp f32 16M new",
            Box::new(|| {
                black_box(g.exp());
            }),
        ),
        (
            "exp f64 16M new",
            Box::new(|| {
                black_box(g64.exp());
            }),
        ),
        (
            "sigmoid f32 16M new",
            Box::new(|| {
                black_box(g.sigmoid());
            }),
        ),
        (
            "softmax 4096² last dim",
            Box::new(|| {
                black_box(gm.softmax(-1));
            }),
        ),
        (
            "log_softmax 4096² last dim",
            Box::new(|| {
                black_box(gm.log_softmax(-1));
            }),
        ),
        (
            "logsumexp 4096² last dim",
            Box::new(|| {
                black_box(gm.logsumexp_dim(-1, false));
            }),
        ),
        (
            "transpose 4096² t().contiguous()",
            Box::new(|| {
                black_box(gm.t().contiguous());
            }),
        ),
        (
            "transpose 4096² copy_ into existing",
            Box::new(|| {
                black_box(dst.copy_(&gm.t()).numel());
            }),
        ),
        (
            "add f32 16M new",
            Box::new(|| {
                black_box(&a + &b);
            }),
        ),
        (
            "add f32 16M in place",
            Box::new(|| {
                black_box(a.add_(&b).numel());
            }),
        ),
        (
            "add [4096,4096]+[4096,1] new",
            Box::new(|| {
                black_box(&m + &col);
            }),
        ),
        (
            "add f16 16M new",
            Box::new(|| {
                black_box(&h1 + &h2);
            }),
        ),
        (
            "add bf16 16M new",
            Box::new(|| {
                black_box(&z1 + &z2);
            }),
        ),
        (
            "sum 4096² last dim",
            Box::new(|| {
                black_box(m.sum_dim(-1, false));
            }),
        ),
        (
            "sum 4096² first dim",
            Box::new(|| {
                black_box(m.sum_dim(0, false));
            }),
        ),
        (
            "sum 4096² all",
            Box::new(|| {
                black_box(m.sum());
            }),
        ),
    ];
    // This machine's last-level cache may hold a 64 MiB operand from one case to the next,
    // so each timing starts after reading a 512 MiB buffer (cold operands, as on machines with
    // smaller caches).
    let flush = vec![1u8; 512 << 20];
    if let Some(filter) = std::env::args().nth(2) {
        cases.retain(|(name, _)| filter.split(',').any(|f| name.contains(f)));
    }
    let mut times = vec![Vec::new(); cases.len()];
    for _ in 0..reps {
        for (k, (_, f)) in cases.iter_mut().enumerate() {
            black_box(flush.iter().step_by(64).map(|&b| b as usize).sum::<usize>());
            let t = Instant::now();
            f();
            times[k].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!("threads: {}", namedtensor::num_threads());
    for ((name, _), t) in cases.iter().zip(&mut times) {
        t.sort_by(|x, y| x.partial_cmp(y).unwrap());
        println!(
            "{name:45} min {:7.2} ms   median {:7.2} ms",
            t[0],
            t[t.len() / 2]
        );
    }
}
