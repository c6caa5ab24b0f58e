//! Masking: a function receives a tensor whose `Batch` dim is private. It cannot name `Batch`
//! (that would not compile), yet everything it does is still applied per batch entry.
//!
//! Run with `cargo run --release --example masking`.

use namedtensor::{Tensor, dims};

dims! { Batch, Seq, Hidden }

/// The tensor type inner code sees: `Batch` is private.
type Masked = Tensor<f32, (Seq, Hidden), (Batch,)>;

/// Normalises each sequence position over `Hidden`. The batch is there, but this code cannot
/// name it: every operation here runs per batch entry.
fn normalise(x: &Masked) -> Masked {
    // `x.sum::<Batch>()` here would be a compile error: `Batch` is masked.
    let norm = x.map(|t| t * t).sum_keepdim::<Hidden>().map(|t| t.sqrt());
    x.div_strict(&norm)
}

fn main() {
    let x = Tensor::<f32, (Batch, Seq, Hidden)>::from_vec(
        vec![3.0, 4.0, 6.0, 8.0, 0.0, 2.0, 1.0, 0.0],
        [2, 2, 2],
    );
    let inner = x.mask_to::<Batch>();
    println!(
        "inside: visible names {:?}, full shape {:?}",
        inner.names(),
        inner.shape()
    );
    let y = normalise(&inner).unmask();
    println!("normalised: {y}");
    // every (Batch, Seq) row now has length 1
    let lengths = y.map(|t| t * t).sum::<Hidden>();
    println!("row lengths: {:?}", lengths.to_vec());
}
