// `img.sum((Rows, Channels))`: one of the reduced dims is missing.
use namedtensor::named::ReduceOver;

namedtensor::dims! { Batch, Channels, Rows, Cols }

fn main() {
    let _ = <(Batch, Rows, Cols) as ReduceOver<(Rows, Channels)>>::AXES;
}
