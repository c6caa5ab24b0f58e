// Generic code that calls a named operation without stating its bound: the first line says
// to add the operation's bound, and the notes list them.
use namedtensor::named::{Dim, Shape};
use namedtensor::Tensor;

fn total<S: Shape, D: Dim>(x: &Tensor<f32, S>) -> f32 {
    x.sum::<D>().to_vec()[0]
}

fn main() {}
