//! [`MultiHeadAttention`]: scaled dot-product self-attention over a named sequence dim, with
//! the model dim split into `(Heads, HeadDim)` by its parameters' names.

use super::attention_mask::{AttentionMasks, KeyPaddingMask, MaskElement, QueryKeyMask};
use super::conv::{batched_like, distinct_axes, with_last};
use super::init::{derive_seed, fan_in_bound, uniform};
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim, Shape};
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};

/// Multi-head self-attention as PyTorch's `nn.MultiheadAttention(model, heads,
/// batch_first=True)` computes it (no dropout): per head, `softmax(q kᵀ / sqrt(head_dim)) v`
/// over the dim `Seq` given at the call, optionally causal (a position attends to itself and
/// earlier ones), then the heads merged and projected back to `Model`. Any other dims of the
/// input are batch dims; names and shape are kept.
///
/// The projections carry the split in their names: `q`, `k`, `v` are `(Heads, HeadDim,
/// Model)` with biases `(Heads, HeadDim)`, the output projection `(Model, Heads, HeadDim)` with
/// bias `(Model,)`. PyTorch's `in_proj_weight` is `q`, `k`, `v` stacked and flattened; its
/// initialisation (Xavier-uniform projections, zero biases) is reproduced, seeded.
///
/// ```
/// use namedtensor::nn::MultiHeadAttention;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, Model, Heads, HeadDim }
/// let attn = MultiHeadAttention::<Model, Heads, HeadDim>::new(8, 2).causal(true);
/// let x = Tensor::<f32, (Batch, Seq, Model)>::randn([3, 5, 8], 1);
/// let y = attn.forward(&x, Seq);
/// assert_eq!(y.names(), ["Batch", "Seq", "Model"]);
/// // Causal: the first position sees only itself, so changing later ones leaves it alone.
/// let x2 = x.clone();
/// x2.as_dyn().narrow(1, 1, 4).fill_(0.0);
/// let y2 = attn.forward(&x2, Seq);
/// assert_eq!(y.as_dyn().narrow(1, 0, 1).to_vec(), y2.as_dyn().narrow(1, 0, 1).to_vec());
/// ```
pub struct MultiHeadAttention<Model: Dim, Heads: Dim, HeadDim: Dim, E: Float = f32> {
    /// Query projection `(Heads, HeadDim, Model)`.
    pub q: Tensor<E, (Heads, HeadDim, Model)>,
    /// Key projection.
    pub k: Tensor<E, (Heads, HeadDim, Model)>,
    /// Value projection.
    pub v: Tensor<E, (Heads, HeadDim, Model)>,
    /// Query bias `(Heads, HeadDim)`.
    pub q_bias: Tensor<E, (Heads, HeadDim)>,
    /// Key bias.
    pub k_bias: Tensor<E, (Heads, HeadDim)>,
    /// Value bias.
    pub v_bias: Tensor<E, (Heads, HeadDim)>,
    /// Output projection `(Model, Heads, HeadDim)`.
    pub out: Tensor<E, (Model, Heads, HeadDim)>,
    /// Output bias `(Model,)`.
    pub out_bias: Tensor<E, (Model,)>,
    /// Whether each position attends only to itself and earlier positions.
    pub is_causal: bool,
}

impl<Model: Dim, Heads: Dim, HeadDim: Dim, E: Float> MultiHeadAttention<Model, Heads, HeadDim, E>
where
    (Heads, HeadDim, Model): Shape,
    (Model, Heads, HeadDim): Shape,
    (Heads, HeadDim): Shape,
{
    /// Attention over a model dim of `model` entries split into `heads` heads (which must
    /// divide it), initialised as PyTorch does from the process's generator
    /// ([`manual_seed`](crate::random::manual_seed)); not causal.
    #[track_caller]
    pub fn new(model: usize, heads: usize) -> Self {
        or_panic(Self::try_new(model, heads))
    }

    /// [`MultiHeadAttention::new`], or an error when `heads` is 0 or does not divide `model`.
    pub fn try_new(model: usize, heads: usize) -> Result<Self> {
        Self::try_seeded(model, heads, next_seed())
    }

    /// [`MultiHeadAttention::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(model: usize, heads: usize, seed: u64) -> Self {
        or_panic(Self::try_seeded(model, heads, seed))
    }

    /// [`MultiHeadAttention::seeded`], or an error as [`MultiHeadAttention::try_new`].
    pub fn try_seeded(model: usize, heads: usize, seed: u64) -> Result<Self> {
        if heads == 0 || !model.is_multiple_of(heads) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "MultiHeadAttention",
                format!("{heads} heads do not divide the model size {model}"),
            ));
        }
        let d = model / heads;
        // Xavier-uniform over PyTorch's [3·model, model] in_proj_weight: ±sqrt(6 / (4·model)).
        let xavier = (6.0 / (4 * model) as f64).sqrt();
        let proj = |i| uniform(&[heads, d, model], xavier, derive_seed(seed, i));
        let zeros = || Tensor::zeros([heads, d]);
        Self::try_from_parameters(
            [proj(0)?, proj(1)?, proj(2)?],
            [zeros(), zeros(), zeros()],
            uniform(
                &[model, heads, d],
                fan_in_bound(model),
                derive_seed(seed, 3),
            )?,
            Tensor::zeros([model]),
        )
    }
}

impl<Model: Dim, Heads: Dim, HeadDim: Dim, E: Float> MultiHeadAttention<Model, Heads, HeadDim, E> {
    /// A layer with the given parameters (`[q, k, v]`, their biases, the output projection
    /// and its bias), detached and marked as leaves that require grad; an error when their
    /// sizes disagree.
    pub fn try_from_parameters(
        qkv: [Tensor<E, (Heads, HeadDim, Model)>; 3],
        qkv_bias: [Tensor<E, (Heads, HeadDim)>; 3],
        out: Tensor<E, (Model, Heads, HeadDim)>,
        out_bias: Tensor<E, (Model,)>,
    ) -> Result<Self> {
        let s = qkv[0].shape().to_vec();
        let fits = qkv.iter().all(|t| t.shape() == s)
            && qkv_bias.iter().all(|b| b.shape() == &s[..2])
            && out.shape() == [s[2], s[0], s[1]]
            && out_bias.shape() == [s[2]];
        if !fits {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "MultiHeadAttention",
                format!(
                    "projections {s:?} (Heads, HeadDim, Model), output {:?} and biases do not fit together",
                    out.shape()
                ),
            ));
        }
        let leaf = |t: DynTensor<E>| t.detach().try_requires_grad_(true);
        let [q, k, v] = qkv;
        let [qb, kb, vb] = qkv_bias;
        Ok(MultiHeadAttention {
            q: Tensor::wrap(leaf(q.into_dyn())?),
            k: Tensor::wrap(leaf(k.into_dyn())?),
            v: Tensor::wrap(leaf(v.into_dyn())?),
            q_bias: Tensor::wrap(leaf(qb.into_dyn())?),
            k_bias: Tensor::wrap(leaf(kb.into_dyn())?),
            v_bias: Tensor::wrap(leaf(vb.into_dyn())?),
            out: Tensor::wrap(leaf(out.into_dyn())?),
            out_bias: Tensor::wrap(leaf(out_bias.into_dyn())?),
            is_causal: false,
        })
    }

    /// This layer, causal or not.
    pub fn causal(mut self, causal: bool) -> Self {
        self.is_causal = causal;
        self
    }

    /// Self-attention of `x` along `Seq`. Panics where [`MultiHeadAttention::try_forward`]
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

    /// [`MultiHeadAttention::forward`], or an error when `x`'s `Model` size is not the
    /// layer's, or `Seq` and `Model` are the same dim.
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

    /// Self-attention of `x` along `Seq` under `masks` (key padding and/or (query, key)
    /// masks, PyTorch's `key_padding_mask` and `attn_mask`; see [`AttentionMasks`]), combined
    /// with the causal mask if the layer is causal. Panics where
    /// [`MultiHeadAttention::try_forward_masked`] fails.
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

    /// [`MultiHeadAttention::forward_masked`], or an error when `x`'s `Model` size is not the
    /// layer's, or a mask's sizes do not fit `x`'s (naming the dim).
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
        let model = self.q.shape()[2];
        over_sequence::<E, Seq, Model, S, P, K, A>("MultiHeadAttention", x, model, masks, |t, b| {
            self.attend(t, b)
        })
    }

    /// `[N, S, M]` to `[N, S, M]`, with `bias` (from [`over_sequence`], `[N or 1, 1, S or 1,
    /// S]`) added to the scores.
    pub(super) fn attend(
        &self,
        x: &DynTensor<E>,
        bias: Option<&DynTensor<E>>,
    ) -> Result<DynTensor<E>> {
        let s = self.q.shape();
        let (h, d, m) = (s[0] as isize, s[1] as isize, s[2] as isize);
        let (n, len) = (x.shape()[0] as isize, x.shape()[1] as isize);
        // [N, S, M] · [M, H·D] + [H·D] → [N, S, H, D] → [N, H, S, D]
        let project = |w: &Tensor<E, (Heads, HeadDim, Model)>, b: &Tensor<E, (Heads, HeadDim)>| {
            let wt = w.as_dyn().try_reshape(&[h * d, m])?.t();
            x.try_matmul(&wt)?
                .try_add_bias(&b.as_dyn().try_reshape(&[h * d])?)?
                .try_reshape(&[n, len, h, d])?
                .try_permute(&[0, 2, 1, 3])
        };
        let (q, k, v) = (
            project(&self.q, &self.q_bias)?,
            project(&self.k, &self.k_bias)?,
            project(&self.v, &self.v_bias)?,
        );
        let scale = 1.0 / (d as f64).sqrt();
        let scores = q
            .try_mul_scalar(scale)?
            .try_matmul(&k.try_transpose(-1, -2)?)?; // [N, H, S, S]
        let later = || {
            DynTensor::<bool>::ones_like(&scores.narrow(0, 0, 1).narrow(1, 0, 1))
                .triu(1)
                .to_device(scores.device())
        };
        let weights = match bias {
            // Added rather than filled in: the sum's gradient is the softmax's own (zero at the
            // masked keys, whose weights are zero), where a fill's costs another pass.
            None if self.is_causal => {
                let causal = <bool as MaskElement<E>>::additive(&later()?)?;
                scores.try_add(&causal)?.try_softmax(-1)?
            }
            None => scores.try_softmax(-1)?,
            Some(bias) if self.is_causal => {
                let causal = <bool as MaskElement<E>>::additive(&later()?)?;
                masked_softmax(&scores, &bias.try_add(&causal)?)?
            }
            Some(bias) => masked_softmax(&scores, bias)?,
        };
        let ctx = weights.try_matmul(&v)?; // [N, H, S, D]
        let merged = ctx
            .try_permute(&[0, 2, 1, 3])?
            .try_reshape(&[n, len, h * d])?;
        let wo = self.out.as_dyn().try_reshape(&[m, h * d])?.t();
        merged.try_matmul(&wo)?.try_add_bias(self.out_bias.as_dyn())
    }
}

/// `softmax(scores + bias)` over the last axis (`scores` `[N, H, S, S]`), where a query row
/// that `bias` forbids entirely (`-inf` at every key) gets zero weights and zero gradients
/// instead of NaN (see [`AttentionMasks`]).
fn masked_softmax<E: Float>(scores: &DynTensor<E>, bias: &DynTensor<E>) -> Result<DynTensor<E>> {
    // `[N or 1, 1, S or 1, 1]`: rows with no allowed key.
    let empty = bias.eq_scalar(f64::NEG_INFINITY).all_dim(-1, true);
    if !empty.any() {
        return scores.try_add(bias)?.try_softmax(-1);
    }
    // Those rows are left unmasked (finite scores, so that softmax and its gradient stay
    // finite), then their weights set to zero.
    scores
        .try_add(&bias.try_masked_fill(&empty, E::ZERO)?)?
        .try_softmax(-1)?
        .try_masked_fill(&empty, E::ZERO)
}

/// `f` applied to `x` seen as `[N, S, M]` (`Seq` and `Model` moved last, every other dim
/// flattened into `N`) and to `masks` summed into one additive mask in that layout, `[N or
/// 1, 1, S or 1, S]` (broadcasting over heads; `None` without masks); `f`'s `[N, S, M]` result
/// is put back in `x`'s order. An error naming `Model` when its size in `x` is not `model`,
/// when `Seq` and `Model` are the same dim, or naming the dim where a mask does not fit `x`,
/// all before `f` runs.
pub(super) fn over_sequence<E: Float, Seq: Dim, Model: Dim, S, P: DimTuple, K, A>(
    op: &'static str,
    x: &Tensor<E, S, P>,
    model: usize,
    masks: &AttentionMasks<K, A>,
    f: impl FnOnce(&DynTensor<E>, Option<&DynTensor<E>>) -> Result<DynTensor<E>>,
) -> Result<Tensor<E, S, P>>
where
    S: HasDim<Seq, P> + HasDim<Model, P>,
    K: KeyPaddingMask<E, S, P, Seq, Model>,
    A: QueryKeyMask<E, Seq>,
{
    let axes = [
        <S as HasDim<Seq, P>>::AXIS as usize,
        <S as HasDim<Model, P>>::AXIS as usize,
    ];
    let names = [Seq::NAME, Model::NAME];
    let size = x.shape()[axes[1]];
    if size != model {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the input has {size} entries along `{}` but the layer has {model}",
                Model::NAME
            ),
        ));
    }
    distinct_axes(op, &axes, &names)?;
    let len = x.shape()[axes[0]];
    // `[N', S', 1]` (N' is N or 1, S' is S or 1) → `[N', 1, 1, S']`: per batch entry, over
    // keys.
    let padding = match masks.key_padding_bias::<E, S, P, Seq, Model>(x)? {
        Some(m) => {
            let m = batched_like(x.as_dyn(), &axes, &m)?;
            let (n, s) = (m.shape()[0] as isize, m.shape()[1] as isize);
            Some(m.try_reshape(&[n, 1, 1, s])?)
        }
        None => None,
    };
    // `[S, S]` → `[1, 1, S, S]`.
    let pairs = match masks.attn_bias::<E, Seq>(len)? {
        Some(m) => Some(
            m.try_reshape(&[1, 1, len as isize, len as isize])?
                .to_device(x.as_dyn().device())?,
        ),
        None => None,
    };
    let bias = match (padding, pairs) {
        (Some(a), Some(b)) => Some(a.try_add(&b)?),
        (a, b) => a.or(b),
    };
    let axes = axes.map(|a| a as isize);
    let y = with_last(op, x.as_dyn(), &axes, names, |t| f(t, bias.as_ref()))?;
    Ok(Tensor::wrap(y))
}

impl<Model: Dim, Heads: Dim, HeadDim: Dim, E: Float> Module<E>
    for MultiHeadAttention<Model, Heads, HeadDim, E>
{
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("q", &self.q);
        v.param("k", &self.k);
        v.param("v", &self.v);
        v.param("q_bias", &self.q_bias);
        v.param("k_bias", &self.k_bias);
        v.param("v_bias", &self.v_bias);
        v.param("out", &self.out);
        v.param("out_bias", &self.out_bias);
    }
}
