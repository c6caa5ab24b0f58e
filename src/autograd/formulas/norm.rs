//! The gradient of normalisation over a set of dims (`ops::normalize`, under `LayerNorm`,
//! `RmsNorm` and `BatchNorm`).
//!
//! With `y = (x − μ) · r` (or `x · r` without centring), `r = 1 / sqrt(var + eps)` and `n`
//! entries in the normalised dims, the gradient of a group of `n` entries is
//! `gx = r · (g − mean(g) − y · mean(g · y))` (without centring: no `mean(g)` term):
//! two lane means and a few passes, where the pieces recorded one by one took about twice
//! as many (PyTorch's `native_layer_norm_backward` computes the same expression).

use super::{OP, Temp, mul, some, un};
use crate::autograd::node::Saved;
use crate::autograd::record::{input, record};
use crate::backend::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::dtype::Float;
use crate::error::Result;
use crate::tensor::DynTensor;

/// `gx` from the incoming gradient `g`, the output `y` and `rstd`, by the expression above.
fn grad_x<E: Float>(
    g: &DynTensor<E>,
    y: &DynTensor<E>,
    rstd: &DynTensor<E>,
    mask: &[bool],
    center: bool,
) -> Result<DynTensor<E>> {
    let mean = |t: &DynTensor<E>| crate::ops::reduce_keepdim(OP, ReduceOp::Mean, t, mask);
    let m2 = mean(&mul(g, y)?)?;
    // (y · mean(g·y) − g + mean(g)) · (−r), in one buffer when nothing records.
    let t = Temp::new(mul(y, &m2)?).bin(BinaryOp::Sub, g)?;
    let t = if center {
        t.bin(BinaryOp::Add, &mean(g)?)?
    } else {
        t
    };
    Ok(t.mul(&un(UnaryOp::Neg, rstd)?)?.done())
}

/// Records `y = normalize(x)` over the dims in `mask` (see `ops::normalize`), with `rstd` as computed
/// by the forward pass (without a graph).
///
/// Saves `y` and `rstd` for the gradient, and `x`: a pass with `create_graph` recomputes
/// `y` and `rstd` from `x` with recorded ops, so that the gradient is itself differentiable
/// through `rstd`, which is not an output of this node.
pub(crate) fn normalize<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    mask: Vec<bool>,
    eps: f64,
    center: bool,
    y: DynTensor<E>,
    rstd: DynTensor<E>,
) -> DynTensor<E> {
    let (sx, sy) = (Saved::input(x), Saved::output(&y));
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let gx = if crate::autograd::is_grad_enabled() {
            let (y, rstd) = crate::ops::normalized_by_ops(&sx.get(node)?, &mask, eps, center)?;
            grad_x(&g, &y, &rstd, &mask, center)?
        } else if let Some(dim) = crate::ops::single_dim(&mask) {
            crate::ops::normalize_backward(op, &sy.get(node)?, &g, &rstd, dim, center)?
        } else {
            grad_x(&g, &sy.get(node)?, &rstd, &mask, center)?
        };
        Ok(vec![some(gx)])
    })
}
