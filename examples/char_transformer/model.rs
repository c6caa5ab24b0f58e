//! The character-level language model of the `char_transformer` example, written by names.
//! `tests/suite/nn_torch.rs` includes this file and trains it against PyTorch's copy of it
//! (`tests/fixtures/make_nn.py`), so the model the example trains is the one the test checks.

use namedtensor::autograd::no_grad;
use namedtensor::nn::{
    Embedding, LayerNorm, Linear, Module, TransformerBlock, TransformerConfig, Visitor,
};
use namedtensor::{DynTensor, Float, Result, Tensor, dims};

dims! {
    /// Sequences in a batch.
    pub Batch,
    /// Positions in a sequence.
    pub Seq,
    /// A position's vector.
    pub Model,
    /// Attention heads.
    pub Heads,
    /// A head's share of `Model`.
    pub HeadDim,
    /// The feed-forward network's hidden units.
    pub Hidden,
    /// Characters.
    pub Vocab,
    /// The table of learned position vectors.
    pub Position,
}

/// Bytes 32..=126 are tokens 0..=94, a newline is 95; anything else reads as `?`.
pub const VOCAB: usize = 96;

/// A text's tokens.
pub fn encode(text: &str) -> Vec<i64> {
    text.chars()
        .map(|c| match c {
            '\n' => 95,
            ' '..='~' => c as i64 - 32,
            _ => '?' as i64 - 32,
        })
        .collect()
}

/// A token's character.
pub fn decode(token: i64) -> char {
    if token == 95 {
        '\n'
    } else {
        char::from(token as u8 + 32)
    }
}

/// The model's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Entries of `Model`.
    pub model: usize,
    /// Attention heads (they divide `model`).
    pub heads: usize,
    /// Entries of `Hidden`.
    pub hidden: usize,
    /// The longest sequence (rows of the position table).
    pub context: usize,
    /// Transformer layers.
    pub layers: usize,
}

/// Token and position embeddings, causal pre-norm transformer layers, a final norm and a
/// linear head that scores every character of the vocabulary.
pub struct CharTransformer<E: Float> {
    /// `(Vocab, Model)`.
    pub tokens: Embedding<Vocab, Model, E>,
    /// `(Position, Model)`.
    pub positions: Embedding<Position, Model, E>,
    /// The layers, each attending along `Seq` to earlier positions only.
    pub blocks: Vec<TransformerBlock<Model, Heads, HeadDim, Hidden, E>>,
    /// The final norm.
    pub norm: LayerNorm<Model, E>,
    /// `Model` to `Vocab`.
    pub head: Linear<Model, Vocab, E>,
}

impl<E: Float> Module<E> for CharTransformer<E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.module("tokens", &self.tokens);
        v.module("positions", &self.positions);
        v.module("blocks", &self.blocks);
        v.module("norm", &self.norm);
        v.module("head", &self.head);
    }
}

impl<E: Float> CharTransformer<E> {
    /// A model of the given sizes without dropout, initialised as PyTorch does from the
    /// process's generator (`namedtensor::random::manual_seed`).
    pub fn new(sizes: Sizes) -> Self {
        CharTransformer {
            tokens: Embedding::new(VOCAB, sizes.model),
            positions: Embedding::new(sizes.context, sizes.model),
            blocks: (0..sizes.layers)
                .map(|_| {
                    let config = TransformerConfig {
                        model: sizes.model,
                        heads: sizes.heads,
                        hidden: sizes.hidden,
                        dropout: 0.0,
                        causal: true,
                    };
                    TransformerBlock::new(config)
                })
                .collect(),
            norm: LayerNorm::new(sizes.model),
            head: Linear::new(sizes.model, VOCAB),
        }
    }

    /// Scores for the character after each position of `ids`.
    pub fn forward(&self, ids: &Tensor<i64, (Batch, Seq)>) -> Tensor<E, (Batch, Seq, Vocab)> {
        let len = ids.shape()[1] as i64;
        // The positions, made where the ids are (the model runs on any device).
        let at: Tensor<i64, (Seq,)> = DynTensor::arange(0, len, 1)
            .to_device(ids.as_dyn().device())
            .expect("the ids' device")
            .refine_names();
        // (Batch, Seq, Model) + (Seq, Model): added by name, broadcast over Batch.
        let mut x = self.tokens.forward(ids).add(&self.positions.forward(&at));
        for block in &self.blocks {
            x = block.forward(&x, Seq);
        }
        self.head.forward(&self.norm.forward(&x))
    }

    /// `count` characters drawn after `prompt`, each from the model's distribution at
    /// `temperature`, with the seeded uniform numbers `seed` gives.
    pub fn sample(
        &self,
        prompt: &str,
        count: usize,
        temperature: f64,
        seed: u64,
    ) -> Result<String> {
        let context = self.positions.weight.shape()[0];
        let mut ids = encode(prompt);
        let uniform = DynTensor::<f64>::rand(&[count], seed).to_vec();
        no_grad(|| {
            for u in uniform {
                let window = &ids[ids.len().saturating_sub(context)..];
                let x: Tensor<i64, (Batch, Seq)> =
                    DynTensor::from_vec(window.to_vec(), &[1, window.len()])
                        .to_device(self.head.weight.as_dyn().device())?
                        .refine_names();
                let last = self.forward(&x).into_dyn().select(1, -1).select(0, 0);
                let p = last
                    .cpu()?
                    .to_dtype::<f64>()
                    .try_div_scalar(temperature)?
                    .try_softmax(0)?;
                let mut left = u;
                let next = p
                    .to_vec()
                    .iter()
                    .position(|&q| {
                        left -= q;
                        left < 0.0
                    })
                    .unwrap_or(VOCAB - 1);
                ids.push(next as i64);
            }
            Ok(ids[ids.len() - count..]
                .iter()
                .map(|&t| decode(t))
                .collect())
        })
    }
}
