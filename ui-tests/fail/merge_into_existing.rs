// `t.merge((Height, Width), Batch)`: the merged dim's name is already taken.
use namedtensor::named::MergeDims;

namedtensor::dims! { Batch, Height, Width }

fn main() {
    let _ = <(Batch, Height, Width) as MergeDims<(Height, Width), Batch>>::START;
}
