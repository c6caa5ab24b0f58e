//! Normalisation along one dim of a contiguous buffer seen as `[outer, n, inner]`, forward
//! and backward: the kernels of layer norm (`center`) and RMS norm (without).
//!
//! Forward, per lane of `n` entries: `μ = mean(x)` (0 without centring),
//! `r = 1 / sqrt(mean((x − μ)²) + eps)` (the biased variance), `y = (x − μ) · r`; the lane's
//! `r` is returned too, for the gradient. Backward, from the output `y`, its gradient `g` and
//! `r`: `gx = r · (g − mean(g) − y · mean(g · y))` (without centring no `mean(g)` term).
//!
//! # Invariants
//! - Every output element is written exactly once (the buffers are taken uninitialised).
//! - A lane is read in two passes for its moments (the mean first, then the squared
//!   deviations, which is as accurate as the composite ops it replaces) and once more to
//!   write; a contiguous lane (`inner == 1`) folds into [`ROW_LANES`] accumulators so that
//!   the loops vectorise, columns (`inner > 1`) go in blocks of [`COLS`] adjacent lanes so
//!   that the loops run along memory.
//! - Each lane is computed in `T` (the compute type: `f32` for `f16`/`bf16`) by one thread;
//!   the split across the pool is by whole slabs, so results do not depend on the threads.

use super::convert::vec_into;
use super::host_buffer::HostBuffer;
use super::parallel::for_each_unit_run_pair;
use super::pool::take as take_buffer;
use super::scan::{ROW_LANES, around, contiguous, fold_lanes, for_each_slabs, reduce_lanes};
use super::vmath::vectorized;
use crate::dtype::{Element, NativeFloat};
use crate::layout::Layout;
use std::mem::MaybeUninit;

/// Lanes per column block when `inner > 1`.
const COLS: usize = 64;

/// The forward pass on the CPU: `(y, r)` for `layout` over `src` normalised along `dim` (of
/// size > 0), computed in `T`. `y` is row-major in the layout's sizes; `r` holds one entry per lane,
/// row-major in the sizes with `dim`'s set to 1.
pub fn normalize_op<E: Element, T: NativeFloat>(
    src: &[E],
    layout: &Layout,
    dim: usize,
    eps: f64,
    center: bool,
) -> (HostBuffer<E>, HostBuffer<E>) {
    let (n, inner) = around(layout.sizes(), dim);
    let x = contiguous::<E, T>(src, layout);
    let len = x.len();
    if len == 0 {
        // No lanes (`n > 0`: the caller checked).
        return (HostBuffer::new(), HostBuffer::new());
    }
    let lanes = len / n;
    let mut y = take_buffer::<T>(len);
    let mut r = take_buffer::<T>(lanes);
    let eps = T::c(eps);
    let slab = n * inner;
    let ys = &mut y.spare_capacity_mut()[..len];
    let rs = &mut r.spare_capacity_mut()[..lanes];
    for_each_unit_run_pair(ys, slab, rs, inner, |slabs, yd, rd| {
        let xs = &x[slabs.start * slab..][..yd.len()];
        vectorized(
            #[inline(always)]
            || {
                let slabs = xs.chunks_exact(slab).zip(yd.chunks_exact_mut(slab));
                let slabs = slabs.zip(rd.chunks_exact_mut(inner));
                // `center` as a constant, and `for` loops (see `scan::softmax_backward_op`).
                if center {
                    for ((x, y), r) in slabs {
                        forward_slab::<T, true>(x, y, r, n, inner, eps)
                    }
                } else {
                    for ((x, y), r) in slabs {
                        forward_slab::<T, false>(x, y, r, n, inner, eps)
                    }
                }
            },
        )
    });
    // SAFETY: the chunks cover `0..len` and `0..lanes` in whole slabs (`lanes == slabs ·
    // inner`, `len == slabs · slab`), and `forward_slab` writes every element of its slab and
    // of its `inner` entries of `r`.
    unsafe {
        y.set_len(len);
        r.set_len(lanes);
    }
    (vec_into(y), vec_into(r))
}

/// The forward pass of one `[n, inner]` slab (`n > 0`): writes every element of `y` and the
/// `inner` entries of `r`.
#[inline(always)]
fn forward_slab<T: NativeFloat, const CENTER: bool>(
    x: &[T],
    y: &mut [MaybeUninit<T>],
    r: &mut [MaybeUninit<T>],
    n: usize,
    inner: usize,
    eps: T,
) {
    let count = T::c(n as f64);
    let add = |a: T, b: T| a.nadd(b);
    let rstd = |sq: T| T::ONE.ndiv(sq.ndiv(count).nadd(eps).sqrt());
    if inner == 1 {
        let mean = if CENTER {
            reduce_lanes(fold_lanes(x, T::ZERO, add), add).ndiv(count)
        } else {
            T::ZERO
        };
        let sq = fold_lanes(x, T::ZERO, |a, v| {
            let d = v.nsub(mean);
            a.nadd(d.nmul(d))
        });
        let rs = rstd(reduce_lanes(sq, add));
        for (d, &v) in y.iter_mut().zip(x) {
            d.write(v.nsub(mean).nmul(rs));
        }
        r[0].write(rs);
        return;
    }
    for c0 in (0..inner).step_by(COLS) {
        let w = COLS.min(inner - c0);
        let cols = |i: usize| i * inner + c0..i * inner + c0 + w;
        let mut mean = [T::ZERO; COLS];
        if CENTER {
            for i in 0..n {
                for (m, &v) in mean[..w].iter_mut().zip(&x[cols(i)]) {
                    *m = m.nadd(v);
                }
            }
            for m in &mut mean[..w] {
                *m = m.ndiv(count);
            }
        }
        let mut sq = [T::ZERO; COLS];
        for i in 0..n {
            for ((s, &m), &v) in sq[..w].iter_mut().zip(&mean[..w]).zip(&x[cols(i)]) {
                let d = v.nsub(m);
                *s = s.nadd(d.nmul(d));
            }
        }
        for s in &mut sq[..w] {
            *s = rstd(*s);
        }
        for i in 0..n {
            let at = cols(i);
            let (x, y) = (&x[at.clone()], &mut y[at]);
            for (((d, &v), &m), &rs) in y.iter_mut().zip(x).zip(&mean[..w]).zip(&sq[..w]) {
                d.write(v.nsub(m).nmul(rs));
            }
        }
        for (d, &rs) in r[c0..c0 + w].iter_mut().zip(&sq[..w]) {
            d.write(rs);
        }
    }
}

/// The backward pass on the CPU: `gx` from the output `y` and its gradient `g` (layouts of
/// the same sizes) and the forward's `r` (its layout has those sizes with `dim`'s set to 1),
/// computed in `T`; row-major in the sizes.
#[allow(clippy::too_many_arguments)]
pub fn normalize_backward_op<E: Element, T: NativeFloat>(
    y: &[E],
    ly: &Layout,
    g: &[E],
    lg: &Layout,
    r: &[E],
    lr: &Layout,
    dim: usize,
    center: bool,
) -> HostBuffer<E> {
    let (n, inner) = around(ly.sizes(), dim);
    let len = ly.numel();
    let (y, g, r) = (
        contiguous::<E, T>(y, ly),
        contiguous::<E, T>(g, lg),
        contiguous::<E, T>(r, lr),
    );
    let slab = n * inner;
    let mut out = take_buffer::<T>(len);
    for_each_slabs(&mut out.spare_capacity_mut()[..len], n, inner, |at, d| {
        let (y, g) = (&y[at..at + d.len()], &g[at..at + d.len()]);
        let r = &r[at / slab * inner..];
        vectorized(
            #[inline(always)]
            || {
                let slabs = y.chunks_exact(slab).zip(g.chunks_exact(slab));
                let slabs = slabs
                    .zip(d.chunks_exact_mut(slab))
                    .zip(r.chunks_exact(inner));
                if center {
                    for (((y, g), d), r) in slabs {
                        backward_slab::<T, true>(y, g, r, d, n, inner)
                    }
                } else {
                    for (((y, g), d), r) in slabs {
                        backward_slab::<T, false>(y, g, r, d, n, inner)
                    }
                }
            },
        )
    });
    // SAFETY: the runs cover `0..len` in whole slabs and `backward_slab` writes every element
    // of its slab; with `n · inner == 0`, `len == 0`.
    unsafe { out.set_len(len) };
    vec_into(out)
}

/// The gradient of one `[n, inner]` slab into `dst` (every element written), `r` the slab's
/// `inner` entries.
#[inline(always)]
fn backward_slab<T: NativeFloat, const CENTER: bool>(
    y: &[T],
    g: &[T],
    r: &[T],
    dst: &mut [MaybeUninit<T>],
    n: usize,
    inner: usize,
) {
    let count = T::c(n as f64);
    let grad = |y: T, g: T, r: T, mg: T, mgy: T| r.nmul(g.nsub(mg).nsub(y.nmul(mgy)));
    if inner == 1 {
        let (mut sg, mut sgy) = ([T::ZERO; ROW_LANES], [T::ZERO; ROW_LANES]);
        let (yc, gc) = (y.chunks_exact(ROW_LANES), g.chunks_exact(ROW_LANES));
        let (yr, gr) = (yc.remainder(), gc.remainder());
        for (yc, gc) in yc.zip(gc) {
            for (((a, b), &y), &g) in sg.iter_mut().zip(&mut sgy).zip(yc).zip(gc) {
                *a = a.nadd(g);
                *b = b.nadd(g.nmul(y));
            }
        }
        for (((a, b), &y), &g) in sg.iter_mut().zip(&mut sgy).zip(yr).zip(gr) {
            *a = a.nadd(g);
            *b = b.nadd(g.nmul(y));
        }
        let add = |a: T, b: T| a.nadd(b);
        let mg = if CENTER {
            reduce_lanes(sg, add).ndiv(count)
        } else {
            T::ZERO
        };
        let mgy = reduce_lanes(sgy, add).ndiv(count);
        for ((d, &y), &g) in dst.iter_mut().zip(y).zip(g) {
            d.write(grad(y, g, r[0], mg, mgy));
        }
        return;
    }
    for c0 in (0..inner).step_by(COLS) {
        let w = COLS.min(inner - c0);
        let cols = |i: usize| i * inner + c0..i * inner + c0 + w;
        let (mut mg, mut mgy) = ([T::ZERO; COLS], [T::ZERO; COLS]);
        for i in 0..n {
            let (y, g) = (&y[cols(i)], &g[cols(i)]);
            for (((a, b), &y), &g) in mg[..w].iter_mut().zip(&mut mgy[..w]).zip(y).zip(g) {
                *a = a.nadd(g);
                *b = b.nadd(g.nmul(y));
            }
        }
        for (a, b) in mg[..w].iter_mut().zip(&mut mgy[..w]) {
            *a = if CENTER { a.ndiv(count) } else { T::ZERO };
            *b = b.ndiv(count);
        }
        let r = &r[c0..c0 + w];
        for i in 0..n {
            let at = cols(i);
            let (y, g, d) = (&y[at.clone()], &g[at.clone()], &mut dst[at]);
            let stats = mg[..w].iter().zip(&mgy[..w]).zip(r);
            for (((d, &y), &g), ((&mg, &mgy), &r)) in d.iter_mut().zip(y).zip(g).zip(stats) {
                d.write(grad(y, g, r, mg, mgy));
            }
        }
    }
}
