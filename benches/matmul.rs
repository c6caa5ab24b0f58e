//! Matrix products: `DynTensor::matmul` against gemm's kernel called directly on the same
//! data (the baseline; target ≥ 95 % of its speed), f32 and f64, n = 256, 1024, 2048, on 1
//! and 2 threads.
//!
//! `cargo bench --bench matmul` (add `-- --quick` for a shorter run).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use namedtensor::{DynTensor, Element};
use std::hint::black_box;

#[path = "support/gemm_direct.rs"]
mod gemm_baseline;
use gemm_baseline::gemm_direct;

fn bench_type<E: Element + namedtensor::Float>(c: &mut Criterion, name: &str) {
    let mut group = c.benchmark_group(format!("matmul_{name}"));
    for n in [256usize, 1024, 2048] {
        group.throughput(Throughput::Elements((2 * n * n * n) as u64)); // flops
        if n >= 1024 {
            group.sample_size(10);
        }
        let a = DynTensor::<E>::randn(&[n, n], 1);
        let b = DynTensor::<E>::randn(&[n, n], 2);
        let (va, vb) = (a.to_vec(), b.to_vec());
        let mut out = vec![E::ZERO; n * n];
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let id = format!("{n}/{threads}t");
            group.bench_function(BenchmarkId::new("gemm_direct", &id), |bench| {
                bench.iter(|| gemm_direct(&pool, n, &va, &vb, black_box(&mut out)))
            });
            namedtensor::set_num_threads(threads);
            group.bench_function(BenchmarkId::new("namedtensor", &id), |bench| {
                bench.iter(|| black_box(a.matmul(&b)))
            });
        }
    }
    group.finish();
}

fn matmul(c: &mut Criterion) {
    bench_type::<f32>(c, "f32");
    bench_type::<f64>(c, "f64");
}

criterion_group!(benches, matmul);
criterion_main!(benches);
