// Inner code cannot name a masked dim.
use namedtensor::{Tensor, dims};
dims! { Batch, Seq, Hidden }

fn main() {
    let x = Tensor::<f32, (Batch, Seq, Hidden)>::zeros([2, 3, 4]).mask_to::<Batch>();
    let _ = x.sum::<Batch>();
}
