//! Copies that pick elements by index: `index_select`, `gather`, their adjoint `scatter_add`,
//! and the concatenation of several strided sources.
//!
//! Every kernel writes a fresh row-major buffer, split by rows across the pool (see
//! [`for_each_row_chunk`]); indices have been checked against their dims by the caller, and
//! every source access is bounds-checked anyway.

use super::copy::gather_to_vec;
use super::host_buffer::HostBuffer;
use super::parallel::{for_each_row_chunk, for_each_with_caller, parallel_threshold};
use super::pool::take as take_buffer;
use crate::dtype::{Element, Kernel, Native, cast};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Coalesced, Layout, contiguous_strides, for_each_block};
use std::mem::MaybeUninit;

/// Copies the row-major elements of `walk` (one operand, at `base` plus its offset) into
/// `dst`, which has exactly that many slots.
fn copy_walk<E: Copy>(dst: &mut [MaybeUninit<E>], src: &[E], walk: &Coalesced<1>, base: usize) {
    let (len, [stride]) = (walk.inner_len(), walk.inner_strides());
    let mut at = 0;
    walk.for_each_row(0..walk.rows(), |[start]| {
        let (start, row) = (base + start, &mut dst[at..at + len]);
        if stride == 1 {
            for (d, &x) in row.iter_mut().zip(&src[start..start + len]) {
                d.write(x);
            }
        } else {
            for (i, d) in row.iter_mut().enumerate() {
                d.write(src[start + i * stride]);
            }
        }
        at += len;
    });
    debug_assert_eq!(at, dst.len());
}

/// `src` seen through `layout`, with dim `dim` replaced by the entries `index` of it (each
/// `< layout.sizes()[dim]`), in row-major order.
pub fn index_select<E: Copy + Send + Sync>(
    src: &[E],
    layout: &Layout,
    dim: usize,
    index: &[usize],
) -> HostBuffer<E> {
    let (sizes, strides) = (layout.sizes(), layout.strides());
    let (outer_sizes, outer_strides) = (&sizes[..dim], &strides[..dim]);
    let inner = Coalesced::new(&sizes[dim + 1..], [&strides[dim + 1..]], [0]);
    let inner_n: usize = sizes[dim + 1..].iter().product();
    let rows = outer_sizes.iter().product::<usize>() * index.len();
    let n = rows * inner_n;
    let mut out: HostBuffer<E> = take_buffer(n);
    if inner_n == 1 && !index.is_empty() {
        // Selecting along the innermost dim (a gather of single elements, as unfold2d does):
        // one output run of `index.len()` elements per outer position, read in a tight loop
        // instead of one strided walk per element.
        let len = index.len();
        let step = strides[dim];
        for_each_row_chunk(
            &mut out.spare_capacity_mut()[..n],
            rows / len,
            len,
            |range, chunk| {
                for (o, dst) in range.zip(chunk.chunks_mut(len)) {
                    let base = layout.offset() + unravel(o, outer_sizes, outer_strides);
                    for (d, &i) in dst.iter_mut().zip(index) {
                        d.write(src[base + i * step]);
                    }
                }
            },
        );
        // SAFETY: the chunks cover the `rows / len` outer positions once each, and each
        // writes its `len` slots, so the first `n = rows` slots are initialised.
        unsafe { out.set_len(n) };
        return out;
    }
    // Output row `r` is entry `index[r % len]` of dim `dim` at outer index `r / len`.
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        rows,
        inner_n,
        |range, chunk| {
            let mut outer_base = None;
            for (r, dst) in range.zip(chunk.chunks_mut(inner_n.max(1))) {
                let (o, j) = (r / index.len(), r % index.len());
                let base = match outer_base {
                    Some((prev, base)) if prev == o => base,
                    _ => {
                        let base = layout.offset() + unravel(o, outer_sizes, outer_strides);
                        outer_base = Some((o, base));
                        base
                    }
                };
                copy_walk(dst, src, &inner, base + index[j] * strides[dim]);
            }
        },
    );
    // SAFETY: the chunks cover rows `0..rows` once each, and `copy_walk` writes all
    // `inner_n` slots of every row, so the first `n` slots are initialised.
    unsafe { out.set_len(n) };
    out
}

/// The storage displacement of row-major index `flat` of `sizes` seen through `strides`.
pub(super) fn unravel(mut flat: usize, sizes: &[usize], strides: &[usize]) -> usize {
    let mut pos = 0;
    for (&size, &stride) in sizes.iter().zip(strides).rev() {
        pos += (flat % size) * stride;
        flat /= size;
    }
    pos
}

/// PyTorch's `gather`: output element at index `i` (over the index tensor's shape) is the
/// source element at `i` with entry `dim` replaced by `index[i]` (checked `< size` of that
/// dim by the caller). `src_layout`'s sizes are at least the index's in every other dim.
pub fn gather<E: Copy + Send + Sync>(
    src: &[E],
    src_layout: &Layout,
    dim: usize,
    index: &[i64],
    index_layout: &Layout,
) -> HostBuffer<E> {
    let sizes = index_layout.sizes();
    let n = index_layout.numel();
    let out_strides = contiguous_strides(sizes).expect("numel is checked in layouts");
    // The source without its gathered dim (stride 0 there); the index adds `index · stride`.
    let mut src_strides = src_layout.strides().to_vec();
    let dim_stride = std::mem::replace(&mut src_strides[dim], 0);
    let walk = Coalesced::new(
        sizes,
        [&src_strides, index_layout.strides(), &out_strides],
        [src_layout.offset(), index_layout.offset(), 0],
    );
    let (rows, len) = (walk.rows(), walk.inner_len());
    let [ss, is, _] = walk.inner_strides();
    let mut out: HostBuffer<E> = take_buffer(n);
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        rows,
        len,
        |range, chunk| {
            let mut done = 0;
            walk.for_each_row(range, |[sp, ip, _]| {
                for (i, d) in chunk[done..done + len].iter_mut().enumerate() {
                    let at = index[ip + i * is] as usize;
                    d.write(src[sp + i * ss + at * dim_stride]);
                }
                done += len;
            });
        },
    );
    // SAFETY: the row-major output walk has `rows` rows of `len` elements (`rows · len ==
    // n`); the chunks cover every row once and each row writes its `len` slots.
    unsafe { out.set_len(n) };
    out
}

/// PyTorch's `scatter_add`: `base` (through `base_layout`) copied into a new row-major buffer,
/// then for every element `i` of the index view `li` (in row-major order), `src` at `i` (through
/// `ls`, which has the index's sizes) added at `i` with its `dim` coordinate replaced by
/// `index[i]` (checked `< size` of that dim by the caller). The index's sizes are at most the
/// base's in every dim but `dim`.
///
/// Work is split by the output's slabs along the dims before `dim`: indices at one outer
/// coordinate only reach that coordinate's slab, so the slabs are written without
/// synchronisation, and each slab accumulates in the index's row-major order whatever the
/// thread count (the result does not depend on the pool).
pub fn scatter_add<E: Kernel + Element>(
    base: &[E],
    base_layout: &Layout,
    dim: usize,
    index: &[i64],
    li: &Layout,
    src: &[E],
    ls: &Layout,
) -> HostBuffer<E> {
    let mut out = gather_to_vec(base, base_layout);
    let (sizes, isizes) = (base_layout.sizes(), li.sizes());
    if li.numel() == 0 {
        return out;
    }
    let out_strides = contiguous_strides(sizes).expect("numel is checked in layouts");
    let dim_stride = out_strides[dim];
    // Within a slab: the index's dims from `dim` on, the output at stride 0 along `dim` (the
    // index supplies that coordinate).
    let mut slab_strides = out_strides[dim..].to_vec();
    slab_strides[0] = 0;
    let walk = Coalesced::new(
        &isizes[dim..],
        [&li.strides()[dim..], &ls.strides()[dim..], &slab_strides],
        [0, 0, 0],
    );
    let (len, [is, ss, os]) = (walk.inner_len(), walk.inner_strides());
    let rows: usize = sizes[..dim].iter().product();
    let slab_len: usize = sizes[dim..].iter().product();
    let add = |a: E, b: E| -> E {
        cast::<E::Compute, E>(cast::<E, E::Compute>(a).nadd(cast::<E, E::Compute>(b)))
    };
    for_each_row_chunk(&mut out, rows, slab_len, |range, chunk| {
        let mut coords = vec![0usize; dim];
        for (o, slab) in range.zip(chunk.chunks_mut(slab_len.max(1))) {
            // The outer coordinate of slab `o`; slabs beyond the index's extent stay the base.
            let mut flat = o;
            for (c, &size) in coords.iter_mut().zip(&sizes[..dim]).rev() {
                *c = flat % size;
                flat /= size;
            }
            if coords.iter().zip(isizes).any(|(&c, &size)| c >= size) {
                continue;
            }
            let at = |l: &Layout| {
                let s = l.strides();
                l.offset()
                    + coords
                        .iter()
                        .enumerate()
                        .map(|(e, &c)| c * s[e])
                        .sum::<usize>()
            };
            let (ib, sb) = (at(li), at(ls));
            walk.for_each_row(0..walk.rows(), |[ip, sp, op]| {
                if is == 0 && os == 1 && ss == 1 {
                    // One index for the whole row, both rows contiguous: `index_add`'s
                    // broadcast index (an embedding's weight gradient). A slice add, which
                    // vectorises, where the general loop reloads the index per element.
                    let to = op + index[ib + ip] as usize * dim_stride;
                    let from = sb + sp;
                    for (d, &x) in slab[to..to + len].iter_mut().zip(&src[from..from + len]) {
                        *d = add(*d, x);
                    }
                    return;
                }
                for k in 0..len {
                    let to = op + k * os + index[ib + ip + k * is] as usize * dim_stride;
                    slab[to] = add(slab[to], src[sb + sp + k * ss]);
                }
            });
        }
    });
    out
}

/// [`scatter_add`] with its indices checked first.
#[allow(clippy::too_many_arguments)]
pub fn scatter_add_op<E: Kernel + Element>(
    op: &'static str,
    base: &[E],
    base_layout: &Layout,
    dim: usize,
    index: &[i64],
    li: &Layout,
    src: &[E],
    ls: &Layout,
) -> Result<HostBuffer<E>> {
    check_indices(op, index, li, dim, base_layout.sizes())?;
    Ok(scatter_add(base, base_layout, dim, index, li, src, ls))
}

/// The concatenation along `dim` of `parts` (each a source and its layout; sizes equal to
/// `out_shape` except along `dim`), in row-major order of `out_shape`.
pub fn cat<E: Copy + Send + Sync>(
    out_shape: &[usize],
    dim: usize,
    parts: &[(&[E], &Layout)],
) -> HostBuffer<E> {
    let n: usize = out_shape.iter().product();
    // Output row `o` (an index of the dims before `dim`) is the parts' rows `o` one after
    // the other; a part's row is its `size(dim) · Π inner sizes` elements at that index.
    let rows: usize = out_shape[..dim].iter().product();
    let row_len = n.checked_div(rows).unwrap_or(0);
    let walks: Vec<(Coalesced<1>, usize)> = parts
        .iter()
        .map(|(_, l)| {
            let inner = Coalesced::new(&l.sizes()[dim..], [&l.strides()[dim..]], [0]);
            (inner, l.sizes()[dim..].iter().product())
        })
        .collect();
    let mut out: HostBuffer<E> = take_buffer(n);
    if rows == 1 && parts.len() > 1 && n >= parallel_threshold() {
        // One row (a cat along the outermost dim of size above 1): the parts are copied in
        // parallel instead, each into its own range of the output.
        let mut rest = &mut out.spare_capacity_mut()[..n];
        let mut copies = Vec::with_capacity(parts.len());
        for ((src, layout), (walk, len)) in parts.iter().zip(&walks) {
            let (dst, tail) = std::mem::take(&mut rest).split_at_mut(*len);
            copies.push((dst, *src, layout.offset(), walk));
            rest = tail;
        }
        for_each_with_caller(copies, |(dst, src, base, walk)| {
            copy_walk(dst, src, walk, base)
        });
        // SAFETY: the parts' ranges cover the `row_len == n` slots one after the other (as
        // for every row below), and each `copy_walk` fills its range.
        unsafe { out.set_len(n) };
        return out;
    }
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        rows,
        row_len,
        |range, chunk| {
            for (o, dst) in range.zip(chunk.chunks_mut(row_len.max(1))) {
                let mut at = 0;
                for ((src, layout), (walk, len)) in parts.iter().zip(&walks) {
                    let base = layout.offset()
                        + unravel(o, &layout.sizes()[..dim], &layout.strides()[..dim]);
                    copy_walk(&mut dst[at..at + len], src, walk, base);
                    at += len;
                }
            }
        },
    );
    // SAFETY: every output row is the parts' rows back to back, `Σ len == row_len`, and
    // each `copy_walk` fills its `len` slots; the chunks cover all `rows` rows.
    unsafe { out.set_len(n) };
    out
}

/// Fails with [`ErrorKind::IndexOutOfRange`] naming the first index of `li` over `index` that
/// is outside `0..shape[dim]` (negative indices are out of range, as in PyTorch).
fn check_indices(
    op: &'static str,
    index: &[i64],
    li: &Layout,
    dim: usize,
    shape: &[usize],
) -> Result<()> {
    let size = shape[dim];
    // Each distinct element once: `index_add` broadcasts its 1-D index (stride 0) over the
    // source's other dims.
    let distinct = li.collapse_broadcast();
    let mut bad = None;
    for_each_block(&distinct, |b| {
        if bad.is_none() {
            let (start, stride) = (b.starts[0], b.strides[0]);
            bad = (0..b.len)
                .map(|i| index[start + i * stride])
                .find(|&v| v < 0 || v as u64 >= size as u64);
        }
    });
    match bad {
        Some(v) => Err(Error::new(
            ErrorKind::IndexOutOfRange,
            op,
            format!("index {v} is out of range for dim {dim} of size {size} (shape {shape:?})"),
        )),
        None => Ok(()),
    }
}

/// [`index_select`] with the 1-D (or 0-d) index view `li` over `index`, checked first.
pub fn index_select_op<E: Copy + Send + Sync>(
    op: &'static str,
    src: &[E],
    layout: &Layout,
    dim: usize,
    index: &[i64],
    li: &Layout,
) -> Result<HostBuffer<E>> {
    check_indices(op, index, li, dim, layout.sizes())?;
    let idx: Vec<usize> = gather_to_vec(index, li)
        .iter()
        .map(|&v| v as usize)
        .collect();
    Ok(index_select(src, layout, dim, &idx))
}

/// [`gather`] with its indices checked first.
pub fn gather_op<E: Copy + Send + Sync>(
    op: &'static str,
    src: &[E],
    layout: &Layout,
    dim: usize,
    index: &[i64],
    li: &Layout,
) -> Result<HostBuffer<E>> {
    check_indices(op, index, li, dim, layout.sizes())?;
    Ok(gather(src, layout, dim, index, li))
}
