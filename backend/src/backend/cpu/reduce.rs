//! Reduction kernels.
//!
//! A reduction is a [`Fold`]: an identity, a map from the compute type `T` into the
//! accumulator type `A`, and an associative combine. The reduced elements of one output are
//! folded in **blocked pairwise** order:
//! - *leaves* of up to [`LEAF`] adjacent elements (256 when they must be converted first) are
//!   folded with [`LANES`] independent accumulators — element `i` goes to lane `i % LANES`, so
//!   the loop vectorises without reassociating anything;
//! - the leaves' lane vectors are combined pairwise, lane by lane, by a binary-counter cascade
//!   ([`Cascade`]) in one streaming pass with O(log n) state, and the lanes are combined as a
//!   balanced tree at the end. (Collapsing every leaf to one value instead puts a serial chain
//!   of 31 dependent additions after each 4 KiB read, which stalls the loads; see
//!   BENCHMARKS.md, "Measurements behind design choices".)
//!
//! For a sum of `n` floats this bounds the rounding error by about
//! `(LEAF / LANES + log2 LANES + log2(n / LEAF)) · ε · Σ|x|`, i.e. ~50 ε for 10^7 elements,
//! against `n · ε` for a sequential loop. (NumPy uses the same scheme with 8 lanes and
//! 128-element leaves.)
//!
//! Two traversals, chosen from the layout:
//! - **inner** (the reduced elements of an output are contiguous, or nothing better applies):
//!   each output folds its reduced elements as above; parallel over outputs, or, when there are
//!   few outputs, over pieces of each output's reduced range with the pieces' results combined
//!   in order.
//! - **outer** (the kept dims are innermost in memory, e.g. summing a row-major matrix over its
//!   first dim): a vector of accumulators, one per output column, is updated by whole input
//!   rows — vectorised across columns — in leaves of [`OUTER_LEAF`] rows combined by a
//!   cascade of vectors. Parallel over column blocks and, when those are too few, over bands of
//!   reduced rows.

use super::convert::{as_type, convert};
use super::host_buffer::HostBuffer;
use super::parallel::{for_each_chunk_mut, for_each_split, task_count};
use super::pointwise::{BLOCK, for_each_segment, load};
use super::pool::take as take_buffer;
use super::vmath::vectorized;
use crate::dtype::Element;
use crate::layout::{Coalesced, Layout, contiguous_strides};
use std::mem::MaybeUninit;
use std::sync::Mutex;

/// Independent accumulators per leaf.
pub const LANES: usize = 32;
/// Elements per leaf when the elements are read in place.
pub const LEAF: usize = 1024;
/// Reduced rows per leaf of the outer traversal: 16 sequential additions of 4-row pairwise
/// sums per accumulator, fewer than an inner leaf's 32 per lane, so the error bound in the
/// module docs holds. (16-row leaves pushed a 16 KiB accumulator vector through the cascade
/// every 16 rows; on two threads with the matrix in L3, 4096² f32 summed over its first dim
/// read at 62–73 % of the read loop, 94–100 % with 64-row leaves.)
pub const OUTER_LEAF: usize = 64;
const MIN_TASK: usize = 1 << 14;

/// An associative reduction: `combine` over `map`ped elements, starting from `identity`.
#[derive(Clone, Copy)]
pub struct Fold<A, M, C> {
    pub identity: A,
    pub map: M,
    pub combine: C,
}

/// The per-lane accumulators of a leaf.
pub type Lanes<A> = [A; LANES];

impl<A: Copy, M, C: Fn(A, A) -> A> Fold<A, M, C> {
    #[inline(always)]
    fn c(&self, a: A, b: A) -> A {
        (self.combine)(a, b)
    }

    /// Folds a slice into per-lane accumulators: element `i` goes to lane `i % LANES` (a short
    /// slice goes to lane 0 alone). The loop runs under [`vectorized`], so the lanes are
    /// AVX-512 (or AVX2) registers where the CPU has them; the order of the operations, and so
    /// the result, is the same under every instruction set.
    #[inline]
    fn lanes<T: Copy>(&self, x: &[T]) -> Lanes<A>
    where
        M: Fn(T) -> A,
    {
        if x.len() < 2 * LANES {
            return self.lanes_in(x);
        }
        vectorized(
            #[inline(always)]
            || self.lanes_in(x),
        )
    }

    /// [`Fold::lanes`] in the caller's instruction set: for a caller already inside
    /// [`vectorized`] (a run of several leaves folded in one call).
    #[inline(always)]
    fn lanes_in<T: Copy>(&self, x: &[T]) -> Lanes<A>
    where
        M: Fn(T) -> A,
    {
        // Declared here, inside the vectorised caller: accumulators captured from outside it
        // were kept in memory, one scalar at a time.
        let mut acc = [self.identity; LANES];
        if x.len() < 2 * LANES {
            for &v in x {
                acc[0] = self.c(acc[0], (self.map)(v));
            }
            return acc;
        }
        let chunks = x.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for l in 0..LANES {
                acc[l] = self.c(acc[l], (self.map)(c[l]));
            }
        }
        for (l, &v) in rest.iter().enumerate() {
            acc[l] = self.c(acc[l], (self.map)(v));
        }
        acc
    }

    /// Combines two lane vectors lane by lane.
    #[inline(always)]
    fn add_lanes(&self, a: Lanes<A>, b: Lanes<A>) -> Lanes<A> {
        std::array::from_fn(|l| self.c(a[l], b[l]))
    }

    /// Combines the lanes as a balanced tree.
    #[inline(always)]
    fn collapse(&self, mut acc: Lanes<A>) -> A {
        let mut w = LANES;
        while w > 1 {
            w /= 2;
            for l in 0..w {
                acc[l] = self.c(acc[l], acc[l + w]);
            }
        }
        acc[0]
    }

    /// A contiguous run of any length folded in the caller's instruction set: a leaf, or its
    /// leaves through a cascade and the lanes collapsed.
    #[inline(always)]
    fn run_in<T: Copy>(&self, x: &[T]) -> A
    where
        M: Fn(T) -> A,
    {
        if x.len() <= LEAF {
            return self.leaf_in(x);
        }
        let mut cas = Cascade::new();
        for leaf in x.chunks(LEAF) {
            cas.push(self.lanes_in(leaf), &|a, b| self.add_lanes(a, b));
        }
        finish_lanes(&cas, self)
    }

    /// Folds a slice (one leaf) to a value, in the caller's instruction set (see
    /// [`Fold::lanes_in`]): a short one in lane 0 alone, in order.
    #[inline(always)]
    fn leaf_in<T: Copy>(&self, x: &[T]) -> A
    where
        M: Fn(T) -> A,
    {
        if x.len() < 2 * LANES {
            let mut acc = self.identity;
            for &v in x {
                acc = self.c(acc, (self.map)(v));
            }
            return acc;
        }
        self.collapse(self.lanes_in(x))
    }
}

/// Pairwise combination of a stream of values with O(log n) state: value `k` is combined
/// with its left neighbours like the carries of a binary counter. The levels are left
/// uninitialised until written; level `k` is read only while bit `k` of the count is set,
/// which means it was written.
pub struct Cascade<A> {
    stack: [MaybeUninit<A>; 64],
    count: u64,
}

impl<A: Copy> Default for Cascade<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Copy> Cascade<A> {
    pub fn new() -> Self {
        Cascade {
            stack: [const { MaybeUninit::uninit() }; 64],
            count: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, mut v: A, combine: &impl Fn(A, A) -> A) {
        let mut c = self.count;
        let mut level = 0;
        while c & 1 == 1 {
            // SAFETY: bit `level` of the count is set, so the level was written.
            v = combine(unsafe { self.stack[level].assume_init() }, v);
            c >>= 1;
            level += 1;
        }
        self.stack[level].write(v);
        self.count += 1;
    }

    /// The combination of everything pushed, or `None` if nothing was.
    pub fn finish(&self, combine: &impl Fn(A, A) -> A) -> Option<A> {
        let mut r: Option<A> = None;
        for level in 0..(64 - self.count.leading_zeros() as usize) {
            if (self.count >> level) & 1 == 1 {
                // SAFETY: bit `level` of the count is set, so the level was written.
                let v = unsafe { self.stack[level].assume_init() };
                r = Some(match r {
                    None => v,
                    Some(r) => combine(v, r),
                });
            }
        }
        r
    }
}

/// Pushes the leaves of one run (`len` elements of `src` from `start`, step `stride`) as lane
/// vectors.
#[inline]
fn push_run<S: Element, T: Element, A: Copy, M: Fn(T) -> A, C: Fn(A, A) -> A>(
    cas: &mut Cascade<Lanes<A>>,
    src: &[S],
    start: usize,
    len: usize,
    stride: usize,
    fold: &Fold<A, M, C>,
) {
    let add = |a, b| fold.add_lanes(a, b);
    if let (Some(s), 1) = (as_type::<S, T>(src), stride) {
        for leaf in s[start..start + len].chunks(LEAF) {
            cas.push(fold.lanes(leaf), &add);
        }
        return;
    }
    let mut buf = [T::ZERO; BLOCK];
    for c in (0..len).step_by(BLOCK) {
        let m = BLOCK.min(len - c);
        load(src, start + c * stride, stride, &mut buf[..m]);
        cas.push(fold.lanes(&buf[..m]), &add);
    }
}

/// The fold of one run (`len` elements of `src` from `start`, step `stride`): a leaf when it
/// fits one and is read in place, else its leaves through a cascade.
#[inline]
fn fold_run<S: Element, T: Element, A: Copy, M: Fn(T) -> A, C: Fn(A, A) -> A>(
    src: &[S],
    start: usize,
    len: usize,
    stride: usize,
    fold: &Fold<A, M, C>,
) -> A {
    if let (Some(s), 1) = (as_type::<S, T>(src), stride) {
        let s = &s[start..start + len];
        if len < 2 * LANES {
            // One lane, added in order: nothing to vectorise.
            return fold.leaf_in(s);
        }
        // Every leaf, the cascade and the collapse in one vectorised call, not a call per
        // leaf with the cascade's lane additions at the baseline (the same operations in the
        // same order).
        return vectorized(
            #[inline(always)]
            || fold.run_in(s),
        );
    }
    let mut cas = Cascade::new();
    push_run::<S, T, A, M, C>(&mut cas, src, start, len, stride, fold);
    finish_lanes(&cas, fold)
}

/// The fold of a lane-vector cascade.
fn finish_lanes<A: Copy, M, C: Fn(A, A) -> A>(cas: &Cascade<Lanes<A>>, fold: &Fold<A, M, C>) -> A {
    match cas.finish(&|a, b| fold.add_lanes(a, b)) {
        Some(v) => fold.collapse(v),
        None => fold.identity,
    }
}

/// Kept and reduced parts of a layout.
struct Split {
    kept_sizes: Vec<usize>,
    kept_strides: Vec<usize>,
    red_sizes: Vec<usize>,
    red_strides: Vec<usize>,
}

fn split(layout: &Layout, reduced: &[bool]) -> Split {
    let mut s = Split {
        kept_sizes: vec![],
        kept_strides: vec![],
        red_sizes: vec![],
        red_strides: vec![],
    };
    for (d, (&size, &stride)) in layout.sizes().iter().zip(layout.strides()).enumerate() {
        if reduced[d] {
            s.red_sizes.push(size);
            s.red_strides.push(stride);
        } else {
            s.kept_sizes.push(size);
            s.kept_strides.push(stride);
        }
    }
    s
}

/// Folds `src` seen through `layout` over the dims flagged in `reduced`, giving one
/// `finish(accumulator)` per kept position, in row-major order of the kept dims.
pub fn reduce<S, T, A, O, M, C>(
    src: &[S],
    layout: &Layout,
    reduced: &[bool],
    fold: Fold<A, M, C>,
    finish: impl Fn(A) -> O + Sync,
) -> HostBuffer<O>
where
    S: Element,
    T: Element,
    A: Copy + Send + Sync,
    O: Send,
    M: Fn(T) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    debug_assert_eq!(reduced.len(), layout.rank());
    let n = layout.numel();
    if (1..=MIN_TASK).contains(&n) && reduced.iter().all(|&r| r) && layout.is_contiguous() {
        // One output folding one contiguous run, in one task: what the general path below
        // computes for it (`reduce_at` of a single run), without building its walks.
        let mut out = take_buffer::<O>(1);
        out.push(finish(fold_run::<S, T, A, M, C>(
            src,
            layout.offset(),
            n,
            1,
            &fold,
        )));
        return out;
    }
    let sp = split(layout, reduced);
    let k: usize = sp.kept_sizes.iter().product();
    let r: usize = sp.red_sizes.iter().product();
    let out_strides = contiguous_strides(&sp.kept_sizes).expect("numel is checked in layouts");
    let kept = Coalesced::new(
        &sp.kept_sizes,
        [&sp.kept_strides, &out_strides],
        [layout.offset(), 0],
    );
    let red = Coalesced::new(&sp.red_sizes, [&sp.red_strides], [0]);
    let mut out = take_buffer::<O>(k);
    if k == 0 {
        return out;
    }
    if r == 0 {
        out.extend((0..k).map(|_| finish(fold.identity)));
        return out;
    }
    let [kin, _] = kept.inner_strides();
    let klen = kept.inner_len();
    let [rin] = red.inner_strides();
    if kin == 1 && klen >= 8 && !(rin == 1 && red.inner_len() > 1) {
        outer(src, &kept, &red, &fold, &finish, &mut out, k);
        return out;
    }
    let single_run = red.rows() == 1;
    let reduce_at = |base: usize, range: std::ops::Range<usize>| -> A {
        if single_run {
            let start = base + range.start * rin;
            return fold_run::<S, T, A, M, C>(src, start, range.len(), rin, &fold);
        }
        let mut cas = Cascade::new();
        for_each_segment(&red, range, |[p], len| {
            push_run::<S, T, A, M, C>(&mut cas, src, base + p, len, rin, &fold)
        });
        finish_lanes(&cas, &fold)
    };
    let threads_wanted = task_count(k * r, MIN_TASK);
    if k >= 2 * threads_wanted || threads_wanted == 1 {
        // Parallel over outputs.
        let rows_in_place = match as_type::<S, T>(src) {
            Some(s) if single_run && rin == 1 => Some(s),
            _ => None,
        };
        for_each_chunk_mut(
            &mut out.spare_capacity_mut()[..k],
            task_count(k * r, MIN_TASK).min(k),
            1,
            |range, chunk: &mut [MaybeUninit<O>]| match rows_in_place {
                // Every output one contiguous run: the chunk's outputs in one vectorised call
                // rather than a call per output (the same operations in the same order; a
                // short row's call cost more than its additions).
                Some(s) => vectorized(
                    #[inline(always)]
                    || {
                        fill(&kept, range, chunk, kin, |b| {
                            finish(fold.run_in(&s[b..b + r]))
                        })
                    },
                ),
                None => fill(&kept, range, chunk, kin, |b| finish(reduce_at(b, 0..r))),
            },
        );
    } else {
        // Few outputs: split each output's reduced range and combine the pieces in order.
        let tasks = task_count(r, MIN_TASK);
        let mut bases = Vec::with_capacity(k);
        for_each_segment(&kept, 0..k, |[b, _], len| {
            bases.extend((0..len).map(|i| b + i * kin))
        });
        for (o, &b) in out.spare_capacity_mut()[..k].iter_mut().zip(&bases) {
            let parts = Mutex::new(vec![None; tasks]);
            for_each_split(r, tasks, LEAF, |t, range| {
                let v = reduce_at(b, range);
                parts.lock().unwrap_or_else(|e| e.into_inner())[t] = Some(v);
            });
            let parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
            let mut cas = Cascade::new();
            for v in parts.into_iter().flatten() {
                cas.push(v, &fold.combine);
            }
            o.write(finish(cas.finish(&fold.combine).unwrap_or(fold.identity)));
        }
    }
    // SAFETY: both branches wrote all `k` outputs.
    unsafe { out.set_len(k) };
    out
}

/// Writes `chunk`, the outputs of `range` in the kept walk's order, with `one(base)`, the
/// output whose reduced elements start at `base`.
#[inline(always)]
fn fill<O>(
    kept: &Coalesced<2>,
    range: std::ops::Range<usize>,
    chunk: &mut [MaybeUninit<O>],
    kin: usize,
    one: impl Fn(usize) -> O,
) {
    let mut done = 0;
    for_each_segment(kept, range, |[b, _], len| {
        for (i, o) in chunk[done..done + len].iter_mut().enumerate() {
            o.write(one(b + i * kin));
        }
        done += len;
    });
}

/// A cascade of accumulator vectors (see [`Cascade`]).
struct VecCascade<A> {
    slots: Vec<Vec<A>>,
    count: u64,
}

impl<A: Copy> VecCascade<A> {
    fn new() -> Self {
        VecCascade {
            slots: Vec::new(),
            count: 0,
        }
    }

    /// Pushes `blk`; afterwards `blk` holds a spare buffer (of unspecified contents).
    fn push(&mut self, blk: &mut Vec<A>, combine: &impl Fn(A, A) -> A) {
        let mut c = self.count;
        let mut level = 0;
        while c & 1 == 1 {
            for (b, &s) in blk.iter_mut().zip(&self.slots[level]) {
                *b = combine(s, *b);
            }
            c >>= 1;
            level += 1;
        }
        if self.slots.len() <= level {
            self.slots.resize_with(level + 1, Vec::new);
        }
        std::mem::swap(&mut self.slots[level], blk);
        self.count += 1;
    }

    fn finish(mut self, identity: A, width: usize, combine: &impl Fn(A, A) -> A) -> Vec<A> {
        let mut r: Option<Vec<A>> = None;
        for level in 0..64 {
            if (self.count >> level) & 1 == 1 {
                let mut s = std::mem::take(&mut self.slots[level]);
                if let Some(r) = &r {
                    for (x, &y) in s.iter_mut().zip(r) {
                        *x = combine(*x, y);
                    }
                }
                r = Some(s);
            }
        }
        r.unwrap_or_else(|| vec![identity; width])
    }
}

/// The outer traversal (see the module docs).
fn outer<S, T, A, O, M, C>(
    src: &[S],
    kept: &Coalesced<2>,
    red: &Coalesced<1>,
    fold: &Fold<A, M, C>,
    finish: &(impl Fn(A) -> O + Sync),
    out: &mut HostBuffer<O>,
    k: usize,
) where
    S: Element,
    T: Element,
    A: Copy + Send + Sync,
    O: Send,
    M: Fn(T) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    let klen = kept.inner_len();
    let rows = kept.rows();
    // Offsets of the reduced elements (the outer traversal is only chosen when each of them
    // brings a run of at least 8 kept elements, so this list is small next to the data).
    let r = red.rows() * red.inner_len();
    let mut offs = Vec::with_capacity(r);
    red.for_each_block(|b| offs.extend((0..b.len).map(|i| b.starts[0] + i * b.strides[0])));
    let mut bases = Vec::with_capacity(rows);
    kept.for_each_row(0..rows, |[b, o]| bases.push((b, o)));
    // Column blocks of up to 64 KiB of accumulators: whole rows for most shapes, so that each
    // task streams through contiguous memory; wider rows are split into blocks that stay in L2.
    let width = (65536 / std::mem::size_of::<A>().max(1)).clamp(64, 16384);
    let col_blocks = klen.div_ceil(width);
    let units = rows * col_blocks;
    let threads = task_count(k * r, MIN_TASK);
    let bands = if units >= 2 * threads {
        1
    } else {
        (2 * threads).div_ceil(units).min(r / 64).max(1)
    };
    let band_len = r.div_ceil(bands);
    let tasks = units * bands;
    // Each task folds one band of reduced rows over one column block of one kept row.
    let parts: Vec<Mutex<Vec<A>>> = (0..tasks).map(|_| Mutex::new(Vec::new())).collect();
    // Each task runs under `vectorized`: the accumulator loops in AVX-512 (or AVX2) registers,
    // in the same order of operations as the baseline code.
    for_each_split(tasks, threads.min(tasks), 1, |_, range| {
        vectorized(
            #[inline(always)]
            || {
                // Converted elements, for a source of another type than `T`.
                let mut xs = match as_type::<S, T>(src) {
                    Some(_) => Vec::new(),
                    None => vec![T::ZERO; width],
                };
                for task in range {
                    let (unit, band) = (task / bands, task % bands);
                    let (row, cb) = (unit / col_blocks, unit % col_blocks);
                    let c0 = cb * width;
                    let w = width.min(klen - c0);
                    let base = bases[row].0 + c0;
                    let ps = &offs[band * band_len..((band + 1) * band_len).min(r)];
                    let mut cas = VecCascade::new();
                    let mut blk: Vec<A> = Vec::with_capacity(w);
                    for leaf in ps.chunks(OUTER_LEAF) {
                        blk.clear();
                        blk.resize(w, fold.identity);
                        if let Some(s) = as_type::<S, T>(src) {
                            // Four rows per pass over the accumulators, added pairwise: a quarter of
                            // the accumulator traffic.
                            let quads = leaf.chunks_exact(4);
                            for &p in quads.remainder() {
                                for (a, &x) in blk.iter_mut().zip(&s[base + p..base + p + w]) {
                                    *a = fold.c(*a, (fold.map)(x));
                                }
                            }
                            for q in quads {
                                let r = |k: usize| &s[base + q[k]..base + q[k] + w];
                                let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
                                for ((((a, &x0), &x1), &x2), &x3) in
                                    blk.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3)
                                {
                                    let m = &fold.map;
                                    let v = fold.c(fold.c(m(x0), m(x1)), fold.c(m(x2), m(x3)));
                                    *a = fold.c(*a, v);
                                }
                            }
                        } else {
                            for &p in leaf {
                                let at = base + p;
                                convert(&src[at..at + w], &mut xs[..w]);
                                for (a, &x) in blk.iter_mut().zip(&xs[..w]) {
                                    *a = fold.c(*a, (fold.map)(x));
                                }
                            }
                        }
                        cas.push(&mut blk, &fold.combine);
                    }
                    *parts[task].lock().unwrap_or_else(|e| e.into_inner()) =
                        cas.finish(fold.identity, w, &fold.combine);
                }
            },
        )
    });
    let parts: Vec<Vec<A>> = parts
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    let slots = &mut out.spare_capacity_mut()[..k];
    for unit in 0..units {
        let (row, cb) = (unit / col_blocks, unit % col_blocks);
        let c0 = cb * width;
        let w = width.min(klen - c0);
        let o0 = bases[row].1 + c0;
        if bands == 1 {
            let part = &parts[unit];
            for (slot, &a) in slots[o0..o0 + w].iter_mut().zip(part) {
                slot.write(finish(a));
            }
            continue;
        }
        for j in 0..w {
            let mut cas = Cascade::new();
            for band in 0..bands {
                cas.push(parts[unit * bands + band][j], &fold.combine);
            }
            slots[o0 + j].write(finish(cas.finish(&fold.combine).unwrap_or(fold.identity)));
        }
    }
    // SAFETY: the units cover every kept row and column, so all `k` outputs were written.
    unsafe { out.set_len(k) };
}

/// For one dim: the value chosen by `better` (ties keep the first) and its index along the dim,
/// for every kept position in row-major order. The dim must not be empty.
pub fn arg_reduce<S: Element, T: Element>(
    src: &[S],
    layout: &Layout,
    dim: usize,
    better: impl Fn(T, T) -> bool + Sync,
) -> HostBuffer<(S, i64)> {
    let mut reduced = vec![false; layout.rank()];
    reduced[dim] = true;
    let sp = split(layout, &reduced);
    let (n, step) = (layout.sizes()[dim], layout.strides()[dim]);
    let k: usize = sp.kept_sizes.iter().product();
    let out_strides = contiguous_strides(&sp.kept_sizes).expect("numel is checked in layouts");
    let kept = Coalesced::new(
        &sp.kept_sizes,
        [&sp.kept_strides, &out_strides],
        [layout.offset(), 0],
    );
    let [kin, _] = kept.inner_strides();
    let mut out = take_buffer::<(S, i64)>(k);
    if k == 0 {
        return out;
    }
    assert!(n > 0, "arg_reduce over an empty dim");
    let to_t = |x: S| -> T {
        let mut t = [T::ZERO];
        convert(&[x], &mut t);
        t[0]
    };
    for_each_chunk_mut(
        &mut out.spare_capacity_mut()[..k],
        task_count(k * n, MIN_TASK).min(k),
        1,
        |range, chunk| {
            let mut done = 0;
            for_each_segment(&kept, range, |[b, _], len| {
                let slots = &mut chunk[done..done + len];
                if kin == 1 && step != 1 && len >= 8 {
                    // Column-wise: best value and index per kept element, row by row.
                    let mut best: Vec<T> = vec![T::ZERO; len];
                    let mut best_s: Vec<S> = src[b..b + len].to_vec();
                    load(src, b, 1, &mut best);
                    let mut idx = vec![0i64; len];
                    let mut xs = vec![T::ZERO; len];
                    for i in 1..n {
                        let row = b + i * step;
                        load(src, row, 1, &mut xs);
                        for j in 0..len {
                            if better(xs[j], best[j]) {
                                best[j] = xs[j];
                                best_s[j] = src[row + j];
                                idx[j] = i as i64;
                            }
                        }
                    }
                    for (j, o) in slots.iter_mut().enumerate() {
                        o.write((best_s[j], idx[j]));
                    }
                } else {
                    for (j, o) in slots.iter_mut().enumerate() {
                        let base = b + j * kin;
                        let mut bi = 0usize;
                        let mut bs = src[base];
                        let mut bt = to_t(bs);
                        for i in 1..n {
                            let x = src[base + i * step];
                            let xt = to_t(x);
                            if better(xt, bt) {
                                bi = i;
                                bs = x;
                                bt = xt;
                            }
                        }
                        o.write((bs, bi as i64));
                    }
                }
                done += len;
            });
        },
    );
    // SAFETY: the chunks cover all `k` outputs and every segment wrote each of its slots.
    unsafe { out.set_len(k) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cascade_is_pairwise() {
        let mut c = Cascade::new();
        let add = |a: u64, b: u64| a + b;
        assert_eq!(c.finish(&add), None);
        for i in 1..=1000u64 {
            c.push(i, &add);
        }
        assert_eq!(c.finish(&add), Some(500500));
        // The combination tree of 5 leaves is ((1 2) (3 4)) 5.
        let mut c = Cascade::new();
        let depth = |a: (u64, u32), b: (u64, u32)| (a.0 + b.0, a.1.max(b.1) + 1);
        for i in 1..=5 {
            c.push((i, 0), &depth);
        }
        assert_eq!(c.finish(&depth), Some((15, 3)));
    }
}
