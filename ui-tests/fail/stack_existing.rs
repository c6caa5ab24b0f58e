// `Tensor::stack(&frames, Rows)`: the new dim must not be one the parts already have.
use namedtensor::named::Stack;

namedtensor::dims! { Rows, Cols }

fn main() {
    let _ = <(Rows, Cols) as Stack<Rows>>::AXIS;
}
