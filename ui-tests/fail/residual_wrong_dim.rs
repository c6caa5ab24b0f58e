// A residual connection through a layer to the wrong dim: `+` would broadcast by name and
// grow the rank; the strict form refuses.
use namedtensor::nn::Linear;
use namedtensor::{Tensor, dims};

dims! { Batch, Model, Hidden }

fn main() {
    let layer = Linear::<Model, Hidden>::seeded(4, 8, 0);
    let x = Tensor::<f32, (Batch, Model)>::ones([2, 4]);
    let _ = x.add_strict(&layer.forward(&x));
}
