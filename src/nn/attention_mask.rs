//! [`AttentionMasks`]: which keys each query of a [`MultiHeadAttention`] may attend to,
//! PyTorch's `key_padding_mask` and `attn_mask` with their dims checked by name.
//!
//! [`MultiHeadAttention`]: super::MultiHeadAttention

use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::named::{AlignTo, Dim, DimTuple, HasDim, RemoveDim, Shape};
use crate::named_tensor::Tensor;
use crate::tensor::DynTensor;

/// Masks for [`MultiHeadAttention::forward_masked`](super::MultiHeadAttention::forward_masked)
/// and [`TransformerBlock::forward_masked`](super::TransformerBlock::forward_masked), built
/// with [`AttentionMasks::new`] and the setters:
///
/// - [`key_padding`](AttentionMasks::key_padding): a mask over the input's batch dims and the
///   sequence dim (any order, any subset of the batch dims, which then broadcast), `true` (or
///   `-inf`) at keys to ignore: PyTorch's `key_padding_mask` of shape `(N, S)`;
/// - [`attn`](AttentionMasks::attn): a mask `(Seq, Key)` over query positions (the sequence
///   dim) and key positions (a dim of the caller's naming), the same for every batch entry and
///   head: PyTorch's 2-D `attn_mask` of shape `(L, S)`.
///
/// A mask with the model dim, or a key padding mask without the sequence dim, is a compile
/// error. The semantics are PyTorch's:
/// - a `bool` mask is `true` where attention is **not** allowed (a padding key, a future
///   position); a mask of the layer's float dtype is **added** to the scores (`-inf` forbids,
///   other values bias);
/// - both masks and the layer's causal mask combine: a pair is forbidden when any of them
///   forbids it; additive values add up;
/// - a query whose every key is forbidden (a sequence that is all padding) gets zero
///   attention weights, so its output is the output projection's bias, and zero gradients:
///   what `F.scaled_dot_product_attention` and `nn.MultiheadAttention(need_weights=False)`
///   give since PyTorch 2.5 (its `need_weights=True` path gives NaN there).
///
/// ```
/// use namedtensor::nn::{AttentionMasks, MultiHeadAttention};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, Model, Heads, HeadDim }
/// let attn = MultiHeadAttention::<Model, Heads, HeadDim>::new(8, 2);
/// let x = Tensor::<f32, (Batch, Seq, Model)>::randn([2, 4, 8], 1);
/// // The second sequence has two real tokens, then padding.
/// let pad = Tensor::<bool, (Batch, Seq)>::from_vec(
///     vec![false, false, false, false, false, false, true, true],
///     [2, 4],
/// );
/// let y = attn.forward_masked(&x, Seq, &AttentionMasks::new().key_padding(&pad));
/// // What padding holds does not change the real tokens' outputs.
/// let x2 = x.clone();
/// x2.as_dyn().narrow(0, 1, 1).narrow(1, 2, 2).fill_(7.0);
/// let y2 = attn.forward_masked(&x2, Seq, &AttentionMasks::new().key_padding(&pad));
/// let real = |y: &Tensor<f32, (Batch, Seq, Model)>| y.as_dyn().narrow(0, 1, 1).narrow(1, 0, 2).to_vec();
/// assert_eq!(real(&y), real(&y2));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct AttentionMasks<K = NoMask, A = NoMask> {
    key_padding: K,
    attn: A,
}

/// No mask of this kind (see [`AttentionMasks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoMask;

impl AttentionMasks {
    /// No masks yet: every query attends to every key (unless the layer is causal).
    pub fn new() -> Self {
        AttentionMasks {
            key_padding: NoMask,
            attn: NoMask,
        }
    }
}

impl<K, A> AttentionMasks<K, A> {
    /// These masks with `mask` as the key padding mask (PyTorch's `key_padding_mask`).
    pub fn key_padding<M: Element, SK: Shape>(
        self,
        mask: &Tensor<M, SK>,
    ) -> AttentionMasks<&Tensor<M, SK>, A> {
        AttentionMasks {
            key_padding: mask,
            attn: self.attn,
        }
    }

    /// These masks with `mask`, over (query, key) positions, as the attention mask (PyTorch's
    /// `attn_mask`).
    pub fn attn<M: Element, Q: Dim, Key: Dim>(
        self,
        mask: &Tensor<M, (Q, Key)>,
    ) -> AttentionMasks<K, &Tensor<M, (Q, Key)>>
    where
        (Q, Key): Shape,
    {
        AttentionMasks {
            key_padding: self.key_padding,
            attn: mask,
        }
    }

    /// The key padding mask for an input `x` with dims `S` (private `P`), as an additive
    /// mask of `x`'s rank with size 1 along `Model` and where the mask broadcasts; `None`
    /// without one.
    pub(super) fn key_padding_bias<E, S, P, Seq, Model>(
        &self,
        x: &Tensor<E, S, P>,
    ) -> Result<Option<DynTensor<E>>>
    where
        E: Float,
        S: DimTuple,
        P: DimTuple,
        K: KeyPaddingMask<E, S, P, Seq, Model>,
    {
        self.key_padding.bias(x)
    }

    /// The attention mask as an additive `[len, len]` mask; `None` without one.
    pub(super) fn attn_bias<E: Float, Seq>(&self, len: usize) -> Result<Option<DynTensor<E>>>
    where
        A: QueryKeyMask<E, Seq>,
    {
        self.attn.bias(len)
    }
}

/// The element types a mask may have for a layer of dtype `E`: `bool` (`true` forbids) and
/// `E` itself (added to the scores).
pub trait MaskElement<E: Float>: Element {
    /// The mask as values added to the scores: `-inf` where a `bool` mask is `true`, else 0;
    /// a float mask as it is.
    fn additive(mask: &DynTensor<Self>) -> Result<DynTensor<E>>;
}

impl<E: Float> MaskElement<E> for bool {
    fn additive(mask: &DynTensor<bool>) -> Result<DynTensor<E>> {
        DynTensor::<E>::try_full(mask.shape(), E::ZERO)?
            .to_device(mask.device())?
            .try_masked_fill(mask, E::from_f64(f64::NEG_INFINITY))
    }
}

/// One impl per float type rather than `impl<E: Float> MaskElement<E> for E`: `Float` is
/// `namedtensor-core`'s trait, and coherence cannot rule out `bool` implementing it there.
macro_rules! float_mask {
    ($($t:ty),*) => {$(
        impl MaskElement<$t> for $t {
            fn additive(mask: &DynTensor<$t>) -> Result<DynTensor<$t>> {
                Ok(mask.shallow_clone())
            }
        }
    )*};
}
float_mask!(half::f16, half::bf16, f32, f64);

/// A key padding mask (or [`NoMask`]) for inputs with dims `S` and private dims `P`,
/// attending along `Seq` with model dim `Model`: its dims are among `S`'s except `Model`, and
/// include `Seq`.
pub trait KeyPaddingMask<E: Float, S: DimTuple, P: DimTuple, Seq, Model> {
    /// The mask for an input `x`, as an additive mask of `x`'s rank with size 1 along
    /// `Model` and where the mask broadcasts (`None` for [`NoMask`]); an error naming the dim
    /// where its size is neither `x`'s nor 1.
    fn bias(&self, x: &Tensor<E, S, P>) -> Result<Option<DynTensor<E>>>;
}

impl<E: Float, S: DimTuple, P: DimTuple, Seq, Model> KeyPaddingMask<E, S, P, Seq, Model>
    for NoMask
{
    fn bias(&self, _x: &Tensor<E, S, P>) -> Result<Option<DynTensor<E>>> {
        Ok(None)
    }
}

impl<E, M, SK, S, P, Seq, Model> KeyPaddingMask<E, S, P, Seq, Model> for &Tensor<M, SK>
where
    E: Float,
    M: MaskElement<E>,
    P: DimTuple,
    Seq: Dim,
    Model: Dim,
    S: RemoveDim<Model, P>,
    SK: AlignTo<<S as RemoveDim<Model, P>>::Out> + HasDim<Seq>,
{
    fn bias(&self, x: &Tensor<E, S, P>) -> Result<Option<DynTensor<E>>> {
        // The mask over `S` without `Model`, then `Model` and the private dims put back with
        // size 1: an additive mask that broadcasts against `x`.
        let visible = self
            .align_to::<<S as RemoveDim<Model, P>>::Out>()
            .into_dyn();
        let mut mask =
            visible.try_unsqueeze(<S as RemoveDim<Model, P>>::AXIS - P::RANK as isize)?;
        for _ in 0..P::RANK {
            mask = mask.try_unsqueeze(0)?;
        }
        let names: Vec<&str> = P::NAMES.iter().chain(S::NAMES).copied().collect();
        for ((&m, &n), name) in mask.shape().iter().zip(x.shape()).zip(&names) {
            if m != n && m != 1 {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    "attention key_padding mask",
                    format!("the mask has {m} entries along `{name}` but the input has {n}"),
                ));
            }
        }
        Ok(Some(M::additive(&mask)?.to_device(x.as_dyn().device())?))
    }
}

/// An attention mask over (query, key) positions (or [`NoMask`]) for attention along `Seq`:
/// dims `(Seq, Key)`.
pub trait QueryKeyMask<E: Float, Seq> {
    /// The mask as an additive `[len, len]` mask (`None` for [`NoMask`]); an error when it is
    /// not `len × len`.
    fn bias(&self, len: usize) -> Result<Option<DynTensor<E>>>;
}

impl<E: Float, Seq> QueryKeyMask<E, Seq> for NoMask {
    fn bias(&self, _len: usize) -> Result<Option<DynTensor<E>>> {
        Ok(None)
    }
}

impl<E, M, Seq, Key> QueryKeyMask<E, Seq> for &Tensor<M, (Seq, Key)>
where
    E: Float,
    M: MaskElement<E>,
    Seq: Dim,
    Key: Dim,
    (Seq, Key): Shape,
{
    fn bias(&self, len: usize) -> Result<Option<DynTensor<E>>> {
        let s = self.shape();
        if s != [len, len] {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "attention attn mask",
                format!(
                    "the mask is {} × {} along (`{}`, `{}`) but the sequence has {len} positions",
                    s[0],
                    s[1],
                    Seq::NAME,
                    Key::NAME
                ),
            ));
        }
        Ok(Some(M::additive(self.as_dyn())?))
    }
}
