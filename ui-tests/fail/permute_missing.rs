// `t.permute::<(Cols, Batch)>()` leaves out `Rows`.
use namedtensor::named::PermuteTo;

namedtensor::dims! { Batch, Rows, Cols }

fn main() {
    let _ = <(Batch, Rows, Cols) as PermuteTo<(Cols, Batch)>>::PERM;
}
