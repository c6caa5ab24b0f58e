//! Gradients of the indexed ops. Reading at indices and adding at indices are adjoint:
//! the gradient of `index_select` adds the output's gradient into the selected slices
//! (`index_add`), that of `gather` into the gathered elements (`scatter_add`, repeated indices
//! accumulating), and the gradient of `scatter_add`/`index_add` with respect to the added
//! source reads the gradient back at those indices (`gather`). Each saves the index only.

use super::some;
use crate::autograd::node::Saved;
use crate::autograd::record::{input, record};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::DynTensor;

/// A zero tensor of `shape` on `like`'s device, as a stride-0 view of one element (the
/// scatter copies it into a new buffer anyway).
fn zeros<E: Element>(shape: &[usize], like: &DynTensor<E>) -> Result<DynTensor<E>> {
    let target: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    crate::ops::scalar_on(E::ZERO, like.device())?.try_expand(&target)
}

/// Records `y = x.index_select(d, index)`: the gradient is zeros with the output's gradient
/// added at the selected slices.
pub(crate) fn index_select<E: Element>(
    x: &DynTensor<E>,
    d: usize,
    index: &DynTensor<i64>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    read_at("index_select", x, index, y, move |base, idx, g| {
        base.try_index_add(d as isize, idx, g)
    })
}

/// Records `y = x.gather(d, index)`, made by op `op` (`gather`, or `sort`/`topk`, whose
/// values are `x` gathered at their indices): the gradient is zeros with the output's gradient
/// added at the gathered elements.
pub(crate) fn gather<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    d: usize,
    index: &DynTensor<i64>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    read_at(op, x, index, y, move |base, idx, g| {
        base.try_scatter_add(d as isize, idx, g)
    })
}

/// Records `y`, read from `x` at `index` by op `op`: the gradient is `add_at(zeros, index, g)`,
/// the adjoint that adds the output's gradient back where it was read. Saves the index only.
fn read_at<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    index: &DynTensor<i64>,
    y: DynTensor<E>,
    add_at: impl Fn(&DynTensor<E>, &DynTensor<i64>, &DynTensor<E>) -> Result<DynTensor<E>>
    + Send
    + Sync
    + 'static,
) -> DynTensor<E> {
    let saved = Saved::input(index);
    let shape = x.shape().to_vec();
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let gx = add_at(&zeros(&shape, &g)?, &saved.get(node)?, &g)?;
        Ok(vec![some(gx)])
    })
}

/// Records `y = base.scatter_add(d, index, src)` (also `index_add`, whose index is spread
/// over the source's shape), where `src` has the index's shape: the base's gradient is the
/// output's, the source's is the output's gradient read at the indices.
pub(crate) fn scatter_add<E: Element>(
    op: &'static str,
    base: &DynTensor<E>,
    d: usize,
    index: &DynTensor<i64>,
    src: &DynTensor<E>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let saved = Saved::input(index);
    record(
        op,
        y,
        vec![input(base), input(src)],
        true,
        move |g, node| {
            let g = g.into_typed::<E>(node.name)?;
            let gs = match node.next[1] {
                Some(_) => some(g.try_gather(d as isize, &saved.get(node)?)?),
                None => None,
            };
            let gb = match node.next[0] {
                Some(_) => some(g),
                None => None,
            };
            Ok(vec![gb, gs])
        },
    )
}
