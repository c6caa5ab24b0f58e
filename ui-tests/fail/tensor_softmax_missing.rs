// A softmax over a dim the scores do not have.
use namedtensor::{Tensor, dims};
dims! { Batch, Query, Key }

fn main() {
    let scores = Tensor::<f32, (Batch, Query)>::zeros([2, 3]);
    let _weights = scores.softmax::<Key>();
}
