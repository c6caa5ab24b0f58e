//! The digits examples' data and MLP (`train_digits`, `ddp_digits`): scikit-learn's
//! handwritten digits from `examples/data/`, the held-out split and accuracy, and the
//! two-layer perceptron both train.

use namedtensor::autograd::no_grad;
use namedtensor::nn::loss::CrossEntropy;
use namedtensor::nn::{Dropout, Linear, Module, Visitor};
use namedtensor::optim::{Adam, AdamConfig, CosineAnnealingLr};
use namedtensor::{DynTensor, Tensor, dims};

dims! { pub Batch, pub Pixels, pub Hidden, pub Classes }

/// What the training loop needs of a model.
pub trait Classifier: Module<f32> {
    fn forward(&self, x: &Tensor<f32, (Batch, Pixels)>) -> Tensor<f32, (Batch, Classes)>;
}

/// 64 pixels → 128 hidden units (ReLU, dropout) → 10 classes.
pub struct Mlp {
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
    pub fn new(seed: u64) -> Mlp {
        Mlp {
            fc1: Linear::seeded(64, 128, seed),
            drop: Dropout::seeded(0.1, seed + 1),
            fc2: Linear::seeded(128, 10, seed + 2),
        }
    }
}

impl Classifier for Mlp {
    fn forward(&self, x: &Tensor<f32, (Batch, Pixels)>) -> Tensor<f32, (Batch, Classes)> {
        self.fc2
            .forward(&self.drop.forward(&self.fc1.forward(x).relu()))
    }
}

pub type Images = Tensor<f32, (Batch, Pixels)>;
pub type Labels = Tensor<i64, (Batch,)>;

/// The digits, pixels scaled to [0, 1], split into 1437 training and 360 test images by a
/// seeded permutation.
pub fn digits() -> Data {
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

pub fn accuracy(model: &impl Classifier, (x, y): &(Images, Labels)) -> f64 {
    model.eval();
    let predicted = no_grad(|| model.forward(x).argmax::<Classes>());
    model.train();
    let right = predicted.eq(y).sum::<Batch>().item();
    right as f64 / y.numel() as f64
}

/// The training and test images with their labels.
pub type Data = ((Images, Labels), (Images, Labels));

/// The digits examples' recipe for `model` over `epochs` epochs: AdamW at 3e-3, a cosine
/// schedule down to 1e-4, cross-entropy with label smoothing 0.05.
pub fn recipe(
    model: &impl Module<f32>,
    epochs: usize,
) -> namedtensor::Result<(Adam<f32>, CosineAnnealingLr, CrossEntropy)> {
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 3e-3,
            ..AdamConfig::adamw()
        },
    );
    let schedule = CosineAnnealingLr::new(&mut opt, epochs, 1e-4)?;
    let loss_fn = CrossEntropy {
        label_smoothing: 0.05,
        ..CrossEntropy::default()
    };
    Ok((opt, schedule, loss_fn))
}
