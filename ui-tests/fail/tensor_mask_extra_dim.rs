// A mask with a dim the masked tensor does not have: `(Height, Seq)` on `(Height, Width)`.
use namedtensor::{Tensor, dims};
dims! { Height, Width, Seq }

fn main() {
    let img = Tensor::<f32, (Height, Width)>::zeros([2, 3]);
    let mask = Tensor::<bool, (Height, Seq)>::zeros([2, 3]);
    let _ = img.masked_fill(&mask, 0.0);
}
