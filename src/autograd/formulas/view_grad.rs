//! Gradients of the views, of copies (`contiguous`, `clone`) and of dtype conversions.
//!
//! A view's gradient is described relative to its input *as if the input were contiguous*
//! (the same view op applied to a contiguous layout of the input's shape), so it does not
//! depend on where the input sits in its storage, nor on whether the input itself is an
//! expanded view.

use super::{cast_back, some, sum_to};
use crate::autograd::any::AnyTensor;
use crate::autograd::mode::GradMode;
use crate::autograd::node::{Meta, Node};
use crate::autograd::record::{input, node, record, tracks};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use crate::tensor::DynTensor;
use std::sync::Arc;

/// How the gradient of a view goes back to its input.
pub(crate) enum ViewGrad {
    /// Same elements in the same order, another shape (`view`, `reshape`, `squeeze`,
    /// `unsqueeze`, `flatten`): the gradient reshaped back.
    Reshape,
    /// Dims reordered: output dim `i` is input dim `perm[i]`.
    Permute(Vec<usize>),
    /// Broadcast (`expand`): the gradient summed over the stretched dims.
    Expand,
    /// A selection of the input's elements (`narrow`, `select`, `slice`, `i`, `as_strided`
    /// of a contiguous input), given as the layout of the output relative to a contiguous
    /// input: the gradient is written there into zeros.
    Embed(Layout),
}

/// Records `out`, a view of `x` made by op `op`.
pub(crate) fn view<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    out: DynTensor<E>,
    how: ViewGrad,
) -> Result<DynTensor<E>> {
    if let ViewGrad::Embed(rel) = &how
        && rel.has_internal_overlap()
    {
        return Err(Error::new(
            ErrorKind::Autograd,
            op,
            format!(
                "the gradient of a view in which several indices reach one element (sizes \
                 {:?}, strides {:?}) is not supported",
                rel.sizes(),
                rel.strides()
            ),
        ));
    }
    let shape = x.shape().to_vec();
    let view = crate::autograd::view_of(x, &out);
    let backward = move |g: AnyTensor, node: &Arc<Node>| {
        let g = g.into_typed::<E>(node.name)?;
        let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
        let gx = match &how {
            ViewGrad::Reshape => g.try_reshape(&sizes)?,
            ViewGrad::Permute(perm) => {
                let mut inverse = vec![0isize; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inverse[p] = i as isize;
                }
                g.try_permute(&inverse)?
            }
            ViewGrad::Expand => sum_to(g, &shape)?,
            ViewGrad::Embed(rel) => embed_grad(&g, &shape, rel)?,
        };
        Ok(vec![some(gx)])
    };
    Ok(
        match node::<E>(op, out.shape(), vec![input(x)], false, backward) {
            Some(n) => out.with_meta(Some(Meta::with_view(n, view))),
            None => out,
        },
    )
}

/// Zeros of `shape` with `g` written at the elements `rel` selects: the gradient of the view
/// `rel` of a tensor of `shape`. Recorded (its own gradient is the view again).
pub(crate) fn embed_grad<E: Element>(
    g: &DynTensor<E>,
    shape: &[usize],
    rel: &Layout,
) -> Result<DynTensor<E>> {
    let z = {
        let _off = GradMode::no_grad();
        let z = DynTensor::<E>::full_on(shape, E::ZERO, g.device())?;
        z.with_layout(rel.clone()).try_copy_(g)?;
        z
    };
    if !tracks(g) {
        return Ok(z);
    }
    let rel = rel.clone();
    Ok(record("embed", z, vec![input(g)], false, move |h, node| {
        let h = h.into_typed::<E>(node.name)?;
        Ok(vec![some(view_at("embed", &h, &rel)?)])
    }))
}

/// The elements `rel` selects of `t` (`rel` relative to a contiguous tensor of `t`'s
/// shape), as a recorded view: the inverse of [`embed_grad`].
pub(crate) fn view_at<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    rel: &Layout,
) -> Result<DynTensor<E>> {
    let t = t.try_contiguous()?;
    let at = Layout::new(
        rel.sizes(),
        rel.strides(),
        rel.offset() + t.storage_offset(),
    )?;
    let v = t.with_layout(at);
    view(op, &t, v, ViewGrad::Embed(rel.clone()))
}

/// Records `out`, an elementwise copy of `x` (`contiguous`, `clone`, `to_device`) or its
/// conversion to another type (`to_dtype`): the gradient is passed back, converted to `x`'s
/// type. Integer results (a float tensor converted to `i64`) are not differentiable.
pub(crate) fn identity<A: Element, O: Element>(
    op: &'static str,
    x: &DynTensor<A>,
    out: DynTensor<O>,
) -> DynTensor<O> {
    if !tracks(x) {
        return out;
    }
    let device = x.device();
    record(op, out, vec![input(x)], false, move |g, node| {
        let g = g.into_typed::<O>(node.name)?;
        let g = if g.device() == device {
            g
        } else {
            g.to_device(device)?
        };
        Ok(vec![some(cast_back::<O, A>(g)?)])
    })
}
