//! Kernels along one dim of a contiguous buffer seen as `[outer, n, inner]`: softmax,
//! log-softmax (from the input into a fresh buffer) and cumulative sums/products (in place on
//! a fresh buffer that already holds the input converted), in parallel over the `outer` slabs.
//!
//! With `inner == 1` each lane is a contiguous row; otherwise lanes are columns, processed in
//! blocks of adjacent columns so that the loops run along memory.

use super::convert::{as_type, vec_into};
use super::elementwise::map_new;
use super::host_buffer::{BorrowedOrOwned, HostBuffer};
use super::parallel::{for_each_chunk_mut, task_count};
use super::pool::take as take_buffer;
use super::vmath::vectorized;
use crate::dtype::Element;
use crate::dtype::{Native, NativeFloat, cast};
use crate::layout::Layout;
use std::mem::MaybeUninit;

const COLS: usize = 256;

/// Calls `f(start, slabs)` for runs of whole `[n, inner]` slabs of `buf` (`start`: the run's
/// first index), the runs split across the pool. One call per run, not per slab, so that a
/// kernel enters its vector instruction set once for many short lanes (softmax over the rows
/// of attention scores: 64 elements each).
pub(super) fn for_each_slabs<T: Send>(
    buf: &mut [T],
    n: usize,
    inner: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let slab = n * inner;
    let Some(slabs) = buf.len().checked_div(slab) else {
        return;
    };
    let tasks = task_count(buf.len(), 1 << 14).min(slabs);
    for_each_chunk_mut(buf, tasks, slab, |range, chunk| f(range.start, chunk));
}

/// Softmax (or log-softmax) along the middle axis of `src` into a fresh buffer of the same
/// length, subtracting the lane's maximum first so that `exp` cannot overflow. A lane of all
/// `-inf` gives NaN, as in PyTorch. `src` is read twice per lane (maximum, then `exp`) and
/// the output written once and read back once while it is still in cache, so no copy of
/// the input is made first.
pub fn softmax<T: NativeFloat>(src: &[T], n: usize, inner: usize, log: bool) -> HostBuffer<T> {
    let len = src.len();
    let slab = n * inner;
    let mut out = take_buffer::<T>(len);
    for_each_slabs(&mut out.spare_capacity_mut()[..len], n, inner, |at, d| {
        let s = &src[at..at + d.len()];
        vectorized(
            #[inline(always)]
            || {
                if inner == 1 {
                    for (s, d) in s.chunks_exact(n).zip(d.chunks_exact_mut(n)) {
                        softmax_row(s, d, log)
                    }
                } else {
                    for (s, d) in s.chunks_exact(slab).zip(d.chunks_exact_mut(slab)) {
                        softmax_slab(s, d, n, inner, log)
                    }
                }
            },
        )
    });
    // SAFETY: the runs cover `0..len` in whole slabs, and `softmax_slab` writes every element
    // of its slab (see there); with `n · inner == 0`, `len == 0`.
    unsafe { out.set_len(len) };
    out
}

/// Accumulators of a contiguous row's reductions: one AVX-512 register of `f32`.
pub(super) const ROW_LANES: usize = 16;

/// `x` folded with `combine` into [`ROW_LANES`] independent accumulators (lane `i` takes the
/// elements at `i` modulo the width), so that the loop vectorises.
#[inline(always)]
pub(super) fn fold_lanes<T: Native>(
    x: &[T],
    identity: T,
    combine: impl Fn(T, T) -> T,
) -> [T; ROW_LANES] {
    let mut acc = [identity; ROW_LANES];
    let chunks = x.chunks_exact(ROW_LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = combine(*a, v);
        }
    }
    for (a, &v) in acc.iter_mut().zip(rest) {
        *a = combine(*a, v);
    }
    acc
}

/// The [`ROW_LANES`] accumulators of a row folded into one with `combine`, halving with
/// arrays of fixed sizes: each step is one vector operation on the upper and lower halves,
/// where a loop over a shrinking width compiled to a chain of scalar extracts and inserts.
#[inline(always)]
pub(super) fn reduce_lanes<T: Native>(acc: [T; ROW_LANES], combine: impl Fn(T, T) -> T) -> T {
    let a: [T; 8] = std::array::from_fn(|i| combine(acc[i], acc[i + 8]));
    let a: [T; 4] = std::array::from_fn(|i| combine(a[i], a[i + 4]));
    let a: [T; 2] = std::array::from_fn(|i| combine(a[i], a[i + 2]));
    combine(a[0], a[1])
}

/// Softmax (or log-softmax) of one contiguous row into `dst` (same length; every element is
/// written). The maximum and the sum are folded into [`ROW_LANES`] independent accumulators
/// so that the loops vectorise. (Rows of attention scores are a few vectors long; folding
/// four rows side by side in one loop, to interleave their reductions, spilled the
/// accumulators to the stack and took 1.8× as long.)
#[inline(always)]
fn softmax_row<T: NativeFloat>(src: &[T], dst: &mut [MaybeUninit<T>], log: bool) {
    const L: usize = ROW_LANES;
    // The maximum by a plain compare-and-select (one instruction), not NaN-propagating
    // `nmax` (which doubled the kernel's time): a NaN in a row makes its sum NaN, and so every
    // output of the row, whichever value the maximum took.
    let max = |a: T, b: T| if a > b { a } else { b };
    let m = reduce_lanes(fold_lanes(src, T::LOWEST, max), max);
    let add = |a: T, b: T| a.nadd(b);
    if log {
        let sum = fold_lanes(src, T::ZERO, |a, x| a.nadd(x.nsub(m).exp()));
        let lse = reduce_lanes(sum, add).ln();
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(x.nsub(m).nsub(lse));
        }
        return;
    }
    let mut sum = [T::ZERO; L];
    let full = src.len() / L * L;
    let (src_full, src_rest) = src.split_at(full);
    let (dst_full, dst_rest) = dst.split_at_mut(full);
    for (c, d) in src_full.chunks_exact(L).zip(dst_full.chunks_exact_mut(L)) {
        for ((a, &x), d) in sum.iter_mut().zip(c).zip(d) {
            let e = x.nsub(m).exp();
            *a = a.nadd(e);
            d.write(e);
        }
    }
    for ((a, &x), d) in sum.iter_mut().zip(src_rest).zip(dst_rest) {
        let e = x.nsub(m).exp();
        *a = a.nadd(e);
        d.write(e);
    }
    // One division per row, then products, as PyTorch's vectorised softmax does.
    let r = T::ONE.ndiv(reduce_lanes(sum, add));
    for d in dst.iter_mut() {
        d.write(written(d).nmul(r));
    }
}

/// Reads back an output element written earlier in the same slab.
#[inline(always)]
fn written<T: Copy>(d: &MaybeUninit<T>) -> T {
    // SAFETY: only called on elements that `softmax_slab` wrote in an earlier pass over the
    // same lane or column block (pass 2 writes every element that pass 3 reads).
    unsafe { d.assume_init() }
}

/// [`softmax`] of one `[n, inner]` slab of `src` into `dst` (same length): writes every
/// element of `dst`.
#[inline(always)]
fn softmax_slab<T: NativeFloat>(
    src: &[T],
    dst: &mut [MaybeUninit<T>],
    n: usize,
    inner: usize,
    log: bool,
) {
    for c0 in (0..inner).step_by(COLS) {
        let w = COLS.min(inner - c0);
        let mut m = [T::LOWEST; COLS];
        let mut s = [T::ZERO; COLS];
        for i in 0..n {
            let row = &src[i * inner + c0..i * inner + c0 + w];
            for (m, &x) in m[..w].iter_mut().zip(row) {
                *m = m.nmax(x);
            }
        }
        for i in 0..n {
            let at = i * inner + c0..i * inner + c0 + w;
            let (row, out) = (&src[at.clone()], &mut dst[at]);
            for (((s, &m), &x), d) in s[..w].iter_mut().zip(&m[..w]).zip(row).zip(out) {
                let e = x.nsub(m).exp();
                *s = s.nadd(e);
                d.write(e);
            }
        }
        for i in 0..n {
            let at = i * inner + c0..i * inner + c0 + w;
            let (row, out) = (&src[at.clone()], &mut dst[at]);
            for (((&s, &m), &x), d) in s[..w].iter().zip(&m[..w]).zip(row).zip(out) {
                d.write(if log {
                    x.nsub(m).nsub(s.ln())
                } else {
                    written(d).ndiv(s)
                });
            }
        }
    }
}

/// Inclusive scan along the middle axis with `combine`, accumulating in `W` (`f64` for float
/// outputs, `i64` for integer ones) and rounding each partial result to `O`.
pub fn scan<O: Element, W: Native>(
    buf: &mut [O],
    n: usize,
    inner: usize,
    identity: W,
    combine: impl Fn(W, W) -> W + Sync,
) {
    let len = n * inner;
    for_each_slabs(buf, n, inner, |_, slabs| {
        for slab in slabs.chunks_exact_mut(len) {
            scan_slab(slab, n, inner, identity, &combine)
        }
    });
}

/// [`scan`] of one `[n, inner]` slab, in place.
fn scan_slab<O: Element, W: Native>(
    slab: &mut [O],
    n: usize,
    inner: usize,
    identity: W,
    combine: &impl Fn(W, W) -> W,
) {
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
}

/// `(n, inner)` of `sizes` seen as `[outer, n, inner]` around `dim` (a 0-d layout is one lane
/// of one element).
pub(super) fn around(sizes: &[usize], dim: usize) -> (usize, usize) {
    if sizes.is_empty() {
        (1, 1)
    } else {
        (sizes[dim], sizes[dim + 1..].iter().product())
    }
}

/// Softmax (or log-softmax) of `layout` over `src` along `dim`, computed in `T`. A contiguous
/// input already of type `T` is read where it is; any other is gathered (and converted) first.
pub fn softmax_op<E: Element, T: NativeFloat>(
    src: &[E],
    layout: &Layout,
    dim: usize,
    log: bool,
) -> HostBuffer<E> {
    let (n, inner) = around(layout.sizes(), dim);
    vec_into(softmax(&contiguous::<E, T>(src, layout), n, inner, log))
}

/// `layout` over `src` as a contiguous row-major slice of `T`: borrowed where it already is
/// one, else gathered (and converted) into a new buffer.
pub(super) fn contiguous<'a, E: Element, T: Element>(
    src: &'a [E],
    layout: &Layout,
) -> BorrowedOrOwned<'a, T> {
    let (start, len) = (layout.offset(), layout.numel());
    match as_type::<E, T>(src) {
        Some(s) if layout.is_contiguous() && len > 0 => {
            BorrowedOrOwned::Borrowed(&s[start..start + len])
        }
        _ => BorrowedOrOwned::Owned(map_new::<E, T, T, T, false>(src, layout, |x| x)),
    }
}

/// [`Backend::softmax_backward`](crate::backend::Backend::softmax_backward) on the CPU:
/// `y` and `g` seen through `ly` and `lg` (same sizes), computed in `T`. Contiguous operands
/// already of type `T` are read where they are; others are gathered (and converted) first.
pub fn softmax_backward_op<E: Element, T: NativeFloat>(
    y: &[E],
    ly: &Layout,
    g: &[E],
    lg: &Layout,
    dim: usize,
    log: bool,
) -> HostBuffer<E> {
    let (n, inner) = around(ly.sizes(), dim);
    let len = ly.numel();
    let (y, g) = (contiguous::<E, T>(y, ly), contiguous::<E, T>(g, lg));
    let slab = n * inner;
    let mut out = take_buffer::<T>(len);
    for_each_slabs(&mut out.spare_capacity_mut()[..len], n, inner, |at, d| {
        let (y, g) = (&y[at..at + d.len()], &g[at..at + d.len()]);
        vectorized(
            #[inline(always)]
            || {
                let slabs = y
                    .chunks_exact(slab)
                    .zip(g.chunks_exact(slab))
                    .zip(d.chunks_exact_mut(slab));
                // `log` as a constant (a run-time flag inside the loops kept them scalar), and
                // `for` loops, not `for_each`: `Zip::fold` is compiled apart from this
                // vector-instruction context, at the baseline.
                if log {
                    for ((y, g), d) in slabs {
                        softmax_backward_slab::<T, true>(y, g, d, n, inner)
                    }
                } else {
                    for ((y, g), d) in slabs {
                        softmax_backward_slab::<T, false>(y, g, d, n, inner)
                    }
                }
            },
        )
    });
    // SAFETY: the runs cover `0..len` in whole slabs and `softmax_backward_slab` writes every
    // element of its slab; with `n · inner == 0`, `len == 0`.
    unsafe { out.set_len(len) };
    vec_into(out)
}

/// The softmax gradient of one `[n, inner]` slab into `dst` (every element written): per
/// lane `s = Σ g·y` (`Σ g` with `LOG`), then `y·(g − s)` (`g − exp(y)·s`). A contiguous
/// lane (`inner == 1`) folds its sum in [`ROW_LANES`] accumulators; columns go in blocks.
#[inline(always)]
fn softmax_backward_slab<T: NativeFloat, const LOG: bool>(
    y: &[T],
    g: &[T],
    dst: &mut [MaybeUninit<T>],
    n: usize,
    inner: usize,
) {
    let term = |y: T, g: T| if LOG { g } else { g.nmul(y) };
    let grad = |y: T, g: T, s: T| {
        if LOG {
            g.nsub(y.exp().nmul(s))
        } else {
            y.nmul(g.nsub(s))
        }
    };
    if inner == 1 {
        let mut acc = [T::ZERO; ROW_LANES];
        let (yc, gc) = (y.chunks_exact(ROW_LANES), g.chunks_exact(ROW_LANES));
        let (yr, gr) = (yc.remainder(), gc.remainder());
        for (yc, gc) in yc.zip(gc) {
            for ((a, &y), &g) in acc.iter_mut().zip(yc).zip(gc) {
                *a = a.nadd(term(y, g));
            }
        }
        for ((a, &y), &g) in acc.iter_mut().zip(yr).zip(gr) {
            *a = a.nadd(term(y, g));
        }
        let s = reduce_lanes(acc, |a, b| a.nadd(b));
        for ((d, &y), &g) in dst.iter_mut().zip(y).zip(g) {
            d.write(grad(y, g, s));
        }
        return;
    }
    for c0 in (0..inner).step_by(COLS) {
        let w = COLS.min(inner - c0);
        let mut s = [T::ZERO; COLS];
        for i in 0..n {
            let at = i * inner + c0..i * inner + c0 + w;
            for ((s, &y), &g) in s[..w].iter_mut().zip(&y[at.clone()]).zip(&g[at]) {
                *s = s.nadd(term(y, g));
            }
        }
        for i in 0..n {
            let at = i * inner + c0..i * inner + c0 + w;
            let (y, g, d) = (&y[at.clone()], &g[at.clone()], &mut dst[at]);
            for (((d, &s), &y), &g) in d.iter_mut().zip(&s[..w]).zip(y).zip(g) {
                d.write(grad(y, g, s));
            }
        }
    }
}

/// Running sums (or products) of `layout` over `src` along `dim`, stored as `O`: `f64`
/// accumulators for a float `O`, wrapping `i64` ones otherwise.
pub fn scan_op<E: Element, O: Element>(
    prod: bool,
    src: &[E],
    layout: &Layout,
    dim: usize,
) -> HostBuffer<O> {
    let (n, inner) = around(layout.sizes(), dim);
    let mut buf = map_new::<E, O, O, O, false>(src, layout, |x| x);
    if O::DTYPE.is_float() {
        if prod {
            scan(&mut buf, n, inner, 1.0f64, |a, b| a * b);
        } else {
            scan(&mut buf, n, inner, 0.0f64, |a, b| a + b);
        }
    } else if prod {
        scan(&mut buf, n, inner, 1i64, |a, b| a.nmul(b));
    } else {
        scan(&mut buf, n, inner, 0i64, |a, b| a.nadd(b));
    }
    buf
}
