// A chain of layers whose dims do not line up: the second layer takes `Pixels`, but the
// first one's output has `Hidden` in its place.
use namedtensor::nn::{Forward, Linear, Relu};
use namedtensor::{Tensor, dims};

dims! { Batch, Pixels, Hidden, Classes }

fn main() {
    let mlp = (Linear::<Pixels, Hidden>::new(64, 32), Relu, Linear::<Pixels, Classes>::new(64, 10));
    let x = Tensor::<f32, (Batch, Pixels)>::ones([8, 64]);
    let _ = mlp.forward(&x);
}
