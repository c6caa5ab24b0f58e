// A `Linear<Hidden, Classes>` applied to a `(Batch, Features)` tensor: it has no `Hidden`.
use namedtensor::nn::Linear;
use namedtensor::Tensor;

namedtensor::dims! { Batch, Features, Hidden, Classes }

fn main() {
    let fc = Linear::<Hidden, Classes>::seeded(8, 3, 0);
    let x = Tensor::<f32, (Batch, Features)>::ones([2, 8]);
    let _ = fc.forward(&x);
}
