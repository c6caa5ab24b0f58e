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
use std::time::Instant;

#[path = "../../support/training_steps.rs"]
mod training_steps;

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
    std::env::args()
        .nth(2)
        .is_none_or(|only| name.contains(&only))
}

fn main() {
    let scale: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("# {profile} build of this crate; case median_ms min_ms");

    if wanted("nn_transformer_adamw_b16_s64_m64") {
        let step = training_steps::transformer();
        report(
            "nn_transformer_adamw_b16_s64_m64",
            time(3, 30 * scale, step),
        );
    }
    if wanted("nn_cnn_adamw_b32_8x8") {
        report(
            "nn_cnn_adamw_b32_8x8",
            time(5, 100 * scale, training_steps::cnn()),
        );
    }
    if wanted("nn_mlp_adamw_b32_64x128x10") {
        report(
            "nn_mlp_adamw_b32_64x128x10",
            time(5, 200 * scale, training_steps::mlp()),
        );
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
