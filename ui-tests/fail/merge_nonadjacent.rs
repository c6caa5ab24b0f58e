// `t.merge((Rows, Cols), Pixels)` where `Channels` sits between them.
use namedtensor::named::MergeDims;

namedtensor::dims! { Batch, Rows, Channels, Cols, Pixels }

fn main() {
    let _ = <(Batch, Rows, Channels, Cols) as MergeDims<(Rows, Cols), Pixels>>::START;
}
