//! The training steps that `benches/peers` (against PyTorch) and `benches/debug-build` (a debug
//! build against a release build) time, written with `nn` and `optim` as
//! `examples/train_digits` and `examples/char_transformer` run them: `zero_grad`, forward,
//! cross-entropy, `backward`, an AdamW step. Each function builds its model and data and
//! returns the step, which owns them.

use namedtensor::nn::loss::cross_entropy;
use namedtensor::nn::{Conv2d, Linear, MaxPool2d, Module};
use namedtensor::ops::Window2d;
use namedtensor::optim::{Adam, AdamConfig, Optimizer};
use namedtensor::{DynTensor, Tensor, dims};

/// The char_transformer example's model, trained as the example trains it.
#[allow(dead_code)]
#[path = "../../examples/char_transformer/model.rs"]
pub mod char_model;

dims! { Batch, Pixels, Hidden, Classes, Channels, Features, Rows, Cols, Flat, Image, Ch1, Ch2, Ch3 }

/// Images and their labels.
type Examples = (Tensor<f32, (Batch, Pixels)>, Tensor<i64, (Batch,)>);

/// Batch 32 of 8×8 images with labels 0..10.
fn digits() -> Examples {
    let x = Tensor::<f32, (Batch, Pixels)>::rand([32, 64], 2);
    let y = Tensor::<i64, (Batch,)>::from_vec((0..32).map(|i| i % 10).collect(), [32]);
    (x, y)
}

/// `nn_mlp_adamw_b32_64x128x10`: 64-128-10 with ReLU.
pub fn mlp() -> impl FnMut() {
    let (x, y) = digits();
    let fc1 = Linear::<Pixels, Hidden>::seeded(64, 128, 0);
    let fc2 = Linear::<Hidden, Classes>::seeded(128, 10, 1);
    let params = fc1
        .parameters()
        .into_iter()
        .chain(fc2.parameters())
        .collect();
    let mut opt = Adam::new(params, AdamConfig::adamw());
    move || {
        opt.zero_grad();
        cross_entropy(&fc2.forward(&fc1.forward(&x).relu()), Classes, &y).backward();
        opt.step().unwrap();
    }
}

/// `nn_cnn_adamw_b32_8x8`: two 3×3 convolutions (1→16→32 channels, padding 1) with ReLU and
/// 2×2 max pooling, then 128→10.
pub fn cnn() -> impl FnMut() {
    let (x, y) = digits();
    let same = Window2d::new(3, 3).padding(1);
    let conv1 = Conv2d::<Channels, Features, Rows, Cols>::seeded(1, 16, same, 0);
    let conv2 = Conv2d::<Features, Hidden, Rows, Cols>::seeded(16, 32, same, 1);
    let fc = Linear::<Flat, Classes>::seeded(128, 10, 2);
    let pool = MaxPool2d::<Rows, Cols>::new(2);
    let params = conv1
        .parameters()
        .into_iter()
        .chain(conv2.parameters())
        .chain(fc.parameters())
        .collect();
    let mut opt = Adam::new(params, AdamConfig::adamw());
    let img = x
        .split::<Pixels, (Rows, Cols)>(&[8, 8])
        .align_to::<(Batch, Channels, Rows, Cols)>();
    move || {
        opt.zero_grad();
        let h = pool.forward(&conv1.forward(&img).relu());
        let h = pool.forward(&conv2.forward(&h).relu());
        let logits = fc.forward(&h.merge::<(Hidden, Rows, Cols), Flat>());
        cross_entropy(&logits, Classes, &y).backward();
        opt.step().unwrap();
    }
}

/// `nn_cnn_adamw_b32_3x32x32`: images of real size (3 × 32 × 32, CIFAR's), batch 32, three
/// 3×3 convolutions (3→16→32→64 channels, padding 1) each with ReLU and 2×2 max pooling, then
/// 1024→10.
#[allow(dead_code)] // benches/debug-build times the small steps only
pub fn cnn32() -> impl FnMut() {
    let same = Window2d::new(3, 3).padding(1);
    let conv1 = Conv2d::<Image, Ch1, Rows, Cols>::seeded(3, 16, same, 0);
    let conv2 = Conv2d::<Ch1, Ch2, Rows, Cols>::seeded(16, 32, same, 1);
    let conv3 = Conv2d::<Ch2, Ch3, Rows, Cols>::seeded(32, 64, same, 2);
    let fc = Linear::<Flat, Classes>::seeded(1024, 10, 3);
    let pool = MaxPool2d::<Rows, Cols>::new(2);
    let params = [
        conv1.parameters(),
        conv2.parameters(),
        conv3.parameters(),
        fc.parameters(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut opt = Adam::new(params, AdamConfig::adamw());
    let img = Tensor::<f32, (Batch, Image, Rows, Cols)>::rand([32, 3, 32, 32], 2);
    let y = Tensor::<i64, (Batch,)>::from_vec((0..32).map(|i| i % 10).collect(), [32]);
    move || {
        opt.zero_grad();
        let h = pool.forward(&conv1.forward(&img).relu());
        let h = pool.forward(&conv2.forward(&h).relu());
        let h = pool.forward(&conv3.forward(&h).relu());
        let logits = fc.forward(&h.merge::<(Ch3, Rows, Cols), Flat>());
        cross_entropy(&logits, Classes, &y).backward();
        opt.step().unwrap();
    }
}

/// The char_transformer model's sizes in the `nn_transformer` cases (here and `benches/dist`):
/// 2 layers, model 64, 4 heads, hidden 256, sequences of 64.
pub const TRANSFORMER_SIZES: char_model::Sizes = char_model::Sizes {
    model: 64,
    heads: 4,
    hidden: 256,
    context: 64,
    layers: 2,
};

/// `nn_transformer_adamw_b16_s64_m64`: the char_transformer model ([`TRANSFORMER_SIZES`]),
/// batch 16 of 64 tokens.
pub fn transformer() -> impl FnMut() {
    use char_model::{Batch, CharTransformer, Seq, Vocab};
    let lm = CharTransformer::<f32>::new(TRANSFORMER_SIZES);
    let mut opt = Adam::new(lm.parameters(), AdamConfig::adamw());
    let ids = DynTensor::<i64>::randint(0, 96, &[16, 65], 0);
    let x: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 0, 64).refine_names();
    let y: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 1, 64).refine_names();
    move || {
        opt.zero_grad();
        cross_entropy(&lm.forward(&x), Vocab, &y).backward();
        opt.step().unwrap();
    }
}

/// `nn_transformer_adamw_b4_s128_m768`: the char_transformer model at GPT-2-small's width
/// (model 768, 12 heads, hidden 3072, sequences of 128) with 2 layers, batch 4.
#[allow(dead_code)] // benches/debug-build times the small steps only
pub fn transformer_wide() -> impl FnMut() {
    use char_model::{Batch, CharTransformer, Seq, Sizes, Vocab};
    let sizes = Sizes {
        model: 768,
        heads: 12,
        hidden: 3072,
        context: 128,
        layers: 2,
    };
    let lm = CharTransformer::<f32>::new(sizes);
    let mut opt = Adam::new(lm.parameters(), AdamConfig::adamw());
    let ids = DynTensor::<i64>::randint(0, 96, &[4, 129], 0);
    let x: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 0, 128).refine_names();
    let y: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 1, 128).refine_names();
    move || {
        opt.zero_grad();
        cross_entropy(&lm.forward(&x), Vocab, &y).backward();
        opt.step().unwrap();
    }
}

/// `step` with its matrix products in bf16 (`amp::autocast`), the `_bf16` cases: PyTorch's
/// side runs the same step under `torch.autocast("cpu", dtype=torch.bfloat16)`.
#[allow(dead_code)] // benches/debug-build times the f32 steps only
pub fn bf16(mut step: impl FnMut()) -> impl FnMut() {
    move || namedtensor::amp::autocast::<namedtensor::bf16, _>(&mut step)
}
