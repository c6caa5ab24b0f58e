// Contracting over a dim the right operand lacks.
use namedtensor::{Tensor, dims};
dims! { Batch, Query, Key, Hidden }

fn main() {
    let q = Tensor::<f32, (Batch, Query, Hidden)>::zeros([2, 3, 4]);
    let k = Tensor::<f32, (Batch, Key)>::zeros([2, 5]);
    let _ = q.dot(Hidden, &k);
}
