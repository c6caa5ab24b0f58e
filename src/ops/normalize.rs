//! Normalisation along one dim, the core of `nn::LayerNorm` and `nn::RmsNorm`:
//! `y = (x − mean(x)) · rstd` with `rstd = 1 / sqrt(mean((x − mean(x))²) + eps)` (the biased
//! variance), or without centring `y = x · rstd` with `rstd = 1 / sqrt(mean(x²) + eps)`.
//!
//! It is one node of the graph with its own gradient (`autograd::formulas::norm`), as
//! PyTorch's `native_layer_norm`: the same pieces recorded one by one cost twice the passes
//! over the activations in the backward pass, and a node each.

use crate::dtype::Float;
use crate::error::Result;
use crate::tensor::DynTensor;

/// `(y, rstd)` for `x` along `axis` (`rstd` keeps `axis` with size 1), computed by the
/// crate's ops in the order the layers used before this op existed, so results are unchanged.
pub(crate) fn normalized<E: Float>(
    x: &DynTensor<E>,
    axis: usize,
    eps: f64,
    center: bool,
) -> Result<(DynTensor<E>, DynTensor<E>)> {
    let axis = axis as isize;
    let centered = if center {
        x.try_sub(&x.try_mean_dim(axis, true)?)?
    } else {
        x.shallow_clone()
    };
    let var = centered.square().try_mean_dim(axis, true)?;
    let rstd = var.try_add_scalar(eps)?.rsqrt();
    let y = centered.try_mul(&rstd)?;
    Ok((y, rstd))
}

/// `x` normalised along `axis` (`center`: subtract the mean first, as layer norm; else as
/// RMS norm), recorded as one node when `x` requires grad. `axis < x.dim()`.
pub(crate) fn normalize<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    axis: usize,
    eps: f64,
    center: bool,
) -> Result<DynTensor<E>> {
    debug_assert!(axis < x.dim());
    if !crate::autograd::tracks(x) {
        return Ok(normalized(x, axis, eps, center)?.0);
    }
    let (y, rstd) = {
        let _off = crate::autograd::GradMode::no_grad();
        normalized(x, axis, eps, center)?
    };
    Ok(crate::autograd::normalize(
        op, x, axis, eps, center, y, rstd,
    ))
}
