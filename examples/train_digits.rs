//! Trains an MLP and a small CNN on scikit-learn's handwritten digits (1797 images of 8×8
//! pixels, shipped in `examples/data/`) and checks that each reaches at least 97 % accuracy on
//! held-out digits.
//!
//! Everything is written by names: the images are `(Batch, Pixels)`, the layers say which dim
//! they consume and produce, the loss names its class dim, and the optimiser, schedule and
//! data loader are PyTorch's (AdamW, cosine annealing, a seeded shuffling loader).
//!
//! ```sh
//! cargo run --release --example train_digits            # 30 epochs of each model
//! cargo run --release --example train_digits -- 5       # another number of epochs
//! ```
//!
//! A progress bar runs on a terminal; the training loss and test accuracy of both models are
//! plotted to `train_digits_loss.png` and `train_digits_accuracy.png` next to the example's
//! executable.

#[path = "support/digits.rs"]
mod digits;
#[path = "support/mod.rs"]
mod support;

use digits::{Batch, Classes, Classifier, Data, Hidden, Mlp, Pixels, accuracy};
use namedtensor::data::{DataLoader, TensorDataset};
use namedtensor::nn::loss::cross_entropy;
use namedtensor::nn::{Conv2d, Linear, MaxPool2d, Module, Visitor, save_parameters};
use namedtensor::ops::Window2d;
use namedtensor::optim::{LrScheduler, Optimizer};
use namedtensor::{Tensor, autograd::no_grad, dims};

dims! { Channels, Features, Rows, Cols, Flat }

/// 1 → 16 → 32 channels of 3×3 convolutions, each followed by ReLU and 2×2 max pooling
/// (8×8 → 4×4 → 2×2), then a linear layer over the 128 flattened features.
struct Cnn {
    conv1: Conv2d<Channels, Features, Rows, Cols>,
    conv2: Conv2d<Features, Hidden, Rows, Cols>,
    pool: MaxPool2d<Rows, Cols>,
    fc: Linear<Flat, Classes>,
}

impl Module<f32> for Cnn {
    fn visit(&self, v: &mut Visitor<'_, f32>) {
        v.module("conv1", &self.conv1);
        v.module("conv2", &self.conv2);
        v.module("fc", &self.fc);
    }
}

impl Cnn {
    fn new(seed: u64) -> Cnn {
        let same = Window2d::new(3, 3).padding(1);
        Cnn {
            conv1: Conv2d::seeded(1, 16, same, seed),
            conv2: Conv2d::seeded(16, 32, same, seed + 1),
            pool: MaxPool2d::new(2),
            fc: Linear::seeded(128, 10, seed + 2),
        }
    }
}

impl Classifier for Cnn {
    fn forward(&self, x: &Tensor<f32, (Batch, Pixels)>) -> Tensor<f32, (Batch, Classes)> {
        // (Batch, Pixels) → (Batch, Rows, Cols) → (Batch, Channels, Rows, Cols), one channel
        let img = x
            .split::<Pixels, (Rows, Cols)>(&[8, 8])
            .align_to::<(Batch, Channels, Rows, Cols)>();
        let h = self.pool.forward(&self.conv1.forward(&img).relu());
        let h = self.pool.forward(&self.conv2.forward(&h).relu());
        self.fc.forward(&h.merge::<(Hidden, Rows, Cols), Flat>())
    }
}

/// What a training run recorded.
struct History {
    /// `(epoch, mean training loss)`.
    loss: Vec<(f64, f64)>,
    /// `(epoch, test accuracy in %)`.
    accuracy: Vec<(f64, f64)>,
    /// The final test accuracy, from 0 to 1.
    final_accuracy: f64,
}

/// Trains `model` for `epochs` epochs (AdamW, cosine schedule, label smoothing 0.05) and
/// returns its loss and accuracy per epoch.
fn fit(
    name: &str,
    model: &impl Classifier,
    data: &Data,
    epochs: usize,
) -> namedtensor::Result<History> {
    let (train, test) = data;
    let mut loader = DataLoader::new(
        TensorDataset::new(train.0.shallow_clone(), train.1.shallow_clone())?,
        32,
    )?
    .shuffle(1);
    println!("{name} with {} parameters", model.num_parameters());
    let (mut opt, mut schedule, loss_fn) = digits::recipe(model, epochs)?;
    let start = std::time::Instant::now();
    let (mut loss_curve, mut accuracy_curve) = (Vec::new(), Vec::new());
    let bar = support::progress(epochs, name);
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
        let (loss, acc) = (total / f64::from(batches), 100.0 * accuracy(model, test));
        loss_curve.push((epoch as f64, loss));
        accuracy_curve.push((epoch as f64, acc));
        bar.inc(1);
        bar.set_message(format!("loss {loss:.4}"));
        if epoch % 10 == 0 || epoch == epochs {
            bar.suspend(|| {
                println!("  epoch {epoch:3}: train loss {loss:.4}, test accuracy {acc:.2} %")
            });
        }
    }
    bar.finish_and_clear();
    let test_loss = no_grad(|| {
        model.eval();
        let l = cross_entropy(&model.forward(&test.0), Classes, &test.1).item();
        model.train();
        l
    });
    let acc = accuracy(model, test);
    println!(
        "  {name}: test loss {test_loss:.4}, test accuracy {:.2} % (360 digits), {:.2} s of training",
        100.0 * acc,
        start.elapsed().as_secs_f64()
    );
    let out = std::env::temp_dir().join(format!("train_digits_{name}.safetensors"));
    save_parameters(model, &out)?;
    println!("  parameters saved to {}", out.display());
    Ok(History {
        loss: loss_curve,
        accuracy: accuracy_curve,
        final_accuracy: acc,
    })
}

fn main() -> namedtensor::Result<()> {
    let epochs: usize = std::env::args()
        .nth(1)
        .map_or(30, |a| a.parse().expect("the number of epochs"));
    let data = digits::digits();
    let mlp = fit("mlp", &Mlp::new(42), &data, epochs)?;
    let cnn = fit("cnn", &Cnn::new(7), &data, epochs)?;
    let exe = std::env::current_exe().expect("the example's path");
    for (what, file, pick) in [
        (
            "training loss",
            "train_digits_loss.png",
            (|h: &History| &h.loss[..]) as fn(&History) -> &[(f64, f64)],
        ),
        (
            "test accuracy (%)",
            "train_digits_accuracy.png",
            |h: &History| &h.accuracy[..],
        ),
    ] {
        let png = exe.with_file_name(file);
        support::plot(
            &png,
            &format!("train_digits: {what}"),
            ["epoch", what],
            &[
                support::Curve {
                    label: "MLP",
                    points: pick(&mlp),
                },
                support::Curve {
                    label: "CNN",
                    points: pick(&cnn),
                },
            ],
        )
        .expect("writing a plot");
        println!("{what}: {}", png.display());
    }
    if epochs >= 30 {
        for (name, acc) in [("MLP", mlp.final_accuracy), ("CNN", cnn.final_accuracy)] {
            assert!(
                acc >= 0.97,
                "the {name} should reach 97 % on the held-out digits, got {acc}"
            );
        }
    }
    Ok(())
}
