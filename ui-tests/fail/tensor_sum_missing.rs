// Reducing a tensor over a dim it does not have.
use namedtensor::{Tensor, dims};
dims! { Batch, Channels, Rows, Cols }

fn main() {
    let img = Tensor::<f32, (Batch, Rows, Cols)>::zeros([2, 4, 4]);
    let _gray = img.sum::<Channels>();
}
