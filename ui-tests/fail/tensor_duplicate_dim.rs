// A tensor whose dims repeat cannot be created: the type may be written (code generic over
// dims needs that), but every constructor asks for a `Shape`, whose dims are distinct.
use namedtensor::Tensor;

namedtensor::dims! { Rows, Channels }

fn main() {
    let _ = Tensor::<f32, (Rows, Channels, Rows)>::zeros([2, 3, 2]);
}
