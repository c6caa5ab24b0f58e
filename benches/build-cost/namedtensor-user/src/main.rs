//! A small model's forward pass, so the binary links what a user's first program does.

use namedtensor::nn::{Linear, Module};
use namedtensor::{Tensor, dims};

dims! { Batch, Features, Hidden, Classes }

fn main() {
    let x = Tensor::<f32, (Batch, Features)>::randn([4, 8], 0);
    let l1 = Linear::<Features, Hidden>::new(8, 16);
    let l2 = Linear::<Hidden, Classes>::new(16, 3);
    let y = l2.forward(&l1.forward(&x).relu()).softmax::<Classes>();
    println!("{y}");
    let _ = l1.parameters();
}
