//! A user's crate in a debug build against the same crate in a release build: training steps
//! (the `nn_*` cases of `benches/peers`) and three single ops. Run it twice and compare the
//! medians:
//!
//! ```sh
//! cd benches/debug-build
//! cargo run              # this crate at opt-level 0, its dependencies at 3 (Cargo.toml)
//! cargo run --release    # everything at opt-level 3
//! ```
//!
//! The first argument scales the number of rounds (default 1), a second one runs only the cases
//! whose names contain it; the lines printed are `case median_ms min_ms`. The cases:
//! - `nn_transformer_adamw_b16_s64_m64`: the `char_transformer` example's model (2 layers,
//!   model 64, 4 heads, hidden 256, sequence 64, batch 16), cross-entropy, AdamW;
//! - `nn_cnn_adamw_b32_8x8`: two 3×3 convolutions (1→16→32 channels) with ReLU and 2×2 max
//!   pooling, then 128→10; batch 32 of 8×8 images, AdamW;
//! - `nn_mlp_adamw_b32_64x128x10`: 64-128-10 with ReLU, AdamW;
//! - `add`, `exp`, `sum` of 16M `f32`.

use namedtensor::DynTensor;
use namedtensor::nn::loss::cross_entropy;
use namedtensor::nn::{Conv2d, Linear, MaxPool2d, Module};
use namedtensor::ops::Window2d;
use namedtensor::optim::{Adam, AdamConfig, Optimizer};
use namedtensor::{Tensor, dims};
use std::time::Instant;

/// The char_transformer example's model, trained here as the example trains it.
#[allow(dead_code)]
#[path = "../../../examples/char_transformer/model.rs"]
mod char_model;

dims! { Batch, Pixels, Hidden, Classes, Channels, Features, Rows, Cols, Flat }

/// Median and minimum over `rounds` calls of `f`, in milliseconds, after `warm` uncounted
/// calls (buffer pools, page faults, the thread pool's start).
fn time(warm: usize, rounds: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..warm {
        f();
    }
    let mut ms: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[0])
}

fn report(name: &str, (median, min): (f64, f64)) {
    println!("{name} {median:.3} {min:.3}");
}

/// Whether the case `name` was asked for (the second argument, a substring of the names).
fn wanted(name: &str) -> bool {
    std::env::args().nth(2).is_none_or(|only| name.contains(&only))
}

fn main() {
    let scale: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!("# {profile} build of this crate; case median_ms min_ms");

    if wanted("nn_transformer_adamw_b16_s64_m64") {
        use char_model::{Batch, CharTransformer, Seq, Sizes, Vocab};
        let sizes = Sizes {
            model: 64,
            heads: 4,
            hidden: 256,
            context: 64,
            layers: 2,
        };
        let lm = CharTransformer::<f32>::new(sizes, 0);
        let mut opt = Adam::new(lm.parameters(), AdamConfig::adamw());
        let ids = DynTensor::<i64>::randint(0, 96, &[16, 65], 0);
        let x: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 0, 64).refine_names();
        let y: Tensor<i64, (Batch, Seq)> = ids.narrow(1, 1, 64).refine_names();
        let step = || {
            opt.zero_grad();
            cross_entropy(&lm.forward(&x), Vocab, &y).backward();
            opt.step().unwrap();
        };
        report("nn_transformer_adamw_b16_s64_m64", time(3, 30 * scale, step));
    }

    let x = Tensor::<f32, (Batch, Pixels)>::rand([32, 64], 2);
    let y = Tensor::<i64, (Batch,)>::from_vec((0..32).map(|i| i % 10).collect(), [32]);
    if wanted("nn_cnn_adamw_b32_8x8") {
        let same = Window2d::new(3, 3).padding(1);
        let conv1 = Conv2d::<Channels, Features, Rows, Cols>::new(1, 16, same, 0);
        let conv2 = Conv2d::<Features, Hidden, Rows, Cols>::new(16, 32, same, 1);
        let fc = Linear::<Flat, Classes>::new(128, 10, 2);
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
        let step = || {
            opt.zero_grad();
            let h = pool.forward(&conv1.forward(&img).relu());
            let h = pool.forward(&conv2.forward(&h).relu());
            let logits = fc.forward(&h.merge::<(Hidden, Rows, Cols), Flat>());
            cross_entropy(&logits, Classes, &y).backward();
            opt.step().unwrap();
        };
        report("nn_cnn_adamw_b32_8x8", time(5, 100 * scale, step));
    }
    if wanted("nn_mlp_adamw_b32_64x128x10") {
        let fc1 = Linear::<Pixels, Hidden>::new(64, 128, 0);
        let fc2 = Linear::<Hidden, Classes>::new(128, 10, 1);
        let params = fc1
            .parameters()
            .into_iter()
            .chain(fc2.parameters())
            .collect();
        let mut opt = Adam::new(params, AdamConfig::adamw());
        let step = || {
            opt.zero_grad();
            cross_entropy(&fc2.forward(&fc1.forward(&x).relu()), Classes, &y).backward();
            opt.step().unwrap();
        };
        report("nn_mlp_adamw_b32_64x128x10", time(5, 200 * scale, step));
    }

    if !wanted("_16M") {
        return;
    }
    let n = 1 << 24;
    let a = DynTensor::<f32>::rand(&[n], 1);
    let b = DynTensor::<f32>::rand(&[n], 2);
    if wanted("add_16M") {
        report("add_16M", time(1, 15 * scale, || drop(&a + &b)));
    }
    if wanted("exp_16M") {
        report("exp_16M", time(1, 15 * scale, || drop(a.exp())));
    }
    if wanted("sum_16M") {
        report("sum_16M", time(1, 15 * scale, || drop(a.sum())));
    }
}
