//! Trains an MLP on scikit-learn's handwritten digits (1797 images of 8×8 pixels, shipped in
//! `examples/data/`) and checks that it reaches at least 97 % accuracy on held-out digits.
//!
//! Everything is written by names: the images are `(Batch, Pixels)`, the layers say which dim
//! they consume and produce, the loss names its class dim, and the optimiser, schedule and
//! data loader are PyTorch's (AdamW, cosine annealing, a seeded shuffling loader).
//!
//! ```sh
//! cargo run --release --example train_digits            # 30 epochs, well under a second
//! cargo run --release --example train_digits -- 5       # another number of epochs
//! ```

use namedtensor::data::{DataLoader, TensorDataset};
use namedtensor::nn::loss::{CrossEntropy, cross_entropy};
use namedtensor::nn::{Dropout, Linear, Module, Visitor, save_parameters};
use namedtensor::optim::{Adam, AdamConfig, CosineAnnealingLr, LrScheduler, Optimizer};
use namedtensor::{DynTensor, Tensor, autograd::no_grad, dims};

dims! { Batch, Pixels, Hidden, Classes }

/// 64 pixels → 128 hidden units (ReLU, dropout) → 10 classes.
struct Mlp {
    fc1: Linear<Pixels, Hidden>,
    drop: Dropout,
    fc2: Linear<Hidden, Classes>,
}

impl Module<f32> for Mlp {
    fn visit(&self, v: &mut Visitor<'_, f32>) {
        v.module("fc1", &self.fc1);
        v.module("drop", &self.drop);
        v.module("fc2", &self.fc2);
    }
}

impl Mlp {
    fn new(seed: u64) -> Mlp {
        Mlp {
            fc1: Linear::new(64, 128, seed),
            drop: Dropout::new(0.1, seed + 1),
            fc2: Linear::new(128, 10, seed + 2),
        }
    }

    fn forward(&self, x: &Tensor<f32, (Batch, Pixels)>) -> Tensor<f32, (Batch, Classes)> {
        self.fc2
            .forward(&self.drop.forward(&self.fc1.forward(x).relu()))
    }
}

type Images = Tensor<f32, (Batch, Pixels)>;
type Labels = Tensor<i64, (Batch,)>;

/// The digits, pixels scaled to [0, 1], split into 1437 training and 360 test images by a
/// seeded permutation.
fn digits() -> ((Images, Labels), (Images, Labels)) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits.safetensors"
    );
    let images = DynTensor::<u8>::load_named(path, "images").expect("examples/data/digits");
    let labels = DynTensor::<i64>::load_named(path, "labels").expect("examples/data/digits");
    let images = images.to_dtype::<f32>() / 16.0;
    let order = DynTensor::randperm(images.shape()[0], 0);
    let part = |start: isize, len: usize| {
        let idx = order.narrow(0, start, len);
        (
            images.index_select(0, &idx).refine_names(),
            labels.index_select(0, &idx).refine_names(),
        )
    };
    (part(0, 1437), part(1437, 360))
}

fn accuracy(model: &Mlp, (x, y): &(Images, Labels)) -> f64 {
    model.eval();
    let predicted = no_grad(|| model.forward(x).argmax::<Classes>());
    model.train();
    let right = predicted.as_dyn().eq(y.as_dyn()).sum().item();
    right as f64 / y.numel() as f64
}

fn main() -> namedtensor::Result<()> {
    let epochs: usize = std::env::args()
        .nth(1)
        .map_or(30, |a| a.parse().expect("the number of epochs"));
    let (train, test) = digits();
    let mut loader = DataLoader::new(
        TensorDataset::new(train.0.shallow_clone(), train.1.shallow_clone())?,
        32,
    )?
    .shuffle(1);
    let model = Mlp::new(42);
    println!("MLP with {} parameters", model.num_parameters());
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 3e-3,
            ..AdamConfig::adamw()
        },
    );
    let mut schedule = CosineAnnealingLr::new(&mut opt, epochs, 1e-4)?;
    let loss_fn = CrossEntropy {
        label_smoothing: 0.05,
        ..CrossEntropy::default()
    };
    for epoch in 1..=epochs {
        let (mut total, mut batches) = (0.0, 0);
        for batch in loader.epoch() {
            let (x, y) = batch?;
            opt.zero_grad();
            let loss = loss_fn.try_forward(&model.forward(&x), Classes, &y)?;
            loss.try_backward()?;
            opt.step()?;
            total += f64::from(loss.item());
            batches += 1;
        }
        schedule.step(&mut opt)?;
        if epoch % 5 == 0 || epoch == epochs {
            println!(
                "epoch {epoch:3}: train loss {:.4}, test accuracy {:.2} %",
                total / f64::from(batches),
                100.0 * accuracy(&model, &test)
            );
        }
    }
    let test_loss = no_grad(|| {
        model.eval();
        cross_entropy(&model.forward(&test.0), Classes, &test.1).item()
    });
    let acc = accuracy(&model, &test);
    println!(
        "test loss {test_loss:.4}, test accuracy {:.2} % (360 digits)",
        100.0 * acc
    );
    let out = std::env::temp_dir().join("train_digits_mlp.safetensors");
    save_parameters(&model, &out)?;
    println!("parameters saved to {}", out.display());
    if epochs >= 30 {
        assert!(
            acc >= 0.97,
            "the MLP should reach 97 % on the held-out digits, got {acc}"
        );
    }
    Ok(())
}
