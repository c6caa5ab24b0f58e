//! Gradients of the ops along one dim (`softmax`, `log_softmax`, `cumsum`, `cat`) and of
//! the rearranging copies whose gradient is the same op (`flip`, `tril`, `triu`).

use super::{OP, bin, mul, some};
use crate::autograd::node::Saved;
use crate::autograd::record::{Input, input, record};
use crate::backend::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::DynTensor;

/// `t` summed along `d`, keeping the dim.
fn sum_along<E: Element>(t: &DynTensor<E>, d: usize) -> Result<DynTensor<E>> {
    let mut mask = vec![false; t.dim()];
    if let Some(m) = mask.get_mut(d) {
        *m = true;
    }
    crate::ops::reduce_keepdim::<E>(OP, ReduceOp::Sum, t, &mask)
}

/// Records `y = softmax(x)` (or `log_softmax`) along `d`; saves `y` only.
pub(crate) fn softmax<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    d: usize,
    log: bool,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let sy = Saved::output(&y);
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let y = sy.get(node)?;
        let gx = if log {
            // g - softmax(x) Σ g
            let p = crate::ops::unary(OP, UnaryOp::Exp, &y)?;
            bin(BinaryOp::Sub, &g, &mul(&p, &sum_along(&g, d)?)?)?
        } else {
            // y (g - Σ g y)
            mul(&y, &bin(BinaryOp::Sub, &g, &sum_along(&mul(&g, &y)?, d)?)?)?
        };
        Ok(vec![some(gx)])
    })
}

/// Records `y = cumsum(x)` along `d`: the gradient is the reversed cumulative sum.
pub(crate) fn cumsum<E: Element>(x: &DynTensor<E>, d: usize, y: DynTensor<E>) -> DynTensor<E> {
    same_op("cumsum", x, y, move |g| {
        if g.dim() == 0 {
            return Ok(g); // the cumulative sum of one element is that element
        }
        let dims = [d as isize];
        let flipped = g.try_flip(&dims)?;
        let summed: DynTensor<E> = crate::autograd::same_type(flipped.try_cumsum(d as isize)?);
        summed.try_flip(&dims)
    })
}

/// Records `y = op(x)` for a linear op whose gradient is `f` of the output's gradient.
pub(crate) fn same_op<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    y: DynTensor<E>,
    f: impl Fn(DynTensor<E>) -> Result<DynTensor<E>> + Send + Sync + 'static,
) -> DynTensor<E> {
    record(op, y, vec![input(x)], false, move |g, node| {
        Ok(vec![some(f(g.into_typed::<E>(node.name)?)?)])
    })
}

/// Records `y = cat(parts)` along `d`: each part gets its slice of the gradient.
pub(crate) fn cat<E: Element>(
    op: &'static str,
    parts: &[&DynTensor<E>],
    d: usize,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let lengths: Vec<usize> = parts.iter().map(|p| p.shape()[d]).collect();
    let inputs: Vec<Input> = parts.iter().map(|p| input(*p)).collect();
    record(op, y, inputs, false, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let mut start = 0usize;
        let mut out = Vec::with_capacity(lengths.len());
        for (i, &len) in lengths.iter().enumerate() {
            out.push(match node.next[i] {
                Some(_) => some(g.try_narrow(d as isize, start as isize, len)?),
                None => None,
            });
            start += len;
        }
        Ok(out)
    })
}
