// A struct holding a tensor whose dims are generic parameters, without the shape as a bound:
// the notes say to add `(In, Out): Shape`.
use namedtensor::named::Dim;
use namedtensor::Tensor;

struct Layer<In: Dim, Out: Dim> {
    weight: Tensor<f32, (In, Out)>,
}

fn main() {}
