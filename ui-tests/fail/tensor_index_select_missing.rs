// Looking up rows along a dim the table does not have.
use namedtensor::{Tensor, dims};
dims! { Vocab, Embed, Token }

fn main() {
    let table = Tensor::<f32, (Vocab, Embed)>::zeros([10, 4]);
    let ids = Tensor::<i64, (Token,)>::zeros([3]);
    let _rows = table.index_select(Token, &ids);
}
