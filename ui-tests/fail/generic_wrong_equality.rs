// The bound is there, but the result's dims are claimed to be the input's: rustc names the
// bound's `Out` and proposes the equality that would make it so.
use namedtensor::named::ReduceOver;
use namedtensor::Tensor;

fn total<S, D>(x: &Tensor<f32, S>) -> Tensor<f32, S>
where
    S: ReduceOver<D>,
{
    x.sum::<D>()
}

fn main() {}
