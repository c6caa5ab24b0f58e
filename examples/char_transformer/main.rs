//! Trains a 2-layer character-level transformer language model on this repository's own
//! source code and prints samples as it learns.
//!
//! Everything is written by names: token ids are `(Batch, Seq)`, the embeddings give
//! `(Batch, Seq, Model)`, each [`TransformerBlock`](namedtensor::nn::TransformerBlock) splits
//! `Model` into `(Heads, HeadDim)` and attends causally along `Seq`, and the head scores
//! `(Batch, Seq, Vocab)`, which the loss reads along `Vocab`. The model (`model.rs`) is the one
//! `tests/suite/nn_torch.rs` trains step for step against PyTorch.
//!
//! ```sh
//! cargo run --release --example char_transformer            # 600 steps
//! cargo run --release --example char_transformer -- 2000    # another number of steps
//! cargo run --release --features cuda --example char_transformer -- 600 cuda:0  # on a GPU
//! ```
//!
//! A progress bar runs on a terminal; the loss curves are written to
//! `char_transformer_loss.png` next to the example's executable.

mod model;
#[path = "../support/mod.rs"]
mod support;

use model::{Batch, CharTransformer, Seq, Sizes, Vocab, encode};
use namedtensor::autograd::no_grad;
use namedtensor::nn::Module;
use namedtensor::nn::loss::CrossEntropy;
use namedtensor::optim::{
    Adam, AdamConfig, CosineAnnealingLr, LinearLr, LrScheduler, Optimizer, clip_grad_norm_,
};
use namedtensor::{Device, DynTensor, Result, Tensor};
use std::path::{Path, PathBuf};
use std::time::Instant;

const SIZES: Sizes = Sizes {
    model: 64,
    heads: 4,
    hidden: 256,
    context: 64,
    layers: 2,
};
const BATCH: usize = 16;

/// Token ids, a row per sequence.
type Ids = Tensor<i64, (Batch, Seq)>;

/// Every `.rs` file under `dir`, in name order.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The library's source as tokens: the first 90 % of the files for training, the rest for
/// validation.
fn corpus() -> (Vec<i64>, Vec<i64>) {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    )
    .expect("reading the library's source");
    let split = files.len() * 9 / 10;
    let read = |paths: &[PathBuf]| {
        let text: String = paths
            .iter()
            .map(|p| std::fs::read_to_string(p).expect("a source file"))
            .collect();
        encode(&text)
    };
    (read(&files[..split]), read(&files[split..]))
}

/// `BATCH` windows of `context + 1` tokens at seeded random places, on `device`: inputs
/// and the characters that follow them.
fn batch(tokens: &[i64], seed: u64, device: Device) -> Result<(Ids, Ids)> {
    let len = SIZES.context;
    let starts = DynTensor::<i64>::randint(0, (tokens.len() - len - 1) as i64, &[BATCH], seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for s in starts.to_vec() {
        let w = &tokens[s as usize..s as usize + len + 1];
        x.extend_from_slice(&w[..len]);
        y.extend_from_slice(&w[1..]);
    }
    Ok((
        DynTensor::from_vec(x, &[BATCH, len])
            .to_device(device)?
            .refine_names(),
        DynTensor::from_vec(y, &[BATCH, len])
            .to_device(device)?
            .refine_names(),
    ))
}

fn main() -> Result<()> {
    let steps: usize = std::env::args()
        .nth(1)
        .map_or(600, |a| a.parse().expect("the number of steps"));
    let device: Device = std::env::args()
        .nth(2)
        .map_or(Ok(Device::Cpu), |a| a.parse())?;
    let (train, valid) = corpus();
    println!(
        "corpus: {} training and {} validation characters of src/",
        train.len(),
        valid.len()
    );
    namedtensor::random::manual_seed(0);
    let model = CharTransformer::<f32>::new(SIZES);
    // Moves every parameter in place; the optimiser below takes handles to them there.
    model.to_device(device)?;
    println!("model: {} parameters on {device}", model.num_parameters());
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 1e-2,
            weight_decay: 0.01,
            ..AdamConfig::adamw()
        },
    );
    // A linear warm-up over the first 5 % of the steps, then cosine annealing.
    let warmup = (steps / 20).max(1);
    let mut warm = LinearLr::new(&mut opt, 0.1, 1.0, warmup)?;
    let mut cosine = None;
    let ce = CrossEntropy::default();
    let validate = |model: &CharTransformer<f32>| -> f64 {
        no_grad(|| {
            let losses: Vec<f64> = (0..4)
                .map(|i| {
                    let (x, y) = batch(&valid, 1_000_000 + i, device).expect("a batch");
                    ce.forward(&model.forward(&x), Vocab, &y).item() as f64
                })
                .collect();
            losses.iter().sum::<f64>() / losses.len() as f64
        })
    };
    let start = Instant::now();
    let mut first_valid = None;
    let mut last_valid = f64::NAN;
    let (mut train_curve, mut valid_curve) = (Vec::new(), Vec::new());
    let bar = support::progress(steps, "training");
    for step in 0..steps {
        let (x, y) = batch(&train, step as u64, device)?;
        opt.zero_grad();
        let loss = ce.forward(&model.forward(&x), Vocab, &y);
        loss.backward();
        clip_grad_norm_(&model.parameters(), 1.0)?;
        opt.step()?;
        let loss = loss.item() as f64;
        train_curve.push((step as f64, loss));
        bar.inc(1);
        bar.set_message(format!("loss {loss:.3}"));
        if step < warmup {
            warm.step(&mut opt)?;
        } else {
            // Made when the warm-up has brought the rate back to its peak, which it anneals from.
            let steps_left = (steps - warmup).max(1);
            cosine
                .get_or_insert(CosineAnnealingLr::new(&mut opt, steps_left, 3e-4)?)
                .step(&mut opt)?;
        }
        if step % 25 == 0 || step + 1 == steps {
            model.eval();
            last_valid = validate(&model);
            first_valid.get_or_insert(last_valid);
            valid_curve.push((step as f64, last_valid));
            model.train();
        }
        if step % 100 == 0 || step + 1 == steps {
            model.eval();
            let sample = model.sample("pub fn ", 60, 0.8, step as u64)?;
            model.train();
            bar.suspend(|| {
                println!(
                    "step {step:>5}  loss {loss:.3}  valid {last_valid:.3}  {:.1} s  | pub fn {}",
                    start.elapsed().as_secs_f64(),
                    sample.replace('\n', "⏎")
                )
            });
        }
    }
    bar.finish_and_clear();
    let per_step = start.elapsed().as_secs_f64() / steps.max(1) as f64;
    println!("{:.1} ms per step", per_step * 1e3);
    let png = std::env::current_exe()
        .expect("the example's path")
        .with_file_name("char_transformer_loss.png");
    support::plot(
        &png,
        "char_transformer: cross-entropy per character",
        ["step", "loss (nats)"],
        &[
            support::Curve {
                label: "training batch",
                points: &train_curve,
            },
            support::Curve {
                label: "validation",
                points: &valid_curve,
            },
        ],
    )
    .expect("writing the loss plot");
    println!("loss curves: {}", png.display());
    // A uniform guess over 96 characters costs ln 96 = 4.56 nats; source code is far more
    // predictable than that once the model has seen a few hundred batches.
    if steps >= 600 {
        assert!(
            last_valid < 2.4,
            "validation loss {last_valid:.3} after {steps} steps (started at {:.3})",
            first_valid.unwrap_or(f64::NAN)
        );
    }
    Ok(())
}
