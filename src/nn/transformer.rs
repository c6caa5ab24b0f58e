//! [`TransformerBlock`]: a pre-norm transformer layer (self-attention, then a feed-forward
//! network, each added to its input) over a named sequence dim.

use super::attention::{MultiHeadAttention, over_sequence};
use super::attention_mask::{AttentionMasks, KeyPaddingMask, QueryKeyMask};
use super::dropout::Dropout;
use super::init::derive_seed;
use super::layer_norm::LayerNorm;
use super::linear::Linear;
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim, Shape};
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};

/// One transformer layer as PyTorch's `nn.TransformerEncoderLayer(model, heads, hidden,
/// dropout, activation="gelu", batch_first=True, norm_first=True)` computes it:
///
/// ```text
/// x ← x + dropout(attn(norm1(x)))
/// x ← x + dropout(ff2(dropout(gelu(ff1(norm2(x))))))
/// ```
///
/// over the dim `Seq` given at the call; every other dim but `Model` is a batch dim, and
/// names and shape are kept. The feed-forward network goes through its own dim `Hidden`
/// (`ff1: Linear<Model, Hidden>`, `ff2: Linear<Hidden, Model>`), so a model dim can never be
/// fed where the hidden one belongs. Causal attention makes it a decoder-only (GPT-style)
/// layer.
///
/// ```
/// use namedtensor::nn::{TransformerBlock, TransformerConfig};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, Model, Heads, HeadDim, Hidden }
/// let config = TransformerConfig { model: 8, heads: 2, hidden: 32, dropout: 0.0, causal: true };
/// let block = TransformerBlock::<Model, Heads, HeadDim, Hidden>::new(config);
/// let x = Tensor::<f32, (Batch, Seq, Model)>::randn([3, 5, 8], 1);
/// let y = block.forward(&x, Seq);
/// assert_eq!(y.names(), ["Batch", "Seq", "Model"]);
/// assert_eq!(y.shape(), &[3, 5, 8]);
/// ```
pub struct TransformerBlock<Model: Dim, Heads: Dim, HeadDim: Dim, Hidden: Dim, E: Float = f32> {
    /// The norm before attention.
    pub norm1: LayerNorm<Model, E>,
    /// Self-attention.
    pub attn: MultiHeadAttention<Model, Heads, HeadDim, E>,
    /// The norm before the feed-forward network.
    pub norm2: LayerNorm<Model, E>,
    /// Into the feed-forward network's hidden dim.
    pub ff1: Linear<Model, Hidden, E>,
    /// Back to the model dim.
    pub ff2: Linear<Hidden, Model, E>,
    /// Applied to the attention's output, the hidden activations and the network's output.
    pub dropout: Dropout,
}

impl<Model: Dim, Heads: Dim, HeadDim: Dim, Hidden: Dim, E: Float>
    TransformerBlock<Model, Heads, HeadDim, Hidden, E>
where
    (Heads, HeadDim, Model): Shape,
    (Model, Heads, HeadDim): Shape,
    (Heads, HeadDim): Shape,
    (Hidden, Model): Shape,
    (Model, Hidden): Shape,
{
    /// A layer of the sizes and options in `config`, initialised as PyTorch does from the
    /// process's generator ([`manual_seed`](crate::random::manual_seed)). Panics where
    /// [`TransformerBlock::try_new`] fails.
    #[track_caller]
    pub fn new(config: TransformerConfig) -> Self {
        or_panic(Self::try_new(config))
    }

    /// [`TransformerBlock::new`], or an error when a size is 0, `heads` does not divide
    /// `model` or `dropout` is not a probability.
    pub fn try_new(config: TransformerConfig) -> Result<Self> {
        Self::try_seeded(config, next_seed())
    }

    /// [`TransformerBlock::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(config: TransformerConfig, seed: u64) -> Self {
        or_panic(Self::try_seeded(config, seed))
    }

    /// [`TransformerBlock::seeded`], or an error as [`TransformerBlock::try_new`].
    pub fn try_seeded(config: TransformerConfig, seed: u64) -> Result<Self> {
        let TransformerConfig {
            model,
            heads,
            hidden,
            dropout,
            causal,
        } = config;
        for (field, size) in [("model", model), ("heads", heads), ("hidden", hidden)] {
            if size == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "TransformerBlock",
                    format!("TransformerConfig::{field} is 0; every size must be set"),
                ));
            }
        }
        Ok(TransformerBlock {
            norm1: LayerNorm::new(model),
            attn: MultiHeadAttention::try_seeded(model, heads, derive_seed(seed, 0))?,
            norm2: LayerNorm::new(model),
            ff1: Linear::try_seeded(model, hidden, derive_seed(seed, 1))?,
            ff2: Linear::try_seeded(hidden, model, derive_seed(seed, 2))?,
            dropout: Dropout::try_seeded(dropout, derive_seed(seed, 3))?,
        }
        .causal(causal))
    }
}

/// The sizes and options of a [`TransformerBlock`], by name: PyTorch's
/// `nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout)` arguments, so that
/// two sizes cannot be swapped by position. The sizes have no default (0, which
/// [`TransformerBlock::try_new`] refuses); `dropout` is PyTorch's 0.1 by default.
///
/// ```
/// use namedtensor::nn::{TransformerBlock, TransformerConfig};
/// use namedtensor::dims;
/// dims! { Model, Heads, HeadDim, Hidden }
/// let config = TransformerConfig { model: 64, heads: 4, hidden: 256, ..Default::default() };
/// assert_eq!(config.dropout, 0.1);
/// let block = TransformerBlock::<Model, Heads, HeadDim, Hidden>::new(config);
/// assert_eq!(block.ff1.weight.shape(), &[256, 64]);
/// let unset = TransformerConfig { model: 64, heads: 4, ..Default::default() };
/// let e = TransformerBlock::<Model, Heads, HeadDim, Hidden>::try_new(unset).err().unwrap();
/// assert!(e.to_string().contains("TransformerConfig::hidden is 0"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerConfig {
    /// Entries along the model dim (`d_model`).
    pub model: usize,
    /// Attention heads (`nhead`); must divide `model`.
    pub heads: usize,
    /// Entries along the feed-forward network's hidden dim (`dim_feedforward`).
    pub hidden: usize,
    /// Dropout probability after attention, in the network and after it.
    pub dropout: f64,
    /// Whether each position attends only to itself and earlier ones (a decoder-only layer).
    pub causal: bool,
}

impl Default for TransformerConfig {
    fn default() -> Self {
        TransformerConfig {
            model: 0,
            heads: 0,
            hidden: 0,
            dropout: 0.1,
            causal: false,
        }
    }
}

impl<Model: Dim, Heads: Dim, HeadDim: Dim, Hidden: Dim, E: Float>
    TransformerBlock<Model, Heads, HeadDim, Hidden, E>
{
    /// This layer, with causal attention or not.
    pub fn causal(mut self, causal: bool) -> Self {
        self.attn.is_causal = causal;
        self
    }

    /// The layer applied to `x` along `Seq`. Panics where [`TransformerBlock::try_forward`]
    /// fails.
    #[track_caller]
    pub fn forward<Seq: Dim, S, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
        seq: Seq,
    ) -> Tensor<E, S, P>
    where
        S: HasDim<Seq, P> + HasDim<Model, P>,
    {
        or_panic(self.try_forward(x, seq))
    }

    /// [`TransformerBlock::forward`], or an error when `x`'s `Model` size or the parameters'
    /// sizes disagree (they are public fields), or `Seq` and `Model` are the same dim.
    pub fn try_forward<Seq: Dim, S, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
        seq: Seq,
    ) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<Seq, P> + HasDim<Model, P>,
    {
        self.try_forward_masked(x, seq, &AttentionMasks::new())
    }

    /// The layer applied to `x` along `Seq`, its attention under `masks` (key padding and/or
    /// (query, key) masks, as PyTorch's `src_key_padding_mask` and `src_mask`; see
    /// [`AttentionMasks`]). Panics where [`TransformerBlock::try_forward_masked`] fails.
    ///
    /// ```
    /// use namedtensor::nn::{AttentionMasks, TransformerBlock, TransformerConfig};
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq, Model, Heads, HeadDim, Hidden }
    /// let config = TransformerConfig { model: 8, heads: 2, hidden: 16, dropout: 0.0, causal: false };
    /// let block = TransformerBlock::<Model, Heads, HeadDim, Hidden>::new(config);
    /// let x = Tensor::<f32, (Batch, Seq, Model)>::randn([2, 3, 8], 1);
    /// let pad = Tensor::<bool, (Batch, Seq)>::from_vec(vec![false, false, true, false, false, false], [2, 3]);
    /// let y = block.forward_masked(&x, Seq, &AttentionMasks::new().key_padding(&pad));
    /// assert_eq!(y.shape(), &[2, 3, 8]);
    /// ```
    #[track_caller]
    pub fn forward_masked<Seq: Dim, S, P: DimTuple, K, A>(
        &self,
        x: &Tensor<E, S, P>,
        seq: Seq,
        masks: &AttentionMasks<K, A>,
    ) -> Tensor<E, S, P>
    where
        S: HasDim<Seq, P> + HasDim<Model, P>,
        K: KeyPaddingMask<E, S, P, Seq, Model>,
        A: QueryKeyMask<E, Seq>,
    {
        or_panic(self.try_forward_masked(x, seq, masks))
    }

    /// [`TransformerBlock::forward_masked`], or an error as [`TransformerBlock::try_forward`]
    /// or when a mask's sizes do not fit `x`'s (naming the dim).
    pub fn try_forward_masked<Seq: Dim, S, P: DimTuple, K, A>(
        &self,
        x: &Tensor<E, S, P>,
        _seq: Seq,
        masks: &AttentionMasks<K, A>,
    ) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<Seq, P> + HasDim<Model, P>,
        K: KeyPaddingMask<E, S, P, Seq, Model>,
        A: QueryKeyMask<E, Seq>,
    {
        let model = self.norm1.weight.shape()[0];
        over_sequence::<E, Seq, Model, S, P, K, A>("TransformerBlock", x, model, masks, |t, b| {
            self.apply(t, b)
        })
    }

    /// `[N, S, M]` to `[N, S, M]`, the attention's scores biased by `bias` (see
    /// [`MultiHeadAttention::attend`]).
    fn apply(&self, x: &DynTensor<E>, bias: Option<&DynTensor<E>>) -> Result<DynTensor<E>> {
        let drop = |t: DynTensor<E>| self.dropout.apply(&t);
        let attended = self.attn.attend(&self.norm1.normalize(x, 2)?, bias)?;
        let x = x.try_add(&drop(attended))?;
        let hidden = self.ff1.apply_last(&self.norm2.normalize(&x, 2)?)?.gelu();
        let out = self.ff2.apply_last(&drop(hidden))?;
        x.try_add(&drop(out))
    }
}

impl<Model: Dim, Heads: Dim, HeadDim: Dim, Hidden: Dim, E: Float> Module<E>
    for TransformerBlock<Model, Heads, HeadDim, Hidden, E>
{
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.module("norm1", &self.norm1);
        v.module("attn", &self.attn);
        v.module("norm2", &self.norm2);
        v.module("ff1", &self.ff1);
        v.module("ff2", &self.ff2);
        v.module("dropout", &self.dropout);
    }
}
