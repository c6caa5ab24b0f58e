//! Normalisation over a set of dims, the core of `nn::LayerNorm`, `nn::RmsNorm` (one dim)
//! and `nn::BatchNorm` (every dim but the channels'):
//! `y = (x − mean(x)) · rstd` with `rstd = 1 / sqrt(mean((x − mean(x))²) + eps)` (the biased
//! variance), or without centring `y = x · rstd` with `rstd = 1 / sqrt(mean(x²) + eps)`.
//!
//! It is one node of the graph with its own gradient (`autograd::formulas::norm`), as
//! PyTorch's `native_layer_norm`: the same pieces recorded one by one cost twice the passes
//! over the activations in the backward pass, and a node each.

use crate::backend::op::ReduceOp;
use crate::dtype::Float;
use crate::error::Result;
use crate::tensor::DynTensor;

/// `(y, rstd)` for `x` over the dims in `mask` (`rstd` keeps them with size 1), computed by
/// the crate's (recorded) ops in the order the layers used before this op existed, so
/// results are unchanged.
pub(crate) fn normalized<E: Float>(
    x: &DynTensor<E>,
    mask: &[bool],
    eps: f64,
    center: bool,
) -> Result<(DynTensor<E>, DynTensor<E>)> {
    const OP: &str = "normalize";
    let centered = if center {
        x.try_sub(&crate::ops::reduce_keepdim(OP, ReduceOp::Mean, x, mask)?)?
    } else {
        x.shallow_clone()
    };
    let var = crate::ops::reduce_keepdim(OP, ReduceOp::Mean, &centered.square(), mask)?;
    let rstd = var.try_add_scalar(eps)?.rsqrt();
    let y = centered.try_mul(&rstd)?;
    Ok((y, rstd))
}

/// `x` normalised over the dims in `mask` (`center`: subtract the mean first, as layer
/// norm; else as RMS norm), recorded as one node when `x` requires grad.
/// `mask.len() == x.dim()`.
pub(crate) fn normalize<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    mask: &[bool],
    eps: f64,
    center: bool,
) -> Result<DynTensor<E>> {
    debug_assert_eq!(mask.len(), x.dim());
    if !crate::autograd::tracks(x) {
        return Ok(normalized(x, mask, eps, center)?.0);
    }
    let (y, rstd) = {
        let _off = crate::autograd::GradMode::no_grad();
        normalized(x, mask, eps, center)?
    };
    Ok(crate::autograd::normalize(
        op,
        x,
        mask.to_vec(),
        eps,
        center,
        y,
        rstd,
    ))
}
