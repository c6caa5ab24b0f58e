//! Kernels along one dim of a contiguous buffer seen as `[outer, n, inner]`: softmax,
//! log-softmax and cumulative sums/products. They work in place on a fresh buffer that already
//! holds the input converted to the compute type, in parallel over the `outer` slabs.
//!
//! With `inner == 1` each lane is a contiguous row; otherwise lanes are columns, processed in
//! blocks of adjacent columns so that the loops run along memory.

use super::num::{Native, NativeFloat, cast};
use super::parallel::{for_each_chunk_mut, task_count};
use super::reduce::{max_slice, sum_slice};
use super::vmath::vectorized;
use crate::dtype::Element;

const COLS: usize = 256;

fn for_each_slab<T: Send>(buf: &mut [T], n: usize, inner: usize, f: impl Fn(&mut [T]) + Sync) {
    let slab = n * inner;
    if slab == 0 {
        return;
    }
    let tasks = task_count(buf.len(), 1 << 14).min(buf.len() / slab);
    for_each_chunk_mut(buf, tasks, slab, |_, chunk| {
        chunk.chunks_mut(slab).for_each(&f)
    });
}

/// Softmax (or log-softmax) along the middle axis, subtracting the lane's maximum first so
/// that `exp` cannot overflow. A lane of all `-inf` gives NaN, as in PyTorch.
pub(crate) fn softmax<T: NativeFloat>(buf: &mut [T], n: usize, inner: usize, log: bool) {
    for_each_slab(buf, n, inner, |slab| {
        vectorized(
            #[inline(always)]
            || softmax_slab(slab, n, inner, log),
        )
    });
}

/// [`softmax`] of one `[n, inner]` slab.
#[inline(always)]
fn softmax_slab<T: NativeFloat>(slab: &mut [T], n: usize, inner: usize, log: bool) {
    {
        if inner == 1 {
            let m = max_slice(slab);
            if log {
                let mut e = vec![T::ZERO; slab.len()];
                for (e, &x) in e.iter_mut().zip(slab.iter()) {
                    *e = x.nsub(m).exp();
                }
                let lse = sum_slice(&e).ln();
                for x in slab.iter_mut() {
                    *x = x.nsub(m).nsub(lse);
                }
            } else {
                for x in slab.iter_mut() {
                    *x = x.nsub(m).exp();
                }
                let s = sum_slice(slab);
                for x in slab.iter_mut() {
                    *x = x.ndiv(s);
                }
            }
            return;
        }
        for c0 in (0..inner).step_by(COLS) {
            let w = COLS.min(inner - c0);
            let mut m = [T::LOWEST; COLS];
            let mut s = [T::ZERO; COLS];
            for i in 0..n {
                let row = &slab[i * inner + c0..i * inner + c0 + w];
                for (m, &x) in m[..w].iter_mut().zip(row) {
                    *m = m.nmax(x);
                }
            }
            for i in 0..n {
                let row = &mut slab[i * inner + c0..i * inner + c0 + w];
                for ((s, &m), x) in s[..w].iter_mut().zip(&m[..w]).zip(row.iter_mut()) {
                    let e = x.nsub(m).exp();
                    *s = s.nadd(e);
                    if !log {
                        *x = e;
                    }
                }
            }
            for i in 0..n {
                let row = &mut slab[i * inner + c0..i * inner + c0 + w];
                for ((&s, &m), x) in s[..w].iter().zip(&m[..w]).zip(row.iter_mut()) {
                    *x = if log {
                        x.nsub(m).nsub(s.ln())
                    } else {
                        x.ndiv(s)
                    };
                }
            }
        }
    }
}

/// Inclusive scan along the middle axis with `combine`, accumulating in `W` (`f64` for float
/// outputs, `i64` for integer ones) and rounding each partial result to `O`.
pub(crate) fn scan<O: Element, W: Native>(
    buf: &mut [O],
    n: usize,
    inner: usize,
    identity: W,
    combine: impl Fn(W, W) -> W + Sync,
) {
    for_each_slab(buf, n, inner, |slab| {
        if inner == 1 {
            let mut acc = identity;
            for x in slab.iter_mut() {
                acc = combine(acc, cast::<O, W>(*x));
                *x = cast::<W, O>(acc);
            }
            return;
        }
        for c0 in (0..inner).step_by(COLS) {
            let w = COLS.min(inner - c0);
            let mut acc = [identity; COLS];
            for i in 0..n {
                let row = &mut slab[i * inner + c0..i * inner + c0 + w];
                for (a, x) in acc[..w].iter_mut().zip(row.iter_mut()) {
                    *a = combine(*a, cast::<O, W>(*x));
                    *x = cast::<W, O>(*a);
                }
            }
        }
    });
}
