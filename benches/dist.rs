//! Collectives and data-parallel training across ranks (feature `mpi`). One binary, four
//! cases, each run under mpirun (BENCHMARKS.md has the figures):
//!
//! ```sh
//! cargo build --release --features mpi --bench dist
//! B=$(ls target/release/deps/dist-* | grep -v '\.d$')
//! mpirun -np 2 -x NAMEDTENSOR_NUM_THREADS=1 $B latency        # what a call costs
//! mpirun -np 2 -x NAMEDTENSOR_NUM_THREADS=1 $B allreduce      # all_reduce_ of 1–256 MB
//! mpirun -np 2 -x NAMEDTENSOR_NUM_THREADS=1 $B allreduce-raw  # rsmpi's MPI_Allreduce alone
//! mpirun -np 1 -x NAMEDTENSOR_NUM_THREADS=1 $B ddp            # the transformer step, one rank
//! mpirun -np 2 -x NAMEDTENSOR_NUM_THREADS=1 $B ddp            # … each of two ranks
//! ```
//!
//! - `latency`: `barrier` is the header exchange alone (no data follows it), so its time is
//!   the header's cost in every other call. Median of 200 calls after 20 warm-up calls.
//! - `allreduce` / `allreduce-raw`: the same f32 buffers summed by our `all_reduce_` on a
//!   tensor and by a bare `MPI_Allreduce` (rsmpi's `all_reduce_into`, which MPI has from a
//!   send buffer into a receive buffer, both allocated once). Separate processes, since MPI
//!   starts once per process and our runtime owns it: run them one after the other.
//! - `ddp`: the `nn_transformer` step of `benches/peers` (the char_transformer model, 16
//!   sequences of 64 a rank, AdamW), timed three ways: the bare model (no wrapper, no MPI
//!   traffic), `DistributedDataParallel` (buckets reduced during backward), and the same
//!   wrapper under `no_sync` followed by one all-reduce of every gradient after backward
//!   (the overlap switched off). At `-np 2` the per-rank work equals `-np 1`'s, so the ratio
//!   of the bare step at one rank to the DDP step at two is the weak-scaling efficiency.
//!
//! Every rank runs the same calls; rank 0 prints.

#[path = "support/training_steps.rs"]
#[allow(dead_code)]
mod training_steps;

use namedtensor::autograd::no_grad;
use namedtensor::dist::{self, Communicator, DistributedDataParallel, ReduceOp};
use namedtensor::nn::Module;
use namedtensor::nn::loss::cross_entropy;
use namedtensor::optim::{Adam, AdamConfig, Optimizer};
use namedtensor::{DynTensor, Tensor};
use std::time::Instant;

/// The median of `count` timed calls of `f` (after `warm` untimed ones), in µs; `sync` runs
/// after each call's clock stops so that the ranks start every call together.
fn median_us(warm: usize, count: usize, mut f: impl FnMut(), mut sync: impl FnMut()) -> f64 {
    for _ in 0..warm {
        f();
        sync();
    }
    let mut times: Vec<f64> = (0..count)
        .map(|_| {
            let t = Instant::now();
            f();
            let us = t.elapsed().as_secs_f64() * 1e6;
            sync();
            us
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The buffer sizes of the all-reduce cases, in f32 elements: 1, 4, 16, 64 and 256 MB.
const SIZES_MB: [usize; 5] = [1, 4, 16, 64, 256];

fn calls_for(mb: usize) -> (usize, usize) {
    if mb >= 64 { (2, 9) } else { (3, 31) }
}

fn print(rank: usize, size: usize, title: &str, rows: &[(String, f64)]) {
    if rank == 0 {
        println!("{size} ranks, {title}:");
        for (what, us) in rows {
            println!("  {what:55} {us:12.1} µs");
        }
    }
}

fn latency(world: &Communicator) {
    let sync = || world.barrier().unwrap();
    let mut rows = vec![(
        "barrier (the header exchange alone)".to_string(),
        median_us(20, 200, || world.barrier().unwrap(), || {}),
    )];
    for n in [1usize, 1024, 1 << 20] {
        let t = DynTensor::<f32>::ones(&[n]);
        rows.push((
            format!("all_reduce_ sum, {n} f32"),
            median_us(
                20,
                200,
                || world.all_reduce_(&t, ReduceOp::Sum).unwrap(),
                sync,
            ),
        ));
    }
    let t = DynTensor::<half::bf16>::ones(&[1 << 20]);
    rows.push((
        "all_reduce_ sum, 1048576 bf16 (as f32 on the wire)".to_string(),
        median_us(
            20,
            200,
            || world.all_reduce_(&t, ReduceOp::Sum).unwrap(),
            sync,
        ),
    ));
    let t = DynTensor::<f32>::ones(&[1 << 20]);
    rows.push((
        "broadcast_, 1048576 f32".to_string(),
        median_us(20, 200, || world.broadcast_(&t, 0).unwrap(), sync),
    ));
    let t = DynTensor::<f32>::ones(&[1 << 18]);
    rows.push((
        "all_gather, 262144 f32 a rank".to_string(),
        median_us(20, 200, || drop(world.all_gather(&t, 0).unwrap()), sync),
    ));
    print(world.rank(), world.size(), "median of 200 calls", &rows);
}

fn allreduce(world: &Communicator) {
    let mut rows = Vec::new();
    for mb in SIZES_MB {
        let t = DynTensor::<f32>::ones(&[mb << 18]);
        let (warm, count) = calls_for(mb);
        rows.push((
            format!("all_reduce_ sum, {mb} MB f32"),
            median_us(
                warm,
                count,
                || world.all_reduce_(&t, ReduceOp::Sum).unwrap(),
                || world.barrier().unwrap(),
            ),
        ));
    }
    print(world.rank(), world.size(), "our all_reduce_, median", &rows);
}

fn allreduce_raw() {
    use mpi::collective::SystemOperation;
    use mpi::traits::{Communicator as _, CommunicatorCollectives};
    let universe = mpi::initialize().expect("MPI starts");
    let world = universe.world();
    let mut rows = Vec::new();
    for mb in SIZES_MB {
        let send = vec![1f32; mb << 18];
        let mut recv = vec![0f32; mb << 18];
        let (warm, count) = calls_for(mb);
        rows.push((
            format!("MPI_Allreduce sum, {mb} MB f32"),
            median_us(
                warm,
                count,
                || world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum()),
                || world.barrier(),
            ),
        ));
    }
    print(
        world.rank() as usize,
        world.size() as usize,
        "rsmpi's all_reduce_into, median",
        &rows,
    );
}

fn ddp(world: &Communicator) {
    use training_steps::char_model::{Batch, CharTransformer, Seq, Vocab};
    let sizes = training_steps::TRANSFORMER_SIZES;
    // This rank's 16 sequences (each rank its own).
    let ids = DynTensor::<i64>::randint(0, 96, &[16, 65], world.rank() as u64);
    let x: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 0, 64).refine_names();
    let y: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 1, 64).refine_names();
    let sync = || world.barrier().unwrap();
    let mut rows = Vec::new();

    let bare = CharTransformer::<f32>::new(sizes);
    let mut opt = Adam::new(bare.parameters(), AdamConfig::adamw());
    rows.push((
        "bare model (no wrapper, no communication)".to_string(),
        median_us(
            5,
            41,
            || {
                opt.zero_grad();
                cross_entropy(&bare.forward(&x), Vocab, &y).backward();
                opt.step().unwrap();
            },
            sync,
        ),
    ));

    // PyTorch's 25 MiB buckets hold this model in one, reduced when backward ends; 64 KiB
    // buckets go out while backward still runs.
    for cap in [dist::DEFAULT_BUCKET_CAP_BYTES, 64 << 10] {
        let model = DistributedDataParallel::with_bucket_cap(
            CharTransformer::<f32>::new(sizes),
            world,
            cap,
        )
        .unwrap();
        let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
        rows.push((
            format!(
                "DistributedDataParallel, {} KiB buckets ({})",
                cap >> 10,
                model.num_buckets()
            ),
            median_us(
                5,
                41,
                || {
                    opt.zero_grad();
                    cross_entropy(&model.forward(&x), Vocab, &y).backward();
                    opt.step().unwrap();
                },
                sync,
            ),
        ));
    }
    let model = DistributedDataParallel::new(CharTransformer::<f32>::new(sizes), world).unwrap();
    let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());

    // The overlap off: backward under no_sync, then every gradient in one all-reduce.
    let params = model.parameters();
    rows.push((
        "the same, one all-reduce after backward (no overlap)".to_string(),
        median_us(
            5,
            41,
            || {
                opt.zero_grad();
                model.no_sync(|| cross_entropy(&model.forward(&x), Vocab, &y).backward());
                let grads: Vec<DynTensor<f32>> = params
                    .iter()
                    .map(|p| p.tensor.grad().unwrap().reshape(&[-1]))
                    .collect();
                let refs: Vec<&DynTensor<f32>> = grads.iter().collect();
                let flat = DynTensor::cat(&refs, 0);
                world.all_reduce_(&flat, ReduceOp::Mean).unwrap();
                let mut off = 0;
                for p in &params {
                    let n = p.tensor.numel();
                    let shape: Vec<isize> = p.tensor.shape().iter().map(|&s| s as isize).collect();
                    let g = no_grad(|| flat.narrow(0, off as isize, n).view(&shape));
                    p.tensor.set_grad(Some(g)).unwrap();
                    off += n;
                }
                opt.step().unwrap();
            },
            sync,
        ),
    ));
    print(
        world.rank(),
        world.size(),
        &format!(
            "nn_transformer step, 16 sequences of 64 a rank, {} parameters, median of 41",
            model.num_parameters()
        ),
        &rows,
    );
}

fn main() {
    let case = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| "latency".to_string());
    if case == "allreduce-raw" {
        return allreduce_raw();
    }
    let world = dist::init().unwrap();
    match case.as_str() {
        "latency" => latency(&world),
        "allreduce" => allreduce(&world),
        "ddp" => ddp(&world),
        other => panic!("unknown case {other}: latency, allreduce, allreduce-raw or ddp"),
    }
}
