// A generic constructor creates a tensor whose dims are generic parameters without the shape
// as a bound (holding one needs none): the notes say to add `(In, Out): Shape`.
use namedtensor::named::Dim;
use namedtensor::Tensor;

struct Layer<In: Dim, Out: Dim> {
    weight: Tensor<f32, (In, Out)>,
}

impl<In: Dim, Out: Dim> Layer<In, Out> {
    fn new(rows: usize, cols: usize) -> Self {
        Layer { weight: Tensor::zeros([rows, cols]) }
    }
}

fn main() {}
