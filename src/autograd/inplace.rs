//! In-place ops inside a graph, as PyTorch records them.
//!
//! An in-place op `op_` on a tensor `t` made by a recorded op (grad mode on) runs as its
//! out-of-place form on a recorded copy of `t`'s current value; the result's elements are
//! written through `t`, and `t` continues from the result's node: its later uses send their
//! gradients there, through the op, back to `t`'s old history. A unary op whose formula
//! reads only its output or nothing (`relu_`, `exp_`, `sigmoid_`, …) needs no copy: it
//! writes through `t` and its node saves `t` as its output ([`unary_inplace`]).
//!
//! A write through a view `v` of a base `b` also changes `b`. `b` then continues from a
//! `CopySlices` node (PyTorch's name): the gradient of `b`'s new value goes to `b`'s old value
//! outside `v`'s elements and to the op's result inside them. `v` continues from the result's
//! node, and every other view of `b` gets a node made from `b`'s new one when it is next used
//! (its history's generation is behind `b`'s; see `node::Interior`).
//!
//! # Invariants
//! - Nothing is written before the result is computed: an op that fails leaves `t`, its
//!   base and their graph membership as they were.
//! - Nodes that saved the elements overwritten see the storage's version move, so a backward
//!   pass that needs them is an error naming the node (as before this module existed).
//! - No formula saves `t`'s storage as its input: an op whose formula reads its input
//!   (`mul_`, `sin_`) reads the copy of `t`'s old value, so it differentiates the value it
//!   read; one that reads its output saves `t` after its write, and a later write over that
//!   is the backward error above.
//! - A leaf that requires grad, or a view of one, is never written with grad mode on.

use super::formulas::view_grad::{embed_grad, view_at};
use super::formulas::{some, sum_to};
use super::mode::GradMode;
use super::node::{GradInfo, Meta, Node, ViewOf};
use super::record::{Input, inplace_recorded, input, node};
use crate::backend::op::{BinaryOp, UnaryOp};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use crate::tensor::DynTensor;
use std::sync::Arc;

/// Runs the in-place op `op` on `dst`, which [`inplace_recorded`](super::record::inplace_recorded)
/// said must be recorded. `compute` gets a recorded copy of `dst`'s value and returns the new
/// value, a recorded out-of-place result of `dst`'s type and shape.
pub(crate) fn record_inplace<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    compute: impl FnOnce(&DynTensor<E>) -> Result<DynTensor<E>>,
) -> Result<()> {
    dst.check_overlap(op)?;
    let old = dst.deep_copy(op)?;
    let new = compute(&old)?;
    if new.shape() != dst.shape() {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the result has shape {:?}, but the destination has shape {:?}",
                new.shape(),
                dst.shape()
            ),
        ));
    }
    // A value that no longer depends on the old one (`fill_`, `copy_` of a constant) still
    // belongs to the graph, with no gradient for what it replaced, as in PyTorch.
    let new_node = match new.meta() {
        Some(m) => m.node(),
        None => node::<E>(op, dst.shape(), vec![input(&old)], false, |_, _| {
            Ok(vec![None])
        })
        .expect("the copy of a tensor of a graph has an edge"),
    };
    {
        let _off = GradMode::no_grad();
        dst.try_copy_(&new)?;
    }
    rebase(dst, new_node);
    Ok(())
}

/// Where an in-place op on `dst` starts: with grad mode on and `dst` in a graph, runs the op
/// recorded ([`record_inplace`], with `compute`) and returns `true`; otherwise checks that
/// `dst` may be written and returns `false`, for the caller's own write. `source_tracked`:
/// whether the op writes a tensor that requires grad into `dst`.
pub(crate) fn write_in_place<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    source_tracked: bool,
    compute: impl FnOnce(&DynTensor<E>) -> Result<DynTensor<E>>,
) -> Result<bool> {
    if inplace_recorded(op, dst, source_tracked)? {
        record_inplace(op, dst, compute)?;
        return Ok(true);
    }
    dst.check_overlap(op)?;
    Ok(false)
}

/// The unary op `u` (as op `op`) in place on `dst`, which
/// [`inplace_recorded`](super::record::inplace_recorded) said must be recorded: written
/// through `dst` by `write` and recorded there, without a copy, when `u`'s formula does not
/// read its input (`relu_`, `exp_`, `sigmoid_`, `tanh_`: they read their output, as
/// PyTorch's do, so a later write over it makes `backward` the error); through
/// [`record_inplace`] otherwise.
pub(crate) fn unary_inplace<E: Element>(
    op: &'static str,
    u: UnaryOp,
    dst: &DynTensor<E>,
    write: impl FnOnce() -> Result<()>,
) -> Result<()> {
    dst.check_overlap(op)?;
    match super::formulas::unary_in_place(u, dst, write)? {
        Some(node) => {
            rebase(dst, node);
            Ok(())
        }
        None => record_inplace(op, dst, |old| crate::ops::unary(op, u, old)),
    }
}

/// Continues `dst`, whose new value was just written, from `new_node`; through a view, its
/// base continues from a `CopySlices` node (see the module docs).
fn rebase<E: Element>(dst: &DynTensor<E>, new_node: Arc<Node>) {
    let meta = dst
        .meta()
        .expect("a recorded in-place op writes into a tensor of a graph");
    let Meta::Interior(interior) = &**meta else {
        unreachable!("leaves are refused before a write is recorded");
    };
    match &interior.view {
        None => {
            meta.rebase(new_node);
        }
        Some(v) => {
            let rel = v
                .rel()
                .cloned()
                .expect("views without a strided place are refused");
            debug_assert!(
                !rel.has_broadcast_dim(),
                "writes into expanded views are refused"
            );
            let shape = v.base_layout.sizes().to_vec();
            let info = |shape: &[usize]| GradInfo {
                dtype: E::DTYPE,
                shape: shape.to_vec(),
            };
            let inputs = vec![
                Input::to_node(v.base.node(), info(&shape)),
                Input::to_node(Arc::clone(&new_node), info(dst.shape())),
            ];
            let copy_slices = node::<E>(
                "CopySlices",
                v.base_layout.sizes(),
                inputs,
                false,
                move |g, n| {
                    let g = g.into_typed::<E>(n.name)?;
                    let inside = view_at(n.name, &g, &rel)?;
                    let outside = crate::ops::binary::<E, E, E>(
                        "backward",
                        BinaryOp::Sub,
                        &g,
                        &embed_grad(&inside, &shape, &rel)?,
                    )?;
                    Ok(vec![some(outside), some(inside)])
                },
            )
            .expect("the base of a recorded view has an edge");
            let generation = v.base.rebase(copy_slices);
            meta.rebase_view(new_node, generation);
        }
    }
}

/// Where `out`, a view of `x` sharing its storage, sits in the tensor that `x` is or views.
pub(crate) fn view_of<E: Element>(x: &DynTensor<E>, out: &DynTensor<E>) -> Option<ViewOf> {
    let meta = x.meta()?;
    if !x.shares_storage(out) {
        return None;
    }
    let (base, base_layout) = match &**meta {
        Meta::Interior(i) => match &i.view {
            Some(v) => (Arc::clone(&v.base), v.base_layout.clone()),
            None => (Arc::clone(meta), x.layout().clone()),
        },
        Meta::Leaf { .. } => (Arc::clone(meta), x.layout().clone()),
    };
    Some(ViewOf::new(
        base,
        base_layout,
        out.layout().clone(),
        node_from_base::<E>,
    ))
}

/// The node of a view whose base was written in place since the view's node was made: the
/// view's gradient goes into zeros of the base's shape, at the view's elements.
fn node_from_base<E: Element>(base: &Arc<Node>, v: &ViewOf, out: &GradInfo) -> Arc<Node> {
    let shape = v.base_layout.sizes().to_vec();
    let info = GradInfo {
        dtype: E::DTYPE,
        shape: shape.clone(),
    };
    // An expanded view's broadcast dims send their gradients to one element each: summed
    // over them, the gradient goes to the view's distinct elements.
    let distinct = v.rel().map(Layout::collapse_broadcast);
    let inputs = vec![Input::to_node(Arc::clone(base), info)];
    node::<E>("view", &out.shape, inputs, false, move |g, n| {
        let g = g.into_typed::<E>(n.name)?;
        let Some(rel) = &distinct else {
            return Err(Error::new(
                ErrorKind::Autograd,
                n.name,
                "the tensor this view was made from was written in place, and the view's \
                 elements have no strided place in it to send the gradient to",
            ));
        };
        let g = sum_to(g, rel.sizes())?;
        Ok(vec![some(embed_grad(&g, &shape, rel)?)])
    })
    .expect("a node into a base that requires grad")
}
