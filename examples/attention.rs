//! "Tensor Considered Harmful"'s attention example with names, checked against the
//! positional `softmax(Q Kᵀ / √d) V`.
//!
//! Run with `cargo run --release --example attention`.

use namedtensor::{Tensor, dims};

dims! { Batch, Query, Key, Hidden }

/// Attention written with names: nothing here depends on the order of the dims.
fn attention(
    query: &Tensor<f32, (Batch, Query, Hidden)>,
    key: &Tensor<f32, (Batch, Key, Hidden)>,
    value: &Tensor<f32, (Batch, Key, Hidden)>,
) -> Tensor<f32, (Batch, Query, Hidden)> {
    let scale = (query.size::<Hidden>() as f32).sqrt();
    let scores = query.dot(Hidden, key).map(|s| s / scale as f64);
    scores.softmax::<Key>().dot(Key, value)
}

fn main() {
    let (b, q, k, h) = (2, 3, 5, 16);
    let query = Tensor::<f32, (Batch, Query, Hidden)>::randn([b, q, h], 1);
    let key = Tensor::<f32, (Batch, Key, Hidden)>::randn([b, k, h], 2);
    let value = Tensor::<f32, (Batch, Key, Hidden)>::randn([b, k, h], 3);
    let out = attention(&query, &key, &value);
    println!(
        "attention output: names {:?}, shape {:?}",
        out.names(),
        out.shape()
    );

    // The positional computation: softmax(Q Kᵀ / √h) V.
    let (qd, kd, vd) = (query.as_dyn(), key.as_dyn(), value.as_dyn());
    let positional = (qd.matmul(&kd.transpose(1, 2)) / (h as f64).sqrt())
        .softmax(-1)
        .matmul(vd);
    let max_diff = out
        .to_vec()
        .iter()
        .zip(positional.to_vec())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    println!("largest difference from the positional version: {max_diff:e}");
    assert!(max_diff < 1e-5);
}
