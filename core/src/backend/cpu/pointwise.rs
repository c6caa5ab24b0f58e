//! Pointwise kernels: the two traversal engines and the typed row loops built on them.
//!
//! # Engines
//! - [`build`] makes a fresh row-major output from inputs seen through layouts of its shape
//!   (broadcast inputs are `expand`ed views, stride 0, never copies). The inputs are walked
//!   jointly with [`Coalesced`] in the output's order, the output is split into
//!   disjoint element ranges across the thread pool, and every element is written exactly
//!   once into uninitialised memory taken from the buffer pool.
//! - [`apply`] writes through a strided destination (operand 0). Dims are visited in the
//!   destination's memory order, so a transposed destination still gets contiguous rows. Work is
//!   split across threads only when the destination provably has no two indices on one element.
//!
//! # Row loops
//! Each engine hands a row segment (start position and stride per operand) to a row loop. The
//! row loops are generic over the storage types (`S`, `A`, `B`, `O`), the compute type `T` and
//! the operation (a closure), and take one of two paths:
//! - **native**: the storage types are the compute types: a plain loop over slices with
//!   special cases for contiguous and broadcast (stride-0) operands, which the compiler
//!   auto-vectorises;
//! - **blocked**: otherwise (`f16`/`bf16`, mixed dtypes), blocks of [`BLOCK`] elements are
//!   converted into stack buffers with the slice conversions of `convert.rs`
//!   (SIMD for `f16`/`bf16`), computed there, and converted back.

use super::convert::{as_type, as_type_mut, as_uninit_type_mut, convert, same_type};
use super::half_lines;
use super::host_buffer::HostBuffer;
use super::parallel::{for_each_chunk_mut, for_each_split, task_count};
use super::pool::take as take_buffer;
use super::stream::{Store, map_into, zip_into};
use super::vmath::Isa;
use crate::dtype::Element;
use crate::dtype::cast;
use crate::layout::{Coalesced, Layout, RowStarts};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Elements per block of the blocked (converting) path: small enough that a few buffers fit
/// in L1 next to the streamed data.
pub const BLOCK: usize = 256;

/// Smallest amount of work worth a parallel task.
const MIN_TASK: usize = 1 << 14;

/// Chunk boundaries of parallel tasks are multiples of this many elements.
const ALIGN: usize = 64;

/// Calls `f(starts, len)` for every piece of the walk's rows that falls in `range`, an element
/// range in the walk's row-major order (see [`Segments`]).
#[inline(always)]
pub fn for_each_segment<const M: usize>(
    walk: &Coalesced<M>,
    range: Range<usize>,
    mut f: impl FnMut([usize; M], usize),
) {
    for (starts, len) in Segments::new(walk, range) {
        f(starts, len);
    }
}

/// The pieces of a walk's rows that fall in an element range of its row-major order, as
/// `(starts, len)`: every operand's position of the piece's first element, and its length.
/// An iterator generic over the operand count only, so that the engines, compiled once per
/// kernel, each compile just the loop over it.
pub struct Segments<'a, const M: usize> {
    rows: Rows<'a, M>,
    /// Every operand's step along the rows.
    pub strides: [usize; M],
    /// The walk's row length.
    len: usize,
    /// The element range still to cover.
    range: Range<usize>,
    /// The row the next start position belongs to.
    row: usize,
}

/// Where the segments start: the rows of a walk, or, for operands that are all contiguous, the
/// operands' offsets (one row of every element, no walk to build).
enum Rows<'a, const M: usize> {
    Walk(RowStarts<'a, M>),
    Flat(Option<[usize; M]>),
}

impl<'a, const M: usize> Segments<'a, M> {
    /// The one segment of `range` over operands of `n` elements that step by `strides` (1:
    /// contiguous, 0: one element broadcast) from `offsets`.
    fn flat(offsets: [usize; M], strides: [usize; M], n: usize, range: Range<usize>) -> Self {
        Segments {
            rows: Rows::Flat((!range.is_empty()).then_some(offsets)),
            strides,
            len: n,
            range,
            row: 0,
        }
    }

    pub fn new(walk: &'a Coalesced<M>, range: Range<usize>) -> Self {
        let len = walk.inner_len();
        let rows = if len == 0 || range.is_empty() {
            0..0
        } else {
            range.start / len..(range.end - 1) / len + 1
        };
        Segments {
            row: rows.start,
            rows: Rows::Walk(walk.row_starts(rows)),
            strides: walk.inner_strides(),
            len,
            range,
        }
    }
}

impl<const M: usize> Iterator for Segments<'_, M> {
    type Item = ([usize; M], usize);

    #[inline]
    fn next(&mut self) -> Option<([usize; M], usize)> {
        let mut at = match &mut self.rows {
            Rows::Walk(rows) => rows.next()?,
            Rows::Flat(offsets) => offsets.take()?,
        };
        let row_start = self.row * self.len;
        let lo = self.range.start.max(row_start) - row_start;
        let hi = self.range.end.min(row_start + self.len) - row_start;
        for (a, s) in at.iter_mut().zip(self.strides) {
            *a += lo * s;
        }
        self.row += 1;
        Some((at, hi - lo))
    }
}

/// A fresh row-major buffer of shape `sizes` (the shape of every layout in `inputs`), filled
/// by `row(out_segment, starts, strides)` where `starts`/`strides` give every input's
/// position and step for that segment. The output needs no layout of its own: its segments
/// follow each other in the order the walk yields them.
///
/// The engine is compiled once per output type and input count, not once per kernel: it
/// calls the kernel through `&dyn Fn` once per parallel chunk, with the chunk's [`Segments`],
/// over which the kernel's own loop (inlined here, with `row`) runs.
#[inline(always)]
pub fn build<O: Send, const M: usize>(
    sizes: &[usize],
    inputs: [&Layout; M],
    row: impl Fn(&mut [MaybeUninit<O>], [usize; M], [usize; M]) + Sync,
) -> HostBuffer<O> {
    build_rows(sizes, inputs, &|chunk, segments| {
        let strides = segments.strides;
        let mut done = 0;
        for (starts, len) in segments {
            row(&mut chunk[done..done + len], starts, strides);
            done += len;
        }
        assert_eq!(done, chunk.len(), "a walk covers its element range");
    })
}

/// [`build`]'s engine: `chunk(part, segments)` must write every slot of `part`.
fn build_rows<O: Send, const M: usize>(
    sizes: &[usize],
    inputs: [&Layout; M],
    chunk: &(dyn Fn(&mut [MaybeUninit<O>], Segments<'_, M>) + Sync),
) -> HostBuffer<O> {
    debug_assert!(inputs.iter().all(|l| l.sizes() == sizes));
    // The sizes are a valid layout's, so their product fits.
    let n = sizes.iter().product();
    // Inputs in the output's order, or one element broadcast to all (a scalar operand), need
    // no walk: what a small op would spend most of its time building.
    let flat_step = |l: &Layout| {
        if l.is_contiguous() {
            Some(1)
        } else if l.strides().iter().all(|&s| s == 0) {
            Some(0)
        } else {
            None
        }
    };
    let steps = inputs.map(flat_step);
    let flat = steps.iter().all(Option::is_some);
    let walk = (!flat).then(|| walk_in_logical_order(sizes, inputs));
    let (offsets, strides) = (inputs.map(|l| l.offset()), steps.map(|s| s.unwrap_or(0)));
    let mut out = take_buffer::<O>(n);
    for_each_chunk_mut(
        &mut out.spare_capacity_mut()[..n],
        task_count(n, MIN_TASK),
        ALIGN,
        |range, part| {
            let segments = match &walk {
                Some(walk) => Segments::new(walk, range),
                None => Segments::flat(offsets, strides, n, range),
            };
            chunk(part, segments)
        },
    );
    // SAFETY: the chunks cover `0..n` exactly once, and `chunk` writes every slot of each
    // (`build`'s closure: the segments of the walk cover the chunk exactly, asserted there,
    // and every row loop writes every slot of its segment).
    unsafe { out.set_len(n) };
    out
}

/// The joint walk of `layouts` (of shape `sizes`) in the row-major order of that shape.
///
/// This and [`walk_in_memory_order`] are generic over the operand count only: inside the
/// engines, which are compiled once per kernel, their closures and sorts would be too.
fn walk_in_logical_order<const M: usize>(sizes: &[usize], layouts: [&Layout; M]) -> Coalesced<M> {
    Coalesced::new(
        sizes,
        layouts.map(|l| l.strides()),
        layouts.map(|l| l.offset()),
    )
}

/// The joint walk of `layouts` with the dims visited in `layouts[0]`'s memory order
/// (largest stride first; stable, so ties keep their order).
fn walk_in_memory_order<const M: usize>(layouts: [&Layout; M]) -> Coalesced<M> {
    let l0 = layouts[0];
    let mut order: Vec<usize> = (0..l0.rank()).collect();
    order.sort_by(|&a, &b| l0.strides()[b].cmp(&l0.strides()[a]));
    let sizes: Vec<usize> = order.iter().map(|&d| l0.sizes()[d]).collect();
    let strides: [Vec<usize>; M] =
        std::array::from_fn(|k| order.iter().map(|&d| layouts[k].strides()[d]).collect());
    Coalesced::new(
        &sizes,
        std::array::from_fn(|k| strides[k].as_slice()),
        layouts.map(|l| l.offset()),
    )
}

/// A run of `len` destination elements, `stride` apart, that one task may read and write.
pub struct RowMut<'a, E> {
    ptr: *mut E,
    len: usize,
    stride: usize,
    _borrow: PhantomData<&'a mut E>,
}

impl<E: Copy> RowMut<'_, E> {
    /// # Safety
    /// Positions `ptr + i * stride` for `i < len` must be valid for reads and writes, and no
    /// other reference or `RowMut` may reach them while this one lives.
    unsafe fn new(ptr: *mut E, len: usize, stride: usize) -> Self {
        RowMut {
            ptr,
            len,
            stride,
            _borrow: PhantomData,
        }
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the run has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The run as a slice when its elements are adjacent.
    #[inline]
    pub fn as_slice(&mut self) -> Option<&mut [E]> {
        if self.stride == 1 || self.len <= 1 {
            // SAFETY: `len` adjacent elements we may access exclusively (see `new`).
            Some(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
        } else {
            None
        }
    }

    /// Element `i`.
    #[inline]
    pub fn get(&self, i: usize) -> E {
        assert!(i < self.len);
        // SAFETY: in range, see `new`.
        unsafe { *self.ptr.add(i * self.stride) }
    }

    /// Overwrites element `i`.
    #[inline]
    pub fn set(&mut self, i: usize, v: E) {
        assert!(i < self.len);
        // SAFETY: in range, see `new`.
        unsafe { *self.ptr.add(i * self.stride) = v }
    }
}

struct SendPtr<E>(*mut E);
// SAFETY: only used to hand disjoint element sets of one buffer to pool threads (see `apply`).
unsafe impl<E: Send> Send for SendPtr<E> {}
// SAFETY: as above.
unsafe impl<E: Send> Sync for SendPtr<E> {}
impl<E> SendPtr<E> {
    fn get(&self) -> *mut E {
        self.0
    }
}

/// Writes through `dst` seen by `layouts[0]`; the other layouts are inputs of the same shape.
/// `row(dst_run, starts, strides)` is called once per segment of the walk.
///
/// The caller guarantees that `layouts[0]` has no stride-0 dim of size > 1 and lies within
/// `dst`. When the layout is provably non-overlapping, segments run in parallel.
///
/// The engine is compiled once per element type and operand count, as [`build`]'s; it calls
/// `row` through `&dyn Fn` once per segment (in-place updates are rarer than fresh outputs,
/// so their rows were not batched per chunk as `build`'s are).
#[inline(always)]
pub fn apply<E: Copy + Send, const M: usize>(
    dst: &mut [E],
    layouts: [&Layout; M],
    row: impl Fn(RowMut<'_, E>, [usize; M], [usize; M]) + Sync,
) {
    apply_rows(dst, layouts, &row)
}

/// A row loop of [`apply`]: the destination run, every operand's start and step.
type ApplyRow<'f, E, const M: usize> = dyn Fn(RowMut<'_, E>, [usize; M], [usize; M]) + Sync + 'f;

fn apply_rows<E: Copy + Send, const M: usize>(
    dst: &mut [E],
    layouts: [&Layout; M],
    row: &ApplyRow<'_, E, M>,
) {
    let l0 = layouts[0];
    let n = l0.numel();
    if n == 0 {
        return;
    }
    assert!(
        l0.required_storage_len() <= dst.len(),
        "layout fits the storage"
    );
    let walk = walk_in_memory_order(layouts);
    let inner = walk.inner_strides();
    let tasks = if l0.is_provably_non_overlapping() {
        task_count(n, MIN_TASK)
    } else {
        1
    };
    let base = SendPtr(dst.as_mut_ptr());
    for_each_split(n, tasks, ALIGN, |_, range| {
        for_each_segment(&walk, range, |starts, len| {
            // SAFETY: the positions lie within `dst` (the layout fits it, asserted above), and
            // no two tasks share one: with several tasks the layout maps every index to its
            // own element, and the tasks' element ranges are disjoint. `dst` itself is not
            // used while the runs live.
            let run = unsafe { RowMut::new(base.get().add(starts[0]), len, inner[0]) };
            row(run, starts, inner);
        });
    });
}

/// Loads `dst.len()` elements of `src` (from `start`, step `stride`) into `dst`, converted.
#[inline]
pub fn load<S: Element, T: Element>(src: &[S], start: usize, stride: usize, dst: &mut [T]) {
    let n = dst.len();
    if n == 0 {
        return;
    }
    match stride {
        1 => convert(&src[start..start + n], dst),
        0 => dst.fill(cast::<S, T>(src[start])),
        _ => {
            let mut tmp = [S::ZERO; BLOCK];
            for (c, d) in dst.chunks_mut(BLOCK).enumerate() {
                let m = d.len();
                let s0 = start + c * BLOCK * stride;
                for (i, t) in tmp[..m].iter_mut().enumerate() {
                    *t = src[s0 + i * stride];
                }
                convert(&tmp[..m], d);
            }
        }
    }
}

/// Reads a destination run into `dst`, converted.
#[inline]
fn load_run<E: Element, T: Element>(run: &mut RowMut<'_, E>, at: usize, dst: &mut [T]) {
    let m = dst.len();
    if let Some(s) = run.as_slice() {
        convert(&s[at..at + m], dst);
    } else {
        let mut tmp = [E::ZERO; BLOCK];
        for (i, t) in tmp[..m].iter_mut().enumerate() {
            *t = run.get(at + i);
        }
        convert(&tmp[..m], dst);
    }
}

/// Writes `src` into a destination run from `at` on, converted.
#[inline]
fn store_run<T: Element, E: Element>(run: &mut RowMut<'_, E>, at: usize, src: &[T]) {
    let m = src.len();
    if let Some(d) = run.as_slice() {
        convert(src, &mut d[at..at + m]);
    } else {
        let mut tmp = [E::ZERO; BLOCK];
        convert(src, &mut tmp[..m]);
        for (i, &v) in tmp[..m].iter().enumerate() {
            run.set(at + i, v);
        }
    }
}

#[inline]
fn write_converted<U: Element, O: Element>(out: &mut [MaybeUninit<O>], ys: &[U]) {
    let mut os = [O::ZERO; BLOCK];
    let m = ys.len();
    convert(ys, &mut os[..m]);
    for (o, &v) in out.iter_mut().zip(&os[..m]) {
        o.write(v);
    }
}

/// `out[i] = f(src[start + i * stride])`, loading `S` as `T` and storing `U` as `O`, under
/// the instruction set `isa` (see [`vectorized_for`](super::vmath::vectorized_for)), stored
/// as `store` says (see [`super::stream`]).
// Always inlined, so that inside `vmath::vectorized` its loops get the wider instructions.
#[inline(always)]
pub fn unary<S: Element, T: Element, U: Element, O: Element>(
    out: &mut [MaybeUninit<O>],
    src: &[S],
    start: usize,
    stride: usize,
    f: &impl Fn(T) -> U,
    isa: Isa,
    store: Store,
) {
    let n = out.len();
    // The path is chosen by `const` conditions on the types, so that only the path a type
    // combination takes is compiled for it.
    if const { same_type::<S, T>() && same_type::<U, O>() } {
        let (Some(src), Some(out)) = (as_type::<S, T>(src), as_uninit_type_mut::<O, U>(out)) else {
            unreachable!("the types are equal")
        };
        // `(*f)(x)` calls the closure itself, which is always inlined; `f(x)` would go
        // through the `Fn for &F` shim, which the compiler leaves out of line once the
        // closure is large (the exact GELU, with `erf` and `exp`, ran a scalar call per
        // element).
        if stride == 1 {
            map_into(
                store,
                out,
                &src[start..start + n],
                #[inline(always)]
                |x| (*f)(x),
            );
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                o.write((*f)(src[start + i * stride]));
            }
        }
        return;
    }
    if const { half_lines::fits_unary::<S, T, U, O>() }
        && half_lines::unary(isa, store, out, src, start, stride, f)
    {
        return;
    }
    let mut xs = [T::ZERO; BLOCK];
    let mut ys = [U::ZERO; BLOCK];
    for (c, oc) in out.chunks_mut(BLOCK).enumerate() {
        let m = oc.len();
        load(src, start + c * BLOCK * stride, stride, &mut xs[..m]);
        for (y, &x) in ys[..m].iter_mut().zip(&xs[..m]) {
            *y = (*f)(x);
        }
        write_converted(oc, &ys[..m]);
    }
}

/// One input operand of a row loop: storage slice, start position and step.
#[derive(Clone, Copy)]
pub struct In<'a, S> {
    pub data: &'a [S],
    pub start: usize,
    pub stride: usize,
}

impl<'a, S: Element> In<'a, S> {
    pub fn new(data: &'a [S], start: usize, stride: usize) -> Self {
        In {
            data,
            start,
            stride,
        }
    }

    #[inline]
    fn load<T: Element>(&self, at: usize, dst: &mut [T]) {
        load(self.data, self.start + at * self.stride, self.stride, dst)
    }
}

/// `out[i] = f(a[i], b[i])` over a segment, loading `A`/`B` as `T` and storing `U` as `O`,
/// under `isa`, stored as `store` says (as for [`unary`]).
// Always inlined, so that inside `vmath::vectorized` its loops get the wider instructions.
#[inline(always)]
pub fn binary<A: Element, B: Element, T: Element, U: Element, O: Element>(
    out: &mut [MaybeUninit<O>],
    a: In<'_, A>,
    b: In<'_, B>,
    f: &impl Fn(T, T) -> U,
    isa: Isa,
    store: Store,
) {
    let n = out.len();
    // Paths chosen by `const` conditions, as in `unary`.
    if const { same_type::<A, T>() && same_type::<B, T>() && same_type::<U, O>() } {
        let (Some(x), Some(y), Some(out)) = (
            as_type::<A, T>(a.data),
            as_type::<B, T>(b.data),
            as_uninit_type_mut::<O, U>(out),
        ) else {
            unreachable!("the types are equal")
        };
        let (sa, sb) = (a.start, b.start);
        match (a.stride, b.stride) {
            (1, 1) => zip_into(store, out, &x[sa..sa + n], &y[sb..sb + n], f),
            (1, 0) => {
                let q = y[sb];
                map_into(
                    store,
                    out,
                    &x[sa..sa + n],
                    #[inline(always)]
                    |p| f(p, q),
                );
            }
            (0, 1) => {
                let p = x[sa];
                map_into(
                    store,
                    out,
                    &y[sb..sb + n],
                    #[inline(always)]
                    |q| f(p, q),
                );
            }
            (ta, tb) => {
                for (i, o) in out.iter_mut().enumerate() {
                    o.write(f(x[sa + i * ta], y[sb + i * tb]));
                }
            }
        }
        return;
    }
    if const { half_lines::fits_binary::<A, B, T, U, O>() }
        && half_lines::binary(isa, store, out, a, b, f)
    {
        return;
    }
    let mut xs = [T::ZERO; BLOCK];
    let mut ys = [T::ZERO; BLOCK];
    let mut zs = [U::ZERO; BLOCK];
    for (c, oc) in out.chunks_mut(BLOCK).enumerate() {
        let m = oc.len();
        a.load(c * BLOCK, &mut xs[..m]);
        b.load(c * BLOCK, &mut ys[..m]);
        for ((z, &p), &q) in zs[..m].iter_mut().zip(&xs[..m]).zip(&ys[..m]) {
            *z = f(p, q);
        }
        write_converted(oc, &zs[..m]);
    }
}

/// `out[i] = if c[i] { a[i] } else { b[i] }` over a segment, converting `A`/`B` to `O`.
#[inline]
pub fn select<A: Element, B: Element, O: Element>(
    out: &mut [MaybeUninit<O>],
    c: In<'_, bool>,
    a: In<'_, A>,
    b: In<'_, B>,
) {
    let mut cs = [false; BLOCK];
    let mut xs = [O::ZERO; BLOCK];
    let mut ys = [O::ZERO; BLOCK];
    for (k, oc) in out.chunks_mut(BLOCK).enumerate() {
        let m = oc.len();
        c.load(k * BLOCK, &mut cs[..m]);
        a.load(k * BLOCK, &mut xs[..m]);
        b.load(k * BLOCK, &mut ys[..m]);
        for (((o, &c), &x), &y) in oc.iter_mut().zip(&cs[..m]).zip(&xs[..m]).zip(&ys[..m]) {
            o.write(if c { x } else { y });
        }
    }
}

/// `dst[i] = f(dst[i])` over a destination run, computing in `T`.
// Always inlined, so that inside `vmath::vectorized` its loops get the wider instructions.
#[inline(always)]
pub fn unary_inplace<E: Element, T: Element>(mut dst: RowMut<'_, E>, f: &impl Fn(T) -> T) {
    let n = dst.len();
    if const { same_type::<E, T>() }
        && let Some(d) = dst.as_slice().and_then(as_type_mut::<E, T>)
    {
        for v in d.iter_mut() {
            *v = f(*v);
        }
        return;
    }
    let mut xs = [T::ZERO; BLOCK];
    for c in (0..n).step_by(BLOCK) {
        let m = BLOCK.min(n - c);
        load_run(&mut dst, c, &mut xs[..m]);
        for x in xs[..m].iter_mut() {
            *x = f(*x);
        }
        store_run(&mut dst, c, &xs[..m]);
    }
}

/// `dst[i] = f(dst[i], b[i])` over a destination run, computing in `T`.
#[inline]
pub fn binary_inplace<E: Element, B: Element, T: Element>(
    mut dst: RowMut<'_, E>,
    b: In<'_, B>,
    f: &impl Fn(T, T) -> T,
) {
    let n = dst.len();
    if const { same_type::<E, T>() && same_type::<B, T>() }
        && let (Some(d), Some(y)) = (
            dst.as_slice().and_then(as_type_mut::<E, T>),
            as_type::<B, T>(b.data),
        )
    {
        let sb = b.start;
        match b.stride {
            1 => {
                for (p, &q) in d.iter_mut().zip(&y[sb..sb + n]) {
                    *p = f(*p, q);
                }
            }
            0 => {
                let q = y[sb];
                for p in d.iter_mut() {
                    *p = f(*p, q);
                }
            }
            tb => {
                for (i, p) in d.iter_mut().enumerate() {
                    *p = f(*p, y[sb + i * tb]);
                }
            }
        }
        return;
    }
    let mut xs = [T::ZERO; BLOCK];
    let mut ys = [T::ZERO; BLOCK];
    for c in (0..n).step_by(BLOCK) {
        let m = BLOCK.min(n - c);
        load_run(&mut dst, c, &mut xs[..m]);
        b.load(c, &mut ys[..m]);
        for (x, &y) in xs[..m].iter_mut().zip(&ys[..m]) {
            *x = f(*x, y);
        }
        store_run(&mut dst, c, &xs[..m]);
    }
}

/// `dst[i] = if mask[i] { value } else { dst[i] }` over a destination run.
#[inline]
pub fn masked_fill_inplace<E: Element>(mut dst: RowMut<'_, E>, mask: In<'_, bool>, value: E) {
    let n = dst.len();
    let mut ms = [false; BLOCK];
    for c in (0..n).step_by(BLOCK) {
        let m = BLOCK.min(n - c);
        mask.load(c, &mut ms[..m]);
        if let Some(d) = dst.as_slice() {
            for (x, &k) in d[c..c + m].iter_mut().zip(&ms[..m]) {
                if k {
                    *x = value;
                }
            }
        } else {
            for (i, &k) in ms[..m].iter().enumerate() {
                if k {
                    dst.set(c + i, value);
                }
            }
        }
    }
}
