//! Gradients of the reductions: the gradient of each kept element is spread back over the
//! elements it was reduced from.

use super::{OP, bin, cast_back, mul, some};
use crate::autograd::node::Saved;
use crate::autograd::record::{input, record, unsupported};
use crate::backend::op::{BinaryOp, CompareOp, ReduceOp};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::DynTensor;

/// `g`, of the reduced shape (with or without the reduced dims), expanded back to `shape`.
fn spread<E: Element>(g: &DynTensor<E>, shape: &[usize], mask: &[bool]) -> Result<DynTensor<E>> {
    let kept: Vec<isize> = shape
        .iter()
        .zip(mask)
        .map(|(&s, &m)| if m { 1 } else { s as isize })
        .collect();
    let full: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    g.try_reshape(&kept)?.try_expand(&full)
}

/// Records `out = rop(x)` over `mask` for the sums and means (`O` is the result type: `E`,
/// or `f32` for the mean of a half type computed in `f32`). Other reductions go through
/// [`extreme`] or have no gradient.
pub(crate) fn reduce<E: Element, O: Element>(
    op: &'static str,
    rop: ReduceOp,
    x: &DynTensor<E>,
    mask: &[bool],
    out: DynTensor<O>,
) -> Result<DynTensor<O>> {
    let count: usize = x
        .shape()
        .iter()
        .zip(mask)
        .filter(|&(_, &m)| m)
        .map(|(&s, _)| s)
        .product();
    let scale = match rop {
        ReduceOp::Sum => 1.0,
        ReduceOp::Mean => 1.0 / count as f64,
        ReduceOp::Prod if O::DTYPE == E::DTYPE => {
            let y = crate::autograd::same_type::<_, DynTensor<E>>(out);
            return Ok(crate::autograd::same_type(prod(op, x, mask, y)));
        }
        ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod => return Err(unsupported(op)),
        // Boolean and index results are not differentiable.
        ReduceOp::Any | ReduceOp::All | ReduceOp::ArgMax | ReduceOp::ArgMin => return Ok(out),
    };
    let (shape, mask) = (x.shape().to_vec(), mask.to_vec());
    Ok(record(op, out, vec![input(x)], false, move |g, node| {
        let g = g.into_typed::<O>(node.name)?;
        let g = spread(&g, &shape, &mask)?;
        let g = if scale == 1.0 {
            g
        } else {
            super::mul_c(&g, scale)?
        };
        Ok(vec![some(cast_back::<O, E>(g)?)])
    }))
}

/// Records `y = max(x)` or `min(x)` over `mask`: the gradient is shared evenly by the
/// elements equal to the extreme (PyTorch's rule for `amax`/`amin` and full reductions).
pub(crate) fn extreme<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    mask: &[bool],
    y: DynTensor<E>,
) -> DynTensor<E> {
    let (sx, sy) = (Saved::input(x), Saved::output(&y));
    let mask = mask.to_vec();
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let (x, y) = (sx.get(node)?, sy.get(node)?);
        let y = spread(&y, x.shape(), &mask)?;
        let hits =
            crate::ops::compare::<E, E, E>(OP, CompareOp::Eq, &x, &y)?.try_to_dtype::<E>()?;
        let count = crate::ops::reduce_keepdim::<E>(OP, ReduceOp::Sum, &hits, &mask)?;
        let share = bin(BinaryOp::Div, &spread(&g, x.shape(), &mask)?, &count)?;
        Ok(vec![some(mul(&hits, &share)?)])
    })
}

/// Records `values`, the maxima (minima) of `x` along dim `d` that `max_dim` (`min_dim`)
/// found at `indices`: the gradient goes to the chosen element only.
pub(crate) fn pick<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    d: usize,
    keepdim: bool,
    indices: &DynTensor<i64>,
    values: DynTensor<E>,
) -> DynTensor<E> {
    let saved = Saved::input(indices);
    let (rank, n) = (x.dim(), x.shape()[d]);
    record(op, values, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let idx = saved.get(node)?;
        let (g, idx) = if keepdim {
            (g, idx)
        } else {
            (g.try_unsqueeze(d as isize)?, idx.try_unsqueeze(d as isize)?)
        };
        let mut along = vec![1isize; rank];
        along[d] = n as isize;
        let positions = DynTensor::<i64>::try_arange(0, n as i64, 1)?.to_device(g.device())?;
        let positions = positions.try_reshape(&along)?;
        let hit = crate::ops::compare::<i64, i64, i64>(OP, CompareOp::Eq, &positions, &idx)?;
        Ok(vec![some(mul(&hit.try_to_dtype::<E>()?, &g)?)])
    })
}

/// Records `y = Π x` over `mask`. The gradient of element `i` is the product of the others:
/// `y / xᵢ` when the lane has no zero; the product of the non-zero elements at the one zero
/// of a lane with exactly one; 0 everywhere in a lane with several (PyTorch's rule, without
/// dividing by zero).
pub(crate) fn prod<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    mask: &[bool],
    y: DynTensor<E>,
) -> DynTensor<E> {
    let sx = Saved::input(x);
    let mask = mask.to_vec();
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let x = sx.get(node)?;
        let shape = x.shape().to_vec();
        let is_zero = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &x, 0.0)?;
        let zeros = crate::ops::reduce_keepdim::<E>(
            OP,
            ReduceOp::Sum,
            &is_zero.try_to_dtype::<E>()?,
            &mask,
        )?;
        let one = crate::ops::scalar_on(E::ONE, x.device())?;
        let nil = crate::ops::scalar_on(E::ZERO, x.device())?;
        let nonzero = crate::ops::select(OP, &is_zero, &one, &x)?;
        let others = crate::ops::reduce_keepdim::<E>(OP, ReduceOp::Prod, &nonzero, &mask)?;
        let no_zero = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &zeros, 0.0)?;
        let one_zero = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &zeros, 1.0)?;
        let at_the_zero = crate::ops::compare::<bool, bool, bool>(
            OP,
            CompareOp::LogicalAnd,
            &one_zero,
            &is_zero,
        )?;
        let single = crate::ops::select(OP, &at_the_zero, &spread(&others, &shape, &mask)?, &nil)?;
        let plain = bin(BinaryOp::Div, &others, &nonzero)?;
        let local = crate::ops::select(OP, &no_zero, &plain, &single)?;
        Ok(vec![some(mul(&local, &spread(&g, &shape, &mask)?)?)])
    })
}
