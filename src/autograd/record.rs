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

/// `t` as an input of an op being recorded.
pub(crate) fn input<E: Element>(t: &DynTensor<E>) -> Input {
    Input {
        edge: t.meta().map(|m| Arc::clone(m.node())),
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
    if !E::DTYPE.is_float() || inputs.iter().all(|i| i.edge.is_none()) {
        return out;
    }
    let (next, infos) = inputs.into_iter().map(|i| (i.edge, i.info)).unzip();
    let node = Arc::new(Node {
        name,
        next,
        inputs: infos,
        output: GradInfo {
            dtype: E::DTYPE,
            shape: out.shape().to_vec(),
        },
        kind: NodeKind::Function {
            backward: Mutex::new(Some(Box::new(backward) as BackwardFn)),
            frees,
        },
        retained: Mutex::new(Vec::new()),
    });
    out.with_meta(Some(Meta::interior(node)))
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

/// Fails if the in-place op `op` would write into a tensor that requires grad, or write a
/// source that requires grad into any tensor, with grad mode on. In-place updates of graph
/// tensors are refused, not differentiated (see the module docs of `autograd`).
pub(crate) fn check_inplace<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    source_tracked: bool,
) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    let what = match dst.meta() {
        Some(m) if m.node().is_accumulate() => {
            "writes in place into a leaf that requires grad; update parameters inside \
             `no_grad`"
        }
        Some(_) => {
            "writes in place into a tensor that is part of a graph; use the out-of-place \
             form"
        }
        None if source_tracked => {
            "writes a tensor that requires grad into one that does not; use the out-of-place \
             form"
        }
        None => return Ok(()),
    };
    Err(Error::new(
        ErrorKind::Autograd,
        op,
        format!("`{op}` {what}"),
    ))
}
