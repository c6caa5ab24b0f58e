// Narrowing a dim the tensor does not have.
use namedtensor::{Tensor, dims};
dims! { Batch, Height, Width }

fn main() {
    let img = Tensor::<f32, (Batch, Height)>::zeros([2, 8]);
    let _crop = img.narrow::<Width>(0, 4);
}
