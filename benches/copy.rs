//! Copy kernels: `t().contiguous()` of a 4096 × 4096 f32 matrix (a transpose into a new
//! buffer; NumPy took 132 ms on the 2-core machines, BENCHMARKS.md "Machine ceilings"), on 1 and 2
//! threads.
//!
//! `cargo bench --bench copy`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use namedtensor::DynTensor;
use std::hint::black_box;

fn transpose_contiguous(c: &mut Criterion) {
    let n = 4096;
    let x = DynTensor::<f32>::randn(&[n, n], 1);
    let mut group = c.benchmark_group("transpose_contiguous_f32");
    group.sample_size(20);
    group.throughput(Throughput::Bytes((2 * n * n * 4) as u64)); // read + write
    for threads in [1usize, 2] {
        namedtensor::set_num_threads(threads);
        group.bench_function(BenchmarkId::new("4096x4096", format!("{threads}t")), |b| {
            b.iter(|| black_box(x.t().contiguous()))
        });
    }
    group.finish();
}

criterion_group!(benches, transpose_contiguous);
criterion_main!(benches);
