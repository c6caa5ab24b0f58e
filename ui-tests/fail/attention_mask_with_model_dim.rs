// A key padding mask that has the model dim: it must be over the batch and sequence dims only.
use namedtensor::nn::{AttentionMasks, MultiHeadAttention};
use namedtensor::{Tensor, dims};

dims! { Batch, Seq, Model, Heads, HeadDim }

fn main() {
    let attn = MultiHeadAttention::<Model, Heads, HeadDim>::seeded(8, 2, 0);
    let x = Tensor::<f32, (Batch, Seq, Model)>::zeros([2, 3, 8]);
    let pad = Tensor::<bool, (Batch, Seq, Model)>::zeros([2, 3, 8]);
    let _ = attn.forward_masked(&x, Seq, &AttentionMasks::new().key_padding(&pad));
}
