// One size per dim: giving two sizes for three dims does not compile.
use namedtensor::{Tensor, dims};
dims! { Batch, Rows, Cols }

fn main() {
    let _ = Tensor::<f32, (Batch, Rows, Cols)>::zeros([2, 3]);
}
