//! Gradients of the ops along one dim (`softmax`, `log_softmax`, `cumsum`, `cumprod`, `cat`)
//! and of
//! the rearranging copies whose gradient is the same op (`flip`, `tril`, `triu`).

use super::{OP, bin, mul, reduce_along, some};
use crate::autograd::node::Saved;
use crate::autograd::record::{Input, input, record};
use crate::backend::op::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::DynTensor;

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
        // One pass of the backend, unless this pass is recorded (`create_graph`): the fused
        // op has no gradient of its own, the composition below does.
        if !crate::autograd::tracks(&g) && !crate::autograd::tracks(&y) {
            return Ok(vec![some(crate::ops::softmax_backward(&y, &g, d, log)?)]);
        }
        let gx = if log {
            // g - softmax(x) Σ g
            let p = crate::ops::unary(OP, UnaryOp::Exp, &y)?;
            bin(
                BinaryOp::Sub,
                &g,
                &mul(&p, &reduce_along(ReduceOp::Sum, &g, d)?)?,
            )?
        } else {
            // y (g - Σ g y)
            mul(
                &y,
                &bin(
                    BinaryOp::Sub,
                    &g,
                    &reduce_along(ReduceOp::Sum, &mul(&g, &y)?, d)?,
                )?,
            )?
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
        reverse_cumsum(&g, d)
    })
}

/// `t` summed from each position to the end of dim `d` (the adjoint of a running sum).
fn reverse_cumsum<E: Element>(t: &DynTensor<E>, d: usize) -> Result<DynTensor<E>> {
    let dims = [d as isize];
    let summed: DynTensor<E> =
        crate::autograd::same_type(t.try_flip(&dims)?.try_cumsum(d as isize)?);
    summed.try_flip(&dims)
}

/// Records `y = cumprod(x)` along `d`. Element `i` of a lane gets
/// `Σ_{k≥i} g_k Π_{j≤k, j≠i} x_j`, computed without dividing by zero: with `z` the lane's
/// first zero, positions before it get `Σ_{k≥i} g_k y_k / x_i` (the product without `x_i`
/// is `y_k / x_i`), position `z` gets `Σ_{k≥z} g_k y'_k` where `y'` is the running product
/// of `x` with that zero replaced by 1 (exactly the products without `x_z`), and positions
/// after it get 0 (every product still holds `x_z = 0`). A lane without zeros is the first
/// case throughout; an input without any zero skips the masks (one host read decides).
pub(crate) fn cumprod<E: Element>(x: &DynTensor<E>, d: usize, y: DynTensor<E>) -> DynTensor<E> {
    let (sx, sy) = (Saved::input(x), Saved::output(&y));
    record("cumprod", y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        if g.dim() == 0 {
            return Ok(vec![some(g)]); // the running product of one element is that element
        }
        let (x, y) = (sx.get(node)?, sy.get(node)?);
        let is_zero = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &x, 0.0)?;
        let plain = reverse_cumsum(&mul(&g, &y)?, d)?;
        if !crate::ops::any_true(OP, &is_zero)? {
            return Ok(vec![some(bin(BinaryOp::Div, &plain, &x)?)]);
        }
        let seen = is_zero.try_cumsum(d as isize)?; // zeros up to and including each position
        let before = crate::ops::compare_scalar::<i64>(OP, CompareOp::Eq, &seen, 0.0)?;
        let once = crate::ops::compare_scalar::<i64>(OP, CompareOp::Eq, &seen, 1.0)?;
        let first_zero =
            crate::ops::compare::<bool, bool, bool>(OP, CompareOp::LogicalAnd, &is_zero, &once)?;
        let one = crate::ops::scalar_on(E::ONE, x.device())?;
        let nil = crate::ops::scalar_on(E::ZERO, x.device())?;
        let safe_x = crate::ops::select(OP, &before, &x, &one)?;
        let without_zero = crate::ops::select(OP, &first_zero, &one, &x)?;
        let y_without: DynTensor<E> =
            crate::autograd::same_type(without_zero.try_cumprod(d as isize)?);
        let at_zero = reverse_cumsum(&mul(&g, &y_without)?, d)?;
        let after = crate::ops::select(OP, &first_zero, &at_zero, &nil)?;
        let gx = crate::ops::select(OP, &before, &bin(BinaryOp::Div, &plain, &safe_x)?, &after)?;
        Ok(vec![some(gx)])
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
