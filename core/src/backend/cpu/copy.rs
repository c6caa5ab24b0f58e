//! Copy kernels: gather a strided view into row-major order, copy between two strided views,
//! fill a strided view.

use super::convert::as_type;
use super::host_buffer::HostBuffer;
use super::pointwise;
use super::stream::{Store, map_into};
use super::transpose::{Bits, Mapped, Plan, tiled_to_vec};
use crate::dtype::Element;
use crate::layout::{Coalesced, Layout};
use std::mem::MaybeUninit;

/// The elements of `layout` over `src`, in row-major order of the layout's shape.
pub fn gather_to_vec<E: Copy + Send + Sync>(src: &[E], layout: &Layout) -> HostBuffer<E> {
    if let Some(out) = tiled_to_vec(src, layout, &Bits) {
        return out;
    }
    map_to_vec(src, layout, |x| x)
}

/// `f` applied to every element of `layout` over `src`, in row-major order. Large inputs are
/// split into element ranges across the thread pool (see [`super::pointwise::build`]); the
/// output buffer comes from the buffer pool. A source whose innermost dim is strided (a
/// transposed or permuted view) is copied in tiles (see [`super::transpose`]).
pub fn map_to_vec<E: Copy + Sync, F: Copy + Send>(
    src: &[E],
    layout: &Layout,
    f: impl Fn(E) -> F + Sync,
) -> HostBuffer<F> {
    if let Some(out) = tiled_to_vec(src, layout, &Mapped(&f)) {
        return out;
    }
    let store = Store::for_output::<F>(layout.numel());
    super::pointwise::build(layout.sizes(), [layout], |out, [start], [stride]| {
        if stride == 1 {
            map_into(store, out, &src[start..start + out.len()], &f);
        } else {
            for (i, d) in out.iter_mut().enumerate() {
                d.write(f(src[start + i * stride]));
            }
        }
    })
}

/// Copies the elements of `src_layout` over `src` into `dst_layout` over `dst`, converting
/// each with `f`. Both layouts have the same shape; `dst` must not hold overlapping indices
/// unless the last write winning is acceptable.
///
/// Into a contiguous destination, a source whose innermost dim is strided (a transposed view)
/// is copied in tiles, in parallel (see [`super::transpose`]).
pub fn copy_strided<S: Copy + Sync, D: Copy + Send>(
    dst: &mut [D],
    dst_layout: &Layout,
    src: &[S],
    src_layout: &Layout,
    f: impl Fn(S) -> D + Sync,
) {
    debug_assert_eq!(dst_layout.sizes(), src_layout.sizes());
    if dst_layout.is_contiguous()
        && let Some(plan) = Plan::new(src_layout)
    {
        plan.run(src, contiguous_part(dst, dst_layout), &Mapped(&f), true);
        return;
    }
    let walk = Coalesced::new(
        dst_layout.sizes(),
        [dst_layout.strides(), src_layout.strides()],
        [dst_layout.offset(), src_layout.offset()],
    );
    walk.for_each_block(|b| {
        let ([d0, s0], [ds, ss], len) = (b.starts, b.strides, b.len);
        if ds == 1 && ss == 1 {
            for (d, &s) in dst[d0..d0 + len].iter_mut().zip(&src[s0..s0 + len]) {
                *d = f(s);
            }
        } else {
            for i in 0..len {
                dst[d0 + i * ds] = f(src[s0 + i * ss]);
            }
        }
    });
}

/// [`copy_strided`] converting with [`Element::cast`] (between equal types, see
/// [`copy_same`]).
pub fn copy_cast<S: Element, D: Element>(
    dst: &mut [D],
    dst_layout: &Layout,
    src: &[S],
    src_layout: &Layout,
) {
    if let Some(same) = as_type::<S, D>(src) {
        return copy_same(dst, dst_layout, same, src_layout);
    }
    copy_strided(dst, dst_layout, src, src_layout, |x: S| x.cast::<D>());
}

/// [`copy_strided`] between equal types: a transposed source is copied with the register
/// transposes of [`Bits`].
pub fn copy_same<E: Copy + Send + Sync>(
    dst: &mut [E],
    dst_layout: &Layout,
    src: &[E],
    src_layout: &Layout,
) {
    if dst_layout.is_contiguous()
        && let Some(plan) = Plan::new(src_layout)
    {
        plan.run(src, contiguous_part(dst, dst_layout), &Bits, true);
        return;
    }
    copy_strided(dst, dst_layout, src, src_layout, |x: E| x);
}

/// The elements of the contiguous `layout` in `dst`, as slots that are only ever written with
/// initialised values.
fn contiguous_part<'a, D>(dst: &'a mut [D], layout: &Layout) -> &'a mut [MaybeUninit<D>] {
    let (start, n) = (layout.offset(), layout.numel());
    let dst = &mut dst[start..start + n];
    // SAFETY: `MaybeUninit<D>` has `D`'s layout, and the callers only write initialised values
    // through the view (the tiled copy writes every slot with a value).
    unsafe { &mut *(dst as *mut [D] as *mut [MaybeUninit<D>]) }
}

/// Writes `value` at every element of `layout` over `dst`.
pub fn fill_strided<E: Copy>(dst: &mut [E], layout: &Layout, value: E) {
    Coalesced::<1>::of(layout).for_each_block(|b| {
        let (start, len, stride) = (b.starts[0], b.len, b.strides[0]);
        if stride == 1 {
            dst[start..start + len].fill(value);
        } else {
            for i in 0..len {
                dst[start + i * stride] = value;
            }
        }
    });
}

/// `len` copies of `value`, written by the pool threads into a pooled (huge-page) buffer.
pub fn full<E: Copy + Send + Sync>(len: usize, value: E) -> HostBuffer<E> {
    pointwise::build(&[len], [], |out, [], []| {
        for o in out {
            o.write(value);
        }
    })
}
