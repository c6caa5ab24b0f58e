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
use crate::storage::dispatch;
use crate::tensor::DynTensor;

/// `(y, rstd)` for `x` over the dims in `mask` (`rstd` keeps them with size 1), not
/// recorded: one pass of the backend's kernel (`Backend::normalize`) over a single dim, else
/// [`normalized_by_ops`].
pub(crate) fn normalized<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    mask: &[bool],
    eps: f64,
    center: bool,
) -> Result<(DynTensor<E>, DynTensor<E>)> {
    let Some(dim) = single_dim(mask) else {
        return normalized_by_ops(x, mask, eps, center);
    };
    let mut reduced = x.shape().to_vec();
    reduced[dim] = 1;
    if x.shape()[dim] == 0 {
        // Lanes of nothing: no output, and NaN for each lane's `rstd` (the mean of nothing).
        return Ok((
            DynTensor::full_on(x.shape(), E::ZERO, x.device())?,
            DynTensor::full_on(&reduced, E::from_f64(f64::NAN), x.device())?,
        ));
    }
    let (y, r) = dispatch::normalize(op, x.storage(), x.layout(), dim, eps, center)?;
    Ok((
        DynTensor::from_contiguous_buffer(y, x.shape())?,
        DynTensor::from_contiguous_buffer(r, &reduced)?,
    ))
}

/// The one dim of `mask`, where exactly one is set.
pub(crate) fn single_dim(mask: &[bool]) -> Option<usize> {
    let mut set = mask.iter().enumerate().filter(|&(_, &m)| m).map(|(i, _)| i);
    match (set.next(), set.next()) {
        (Some(d), None) => Some(d),
        _ => None,
    }
}

/// [`normalized`] by the crate's ops, recorded where grad mode is on (so that a gradient
/// computed with `create_graph` is itself differentiable through `rstd`): reductions over
/// several dims (`BatchNorm`), and the reference the kernel is tested against.
pub(crate) fn normalized_by_ops<E: Float>(
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

/// The gradient of [`normalized`] over the one dim `dim` from its output `y`, the output's
/// gradient `g` and `rstd`, in one pass of the backend (`Backend::normalize_backward`); not
/// recorded.
pub(crate) fn normalize_backward<E: Float>(
    op: &'static str,
    y: &DynTensor<E>,
    g: &DynTensor<E>,
    rstd: &DynTensor<E>,
    dim: usize,
    center: bool,
) -> Result<DynTensor<E>> {
    super::check_gradient_shape(op, y, g)?;
    let (ly, lg, lr) = (y.layout(), g.layout(), rstd.layout());
    let (sy, sg, sr) = (y.storage(), g.storage(), rstd.storage());
    let buf = dispatch::normalize_backward(op, sy, ly, sg, lg, sr, lr, dim, center)?;
    DynTensor::from_contiguous_buffer(buf, y.shape())
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
        return Ok(normalized(op, x, mask, eps, center)?.0);
    }
    let (y, rstd) = {
        let _off = crate::autograd::GradMode::no_grad();
        normalized(op, x, mask, eps, center)?
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
