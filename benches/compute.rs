//! CPU compute benchmarks (DESIGN.md §5 targets), with machine baselines measured in the same
//! run: a STREAM-like read loop (the ceiling for reductions) and a plain add into an existing
//! buffer (the floor for elementwise ops into a fresh tensor).
//!
//! Run: `cargo bench --bench compute -- --quick` (add a filter such as `sum` to run a subset).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::{bf16, f16};
use namedtensor::DynTensor;
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1 << 24; // 16M elements
const SIDE: usize = 4096;

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

/// A read loop with 32 independent accumulators: what summing memory can reach (fewer
/// accumulators measured slower here: 16 lanes ran at ~60 % of this).
fn read_sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 32];
    let chunks = x.chunks_exact(32);
    for c in chunks {
        for l in 0..32 {
            acc[l] += c[l];
        }
    }
    acc.iter().sum()
}

fn baselines(c: &mut Criterion) {
    let mut g = c.benchmark_group("baseline");
    g.throughput(Throughput::Bytes((N * 4) as u64));
    let a = vec![1.0f32; N];
    let b = vec![2.0f32; N];
    for threads in [1, 2] {
        g.bench_with_input(
            BenchmarkId::new("stream_read_64MiB", threads),
            &threads,
            |bch, &t| {
                bch.iter(|| {
                    let parts = std::sync::Mutex::new(0.0f32);
                    split(N, t, |r| {
                        let s = read_sum(&a[r]);
                        *parts.lock().unwrap() += s;
                    });
                    black_box(parts.into_inner().unwrap())
                })
            },
        );
    }
    let mut out = vec![0.0f32; N];
    for threads in [1, 2] {
        g.bench_with_input(
            BenchmarkId::new("add_into_existing_16M", threads),
            &threads,
            |bch, &t| {
                bch.iter(|| {
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
                    black_box(out[0])
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
    g.bench_function("add_f32_16M_new", |bch| bch.iter(|| black_box(&a + &b)));
    g.bench_function("add_f32_16M_inplace", |bch| {
        bch.iter(|| black_box(a.add_(&b).numel()))
    });
    let m = a.view(&[SIDE as isize, SIDE as isize]);
    let col = DynTensor::<f32>::rand(&[SIDE, 1], 3);
    g.bench_function("add_f32_4096x4096_plus_4096x1_new", |bch| {
        bch.iter(|| black_box(&m + &col))
    });
    let h1 = a.to_dtype::<f16>();
    let h2 = b.to_dtype::<f16>();
    g.bench_function("add_f16_16M_new", |bch| bch.iter(|| black_box(&h1 + &h2)));
    let z1 = a.to_dtype::<bf16>();
    let z2 = b.to_dtype::<bf16>();
    g.bench_function("add_bf16_16M_new", |bch| bch.iter(|| black_box(&z1 + &z2)));
    g.bench_function("exp_f32_16M_new", |bch| bch.iter(|| black_box(a.exp())));
    g.finish();
}

fn reductions(c: &mut Criterion) {
    let mut g = c.benchmark_group("reduce");
    g.throughput(Throughput::Bytes((N * 4) as u64));
    let m = DynTensor::<f32>::rand(&[SIDE, SIDE], 4);
    g.bench_function("sum_f32_4096x4096_last_dim", |bch| {
        bch.iter(|| black_box(m.sum_dim(-1, false)))
    });
    g.bench_function("sum_f32_4096x4096_first_dim", |bch| {
        bch.iter(|| black_box(m.sum_dim(0, false)))
    });
    g.bench_function("sum_f32_4096x4096_all", |bch| {
        bch.iter(|| black_box(m.sum()))
    });
    g.bench_function("amax_f32_4096x4096_last_dim", |bch| {
        bch.iter(|| black_box(m.amax_dim(-1, false)))
    });
    g.bench_function("softmax_f32_4096x4096_last_dim", |bch| {
        bch.iter(|| black_box(m.softmax(-1)))
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = baselines, elementwise, reductions }
criterion_main!(benches);
