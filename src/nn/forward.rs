//! [`Forward`]: a layer as a function of its input's type, which is what chaining layers
//! needs. A tuple of layers is a layer that applies them in order (PyTorch's
//! `nn.Sequential`, checked at compile time): `(Linear<A, B>, Relu, Linear<B, C>)` maps
//! `(…, A)` to `(…, C)`, and a tuple whose dims do not line up is a compile error naming the
//! dim the next layer lacks. A `Vec` or array of layers that keep their input's type (a stack
//! of blocks) applies them in order too.
//!
//! Invariants:
//! - A tuple's `Forward` is its elements' in order, each applied to the previous one's
//!   output; the first error stops the chain and is returned as it is.
//! - A tuple's parameters are its elements', under the names `0`, `1`, … (PyTorch's
//!   `nn.Sequential` keys, so a `state_dict` of one loads into the same tuple, activations
//!   counted as in PyTorch).

use super::conv::{AvgPool2d, Conv2d, ConvOut, MaxPool2d};
use super::embedding::{Embedded, Embedding};
use super::linear::{Linear, LinearOut};
use super::module::{Module, Visitor};
use super::{
    AdaptiveAvgPool2d, BatchNorm, Conv1d, Dropout, GroupNorm, LayerNorm, MultiHeadAttention,
    Recurrent, RecurrentCell, RmsNorm, TransformerBlock,
};
use crate::dtype::{Element, Float};
use crate::error::Result;
use crate::named::{Contract, Dim, DimTuple, HasDim, Rename, ReplaceDim};
use crate::named_tensor::Tensor;
use crate::tensor::or_panic;
use core::marker::PhantomData;

/// A layer applied to an input of type `X`, giving [`Output`](Forward::Output).
///
/// Every layer of [`nn`](super) implements it for the tensors its `forward` method takes
/// (the method, without the trait, is what a call on one layer uses); tuples, `Vec`s and
/// arrays of layers implement it by chaining. Generic code states it as a bound, `L:
/// Forward<Tensor<f32, S>>`, and a model struct can hold any chain as one field.
///
/// ```
/// use namedtensor::nn::{Forward, Linear, Relu};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Pixels, Hidden, Classes }
///
/// let mlp = (Linear::<Pixels, Hidden>::new(64, 32), Relu, Linear::<Hidden, Classes>::new(32, 10));
/// let x = Tensor::<f32, (Batch, Pixels)>::ones([8, 64]);
/// let logits: Tensor<f32, (Batch, Classes)> = mlp.forward(&x);
/// assert_eq!(logits.shape(), &[8, 10]);
/// // (Linear::<Pixels, Hidden>::new(64, 32), Linear::<Pixels, Classes>::new(64, 10)) would
/// // not apply: "dimension `Pixels` is not in tensor of dims `(Batch, Hidden)`".
/// ```
pub trait Forward<X> {
    /// What the layer makes of `X`.
    type Output;

    /// The layer applied to `x`, or the first error of a layer in it.
    fn try_forward(&self, x: &X) -> Result<Self::Output>;

    /// [`Forward::try_forward`], panicking on its error.
    #[track_caller]
    fn forward(&self, x: &X) -> Self::Output {
        or_panic(self.try_forward(x))
    }
}

/// The output of the layer `L` on `X`.
pub type Output<L, X> = <L as Forward<X>>::Output;

impl<X, L: Forward<X> + ?Sized> Forward<X> for &L {
    type Output = Output<L, X>;
    fn try_forward(&self, x: &X) -> Result<Self::Output> {
        L::try_forward(self, x)
    }
}

impl<X, L: Forward<X> + ?Sized> Forward<X> for Box<L> {
    type Output = Output<L, X>;
    fn try_forward(&self, x: &X) -> Result<Self::Output> {
        L::try_forward(self, x)
    }
}

/// Layers that keep their input's type, applied in order (a stack of blocks); an empty one
/// is the identity.
impl<X: Clone, L: Forward<X, Output = X>> Forward<X> for [L] {
    type Output = X;
    fn try_forward(&self, x: &X) -> Result<X> {
        self.iter()
            .try_fold(x.clone(), |y, layer| layer.try_forward(&y))
    }
}

impl<X: Clone, L: Forward<X, Output = X>> Forward<X> for Vec<L> {
    type Output = X;
    fn try_forward(&self, x: &X) -> Result<X> {
        self.as_slice().try_forward(x)
    }
}

impl<X: Clone, L: Forward<X, Output = X>, const N: usize> Forward<X> for [L; N] {
    type Output = X;
    fn try_forward(&self, x: &X) -> Result<X> {
        self.as_slice().try_forward(x)
    }
}

/// `Forward` and `Module` for a tuple of layers `($T $i),+`: the bounds chain each layer's
/// input to the previous one's output (`@chain` accumulates them with the current input
/// type), then `@impl` writes the impls.
macro_rules! sequential {
    ($($T:ident $i:tt),+) => {
        sequential!(@chain [$($T $i),+] [] X; $($T $i),+);
    };
    (@chain $all:tt [$($bound:tt)*] $in:ty; $T:ident $i:tt $(, $R:ident $j:tt)*) => {
        sequential!(@chain $all [$($bound)* $T: Forward<$in>,] Output<$T, $in>; $($R $j),*);
    };
    (@chain [$T0:ident $i0:tt $(, $T:ident $i:tt)*] [$($bound:tt)*] $out:ty;) => {
        impl<X, $T0 $(, $T)*> Forward<X> for ($T0, $($T,)*)
        where
            $($bound)*
        {
            type Output = $out;
            fn try_forward(&self, x: &X) -> Result<Self::Output> {
                let y = self.$i0.try_forward(x)?;
                $(let y = self.$i.try_forward(&y)?;)*
                Ok(y)
            }
        }

        impl<E: Element, $T0: Module<E> $(, $T: Module<E>)*> Module<E> for ($T0, $($T,)*) {
            fn visit(&self, v: &mut Visitor<'_, E>) {
                v.module(stringify!($i0), &self.$i0);
                $(v.module(stringify!($i), &self.$i);)*
            }
        }
    };
}

sequential!(A 0);
sequential!(A 0, B 1);
sequential!(A 0, B 1, C 2);
sequential!(A 0, B 1, C 2, D 3);
sequential!(A 0, B 1, C 2, D 3, F 4);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5, H 6);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5, H 6, I 7);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5, H 6, I 7, J 8);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5, H 6, I 7, J 8, K 9);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5, H 6, I 7, J 8, K 9, L 10);
sequential!(A 0, B 1, C 2, D 3, F 4, G 5, H 6, I 7, J 8, K 9, L 10, M 11);

/// A layer that works along a sequence dim named at each call ([`MultiHeadAttention`],
/// [`TransformerBlock`]) with that dim fixed as `Seq`, so that it chains:
/// `Along::<Seq, _>::new(block)` applies `block.forward(x, Seq)`. Its parameters are the
/// layer's, under the same names (no extra level).
///
/// ```
/// use namedtensor::nn::{Along, Embedding, Forward, LayerNorm, Linear, TransformerBlock, TransformerConfig};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, Vocab, Model, Heads, HeadDim, Hidden }
///
/// let config = TransformerConfig { model: 8, heads: 2, hidden: 16, dropout: 0.0, causal: true };
/// let blocks: Vec<Along<Seq, TransformerBlock<Model, Heads, HeadDim, Hidden>>> =
///     (0..2).map(|_| Along::new(TransformerBlock::new(config))).collect();
/// let lm = (Embedding::<Vocab, Model>::new(50, 8), blocks, LayerNorm::<Model>::new(8), Linear::<Model, Vocab>::new(8, 50));
/// let ids = Tensor::<i64, (Batch, Seq)>::zeros([2, 5]);
/// let logits: Tensor<f32, (Batch, Seq, Vocab)> = lm.forward(&ids);
/// assert_eq!(logits.shape(), &[2, 5, 50]);
/// ```
pub struct Along<Seq, L> {
    /// The layer.
    pub layer: L,
    seq: PhantomData<fn() -> Seq>,
}

impl<Seq, L> Along<Seq, L> {
    /// `layer`, applied along `Seq`.
    pub fn new(layer: L) -> Self {
        Along {
            layer,
            seq: PhantomData,
        }
    }
}

impl<E: Element, Seq, L: Module<E>> Module<E> for Along<Seq, L> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        self.layer.visit(v);
    }
}

impl<Seq: Dim, Model: Dim, Heads: Dim, HeadDim: Dim, E: Float, S, P: DimTuple>
    Forward<Tensor<E, S, P>> for Along<Seq, MultiHeadAttention<Model, Heads, HeadDim, E>>
where
    S: HasDim<Seq, P> + HasDim<Model, P>,
{
    type Output = Tensor<E, S, P>;
    fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
        self.layer.try_forward(x, Seq::default())
    }
}

impl<Seq: Dim, Model: Dim, Heads: Dim, HeadDim: Dim, Hidden: Dim, E: Float, S, P: DimTuple>
    Forward<Tensor<E, S, P>> for Along<Seq, TransformerBlock<Model, Heads, HeadDim, Hidden, E>>
where
    S: HasDim<Seq, P> + HasDim<Model, P>,
{
    type Output = Tensor<E, S, P>;
    fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
        self.layer.try_forward(x, Seq::default())
    }
}

impl<Seq: Dim, In: Dim, Hidden: Dim, C: RecurrentCell, E: Float, S> Forward<Tensor<E, S>>
    for Along<Seq, Recurrent<In, Hidden, C, E>>
where
    S: HasDim<Seq> + HasDim<In> + Contract<In, (Hidden, In), (), ()>,
{
    type Output = LinearOut<E, S, (), In, Hidden>;
    fn try_forward(&self, x: &Tensor<E, S>) -> Result<Self::Output> {
        self.layer.try_forward(x, Seq::default())
    }
}

// The library's layers, each as its `try_forward` method.

impl<In: Dim, Out: Dim, E: Float, S, P: DimTuple> Forward<Tensor<E, S, P>> for Linear<In, Out, E>
where
    S: Contract<In, (Out, In), P, ()>,
{
    type Output = LinearOut<E, S, P, In, Out>;
    fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
        Linear::try_forward(self, x)
    }
}

impl<Vocab: Dim, D: Dim, E: Float, I: DimTuple> Forward<Tensor<i64, I>> for Embedding<Vocab, D, E>
where
    (Vocab, D): ReplaceDim<Vocab, I>,
{
    type Output = Embedded<E, Vocab, D, I>;
    fn try_forward(&self, ids: &Tensor<i64, I>) -> Result<Self::Output> {
        Embedding::try_forward(self, ids)
    }
}

impl<In: Dim, Out: Dim, H: Dim, W: Dim, E: Float, S, P: DimTuple> Forward<Tensor<E, S, P>>
    for Conv2d<In, Out, H, W, E>
where
    S: HasDim<In, P> + HasDim<H, P> + HasDim<W, P> + Rename<In, Out, P>,
{
    type Output = ConvOut<E, S, P, In, Out>;
    fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
        Conv2d::try_forward(self, x)
    }
}

impl<In: Dim, Out: Dim, L: Dim, E: Float, S, P: DimTuple> Forward<Tensor<E, S, P>>
    for Conv1d<In, Out, L, E>
where
    S: HasDim<In, P> + HasDim<L, P> + Rename<In, Out, P>,
{
    type Output = ConvOut<E, S, P, In, Out>;
    fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
        Conv1d::try_forward(self, x)
    }
}

/// `Forward` for layers that keep their input's type: generics, the layer, the bounds on
/// the input's dims, and the `try_forward` to call.
macro_rules! same_type {
    ($([$($gen:tt)*] $layer:ty where $($bound:path),* => $call:expr;)*) => {$(
        impl<$($gen)*, E: Float, S, P: DimTuple> Forward<Tensor<E, S, P>> for $layer
        where
            $(S: $bound,)*
        {
            type Output = Tensor<E, S, P>;
            fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
                ($call)(self, x)
            }
        }
    )*};
}

same_type! {
    [D: Dim] LayerNorm<D, E> where HasDim<D, P> => LayerNorm::try_forward;
    [C: Dim] BatchNorm<C, E> where HasDim<C, P> => BatchNorm::try_forward;
    [B: Dim, C: Dim] GroupNorm<B, C, E> where HasDim<B, P>, HasDim<C, P> => GroupNorm::try_forward;
    [H: Dim, W: Dim] AdaptiveAvgPool2d<H, W> where HasDim<H, P>, HasDim<W, P> => AdaptiveAvgPool2d::try_forward;
    [D: Dim] RmsNorm<D, E> where HasDim<D, P> => RmsNorm::try_forward;
    [H: Dim, W: Dim] MaxPool2d<H, W> where HasDim<H, P>, HasDim<W, P> => MaxPool2d::try_forward;
    [H: Dim, W: Dim] AvgPool2d<H, W> where HasDim<H, P>, HasDim<W, P> => AvgPool2d::try_forward;
}

impl<E: Float, S: DimTuple, P: DimTuple> Forward<Tensor<E, S, P>> for Dropout {
    type Output = Tensor<E, S, P>;
    fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
        Ok(Dropout::forward(self, x))
    }
}
