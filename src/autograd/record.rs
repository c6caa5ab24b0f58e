//! Recording: how an op attaches its node to its output.
//!
//! An op computes its result first (with grad mode off, so the pieces it is made of record
//! nothing), then, if one of its inputs requires grad and grad mode is on, calls [`record`]
//! with the backward function of its formula. An input that does not require grad gets no
//! edge, and an op whose inputs all do not pays one branch.

use super::any::AnyTensor;
use super::mode::is_grad_enabled;
use super::node::{BackwardFn, GradInfo, Meta, Node, NodeKind};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use std::sync::{Arc, Mutex};

/// Whether an op on `t` must record: `t` requires grad and grad mode is on.
#[inline]
pub(crate) fn tracks<E: Element>(t: &DynTensor<E>) -> bool {
    t.meta().is_some() && is_grad_enabled()
}

/// One input of a recorded op: where its gradient goes, and its type and shape.
pub(crate) struct Input {
    edge: Option<Arc<Node>>,
    info: GradInfo,
}

impl Input {
    /// An input whose gradient goes to `node` (a tensor's node read earlier).
    pub(crate) fn to_node(node: Arc<Node>, info: GradInfo) -> Input {
        Input {
            edge: Some(node),
            info,
        }
    }
}

/// `t` as an input of an op being recorded.
pub(crate) fn input<E: Element>(t: &DynTensor<E>) -> Input {
    Input {
        edge: t.meta().map(|m| m.node()),
        info: GradInfo {
            dtype: E::DTYPE,
            shape: t.shape().to_vec(),
        },
    }
}

/// `out` as the output of op `name` over `inputs`, whose gradients `backward` computes.
/// `frees` says whether `backward` holds saved tensors to free after a pass.
pub(crate) fn record<E: Element>(
    name: &'static str,
    out: DynTensor<E>,
    inputs: Vec<Input>,
    frees: bool,
    backward: impl Fn(AnyTensor, &Arc<Node>) -> Result<Vec<Option<AnyTensor>>> + Send + Sync + 'static,
) -> DynTensor<E> {
    match node::<E>(name, out.shape(), inputs, frees, backward) {
        Some(node) => out.with_meta(Some(Meta::interior(node))),
        None => out,
    }
}

/// The node of op `name` over `inputs` with an output of type `E` and `shape`; `None` (no
/// node) for an integer output or when no input needs a gradient.
pub(crate) fn node<E: Element>(
    name: &'static str,
    shape: &[usize],
    inputs: Vec<Input>,
    frees: bool,
    backward: impl Fn(AnyTensor, &Arc<Node>) -> Result<Vec<Option<AnyTensor>>> + Send + Sync + 'static,
) -> Option<Arc<Node>> {
    if !E::DTYPE.is_float() || inputs.iter().all(|i| i.edge.is_none()) {
        return None;
    }
    let (next, infos) = inputs.into_iter().map(|i| (i.edge, i.info)).unzip();
    Some(Arc::new(Node {
        name,
        next,
        inputs: infos,
        output: GradInfo {
            dtype: E::DTYPE,
            shape: shape.to_vec(),
        },
        kind: NodeKind::Function {
            backward: Mutex::new(Some(Box::new(backward) as BackwardFn)),
            frees,
        },
        retained: Mutex::new(Vec::new()),
    }))
}

/// An error for an op without a gradient formula yet, called on an input that requires grad;
/// never a result silently cut from the graph.
pub(crate) fn unsupported(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Autograd,
        op,
        format!(
            "`{op}` has no gradient yet, and an input requires grad; compute it under \
             `no_grad` or on a `detach()`ed input"
        ),
    )
}

/// Whether the in-place op `op` on `dst` must be recorded: grad mode is on and `dst` is the
/// output of a recorded op (or a view of one), so the write becomes a node of the graph
/// (see `autograd::inplace`). Fails where the write may not run at all with grad mode on:
/// into a leaf that requires grad or a view of one, into a view whose place in its base has
/// no strided form, or of a source that requires grad into a tensor that does not.
pub(crate) fn inplace_recorded<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    source_tracked: bool,
) -> Result<bool> {
    if !is_grad_enabled() {
        return Ok(false);
    }
    let what = match dst.meta().map(|m| &**m) {
        Some(Meta::Leaf { .. }) => {
            "writes in place into a leaf that requires grad; update parameters inside \
             `no_grad`"
        }
        Some(Meta::Interior(i)) => match &i.view {
            Some(v) if matches!(*v.base, Meta::Leaf { .. }) => {
                "writes in place into a view of a leaf that requires grad; update parameters \
                 inside `no_grad`, or clone the leaf first"
            }
            // An overlapping view is refused by the write itself, with its own message.
            Some(v) if v.rel().is_none() && !dst.layout().has_internal_overlap() => {
                "writes in place into an `as_strided` view whose elements have no strided \
                 place in the tensor it views; use the out-of-place form"
            }
            _ => return Ok(true),
        },
        None if source_tracked => {
            "writes a tensor that requires grad into one that does not; use the out-of-place \
             form"
        }
        None => return Ok(false),
    };
    Err(Error::new(
        ErrorKind::Autograd,
        op,
        format!("`{op}` {what}"),
    ))
}

/// Fails where [`inplace_recorded`] does, and for a write it would record: for the in-place
/// ops that are not recorded (element `set`, the collectives), which refuse a tensor of a graph.
pub(crate) fn check_inplace<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    source_tracked: bool,
) -> Result<()> {
    if inplace_recorded(op, dst, source_tracked)? {
        return Err(Error::new(
            ErrorKind::Autograd,
            op,
            format!(
                "`{op}` writes in place into a tensor that is part of a graph and is not \
                 recorded; use an op that is (`narrow(..).fill_(..)`, `copy_`) or the \
                 out-of-place form"
            ),
        ));
    }
    Ok(())
}
