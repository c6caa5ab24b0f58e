//! Sliding windows over the last two dims: `unfold2d` (im2col), its adjoint `fold2d` (col2im)
//! and max pooling, each one pass writing a fresh row-major buffer, split across the pool by
//! planes (one leading index, or one leading index and tap for `unfold2d`).
//!
//! # Invariants
//! - the caller has checked that the window fits the input (`Window2d::output_size`), so
//!   every coordinate [`Window2d::source`] gives is inside the input and every read below is
//!   inside the view the layouts describe (and bounds-checked regardless), but for the flat
//!   paths' masked runs ([`FlatTaps`]): those read whole shifted planes, inside the buffer,
//!   and keep only the entries inside the view;
//! - `fold2d` adds each plane's taps into accumulators of the compute type in `(KH, KW, OH,
//!   OW)` order; a tap `(a, b)` reaches an input element from at most one window, so every
//!   element sums its contributions in `(a, b)` order, as the CUDA kernel (one thread per
//!   element, looping over `(a, b)`) does: both backends round the same sums.

use super::host_buffer::HostBuffer;
use super::parallel::{for_each_row_chunk, for_each_unit_run_pair};
use super::pointwise::Segments;
use super::pool::take as take_buffer;
use super::vmath::vectorized;
use crate::dtype::{Element, Kernel, Native, cast};
use crate::layout::{Coalesced, Layout, Window2d};
use std::hint::select_unpredictable;
use std::mem::MaybeUninit;
use std::ops::Range;

/// The leading dims of a layout whose last `inner` dims the kernel walks itself: their sizes,
/// strides, and the number of leading positions.
fn lead(layout: &Layout, inner: usize) -> (&[usize], &[usize], usize) {
    let r = layout.rank() - inner;
    let sizes = &layout.sizes()[..r];
    (sizes, &layout.strides()[..r], sizes.iter().product())
}

/// An input `[lead…, H, W]` seen through a window: its last two sizes and strides, the
/// window's positions `(OH, OW)`, and its leading dims (see [`lead`]).
struct Input<'a> {
    hw: (usize, usize),
    strides: (usize, usize),
    out: (usize, usize),
    lead: (&'a [usize], &'a [usize], usize),
}

impl<'a> Input<'a> {
    fn of(layout: &'a Layout, window: &Window2d) -> Self {
        let r = layout.rank();
        let (h, w) = (layout.sizes()[r - 2], layout.sizes()[r - 1]);
        Input {
            hw: (h, w),
            strides: (layout.strides()[r - 2], layout.strides()[r - 1]),
            out: window
                .output_size(h, w)
                .expect("the caller checked the window"),
            lead: lead(layout, 2),
        }
    }
}

/// The storage positions of leading positions `range` of layouts that share the leading
/// sizes `walk` coalesces (with each layout's leading strides and offset), one per position:
/// the walk's segments stepped through, not each position decoded afresh (two divisions per
/// dim cost about as much as pooling an 8×8 plane).
fn lead_bases<const N: usize>(
    walk: &Coalesced<N>,
    range: Range<usize>,
) -> impl Iterator<Item = [usize; N]> + '_ {
    let segments = Segments::new(walk, range);
    let steps = segments.strides;
    segments.flat_map(move |(starts, len)| {
        (0..len).map(move |i| std::array::from_fn(|k| starts[k] + i * steps[k]))
    })
}

/// The input `[lead…, H, W]` of `layout` over `src` seen through `window`: row-major
/// `[lead…, KH, KW, OH, OW]`, `pad` where a tap falls in the padding. Moves elements only
/// (instantiated per element size).
pub fn unfold2d<W: Copy + Send + Sync>(
    src: &[W],
    layout: &Layout,
    window: &Window2d,
    pad: W,
) -> HostBuffer<W> {
    let Input {
        hw: (h, w),
        strides: (hs, ws),
        out: (oh, ow),
        lead: (lead_sizes, lead_strides, leads),
    } = Input::of(layout, window);
    let (kh, kw) = window.kernel;
    let (planes, plane) = (leads * kh * kw, oh * ow);
    let n = planes * plane;
    let mut out = take_buffer(n);
    if n == 0 {
        return out;
    }
    let step = window.stride.1 * ws;
    let (sh, dh, ph) = (window.stride.0, window.dilation.0, window.padding.0);
    let (sw, dw, pw) = (window.stride.1, window.dilation.1, window.padding.1);
    let (row_in, col_in) = inside_ranges(window, (h, w), (oh, ow));
    // Stride 1 over rows of the input's width along memory ("same" convolutions): a tap's
    // plane is one shifted run of the input's, copied at once with its padding masked.
    let flat = (sh, sw, ws, ow) == (1, 1, 1, w) && hs == w;
    let taps = flat.then(|| FlatTaps::new(window, (h, w), (oh, ow), (&row_in, &col_in)));
    let lead = Coalesced::new(lead_sizes, [lead_strides], [layout.offset()]);
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        planes,
        plane,
        move |range, chunk| {
            // Plane `p` is tap `(a, b)` of leading position `l`, `p = (l·KH + a)·KW + b`:
            // decoded once, then counted (no divisions).
            let (l, tap) = (range.start / (kh * kw), range.start % (kh * kw));
            let (mut a, mut b) = (tap / kw, tap % kw);
            let mut bases = lead_bases(&lead, l..leads);
            let [mut base] = bases.next().expect("the chunk has planes");
            // The chunk in the widest instruction set (the masked copies below vectorise).
            vectorized(
                #[inline(always)]
                || {
                    for dst in chunk.chunks_mut(plane) {
                        let (a, b, base) = {
                            let current = (a, b, base);
                            b += 1;
                            if b == kw {
                                (a, b) = (a + 1, 0);
                                if a == kh {
                                    a = 0;
                                    if let Some([next]) = bases.next() {
                                        base = next;
                                    }
                                }
                            }
                            current
                        };
                        let tap = a * kw + b;
                        if let Some(taps) = &taps
                            && let Some(run) = taps.run(src, base, tap)
                        {
                            // The whole plane at once, its padding masked: one vector
                            // loop, however short the rows. (A plane whose shifted run
                            // leaves the buffer, a tensor's first or last, goes row by row.)
                            masked_copy(dst, run, &taps.masks[tap], pad);
                            continue;
                        }
                        let (rows, cols) = (row_in[a].clone(), col_in[b].clone());
                        if cols.is_empty() || rows.is_empty() {
                            fill(dst, pad);
                            continue;
                        }
                        fill(&mut dst[..rows.start * ow], pad);
                        fill(&mut dst[rows.end * ow..], pad);
                        // Inside: `start·s + tap·d ≥ p` on both axes (`Window2d::inside`).
                        let x0 = cols.start * sw + b * dw - pw;
                        for i in rows {
                            let y = i * sh + a * dh - ph;
                            let row = &mut dst[i * ow..(i + 1) * ow];
                            fill(&mut row[..cols.start], pad);
                            fill(&mut row[cols.end..], pad);
                            let start = base + y * hs + x0 * ws;
                            let row = &mut row[cols.clone()];
                            if step == 1 {
                                let len = row.len();
                                for (d, &v) in row.iter_mut().zip(&src[start..start + len]) {
                                    d.write(v);
                                }
                            } else {
                                for (k, d) in row.iter_mut().enumerate() {
                                    d.write(src[start + k * step]);
                                }
                            }
                        }
                    }
                },
            );
        },
    );
    // SAFETY: the chunks cover planes `0..planes` once each; in each plane the rows outside
    // the inside range are filled whole, and every row inside it gets padding before and
    // after its inside columns and a copy for them, so the first `n` slots are initialised.
    unsafe { out.set_len(n) };
    out
}

/// For each tap along rows and along columns, the output positions at which it lands inside the
/// input ([`Window2d::inside`]), computed once per call rather than per plane or row.
fn inside_ranges(
    window: &Window2d,
    (h, w): (usize, usize),
    (oh, ow): (usize, usize),
) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    let rows = (0..window.kernel.0)
        .map(|a| window.inside(0, a, h, oh))
        .collect();
    let cols = (0..window.kernel.1)
        .map(|b| window.inside(1, b, w, ow))
        .collect();
    (rows, cols)
}

/// The flat paths' taps: at stride 1 over planes whose rows follow each other in memory
/// (`OW = W`, rows `W` apart), output position `p` of tap `t = a·KW + b` reads input element
/// `p + shifts[t]` of its plane, `shifts[t] = (a·dh − ph)·W + b·dw − pw`, wherever
/// `masks[t][p]` (its row and its column inside the input); elsewhere that element is another
/// row's or plane's, or none, and the tap reads padding.
struct FlatTaps {
    shifts: Vec<isize>,
    masks: Vec<Vec<bool>>,
    /// `OH·OW`, the length of every mask.
    plane: usize,
    /// How far before the input plane's start, and how far from there past its end, the
    /// shifted positions reach (masked or not): an accumulator of `span` entries whose input
    /// plane starts at `margin` takes every tap's whole plane (`fold2d`).
    margin: usize,
    span: usize,
}

impl FlatTaps {
    /// The taps of `window` over `(h, w)` planes with `(oh, ow)` positions, whose inside
    /// ranges ([`inside_ranges`]) are `row_in` and `col_in`.
    fn new(
        window: &Window2d,
        (h, w): (usize, usize),
        (oh, ow): (usize, usize),
        (row_in, col_in): (&[Range<usize>], &[Range<usize>]),
    ) -> Self {
        let (kh, kw) = window.kernel;
        let (dh, ph) = (window.dilation.0 as isize, window.padding.0 as isize);
        let (dw, pw) = (window.dilation.1 as isize, window.padding.1 as isize);
        let taps = (0..kh).flat_map(|a| (0..kw).map(move |b| (a, b)));
        let shifts: Vec<isize> = taps
            .clone()
            .map(|(a, b)| (a as isize * dh - ph) * w as isize + b as isize * dw - pw)
            .collect();
        let margin = shifts
            .iter()
            .map(|&s| s.min(0).unsigned_abs())
            .max()
            .unwrap_or(0);
        let end = shifts
            .iter()
            .map(|&s| margin.checked_add_signed(s).expect("margin ≥ −s") + oh * ow);
        let span = end.chain([margin + h * w]).max().expect("the input plane");
        let masks = taps
            .map(|(a, b)| {
                let mut mask = vec![false; oh * ow];
                for i in row_in[a].clone() {
                    mask[i * ow..][col_in[b].clone()].fill(true);
                }
                mask
            })
            .collect();
        FlatTaps {
            shifts,
            masks,
            plane: oh * ow,
            margin,
            span,
        }
    }

    /// The `OH·OW` elements of `src` that tap `t` reads over the plane at `base`, where they
    /// all lie inside `src` (masked or not).
    fn run<'s, W>(&self, src: &'s [W], base: usize, t: usize) -> Option<&'s [W]> {
        let start = base.checked_add_signed(self.shifts[t])?;
        src.get(start..start.checked_add(self.plane)?)
    }
}

/// `dst[p] = if mask[p] { src[p] } else { pad }` over `dst`: a select, not a branch, so that
/// the loop vectorises (into one vector select per group of lanes).
#[inline(always)]
fn masked_copy<W: Copy>(dst: &mut [MaybeUninit<W>], src: &[W], mask: &[bool], pad: W) {
    for ((d, &s), &m) in dst.iter_mut().zip(src).zip(mask) {
        d.write(select_unpredictable(m, s, pad));
    }
}

/// `acc[p] += src[p]` where `mask[p]`, `+0` elsewhere (exact: an accumulator that starts at
/// `+0` is never `−0`), vectorised as [`masked_copy`].
#[inline(always)]
fn masked_add<E: Kernel + Element>(acc: &mut [E::Compute], src: &[E], mask: &[bool]) {
    let zero = <E::Compute as Element>::ZERO;
    for ((d, &s), &m) in acc.iter_mut().zip(src).zip(mask) {
        *d = d.nadd(select_unpredictable(m, cast::<E, E::Compute>(s), zero));
    }
}

fn fill<W: Copy>(row: &mut [MaybeUninit<W>], value: W) {
    for d in row {
        d.write(value);
    }
}

/// The adjoint of [`unfold2d`]: `layout` over `cols` is `[lead…, KH, KW, OH, OW]` for an
/// input of `(h, w)`; the result is row-major `[lead…, H, W]`, each element the sum of the
/// taps that read it. With `winners` (tap numbers over `[lead…, OH, OW]`, each `< KH·KW`), a
/// tap counts only where it is its window's winner.
pub fn fold2d<E: Kernel + Element>(
    cols: &[E],
    layout: &Layout,
    window: &Window2d,
    (h, w): (usize, usize),
    winners: Option<(&[i64], &Layout)>,
) -> HostBuffer<E> {
    let r = layout.rank();
    let (kh, kw) = window.kernel;
    let (oh, ow) = (layout.sizes()[r - 2], layout.sizes()[r - 1]);
    let [sa, sb, si, sj] = [r - 4, r - 3, r - 2, r - 1].map(|d| layout.strides()[d]);
    let (lead_sizes, lead_strides, leads) = lead(layout, 4);
    let plane = h * w;
    let n = leads * plane;
    let mut out = take_buffer(n);
    if n == 0 {
        return out;
    }
    let (sh, dh, ph) = (window.stride.0, window.dilation.0, window.padding.0);
    let (sw, dw, pw) = (window.stride.1, window.dilation.1, window.padding.1);
    let (row_in, col_in) = inside_ranges(window, (h, w), (oh, ow));
    // No two windows share an input element: each stride at least its dilated kernel's span.
    let disjoint = sh > (kh - 1) * dh && sw > (kw - 1) * dw;
    // The gradient of 2×2 pooling at stride 2 (winners' rows along memory): written directly.
    let halving = window.kernel == (2, 2)
        && window.stride == (2, 2)
        && window.padding == (0, 0)
        && window.dilation == (1, 1)
        && winners.is_some_and(|(_, lw)| lw.strides()[lw.rank() - 1] == 1);
    // Stride 1 without winners over planes of the input's width whose rows are along memory
    // ("same" convolutions): a tap's plane is one run of the input's shifted by a constant,
    // added at once with the positions outside the input masked out.
    let flat = winners.is_none() && (sh, sw, sj, si) == (1, 1, 1, ow) && ow == w;
    let taps = flat.then(|| FlatTaps::new(window, (h, w), (oh, ow), (&row_in, &col_in)));
    // The cols' and the winners' storage positions of each leading position.
    let (win_strides, win_offset) = winners.map_or((lead_strides, 0), |(_, lw)| {
        (&lw.strides()[..lw.rank() - 2], lw.offset())
    });
    let lead = Coalesced::new(
        lead_sizes,
        [lead_strides, win_strides],
        [layout.offset(), win_offset],
    );
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        leads,
        plane,
        move |range, chunk| {
            let span = match &taps {
                Some(taps) => taps.span,
                None if halving => 0,
                None => plane,
            };
            let mut acc = vec![<E::Compute as Element>::ZERO; span];
            // The gradient's rows at the four taps, gathered where they are not along memory
            // (a broadcast gradient).
            let mut rows = vec![E::ZERO; if halving && sj != 1 { 4 * ow } else { 0 }];
            let bases = lead_bases(&lead, range);
            let win = winners.map(|(idx, lw)| {
                let s = &lw.strides()[lw.rank() - 2..];
                (idx, s[0], s[1])
            });
            if let Some((idx, wi, _)) = win.filter(|_| halving) {
                // Every plane of the chunk in one vectorised call.
                return vectorized(
                    #[inline(always)]
                    || {
                        for (dst, [base, wb]) in chunk.chunks_mut(plane).zip(bases) {
                            let start =
                                |i: usize, t: usize| base + (t / 2) * sa + (t % 2) * sb + i * si;
                            let (covered, rest) = dst.split_at_mut(2 * oh * w);
                            for (i, out) in covered.chunks_exact_mut(2 * w).enumerate() {
                                let (top, bottom) = out.split_at_mut(w);
                                let won = &idx[wb + i * wi..][..ow];
                                if sj == 1 {
                                    let g = |t| &cols[start(i, t)..][..ow];
                                    unpool_halving_row(won, [g(0), g(1), g(2), g(3)], top, bottom);
                                    continue;
                                }
                                for (t, row) in rows.chunks_exact_mut(ow).enumerate() {
                                    for (j, r) in row.iter_mut().enumerate() {
                                        *r = cols[start(i, t) + j * sj];
                                    }
                                }
                                let g = |t| &rows[t * ow..][..ow];
                                unpool_halving_row(won, [g(0), g(1), g(2), g(3)], top, bottom);
                            }
                            for d in rest {
                                d.write(E::ZERO);
                            }
                        }
                    },
                );
            }
            for (dst, [base, wb]) in chunk.chunks_mut(plane).zip(bases) {
                let win = win.map(|(idx, wi, wj)| (idx, wb, wi, wj));
                acc.fill(<E::Compute as Element>::ZERO);
                if let Some(taps) = &taps {
                    vectorized(
                        #[inline(always)]
                        || {
                            // Each tap's whole plane into the accumulator at the tap's
                            // shift, its positions outside the input masked to `+0`.
                            for (t, (&shift, mask)) in
                                taps.shifts.iter().zip(&taps.masks).enumerate()
                            {
                                let (a, b) = (t / kw, t % kw);
                                let from = base + a * sa + b * sb;
                                let at = taps
                                    .margin
                                    .checked_add_signed(shift)
                                    .expect("margin ≥ −shift");
                                let sum = &mut acc[at..at + taps.plane];
                                masked_add::<E>(sum, &cols[from..from + taps.plane], mask);
                            }
                            for (d, &v) in dst.iter_mut().zip(&acc[taps.margin..]) {
                                d.write(cast::<E::Compute, E>(v));
                            }
                        },
                    );
                    continue;
                }
                if let Some((idx, wb, wi, wj)) = win.filter(|_| disjoint) {
                    // Disjoint windows: each input element is read by at most one window, so
                    // adding each window's value at its winner's position is the same sum
                    // (at most one term) with one step per window instead of one per tap.
                    for i in 0..oh {
                        for j in 0..ow {
                            let t = idx[wb + i * wi + j * wj] as usize;
                            let (a, b) = (t / kw, t % kw);
                            let (Some(y), Some(x)) =
                                (window.source(0, i, a, h), window.source(1, j, b, w))
                            else {
                                continue;
                            };
                            let v = cast::<E, E::Compute>(
                                cols[base + a * sa + b * sb + i * si + j * sj],
                            );
                            acc[y * w + x] = acc[y * w + x].nadd(v);
                        }
                    }
                } else {
                    for (a, rows) in row_in.iter().cloned().enumerate() {
                        for (b, js) in col_in.iter().cloned().enumerate() {
                            if js.is_empty() {
                                continue;
                            }
                            let tap = (a * kw + b) as i64;
                            // Inside: `start·s + tap·d ≥ p` on both axes (`Window2d::inside`).
                            let x0 = js.start * sw + b * dw - pw;
                            for i in rows.clone() {
                                let y = i * sh + a * dh - ph;
                                let from = base + a * sa + b * sb + i * si + js.start * sj;
                                let to = y * w + x0;
                                let len = js.len();
                                match win {
                                    None if sw == 1 && sj == 1 => {
                                        let dst = &mut acc[to..to + len];
                                        for (d, &v) in dst.iter_mut().zip(&cols[from..from + len]) {
                                            *d = d.nadd(cast::<E, E::Compute>(v));
                                        }
                                    }
                                    None => {
                                        for k in 0..len {
                                            let d = &mut acc[to + k * sw];
                                            *d = d.nadd(cast::<E, E::Compute>(cols[from + k * sj]));
                                        }
                                    }
                                    Some((idx, wb, wi, wj)) => {
                                        let won = wb + i * wi + js.start * wj;
                                        let zero = <E::Compute as Element>::ZERO;
                                        for k in 0..len {
                                            // A select rather than a branch (which tap won is
                                            // data); adding zero for the others is exact, since
                                            // an accumulator that starts at +0 is never −0.
                                            let hit = idx[won + k * wj] == tap;
                                            let v = cast::<E, E::Compute>(cols[from + k * sj]);
                                            let d = &mut acc[to + k * sw];
                                            *d = d.nadd(select_unpredictable(hit, v, zero));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                for (d, &v) in dst.iter_mut().zip(&acc) {
                    d.write(cast::<E::Compute, E>(v));
                }
            }
        },
    );
    // SAFETY: the chunks cover leading positions `0..leads` once each, and each writes its
    // whole plane of `h·w` slots from the accumulators, so the first `n` slots are
    // initialised.
    unsafe { out.set_len(n) };
    out
}

/// Max pooling of `layout` over `src` (`[lead…, H, W]`) through `window`: for each window, in
/// row-major `[lead…, OH, OW]` order, its largest tap and the tap's number `a·KW + b`
/// (padding is −∞; the first NaN, else the first maximum, wins).
pub fn max_pool2d<E: Kernel + Element>(
    src: &[E],
    layout: &Layout,
    window: &Window2d,
) -> (HostBuffer<E>, HostBuffer<i64>) {
    let Input {
        hw: (h, w),
        strides: (hs, ws),
        out: (oh, ow),
        lead: (lead_sizes, lead_strides, leads),
    } = Input::of(layout, window);
    let (kh, kw) = window.kernel;
    let plane = oh * ow;
    let n = leads * plane;
    let (sh, dh) = (window.stride.0, window.dilation.0);
    let (sw, dw, pw) = (window.stride.1, window.dilation.1, window.padding.1);
    let step = sw * ws;
    let unpadded = window.padding == (0, 0);
    let halving = unpadded
        && window.kernel == (2, 2)
        && window.stride == (2, 2)
        && window.dilation == (1, 1)
        && ws == 1;
    let mut values = take_buffer::<E>(n);
    let mut taps = take_buffer::<i64>(n);
    if n > 0 {
        let (_, col_in) = inside_ranges(window, (h, w), (oh, ow));
        let lead = Coalesced::new(lead_sizes, [lead_strides], [layout.offset()]);
        let vs = &mut values.spare_capacity_mut()[..n];
        let ts = &mut taps.spare_capacity_mut()[..n];
        for_each_unit_run_pair(vs, plane, ts, plane, |range, vs, ts| {
            if halving {
                // 2×2 windows at stride 2 over contiguous rows (the usual pooling): each
                // output row reads two input rows, in one vectorised loop.
                // Output rows shorter than a vector (8×8 inputs) are pooled a plane at a time
                // from the plane's top and bottom rows gathered end to end.
                let short = ow < 8;
                let (mut tops, mut bottoms) = (Vec::new(), Vec::new());
                return vectorized(
                    #[inline(always)]
                    || {
                        let planes = vs.chunks_exact_mut(plane).zip(ts.chunks_exact_mut(plane));
                        for ((vs, ts), [base]) in planes.zip(lead_bases(&lead, range)) {
                            let row = |i: usize| &src[base + i * hs..][..2 * ow];
                            if short {
                                tops.clear();
                                bottoms.clear();
                                for i in 0..oh {
                                    tops.extend_from_slice(row(2 * i));
                                    bottoms.extend_from_slice(row(2 * i + 1));
                                }
                                pool_halving_row(&tops, &bottoms, vs, ts);
                                continue;
                            }
                            let rows = vs.chunks_exact_mut(ow).zip(ts.chunks_exact_mut(ow));
                            for (i, (vs, ts)) in rows.enumerate() {
                                pool_halving_row(row(2 * i), row(2 * i + 1), vs, ts);
                            }
                        }
                    },
                );
            }
            // The best tap so far of each window of one output row. Starting from −∞ at tap
            // 0 and skipping the padding (−∞, which never wins) picks the same tap as
            // comparing every tap in order.
            let mut best = vec![<E::Compute as Native>::LOWEST; ow];
            let mut at = vec![0i64; ow];
            let mut xs = vec![<E::Compute as Native>::LOWEST; ow];
            let planes = vs.chunks_mut(plane).zip(ts.chunks_mut(plane));
            for ((vs, ts), [base]) in planes.zip(lead_bases(&lead, range)) {
                if unpadded {
                    // Every tap of every window lies inside the input: one window at a
                    // time, its best tap kept in registers.
                    let (th, tw) = (dh * hs, dw * ws);
                    for (o, (v, t)) in vs.iter_mut().zip(ts.iter_mut()).enumerate() {
                        let start = base + (o / ow) * sh * hs + (o % ow) * sw * ws;
                        let (mut best, mut at) = (<E::Compute as Native>::LOWEST, 0i64);
                        let mut nan = false;
                        // `x > best ? x : best` (a `max` instruction) and the tap's
                        // conditional move; NaN, rare, only noted here.
                        for a in 0..kh {
                            for b in 0..kw {
                                let x = cast::<E, E::Compute>(src[start + a * th + b * tw]);
                                let wins = x > best;
                                at = select_unpredictable(wins, (a * kw + b) as i64, at);
                                best = select_unpredictable(wins, x, best);
                                nan |= x.is_nan();
                            }
                        }
                        if nan {
                            // The first NaN wins.
                            let tap = |t: usize| {
                                cast::<E, E::Compute>(src[start + (t / kw) * th + (t % kw) * tw])
                            };
                            let t = (0..kh * kw).find(|&t| tap(t).is_nan()).expect("a NaN");
                            (best, at) = (tap(t), t as i64);
                        }
                        v.write(cast::<E::Compute, E>(best));
                        t.write(at);
                    }
                    continue;
                }
                let rows = vs.chunks_mut(ow).zip(ts.chunks_mut(ow));
                for (i, (vs, ts)) in rows.enumerate() {
                    best.fill(<E::Compute as Native>::LOWEST);
                    at.fill(0);
                    for a in 0..kh {
                        let Some(y) = window.source(0, i, a, h) else {
                            continue;
                        };
                        for (b, js) in col_in.iter().cloned().enumerate() {
                            if js.is_empty() {
                                continue;
                            }
                            let tap = (a * kw + b) as i64;
                            let x0 = js.start * sw + b * dw - pw;
                            let from = base + y * hs + x0 * ws;
                            // The row's taps gathered first, then compared element-wise
                            // over slices: no bounds checks and no loop-carried branch, so
                            // the comparison vectorises into selects (which tap wins is
                            // data; a branch per tap mispredicts half the time).
                            let xs = &mut xs[..js.len()];
                            for (k, x) in xs.iter_mut().enumerate() {
                                *x = cast::<E, E::Compute>(src[from + k * step]);
                            }
                            let lanes = best[js.clone()].iter_mut().zip(&mut at[js]);
                            for ((b, t), &x) in lanes.zip(xs.iter()) {
                                let wins = (x > *b) | (x.is_nan() & !b.is_nan());
                                *b = select_unpredictable(wins, x, *b);
                                *t = select_unpredictable(wins, tap, *t);
                            }
                        }
                    }
                    for (((v, t), &b), &a) in vs.iter_mut().zip(ts.iter_mut()).zip(&best).zip(&at) {
                        v.write(cast::<E::Compute, E>(b));
                        t.write(a);
                    }
                }
            }
        });
        // SAFETY: the chunks cover leading positions `0..leads` once each, and each writes
        // its `OH·OW` values and taps, so the first `n` of both are initialised.
        unsafe {
            values.set_len(n);
            taps.set_len(n);
        }
    }
    (values, taps)
}

/// The gradient of one output row of 2×2 max pooling at stride 2 ([`pool_halving_row`]):
/// from the winning taps `won` and the gradient `g[t]` seen at each tap `t` (`OW` each), the
/// input rows `top` and `bottom` (`W ≥ 2·OW` each): each window's gradient at its winner,
/// zero elsewhere (and in a last odd column). Written as `+0 + g` at the winner, the sum the
/// general path makes, so that a `−0` gradient arrives as `+0` on both paths.
#[inline(always)]
fn unpool_halving_row<E: Kernel + Element>(
    won: &[i64],
    g: [&[E]; 4],
    top: &mut [MaybeUninit<E>],
    bottom: &mut [MaybeUninit<E>],
) {
    let ow = won.len();
    let zero = <E::Compute as Element>::ZERO;
    let pick = |hit: bool, v: E| cast::<E::Compute, E>(zero.nadd(if hit { cast(v) } else { zero }));
    let (t2, b2) = (&mut top[..2 * ow], &mut bottom[..2 * ow]);
    let cells = t2.chunks_exact_mut(2).zip(b2.chunks_exact_mut(2));
    let grads = g[0].iter().zip(g[1]).zip(g[2]).zip(g[3]);
    for ((&t, (p, q)), (((&g0, &g1), &g2), &g3)) in won.iter().zip(cells).zip(grads) {
        p[0].write(pick(t == 0, g0));
        p[1].write(pick(t == 1, g1));
        q[0].write(pick(t == 2, g2));
        q[1].write(pick(t == 3, g3));
    }
    for d in top[2 * ow..].iter_mut().chain(&mut bottom[2 * ow..]) {
        d.write(E::ZERO);
    }
}

/// One output row of 2×2 max pooling at stride 2 from the input rows `top` and `bottom`
/// (`2·OW` elements each; or several such rows end to end, with as many output rows): each
/// window's largest value and its tap (0, 1 in `top`, 2, 3 in `bottom`), the first in tap order on ties, the first NaN if any, as the general path.
/// Selects, not branches, so that the loop vectorises.
#[inline(always)]
fn pool_halving_row<E: Kernel + Element>(
    top: &[E],
    bottom: &[E],
    vs: &mut [MaybeUninit<E>],
    ts: &mut [MaybeUninit<i64>],
) {
    let pairs = top.chunks_exact(2).zip(bottom.chunks_exact(2));
    for ((v, t), (p, q)) in vs.iter_mut().zip(ts.iter_mut()).zip(pairs) {
        let (mut best, mut at) = (cast::<E, E::Compute>(p[0]), 0i64);
        for (x, tap) in [(p[1], 1i64), (q[0], 2), (q[1], 3)] {
            let x = cast::<E, E::Compute>(x);
            let wins = (x > best) | (x.is_nan() & !best.is_nan());
            best = if wins { x } else { best };
            at = if wins { tap } else { at };
        }
        v.write(cast::<E::Compute, E>(best));
        t.write(at);
    }
}
