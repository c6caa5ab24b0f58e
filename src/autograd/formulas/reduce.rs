//! Gradients of the reductions: the gradient of each kept element is spread back over the
//! elements it was reduced from.

use super::{OP, bin, bin_c, cast_back, mul, some, un};
use crate::autograd::node::Saved;
use crate::autograd::record::{input, record, unsupported};
use crate::backend::op::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
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

/// Records `y = Π x` over `mask`. The gradient of element `i` is the product of the other
/// elements of its lane, computed without division as the product of those before it times
/// the product of those after it (exclusive running products along the flattened lane), so
/// lanes with zeros need no special case and the gradient differentiates again correctly
/// (the second derivative at two zeros is the product of the rest, not 0).
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
        let others = product_of_others(&x, &mask)?;
        Ok(vec![some(mul(&others, &spread(&g, x.shape(), &mask)?)?)])
    })
}

/// For every element of `x`, the product of the other elements of its lane over `mask`.
fn product_of_others<E: Element>(x: &DynTensor<E>, mask: &[bool]) -> Result<DynTensor<E>> {
    // The reduced dims moved last and flattened into one lane dim.
    let (kept, reduced): (Vec<usize>, Vec<usize>) = (0..x.dim()).partition(|&d| !mask[d]);
    let order: Vec<isize> = kept.iter().chain(&reduced).map(|&d| d as isize).collect();
    let moved = x.try_permute(&order)?;
    let mut lanes_shape: Vec<isize> = kept.iter().map(|&d| x.shape()[d] as isize).collect();
    let n: usize = reduced.iter().map(|&d| x.shape()[d]).product();
    lanes_shape.push(n as isize);
    let lanes = moved.try_reshape(&lanes_shape)?;
    let last = [kept.len() as isize];
    let before = exclusive_cumprod(&lanes)?;
    let after = exclusive_cumprod(&lanes.try_flip(&last)?)?.try_flip(&last)?;
    let others = mul(&before, &after)?;
    let moved_shape: Vec<isize> = moved.shape().iter().map(|&s| s as isize).collect();
    let mut inverse = vec![0isize; order.len()];
    for (at, &d) in order.iter().enumerate() {
        inverse[d as usize] = at as isize;
    }
    others.try_reshape(&moved_shape)?.try_permute(&inverse)
}

/// `[1, t₀, t₀t₁, …]` along the last dim: the running product of the elements before each.
fn exclusive_cumprod<E: Element>(t: &DynTensor<E>) -> Result<DynTensor<E>> {
    let d = t.dim() - 1;
    let n = t.shape()[d];
    if n == 0 {
        return Ok(t.clone());
    }
    let mut one_shape: Vec<isize> = t.shape().iter().map(|&s| s as isize).collect();
    one_shape[d] = 1;
    let ones = crate::ops::scalar_on(E::ONE, t.device())?.try_expand(&one_shape)?;
    let shifted = DynTensor::try_cat(&[&ones, &t.try_narrow(d as isize, 0, n - 1)?], d as isize)?;
    Ok(crate::autograd::same_type(shifted.try_cumprod(d as isize)?))
}

/// Records `y = (Σ |x|ᵖ)^(1/p)` over `mask` for a `p` other than 0, 1, 2 and ±∞ (those are
/// computed from other recorded ops). The gradient is `sgn(x) |x|ᵖ⁻¹ g / yᵖ⁻¹` with PyTorch's
/// rules where that divides by zero: 0 in a lane whose norm is 0, and for `p < 1` 0 at an
/// element that is 0 (where `|x|ᵖ⁻¹` is infinite).
pub(crate) fn pnorm<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    p: f64,
    mask: &[bool],
    y: DynTensor<E>,
) -> DynTensor<E> {
    let (sx, sy) = (Saved::input(x), Saved::output(&y));
    let mask = mask.to_vec();
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let (x, y) = (sx.get(node)?, sy.get(node)?);
        let shape = x.shape().to_vec();
        let one = crate::ops::scalar_on(E::ONE, x.device())?;
        let nil = crate::ops::scalar_on(E::ZERO, x.device())?;
        let magnitude = bin_c(BinaryOp::Pow, &un(UnaryOp::Abs, &x)?, p - 1.0)?;
        let mut scaled = mul(&un(UnaryOp::Sign, &x)?, &magnitude)?;
        if p < 1.0 {
            let at_zero = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &x, 0.0)?;
            scaled = crate::ops::select(OP, &at_zero, &nil, &scaled)?;
        }
        let y = spread(&y, &shape, &mask)?;
        let zero_norm = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &y, 0.0)?;
        let denominator = bin_c(BinaryOp::Pow, &y, p - 1.0)?;
        let safe = crate::ops::select(OP, &zero_norm, &one, &denominator)?;
        let share = bin(BinaryOp::Div, &spread(&g, &shape, &mask)?, &safe)?;
        let share = crate::ops::select(OP, &zero_norm, &nil, &share)?;
        Ok(vec![some(mul(&scaled, &share)?)])
    })
}
