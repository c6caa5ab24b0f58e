//! The gradient of the batched matrix product.

use super::some;
use crate::autograd::node::Saved;
use crate::autograd::record::{input, record};
use crate::dtype::Element;
use crate::tensor::DynTensor;

/// Records `y = a · b` for `a: [batch…, m, k]` and `b: [batch…, k, n]` of equal batch dims
/// (broadcasting is the `expand` views that made them): `∂a = g · bᵀ`, `∂b = aᵀ · g`.
/// Saves each operand only if the other one needs a gradient.
pub(crate) fn matmul<E: Element>(
    op: &'static str,
    a: &DynTensor<E>,
    b: &DynTensor<E>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let sa = crate::autograd::tracks(b).then(|| Saved::input(a));
    let sb = crate::autograd::tracks(a).then(|| Saved::input(b));
    record(op, y, vec![input(a), input(b)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let ga = match &sb {
            Some(b) if node.next[0].is_some() => {
                some(g.try_matmul(&b.get(node)?.try_transpose(-1, -2)?)?)
            }
            _ => None,
        };
        let gb = match &sa {
            Some(a) if node.next[1].is_some() => {
                some(a.get(node)?.try_transpose(-1, -2)?.try_matmul(&g)?)
            }
            _ => None,
        };
        Ok(vec![ga, gb])
    })
}
