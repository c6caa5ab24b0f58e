// The named tensor idioms compile.
use namedtensor::{Tensor, dims};
dims! { Batch, Channels, Rows, Cols, Query, Key, Hidden, Pixels }

fn main() {
    let img = Tensor::<f32, (Batch, Channels, Rows, Cols)>::ones([2, 3, 4, 4]);
    let w = Tensor::<f32, (Channels,)>::ones([3]);
    let gray = (&img * &w.align_as(&img)).sum::<Channels>();
    let _flat = gray.merge::<(Rows, Cols), Pixels>();
    let q = Tensor::<f32, (Batch, Query, Hidden)>::ones([2, 3, 8]);
    let k = Tensor::<f32, (Batch, Key, Hidden)>::ones([2, 5, 8]);
    let attn = q.dot(Hidden, &k).softmax::<Key>();
    let _out = attn.dot(Key, &k);
    let inner = img.mask_to::<Batch>();
    let _ = inner.sum::<Channels>().unmask();
}
