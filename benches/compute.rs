//! CPU compute benchmarks (targets and ceilings in BENCHMARKS.md), with machine baselines measured in the same
//! run: a STREAM-like read loop (the ceiling for reductions) and a plain add into an existing
//! buffer (the floor for elementwise ops into a fresh tensor).
//!
//! Every timed call starts with cold operands: the setup of each iteration reads a 512 MiB
//! buffer, so that 64 MiB operands are not served from a large last-level cache (the build VM
//! reports 260 MiB; the Zen 4 machines of BENCHMARKS.md "Machine ceilings" have 32 MiB). Criterion excludes the setup
//! from the timings.
//!
//! Run: `cargo bench --bench compute -- --quick` (add a filter such as `sum` to run a subset).

use criterion::{
    BatchSize, Bencher, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use half::{bf16, f16};
use namedtensor::DynTensor;
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1 << 24; // 16M elements
const SIDE: usize = 4096;

/// Times `f` with its operands evicted from the caches first.
fn cold<R>(b: &mut Bencher, mut f: impl FnMut() -> R) {
    static FLUSH: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let flush = FLUSH.get_or_init(|| vec![1u8; 512 << 20]);
    b.iter_batched(
        || black_box(flush.iter().step_by(64).map(|&x| x as usize).sum::<usize>()),
        |_| black_box(f()),
        BatchSize::PerIteration,
    )
}

/// Splits `0..n` in `threads` parts and runs `f` on each on scoped threads.
fn split(n: usize, threads: usize, f: impl Fn(std::ops::Range<usize>) + Sync) {
    if threads == 1 {
        return f(0..n);
    }
    let per = n.div_ceil(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let f = &f;
            s.spawn(move || f(t * per..((t + 1) * per).min(n)));
        }
    });
}

#[path = "support/read_loop.rs"]
mod read_loop;
use read_loop::read_sum;

fn baselines(c: &mut Criterion) {
    let mut g = c.benchmark_group("baseline");
    g.throughput(Throughput::Bytes((N * 4) as u64));
    // On huge pages, as the library's own buffers.
    let a = DynTensor::<f32>::full(&[N], 1.0).to_vec();
    let b = DynTensor::<f32>::full(&[N], 2.0).to_vec();
    let mut out = DynTensor::<f32>::zeros(&[N]).to_vec();
    for threads in [1, 2] {
        g.bench_with_input(
            BenchmarkId::new("stream_read_64MiB", threads),
            &threads,
            |bch, &t| {
                cold(bch, || {
                    let total = std::sync::Mutex::new(0.0f32);
                    split(N, t, |r| *total.lock().unwrap() += read_sum(&a[r]));
                    total.into_inner().unwrap()
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("add_into_existing_16M", threads),
            &threads,
            |bch, &t| {
                cold(bch, || {
                    let per = N.div_ceil(t);
                    std::thread::scope(|s| {
                        for ((o, x), y) in out.chunks_mut(per).zip(a.chunks(per)).zip(b.chunks(per))
                        {
                            s.spawn(move || {
                                for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                                    *o = x + y;
                                }
                            });
                        }
                    });
                    out[7]
                })
            },
        );
    }
    g.finish();
}

fn elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise");
    g.throughput(Throughput::Elements(N as u64));
    let a = DynTensor::<f32>::rand(&[N], 1);
    let b = DynTensor::<f32>::rand(&[N], 2);
    g.bench_function("add_f32_16M_new", |bch| cold(bch, || &a + &b));
    g.bench_function("add_f32_16M_inplace", |bch| {
        cold(bch, || a.add_(&b).numel())
    });
    let m = a.view(&[SIDE as isize, SIDE as isize]);
    let col = DynTensor::<f32>::rand(&[SIDE, 1], 3);
    g.bench_function("add_f32_4096x4096_plus_4096x1_new", |bch| {
        cold(bch, || &m + &col)
    });
    let (h1, h2) = (a.to_dtype::<f16>(), b.to_dtype::<f16>());
    g.bench_function("add_f16_16M_new", |bch| cold(bch, || &h1 + &h2));
    let (z1, z2) = (a.to_dtype::<bf16>(), b.to_dtype::<bf16>());
    g.bench_function("add_bf16_16M_new", |bch| cold(bch, || &z1 + &z2));
    g.bench_function("exp_f32_16M_new", |bch| cold(bch, || a.exp()));
    g.finish();
}

fn reductions(c: &mut Criterion) {
    let mut g = c.benchmark_group("reduce");
    g.throughput(Throughput::Bytes((N * 4) as u64));
    let m = DynTensor::<f32>::rand(&[SIDE, SIDE], 4);
    g.bench_function("sum_f32_4096x4096_last_dim", |bch| {
        cold(bch, || m.sum_dim(-1, false))
    });
    g.bench_function("sum_f32_4096x4096_first_dim", |bch| {
        cold(bch, || m.sum_dim(0, false))
    });
    g.bench_function("sum_f32_4096x4096_all", |bch| cold(bch, || m.sum()));
    g.bench_function("amax_f32_4096x4096_last_dim", |bch| {
        cold(bch, || m.amax_dim(-1, false))
    });
    g.bench_function("softmax_f32_4096x4096_last_dim", |bch| {
        cold(bch, || m.softmax(-1))
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = baselines, elementwise, reductions }
criterion_main!(benches);
