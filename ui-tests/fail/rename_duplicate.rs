// `t.rename(Channels, Rows)` onto a dim the tensor already has.
use namedtensor::named::Rename;

namedtensor::dims! { Channels, Rows, Cols }

fn main() {
    let _ = <(Channels, Rows, Cols) as Rename<Channels, Rows>>::AXIS;
}
