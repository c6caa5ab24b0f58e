//! Collectives across ranks (feature `mpi`): what a call costs, and the share of its 16-word
//! header (the all-gather that lets mismatched ranks fail instead of hang).
//!
//! ```sh
//! cargo build --release --features mpi --bench dist
//! mpirun -np 2 -x NAMEDTENSOR_NUM_THREADS=1 target/release/deps/dist-* --bench
//! ```
//!
//! `barrier` is the header exchange alone (no data follows it), so its time is the header's
//! cost in every other call. Rank 0 prints the median of each case over 200 calls (after 20
//! warm-up calls); every rank runs the same calls.

use namedtensor::DynTensor;
use namedtensor::dist::{self, Communicator, ReduceOp};
use std::time::Instant;

fn median_us(world: &Communicator, mut f: impl FnMut()) -> f64 {
    for _ in 0..20 {
        f();
    }
    let mut times: Vec<f64> = (0..200)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    world.barrier().unwrap();
    times[times.len() / 2]
}

fn main() {
    let world = dist::init().unwrap();
    let mut rows = Vec::new();
    rows.push((
        "barrier (the header exchange alone)".to_string(),
        median_us(&world, || world.barrier().unwrap()),
    ));
    for n in [1usize, 1024, 1 << 20] {
        let t = DynTensor::<f32>::ones(&[n]);
        rows.push((
            format!("all_reduce_ sum, {n} f32"),
            median_us(&world, || world.all_reduce_(&t, ReduceOp::Sum).unwrap()),
        ));
    }
    let t = DynTensor::<half::bf16>::ones(&[1 << 20]);
    rows.push((
        "all_reduce_ sum, 1048576 bf16 (as f32 on the wire)".to_string(),
        median_us(&world, || world.all_reduce_(&t, ReduceOp::Sum).unwrap()),
    ));
    let t = DynTensor::<f32>::ones(&[1 << 20]);
    rows.push((
        "broadcast_, 1048576 f32".to_string(),
        median_us(&world, || world.broadcast_(&t, 0).unwrap()),
    ));
    let t = DynTensor::<f32>::ones(&[1 << 18]);
    rows.push((
        "all_gather, 262144 f32 a rank".to_string(),
        median_us(&world, || drop(world.all_gather(&t, 0).unwrap())),
    ));
    if world.rank() == 0 {
        println!("{} ranks, median of 200 calls:", world.size());
        for (what, us) in rows {
            println!("  {what:55} {us:10.1} µs");
        }
    }
}
