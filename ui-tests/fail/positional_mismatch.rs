// PyTorch's positional rule: (Batch, Rows, Cols) and (Cols, Rows) do not match from the right.
use namedtensor::named::BroadcastPositional;

namedtensor::dims! { Batch, Rows, Cols }

fn main() {
    let _ = <(Batch, Rows, Cols) as BroadcastPositional<(Cols, Rows)>>::RHS;
}
