//! The gradient formulas, one file per family of ops. Each records its op's node when an
//! input requires grad, saving only what its formula reads.
//!
//! Formulas are written with the crate's own ops (which record when `create_graph` turns
//! grad mode on), so every gradient is itself differentiable.

mod along;
mod conv;
mod index;
mod matmul;
mod norm;
mod pointwise;
mod reduce;
pub(crate) mod view_grad;

pub(crate) use along::{cat, cumprod, cumsum, same_op, softmax};
pub(crate) use conv::conv2d;
pub(crate) use index::{gather, index_select, scatter_add};
pub(crate) use matmul::matmul;
pub(crate) use norm::normalize;
pub(crate) use pointwise::{binary, clamp, constant, root, select, unary, unary_in_place};
pub(crate) use reduce::{extreme, pick, pnorm, reduce};
pub(crate) use view_grad::{identity, view};

use super::any::AnyTensor;
use crate::backend::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::DynTensor;

/// The op name formulas use for the ops they are made of.
const OP: &str = "backward";

pub(super) fn un<E: Element>(u: UnaryOp, x: &DynTensor<E>) -> Result<DynTensor<E>> {
    crate::ops::unary(OP, u, x)
}

pub(super) fn bin<E: Element>(
    b: BinaryOp,
    x: &DynTensor<E>,
    y: &DynTensor<E>,
) -> Result<DynTensor<E>> {
    crate::ops::binary::<E, E, E>(OP, b, x, y)
}

/// `b(x, c)` with the constant `c`.
pub(super) fn bin_c<E: Element>(b: BinaryOp, x: &DynTensor<E>, c: f64) -> Result<DynTensor<E>> {
    crate::ops::binary_scalar::<E, E>(OP, b, x, Element::from_f64(c), false)
}

/// `x * y`.
pub(super) fn mul<E: Element>(x: &DynTensor<E>, y: &DynTensor<E>) -> Result<DynTensor<E>> {
    bin(BinaryOp::Mul, x, y)
}

/// `x * c`.
pub(super) fn mul_c<E: Element>(x: &DynTensor<E>, c: f64) -> Result<DynTensor<E>> {
    bin_c(BinaryOp::Mul, x, c)
}

/// `t` reduced by `rop` along `axis`, keeping it as a dim of size 1: the lane sums and means
/// the formulas along one dim broadcast back over their lanes.
pub(super) fn reduce_along<E: Element>(
    rop: ReduceOp,
    t: &DynTensor<E>,
    axis: usize,
) -> Result<DynTensor<E>> {
    let mut mask = vec![false; t.dim()];
    // A 0-d tensor has no axis to reduce (softmax lets it take dim 0 or -1): reducing over
    // nothing leaves it as it is.
    if let Some(m) = mask.get_mut(axis) {
        *m = true;
    }
    crate::ops::reduce_keepdim::<E>(OP, rop, t, &mask)
}

/// `x` summed over the dims that broadcasting added or stretched, to `shape`.
pub(super) fn sum_to<E: Element>(x: DynTensor<E>, shape: &[usize]) -> Result<DynTensor<E>> {
    if x.shape() == shape {
        return Ok(x);
    }
    let lead = x.dim() - shape.len();
    let mut mask = vec![true; lead];
    mask.extend(
        shape
            .iter()
            .zip(&x.shape()[lead..])
            .map(|(&want, &have)| want == 1 && have != 1),
    );
    let summed = crate::ops::reduce_keepdim::<E>(OP, crate::backend::op::ReduceOp::Sum, &x, &mask)?;
    let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    summed.try_reshape(&sizes)
}

/// A temporary of a gradient formula, which the formula's later steps update in place when
/// the pass does not record (no `create_graph`): one buffer for a chain of pointwise steps,
/// as PyTorch's fused backward kernels use, instead of a new tensor per step. Only tensors
/// the formula has just computed become a `Temp` (never the incoming gradient or a saved
/// tensor, which others may hold).
pub(super) struct Temp<E: Element>(DynTensor<E>);

impl<E: Element> Temp<E> {
    pub(super) fn new(fresh: DynTensor<E>) -> Self {
        Temp(fresh)
    }

    /// Whether `b(self, y)` may overwrite `self`: no recording, and `y` broadcasts to
    /// `self`'s shape (its trailing sizes are 1 or `self`'s).
    fn in_place(&self, y: &DynTensor<E>) -> bool {
        let (to, from) = (self.0.shape(), y.shape());
        !crate::autograd::is_grad_enabled()
            && from.len() <= to.len()
            && from
                .iter()
                .rev()
                .zip(to.iter().rev())
                .all(|(&f, &t)| f == t || f == 1)
    }

    /// `self ∘ y`.
    pub(super) fn bin(self, b: BinaryOp, y: &DynTensor<E>) -> Result<Self> {
        if self.in_place(y) {
            crate::ops::binary_::<E, E, E>(OP, b, &self.0, y)?;
            return Ok(self);
        }
        Ok(Temp(bin(b, &self.0, y)?))
    }

    /// `self · y`.
    pub(super) fn mul(self, y: &DynTensor<E>) -> Result<Self> {
        self.bin(BinaryOp::Mul, y)
    }

    /// `self ∘ c` for the constant `c`.
    pub(super) fn bin_c(self, b: BinaryOp, c: f64) -> Result<Self> {
        let c = crate::ops::scalar_on(E::from_f64(c), self.0.device())?;
        self.bin(b, &c)
    }

    /// `c − self`.
    pub(super) fn rsub_c(self, c: f64) -> Result<Self> {
        self.un(UnaryOp::Neg)?.bin_c(BinaryOp::Add, c)
    }

    /// `u(self)`.
    pub(super) fn un(self, u: UnaryOp) -> Result<Self> {
        if !crate::autograd::is_grad_enabled() {
            crate::ops::unary_(OP, u, &self.0)?;
            return Ok(self);
        }
        Ok(Temp(un(u, &self.0)?))
    }

    pub(super) fn done(self) -> DynTensor<E> {
        self.0
    }
}

/// `g` as a tensor of `A`, converted (and recorded) when the op computed in another type.
pub(super) fn cast_back<O: Element, A: Element>(g: DynTensor<O>) -> Result<DynTensor<A>> {
    crate::ops::converted::<O, A>(&g)
}

pub(super) fn some<E: Element>(t: DynTensor<E>) -> Option<AnyTensor> {
    Some(AnyTensor::new(t))
}
