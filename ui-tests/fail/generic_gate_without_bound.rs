// A gated layer and a residual generic over their dims: elementwise math between two tensors
// of the same generic dims needs one bound, `X: Elementwise`, and the error's first line
// names it (`X: Shape` is not enough).
use namedtensor::named::{Contract, Dim, Shape};
use namedtensor::nn::Linear;
use namedtensor::Tensor;

struct Gated<In: Dim, Out: Dim> {
    value: Linear<In, Out>,
    gate: Linear<In, Out>,
}

impl<In: Dim, Out: Dim> Gated<In, Out> {
    fn forward<S, X>(&self, x: &Tensor<f32, S>) -> Tensor<f32, X>
    where
        S: Contract<In, (Out, In), Out = X, Private = ()>,
        X: Shape,
    {
        let a = self.value.forward(x);
        let g = self.gate.forward(x).sigmoid();
        &a * &g
    }
}

fn residual<X: Shape>(x: &Tensor<f32, X>, update: &Tensor<f32, X>) -> Tensor<f32, X> {
    x.add_strict(update)
}

fn main() {}
