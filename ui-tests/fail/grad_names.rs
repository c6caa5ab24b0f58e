// A gradient keeps its tensor's names: it cannot be bound with the dims swapped.
use namedtensor::Tensor;

namedtensor::dims! { In, Out }

fn main() {
    let w = Tensor::<f32, (In, Out)>::ones([3, 2]).requires_grad_(true);
    let _g: Tensor<f32, (Out, In)> = w.grad().unwrap();
}
