//! The gradient of `conv2d`, recorded as one node over the input, the weight and the bias.

use super::some;
use crate::autograd::node::Saved;
use crate::autograd::record::{input, record, tracks};
use crate::dtype::Float;
use crate::ops::ConvPlan;
use crate::tensor::DynTensor;

/// Records `y = conv2d(x, weight) + bias` as computed by `plan`. Saves the input only if the
/// weight needs a gradient, and the weight only if the input does: the backward pass
/// computes the windows of the input again, a piece of images at a time, rather than keeping
/// them (`crate::ops::conv2d_grads`).
pub(crate) fn conv2d<E: Float>(
    x: &DynTensor<E>,
    weight: &DynTensor<E>,
    bias: Option<&DynTensor<E>>,
    plan: ConvPlan,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let sx = tracks(weight).then(|| Saved::input(x));
    let sw = tracks(x).then(|| Saved::input(weight));
    let mut inputs = vec![input(x), input(weight)];
    inputs.extend(bias.map(input));
    record("conv2d", y, inputs, true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let wanted = |i: usize| node.next.get(i).is_some_and(Option::is_some);
        let x = match &sx {
            Some(s) if wanted(1) => Some(s.get(node)?),
            _ => None,
        };
        let w = match &sw {
            Some(s) if wanted(0) => Some(s.get(node)?),
            _ => None,
        };
        let [gx, gw, gb] = crate::ops::conv2d_grads(&g, x.as_ref(), w.as_ref(), wanted(2), &plan)?;
        let mut grads = vec![gx.and_then(some), gw.and_then(some)];
        if node.next.len() == 3 {
            grads.push(gb.and_then(some));
        }
        Ok(grads)
    })
}
