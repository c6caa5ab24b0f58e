//! The backward pass: runs the recorded nodes from the roots towards the leaves.
//!
//! # Invariants
//! - A node runs once per pass, after every node that sends it a gradient has run (Kahn's
//!   order over the part of the graph reachable from the roots), so the gradient it receives
//!   is complete; gradients arriving at one node are summed.
//! - The pass runs with grad mode on exactly when `create_graph` is set, so the gradients of
//!   an ordinary pass are plain tensors and those of a `create_graph` pass are differentiable.
//! - Every gradient a node returns is checked against the type and shape of the input it is
//!   for; a mismatch is an internal error naming the op, never a silently broadcast sum.

use super::any::AnyTensor;
use super::mode::GradMode;
use super::node::{BackwardFn, GradHook, GradInfo, Node, NodeKind, lock};
use crate::error::{Error, ErrorKind, Result};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How a backward pass treats the graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackwardOptions {
    /// Keep what the nodes saved, so that the graph can be run again (PyTorch's
    /// `retain_graph`). Without it a second pass through the same nodes is an error.
    pub retain_graph: bool,
    /// Record the backward pass itself, so that the gradients can be differentiated again
    /// (PyTorch's `create_graph`); implies `retain_graph`. The gradients stored in leaves then
    /// belong to a graph that points back at those leaves: clear them (`zero_grad`) when done,
    /// or that graph stays alive with them (PyTorch has the same cycle).
    pub create_graph: bool,
}

impl BackwardOptions {
    /// Keeps the graph for another pass.
    pub fn retain_graph() -> Self {
        BackwardOptions {
            retain_graph: true,
            create_graph: false,
        }
    }

    /// Records the pass for higher derivatives (and keeps the graph).
    pub fn create_graph() -> Self {
        BackwardOptions {
            retain_graph: true,
            create_graph: true,
        }
    }
}

/// Where the pass delivers gradients.
pub(crate) enum Sink<'a> {
    /// Into the leaves' `grad` (and retained slots): `backward`.
    Accumulate,
    /// To these nodes' incoming gradients, returned in order; leaves are left alone: `grad`.
    Capture(&'a [Arc<Node>]),
}

/// Runs the pass from `roots` (each a node and the gradient of its output).
pub(crate) fn run(
    roots: Vec<(Arc<Node>, AnyTensor)>,
    options: BackwardOptions,
    sink: Sink<'_>,
) -> Result<Vec<Option<AnyTensor>>> {
    let retain = options.retain_graph || options.create_graph;
    let _mode = GradMode::set(options.create_graph);

    // How many edges from reachable nodes point at each node.
    let mut pending: HashMap<usize, usize> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    let mut reachable: Vec<Arc<Node>> = Vec::new();
    for (node, _) in &roots {
        if pending.insert(node.key(), 0).is_none() {
            stack.push(Arc::clone(node));
        }
    }
    while let Some(node) = stack.pop() {
        for next in node.next.iter().flatten() {
            let count = pending.entry(next.key()).or_insert(0);
            if *count == 0 && !next_seen(next, &roots) {
                stack.push(Arc::clone(next));
            }
            *count += 1;
        }
        reachable.push(node);
    }
    // For `grad`, the nodes from which an input is reached: only nodes with an edge into
    // this set run (PyTorch prunes the same way), so nothing below the inputs is computed or
    // freed.
    let needed = match sink {
        Sink::Capture(targets) => Some(leading_to(&reachable, &pending, targets)),
        Sink::Accumulate => None,
    };
    drop(reachable);

    let mut buffers: HashMap<usize, AnyTensor> = HashMap::new();
    let mut ready: Vec<Arc<Node>> = Vec::new();
    for (node, grad) in roots {
        check_grad(&node.output, &grad, node.name, "the output")?;
        accumulate(&mut buffers, node.key(), grad)?;
        if pending[&node.key()] == 0 && !ready.iter().any(|r| Arc::ptr_eq(r, &node)) {
            ready.push(node);
        }
    }

    let captures: &[Arc<Node>] = match sink {
        Sink::Capture(nodes) => nodes,
        Sink::Accumulate => &[],
    };
    let mut captured: Vec<Option<AnyTensor>> = (0..captures.len()).map(|_| None).collect();

    while let Some(node) = ready.pop() {
        let grad = buffers.remove(&node.key());
        if let Some(g) = &grad {
            for (i, c) in captures.iter().enumerate() {
                if Arc::ptr_eq(c, &node) {
                    captured[i] = Some(g.handle());
                }
            }
            if matches!(sink, Sink::Accumulate) {
                retain_into_slots(&node, g, options.create_graph)?;
            }
        }
        let outputs = match (&node.kind, grad) {
            (_, None) => Vec::new(),
            (NodeKind::Accumulate { grad: slot, hooks }, Some(g)) => {
                if matches!(sink, Sink::Accumulate) {
                    accumulate_leaf(slot, g, options.create_graph)?;
                    // Run outside the lock: a hook may read the gradient or add hooks.
                    let hooks: Vec<GradHook> = lock(hooks).iter().map(|(_, h)| h.clone()).collect();
                    for hook in hooks {
                        hook()?;
                    }
                }
                Vec::new()
            }
            (NodeKind::Function { .. }, Some(_))
                if needed.as_ref().is_some_and(|needed| {
                    !node
                        .next
                        .iter()
                        .flatten()
                        .any(|n| needed.contains(&n.key()))
                }) =>
            {
                Vec::new()
            }
            (NodeKind::Function { backward, frees }, Some(g)) => {
                let (taken, guard);
                let f: &BackwardFn = if retain || !frees {
                    guard = lock(backward);
                    guard.as_ref().ok_or_else(|| freed(&node))?
                } else {
                    taken = lock(backward).take().ok_or_else(|| freed(&node))?;
                    &taken
                };
                let outputs = f(g, &node)?;
                if outputs.len() != node.next.len() {
                    return Err(internal(&node, "returned the wrong number of gradients"));
                }
                outputs
            }
        };
        for (i, next) in node.next.iter().enumerate() {
            let Some(next) = next else { continue };
            if let Some(Some(g)) = outputs.get(i) {
                check_grad(&node.inputs[i], g, node.name, "an input")?;
                accumulate(&mut buffers, next.key(), g.handle())?;
            }
            let count = pending.get_mut(&next.key()).expect("counted above");
            *count -= 1;
            if *count == 0 {
                ready.push(Arc::clone(next));
            }
        }
    }
    Ok(captured)
}

/// The keys of the nodes among `reachable` from which one of `targets` is reached (the
/// targets included), found in reverse topological order; `pending` holds each node's count
/// of incoming edges from `reachable`.
fn leading_to(
    reachable: &[Arc<Node>],
    pending: &HashMap<usize, usize>,
    targets: &[Arc<Node>],
) -> HashSet<usize> {
    let mut count = pending.clone();
    let mut ready: Vec<&Arc<Node>> = reachable.iter().filter(|n| count[&n.key()] == 0).collect();
    let mut order: Vec<&Arc<Node>> = Vec::with_capacity(reachable.len());
    while let Some(node) = ready.pop() {
        order.push(node);
        for next in node.next.iter().flatten() {
            let c = count.get_mut(&next.key()).expect("counted");
            *c -= 1;
            if *c == 0 {
                ready.push(next);
            }
        }
    }
    let mut needed = HashSet::new();
    for node in order.into_iter().rev() {
        let is_target = targets.iter().any(|t| Arc::ptr_eq(t, node));
        if is_target
            || node
                .next
                .iter()
                .flatten()
                .any(|n| needed.contains(&n.key()))
        {
            needed.insert(node.key());
        }
    }
    needed
}

/// Whether `node` is one of the roots (already on the stack).
fn next_seen(node: &Arc<Node>, roots: &[(Arc<Node>, AnyTensor)]) -> bool {
    roots.iter().any(|(r, _)| Arc::ptr_eq(r, node))
}

fn accumulate(buffers: &mut HashMap<usize, AnyTensor>, key: usize, g: AnyTensor) -> Result<()> {
    let sum = match buffers.remove(&key) {
        Some(old) => old.add(&g)?,
        None => g,
    };
    buffers.insert(key, sum);
    Ok(())
}

/// Adds `g` to a leaf's gradient (out of place, so a gradient the user holds never changes).
fn accumulate_leaf(slot: &super::node::GradSlot, g: AnyTensor, create_graph: bool) -> Result<()> {
    let g = if create_graph {
        g
    } else {
        let d = g.detached();
        drop(g);
        d
    };
    let mut slot = lock(slot);
    let new = match slot.take() {
        Some(old) => old.add(&g),
        None => g.owned(),
    };
    match new {
        Ok(new) => {
            *slot = Some(new);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn retain_into_slots(node: &Arc<Node>, g: &AnyTensor, create_graph: bool) -> Result<()> {
    let slots = lock(&node.retained);
    for slot in slots.iter().filter_map(std::sync::Weak::upgrade) {
        let g = if create_graph {
            g.handle()
        } else {
            g.detached()
        };
        let mut s = lock(&slot);
        *s = Some(match s.take() {
            Some(old) => old.add(&g)?,
            None => g.owned()?,
        });
    }
    Ok(())
}

fn check_grad(want: &GradInfo, g: &AnyTensor, op: &'static str, what: &str) -> Result<()> {
    if g.dtype() != want.dtype || g.shape() != want.shape.as_slice() {
        return Err(Error::new(
            ErrorKind::Autograd,
            op,
            format!(
                "the gradient for {what} of `{op}` has type {} and shape {:?}, but {what} has \
                 type {} and shape {:?}",
                g.dtype(),
                g.shape(),
                want.dtype,
                want.shape
            ),
        ));
    }
    Ok(())
}

fn freed(node: &Node) -> Error {
    Error::new(
        ErrorKind::Autograd,
        node.name,
        format!(
            "backward through the graph a second time: the tensors `{}` saved were freed \
             after the first backward; pass `retain_graph: true` to the first call if you \
             need to run backward twice",
            node.name
        ),
    )
}

fn internal(node: &Node, what: &str) -> Error {
    Error::new(
        ErrorKind::Autograd,
        node.name,
        format!("internal error: the backward of `{}` {what}", node.name),
    )
}
