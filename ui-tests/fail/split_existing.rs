// `t.split(Height, (Rows, Width))`: `Width` is already a dim.
use namedtensor::named::ReplaceDim;

namedtensor::dims! { Height, Width, Rows }

fn main() {
    let _ = <(Height, Width) as ReplaceDim<Height, (Rows, Width)>>::AXIS;
}
