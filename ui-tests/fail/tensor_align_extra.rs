// Aligning weights that have a dim the image lacks.
use namedtensor::{Tensor, dims};
dims! { Channels, Rows, Cols, Heads }

fn main() {
    let img = Tensor::<f32, (Channels, Rows, Cols)>::zeros([3, 4, 4]);
    let w = Tensor::<f32, (Channels, Heads)>::zeros([3, 2]);
    let _ = w.align_as(&img);
}
