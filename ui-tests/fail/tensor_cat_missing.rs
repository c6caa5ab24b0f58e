// Concatenating along a dim the parts do not have.
use namedtensor::{Tensor, dims};
dims! { Batch, Seq, Hidden }

fn main() {
    let a = Tensor::<f32, (Batch, Hidden)>::zeros([2, 4]);
    let b = Tensor::<f32, (Batch, Hidden)>::zeros([3, 4]);
    let _joined = Tensor::cat(Seq, &[&a, &b]);
}
