//! Data-parallel training on MPI: the digits MLP of `train_digits`, one process per rank,
//! each on its shard of every epoch, gradients averaged across the ranks during backward.
//!
//! ```sh
//! mpirun -np 2 cargo run --release --features mpi --example ddp_digits        # 30 epochs
//! mpirun -np 4 --hostfile hosts target/release/examples/ddp_digits 10 /shared/dir
//! ```
//!
//! The arguments: the number of epochs (30), and the folder of the checkpoint (the temporary
//! folder), which on several machines must be one that every machine sees.
//!
//! Every rank builds the model (rank 0's parameters are broadcast to the others), shards the
//! training set with the same shuffling seed (`DataLoader::shard`), and takes the same AdamW
//! step; the epoch's loss and the test accuracy are reduced across the ranks (each rank scores
//! its shard of the test set) and rank 0 prints them. Rank 0 writes the parameters; every rank
//! then loads them into a fresh model and checks they are its own. The global batch is 32:
//! `32 / size` images per rank.
//!
//! Threads: each rank uses `NAMEDTENSOR_NUM_THREADS` threads (default: every logical CPU);
//! with several ranks on one machine give each its share, e.g.
//! `mpirun -np 2 -x NAMEDTENSOR_NUM_THREADS=4 …` on 8 cores.

#[path = "support/digits.rs"]
pub mod digits;

use digits::{Batch, Classes, Classifier, Data, Mlp, accuracy};
use namedtensor::data::{DataLoader, ShardRemainder, TensorDataset};
use namedtensor::dist::{self, Communicator, DistributedDataParallel, ReduceOp};
use namedtensor::nn::{Module, load_parameters, save_parameters};
use namedtensor::optim::{LrScheduler, Optimizer};
use namedtensor::{DynTensor, Tensor};

/// The per-rank results of a run: each epoch's mean training loss over every rank's batches,
/// and the final test accuracy over all 360 test digits.
pub struct Trained {
    pub losses: Vec<f64>,
    pub accuracy: f64,
}

/// `a`, the mean over the ranks.
fn mean_over_ranks(world: &Communicator, a: f64) -> namedtensor::Result<f64> {
    let t = DynTensor::from_vec(vec![a], &[1]);
    world.all_reduce_(&t, ReduceOp::Mean)?;
    Ok(t.item())
}

/// The test accuracy over every rank's shard of the test set.
fn test_accuracy(
    world: &Communicator,
    model: &impl Classifier,
    data: &Data,
) -> namedtensor::Result<f64> {
    let (x, y) = &data.1;
    let (n, size) = (y.numel(), world.size());
    // An even split of the 360 test digits; the last rank takes the rest.
    let per = n / size;
    let start = world.rank() * per;
    let len = if world.rank() + 1 == size {
        n - start
    } else {
        per
    };
    let shard = (
        x.narrow::<Batch>(start as isize, len),
        y.narrow::<Batch>(start as isize, len),
    );
    let right = accuracy(model, &shard) * len as f64;
    let counts = Tensor::<f64, (Batch,)>::from_vec(vec![right.round(), len as f64], [2]);
    world.all_reduce_(&counts, ReduceOp::Sum)?;
    let c = counts.as_dyn().to_vec();
    Ok(c[0] / c[1])
}

/// Trains the MLP for `epochs` epochs across `world`, with the checkpoint in
/// `checkpoint_dir`; rank 0 prints unless `quiet`.
pub fn train(
    world: &Communicator,
    epochs: usize,
    checkpoint_dir: &std::path::Path,
    quiet: bool,
) -> namedtensor::Result<Trained> {
    let (rank, size) = (world.rank(), world.size());
    let say = |s: String| {
        if rank == 0 && !quiet {
            println!("{s}");
        }
    };
    let data = digits::digits();
    let (train, _) = &data;
    let per_rank = (32 / size).max(1);
    let mut loader = DataLoader::new(
        TensorDataset::new(train.0.shallow_clone(), train.1.shallow_clone())?,
        per_rank,
    )?
    .shuffle(1)
    .shard(rank, size, ShardRemainder::Pad)?;
    // Each rank starts from its own seed: the wrapper broadcasts rank 0's parameters.
    let model = DistributedDataParallel::new(Mlp::new(42 + rank as u64), world)?;
    say(format!(
        "{size} ranks, {} parameters, {} images per rank per step, {} steps per epoch",
        model.num_parameters(),
        per_rank,
        loader.num_batches()
    ));
    let (mut opt, mut schedule, loss_fn) = digits::recipe(&model, epochs)?;
    let start = std::time::Instant::now();
    let mut losses = Vec::new();
    for epoch in 1..=epochs {
        let (mut total, mut batches) = (0.0, 0);
        for batch in loader.epoch() {
            let (x, y) = batch?;
            opt.zero_grad();
            let loss = loss_fn.try_forward(&model.forward(&x), Classes, &y)?;
            loss.try_backward()?; // the gradients are averaged across the ranks here
            opt.step()?;
            total += f64::from(loss.item());
            batches += 1;
        }
        schedule.step(&mut opt)?;
        let loss = mean_over_ranks(world, total / f64::from(batches))?;
        losses.push(loss);
        if epoch % 10 == 0 || epoch == epochs {
            let acc = test_accuracy(world, &*model, &data)?;
            say(format!(
                "  epoch {epoch:3}: train loss {loss:.4}, test accuracy {:.2} %",
                100.0 * acc
            ));
        }
    }
    let accuracy = test_accuracy(world, &*model, &data)?;
    say(format!(
        "  test accuracy {:.2} % (360 digits), {:.2} s of training",
        100.0 * accuracy,
        start.elapsed().as_secs_f64()
    ));

    // A checkpoint written by rank 0 and loaded by every rank: in `checkpoint_dir`, which
    // must be one folder for all ranks (a shared file system across machines), under rank
    // 0's process id, which every rank learns from a broadcast.
    let id = DynTensor::from_vec(vec![i64::from(std::process::id())], &[1]);
    world.broadcast_(&id, 0)?;
    let path = checkpoint_dir.join(format!("ddp_digits_{}.safetensors", id.item()));
    if rank == 0 {
        save_parameters(&*model, &path)?;
    }
    world.barrier()?;
    let fresh = Mlp::new(0);
    load_parameters(&fresh, &path)?;
    for (mine, loaded) in model.parameters().iter().zip(fresh.parameters()) {
        assert_eq!(
            mine.tensor.to_vec(),
            loaded.tensor.to_vec(),
            "{}",
            mine.name
        );
    }
    world.barrier()?;
    if rank == 0 {
        say(format!(
            "  parameters saved to {} and loaded by every rank",
            path.display()
        ));
        std::fs::remove_file(&path).ok();
    }
    Ok(Trained { losses, accuracy })
}

#[allow(dead_code)] // also a module of the MPI tests, which call `train`
fn main() -> namedtensor::Result<()> {
    let epochs: usize = std::env::args()
        .nth(1)
        .map_or(30, |a| a.parse().expect("the number of epochs"));
    let checkpoint_dir = std::env::args()
        .nth(2)
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let world = dist::init()?;
    let run = train(&world, epochs, &checkpoint_dir, false)?;
    if epochs >= 30 {
        assert!(
            run.accuracy >= 0.97,
            "the MLP should reach 97 % on the held-out digits, got {}",
            run.accuracy
        );
    }
    Ok(())
}
