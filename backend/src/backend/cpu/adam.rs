//! One Adam or AdamW step in place ([`AdamStep`]): the parameter, its moments (and AMSGrad's
//! running maximum) updated in one pass, where the op-by-op update took about fourteen
//! passes and five temporaries per parameter.
//!
//! # Invariants
//! - The parameter and its gradient are contiguous runs of `n` elements; each state buffer
//!   holds exactly `n` (the caller checks, see `Cpu::adam_`).
//! - Element `i` of every buffer is read and written by one task only, and its update does
//!   not depend on any other element: the split across the pool cannot change results.
//! - Computed in the compute type `T` and rounded once per stored value; for `f32` and `f64`
//!   (`T` the element type) the arithmetic is the op-by-op update's, in its order, so the
//!   results agree bit for bit.

use super::parallel::{for_each_with_caller, task_count};
use super::vmath::vectorized;
use crate::backend::op::{AdamScalars, AdamStep};
use crate::dtype::{Element, NativeFloat, cast};

/// The step over `p`, `g`, `m`, `v` (and `vmax` with `step.amsgrad`), all of the same length.
pub fn adam<E: Element, T: NativeFloat>(
    p: &mut [E],
    g: &[E],
    m: &mut [E],
    v: &mut [E],
    vmax: Option<&mut [E]>,
    step: &AdamStep,
) {
    let n = p.len();
    debug_assert!(g.len() == n && m.len() == n && v.len() == n);
    if n == 0 {
        return;
    }
    let s = step.scalars::<T>();
    let l2 = step.l2 != 0.0;
    let per = n.div_ceil(task_count(n, 1 << 14));
    let vmax: Vec<Option<&mut [E]>> = match vmax {
        Some(x) => x.chunks_mut(per).map(Some).collect(),
        None => (0..n.div_ceil(per)).map(|_| None).collect(),
    };
    let chunks = p.chunks_mut(per).zip(g.chunks(per));
    let chunks = chunks
        .zip(m.chunks_mut(per))
        .zip(v.chunks_mut(per))
        .zip(vmax);
    for_each_with_caller(chunks, |((((p, g), m), v), vmax)| {
        vectorized(
            #[inline(always)]
            || match (l2, vmax) {
                (false, None) => run::<E, T, false>(p, g, m, v, &s),
                (true, None) => run::<E, T, true>(p, g, m, v, &s),
                (false, Some(x)) => run_ams::<E, T, false>(p, g, m, v, x, &s),
                (true, Some(x)) => run_ams::<E, T, true>(p, g, m, v, x, &s),
            },
        )
    });
}

/// The step without AMSGrad over one chunk.
#[inline(always)]
fn run<E: Element, T: NativeFloat, const L2: bool>(
    p: &mut [E],
    g: &[E],
    m: &mut [E],
    v: &mut [E],
    s: &AdamScalars<T>,
) {
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m).zip(v) {
        let (p1, m1, v1, _) = s.update::<L2, false>(cast(*p), cast(g), cast(*m), cast(*v), T::ZERO);
        (*p, *m, *v) = (cast(p1), cast(m1), cast(v1));
    }
}

/// The step with AMSGrad's running maximum `vmax` over one chunk.
#[inline(always)]
fn run_ams<E: Element, T: NativeFloat, const L2: bool>(
    p: &mut [E],
    g: &[E],
    m: &mut [E],
    v: &mut [E],
    vmax: &mut [E],
    s: &AdamScalars<T>,
) {
    for ((((p, &g), m), v), x) in p.iter_mut().zip(g).zip(m).zip(v).zip(vmax) {
        let (p1, m1, v1, x1) =
            s.update::<L2, true>(cast(*p), cast(g), cast(*m), cast(*v), cast(*x));
        (*p, *m, *v, *x) = (cast(p1), cast(m1), cast(v1), cast(x1));
    }
}
