// A gradient has its tensor's names.
use namedtensor::Tensor;

namedtensor::dims! { Batch, In, Out }

fn main() {
    let w = Tensor::<f32, (In, Out)>::ones([3, 2]).requires_grad_(true);
    let x = Tensor::<f32, (Batch, In)>::ones([4, 3]);
    let y = x.dot(In, &w); // (Batch, Out)
    y.sum::<(Batch, Out)>().backward();
    let g: Tensor<f32, (In, Out)> = w.grad().unwrap();
    assert_eq!(g.shape(), &[3, 2]);
}
