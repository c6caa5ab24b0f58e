//! The seeds' grayscale example with names: weights aligned to the image by name, a weighted
//! sum over `Channels`, with and without a batch dim.
//!
//! Run with `cargo run --release --example grayscale`.

use namedtensor::{Tensor, dims};

dims! { Batch, Channels, Rows, Cols }

fn main() {
    // A 3-channel 5×5 image with channel c filled with c + 1.
    let img = Tensor::<f32, (Channels, Rows, Cols)>::from_vec(
        (0..75).map(|i| (i / 25 + 1) as f32).collect(),
        [3, 5, 5],
    );
    // Luma weights, named: they only ever meet the image along `Channels`.
    let weights = Tensor::<f32, (Channels,)>::from_vec(vec![0.2126, 0.7152, 0.0722], [3]);
    println!(
        "weights aligned to the image: shape {:?}",
        weights.align_as(&img).shape()
    );
    let gray = (&img * &weights).sum::<Channels>();
    println!("gray (Rows, Cols): {gray}");
    println!(
        "every pixel is 0.2126·1 + 0.7152·2 + 0.0722·3 = {}",
        0.2126 + 0.7152 * 2.0 + 0.0722 * 3.0
    );

    // The same code on a batch of two images: the batch dim is carried by name.
    let batch = Tensor::stack(Batch, &[&img, &img.map(|x| x * 2.0)]);
    let gray_batch = (&batch * &weights).sum::<Channels>();
    println!(
        "batched gray: names {:?}, shape {:?}",
        gray_batch.names(),
        gray_batch.shape()
    );
    println!(
        "second image's first pixel (twice the first's): {}",
        gray_batch.as_dyn().get(&[1, 0, 0])
    );
}
