// `img.sum(Channels)` on a tensor that has no `Channels`.
use namedtensor::named::ReduceOver;

namedtensor::dims! { Batch, Channels, Rows, Cols }

fn main() {
    let _ = <(Batch, Rows, Cols) as ReduceOver<Channels>>::AXES;
}
