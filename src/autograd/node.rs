//! The graph: one [`Node`] per recorded op, and the [`Meta`] a tracked tensor carries.
//!
//! # Invariants
//! - Edges point from an op's node to the nodes of its inputs (towards the leaves), so a
//!   graph is kept alive by the tensors at its end; dropping the loss frees it.
//! - A node never holds its own output with graph membership (that would be a cycle): a
//!   saved output is stored detached and re-attached to the node when it is used (see
//!   [`Saved`]).
//! - A leaf's gradient lives in its `Accumulate` node, which every op using the leaf points
//!   to; all handles of the leaf (`shallow_clone`) share it.
//! - A node's backward function is dropped after it ran unless the graph is retained, which
//!   frees the tensors it saved; running it again is an error, never a silent zero.

use super::any::AnyTensor;
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use crate::tensor::DynTensor;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

/// A gradient slot: empty until a backward pass writes it.
pub(crate) type GradSlot = Mutex<Option<AnyTensor>>;

/// The gradients of an op's inputs from the gradient of its output; `None` for an input that
/// gets no gradient. Runs with grad mode on only for `create_graph`.
pub(crate) type BackwardFn =
    Box<dyn Fn(AnyTensor, &Arc<Node>) -> Result<Vec<Option<AnyTensor>>> + Send + Sync>;

/// A function run after a backward pass added a leaf's gradient
/// ([`DynTensor::register_post_accumulate_grad_hook`]); its error ends the pass.
pub(crate) type GradHook = Arc<dyn Fn() -> Result<()> + Send + Sync>;

/// The type and shape a gradient must have.
#[derive(Clone, Debug)]
pub(crate) struct GradInfo {
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
}

pub(crate) enum NodeKind {
    /// A recorded op: computes its inputs' gradients.
    Function {
        backward: Mutex<Option<BackwardFn>>,
        /// Whether running it frees what it saved (false for ops that save nothing).
        frees: bool,
    },
    /// A leaf that requires grad: adds what arrives into `grad`, then runs `hooks` (each
    /// with its id, for removal).
    Accumulate {
        grad: GradSlot,
        hooks: Mutex<Vec<(u64, GradHook)>>,
    },
}

/// One recorded op (or a leaf's accumulator).
pub(crate) struct Node {
    /// The op's name, as in error messages (`exp`, `matmul`, …).
    pub(crate) name: &'static str,
    /// Per input: the node its gradient goes to (`None`: the input needs none).
    pub(crate) next: Vec<Option<Arc<Node>>>,
    /// Per input: the type and shape of its gradient.
    pub(crate) inputs: Vec<GradInfo>,
    /// The type and shape of this node's output (its incoming gradient).
    pub(crate) output: GradInfo,
    pub(crate) kind: NodeKind,
    /// Gradient slots of non-leaf tensors that called `retain_grad`.
    pub(crate) retained: Mutex<Vec<Weak<GradSlot>>>,
}

impl Node {
    pub(crate) fn accumulate(output: GradInfo) -> Arc<Node> {
        Arc::new(Node {
            name: "AccumulateGrad",
            next: Vec::new(),
            inputs: Vec::new(),
            output,
            kind: NodeKind::Accumulate {
                grad: Mutex::new(None),
                hooks: Mutex::new(Vec::new()),
            },
            retained: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn key(self: &Arc<Node>) -> usize {
        Arc::as_ptr(self) as usize
    }
}

/// Frees a graph without recursion: a chain of 100 000 ops would otherwise drop node after
/// node on the stack and overflow it. A node's edges go to a work list first; then its
/// backward function is dropped (the tensors it saved point to its edges' nodes, saved inputs,
/// or to none, saved outputs being detached, so that releases references without reaching a
/// count of zero); then each node on the list that nobody else holds is taken apart the same
/// way, one at a time. Dropping a taken-apart node runs this again with nothing left to walk.
impl Drop for Node {
    fn drop(&mut self) {
        let mut pending: Vec<Arc<Node>> = Vec::new();
        let take_apart = |node: &mut Node, pending: &mut Vec<Arc<Node>>| {
            pending.extend(std::mem::take(&mut node.next).into_iter().flatten());
            if let NodeKind::Function { backward, .. } = &mut node.kind {
                drop(
                    backward
                        .get_mut()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take(),
                );
            }
        };
        take_apart(self, &mut pending);
        while let Some(node) = pending.pop() {
            if let Some(mut owned) = Arc::into_inner(node) {
                take_apart(&mut owned, &mut pending);
            }
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a tensor that requires grad carries.
pub(crate) enum Meta {
    /// A tensor made by the user with `requires_grad_(true)`.
    Leaf { node: Arc<Node> },
    /// The output of a recorded op.
    Interior(Interior),
}

/// The graph membership of a tensor made by a recorded op. In-place ops rebase it: they
/// replace the node its gradient goes to, seen by every handle of the tensor.
pub(crate) struct Interior {
    history: Mutex<History>,
    retained: OnceLock<Arc<GradSlot>>,
    /// Set for a recorded view of a tensor that requires grad.
    pub(crate) view: Option<Box<ViewOf>>,
}

/// The node an interior tensor's gradient goes to, and the generation it belongs to: for a
/// tensor that is not a view, how many in-place ops rebased it; for a view, its base's
/// generation when the node was made (a view whose base was rebased since gets a fresh node).
struct History {
    grad_fn: Arc<Node>,
    generation: u64,
}

/// Where a view sits in the tensor it was made from; an in-place write through the view
/// rebases that base, and a rebased base makes its views' nodes stale.
pub(crate) struct ViewOf {
    /// The tensor viewed, following views of views to the first that is not a view.
    pub(crate) base: Arc<Meta>,
    /// The base's layout in the storage the view shares.
    pub(crate) base_layout: Layout,
    /// The view's own layout in that storage.
    layout: Layout,
    /// [`ViewOf::rel`], worked out when first needed (an in-place write, a rebased base):
    /// most views are never written through.
    rel: OnceLock<Option<Layout>>,
    /// Makes the node of the view from the base's current node (typed at the view's
    /// creation, where the element type is known).
    pub(crate) node_from_base: fn(&Arc<Node>, &ViewOf, &GradInfo) -> Arc<Node>,
}

impl ViewOf {
    pub(crate) fn new(
        base: Arc<Meta>,
        base_layout: Layout,
        layout: Layout,
        node_from_base: fn(&Arc<Node>, &ViewOf, &GradInfo) -> Arc<Node>,
    ) -> ViewOf {
        ViewOf {
            base,
            base_layout,
            layout,
            rel: OnceLock::new(),
            node_from_base,
        }
    }

    /// The view's elements as a view of a contiguous tensor of the base's shape
    /// ([`Layout::relative_to`]); `None` for an `as_strided` view that has no such form, or
    /// one whose indices collide other than along broadcast (stride-0) dims. An expanded
    /// view keeps its broadcast dims (its gradient is summed over them); writes into it are
    /// refused anyway.
    pub(crate) fn rel(&self) -> Option<&Layout> {
        self.rel
            .get_or_init(|| {
                self.layout
                    .relative_to(&self.base_layout)
                    .filter(|r| !r.collapse_broadcast().has_internal_overlap())
            })
            .as_ref()
    }
}

impl Meta {
    pub(crate) fn interior(grad_fn: Arc<Node>) -> Arc<Meta> {
        Meta::with_view(grad_fn, None)
    }

    /// An interior tensor made by `grad_fn`, a view when `view` is set.
    pub(crate) fn with_view(grad_fn: Arc<Node>, view: Option<ViewOf>) -> Arc<Meta> {
        let generation = view.as_ref().map_or(0, |v| v.base.current().1);
        Arc::new(Meta::Interior(Interior {
            history: Mutex::new(History {
                grad_fn,
                generation,
            }),
            retained: OnceLock::new(),
            view: view.map(Box::new),
        }))
    }

    /// The node a gradient for this tensor goes to.
    pub(crate) fn node(&self) -> Arc<Node> {
        match self {
            Meta::Leaf { node } => Arc::clone(node),
            Meta::Interior(i) => {
                let mut h = lock(&i.history);
                if let Some(v) = &i.view {
                    // Lock order: a view, then its base (a base is never a view).
                    let (base, generation) = v.base.current();
                    if generation != h.generation {
                        let fresh = (v.node_from_base)(&base, v, &h.grad_fn.output);
                        h.replace(fresh, &i.retained);
                        h.generation = generation;
                    }
                }
                Arc::clone(&h.grad_fn)
            }
        }
    }

    /// The name of the node that made this tensor's value (`None` for a leaf).
    pub(crate) fn grad_fn_name(&self) -> Option<&'static str> {
        match self {
            Meta::Leaf { .. } => None,
            Meta::Interior(_) => Some(self.node().name),
        }
    }

    /// The node and generation of a tensor that is not a view, read together.
    fn current(&self) -> (Arc<Node>, u64) {
        match self {
            Meta::Leaf { node } => (Arc::clone(node), 0),
            Meta::Interior(i) => {
                let h = lock(&i.history);
                (Arc::clone(&h.grad_fn), h.generation)
            }
        }
    }

    /// Where `grad()` reads: the leaf's accumulator or a retained slot.
    pub(crate) fn grad_slot(&self) -> Option<&GradSlot> {
        match self {
            Meta::Leaf { node } => match &node.kind {
                NodeKind::Accumulate { grad, .. } => Some(grad),
                NodeKind::Function { .. } => None,
            },
            Meta::Interior(i) => i.retained.get().map(|s| &**s),
        }
    }

    /// Makes an interior tensor keep its gradient in a slot of its own (`retain_grad`); a
    /// leaf has one already.
    pub(crate) fn retain(&self) {
        let Meta::Interior(i) = self else {
            return;
        };
        self.node(); // a view's node made current first
        // Under the history's lock, so that no rebase moves the node away in between.
        let h = lock(&i.history);
        let mut fresh = false;
        let slot = i.retained.get_or_init(|| {
            fresh = true;
            Arc::new(Mutex::new(None))
        });
        if fresh {
            lock(&h.grad_fn.retained).push(Arc::downgrade(slot));
        }
    }

    /// Continues this interior tensor from `node` after an in-place op wrote its new value:
    /// the tensor's later uses send their gradients to `node`. Returns the new generation.
    pub(crate) fn rebase(&self, node: Arc<Node>) -> u64 {
        let Meta::Interior(i) = self else {
            unreachable!("only interior tensors are rebased");
        };
        let mut h = lock(&i.history);
        h.replace(node, &i.retained);
        h.generation += 1;
        h.generation
    }

    /// Sets a view's node after an in-place write through it, current for its base's
    /// generation `generation`.
    pub(crate) fn rebase_view(&self, node: Arc<Node>, generation: u64) {
        let Meta::Interior(i) = self else {
            unreachable!("only interior tensors are rebased");
        };
        let mut h = lock(&i.history);
        h.replace(node, &i.retained);
        h.generation = generation;
    }
}

impl History {
    /// Replaces the node, moving a retained gradient slot over to the new one.
    fn replace(&mut self, node: Arc<Node>, retained: &OnceLock<Arc<GradSlot>>) {
        if let Some(slot) = retained.get() {
            let weak = Arc::downgrade(slot);
            lock(&self.grad_fn.retained).retain(|w| !w.ptr_eq(&weak));
            lock(&node.retained).push(weak);
        }
        self.grad_fn = node;
    }
}

/// A tensor an op's backward needs, with the storage version it had when saved.
pub(crate) struct Saved<E: Element> {
    tensor: DynTensor<E>,
    version: u64,
    /// Whether `tensor` is the op's own output (stored detached; see the invariants).
    is_output: bool,
}

impl<E: Element> Saved<E> {
    /// An input of the op, kept with its graph membership (for `create_graph`).
    pub(crate) fn input(t: &DynTensor<E>) -> Saved<E> {
        Saved {
            version: t.storage().version(),
            tensor: t.shallow_clone(),
            is_output: false,
        }
    }

    /// The op's output.
    pub(crate) fn output(t: &DynTensor<E>) -> Saved<E> {
        Saved {
            version: t.storage().version(),
            tensor: t.detach(),
            is_output: true,
        }
    }

    /// The saved tensor; an error if its storage was written since it was saved.
    pub(crate) fn get(&self, node: &Arc<Node>) -> Result<DynTensor<E>> {
        let now = self.tensor.storage().version();
        if now != self.version {
            return Err(Error::new(
                ErrorKind::Autograd,
                node.name,
                format!(
                    "a tensor needed to compute the gradient of `{}` was modified in place \
                     or moved to another device (version {now}, expected {}); compute out of \
                     place, clone the tensor before writing to it, or move a model before \
                     its forward pass",
                    node.name, self.version
                ),
            ));
        }
        if self.is_output && super::is_grad_enabled() {
            return Ok(self
                .tensor
                .shallow_clone()
                .with_meta(Some(Meta::interior(Arc::clone(node)))));
        }
        Ok(self.tensor.shallow_clone())
    }
}
