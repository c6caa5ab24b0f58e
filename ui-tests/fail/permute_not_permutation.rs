// `t.permute::<(Cols, Batch, Channels)>()`: `Channels` is not a dim of `t`.
use namedtensor::named::PermuteTo;

namedtensor::dims! { Batch, Channels, Rows, Cols }

fn main() {
    let _ = <(Batch, Rows, Cols) as PermuteTo<(Cols, Batch, Channels)>>::PERM;
}
