// `t.get(Cols, 0)` on a tensor without `Cols`.
use namedtensor::named::RemoveDim;

namedtensor::dims! { Batch, Rows, Cols }

fn main() {
    let _ = <(Batch, Rows) as RemoveDim<Cols>>::AXIS;
}
