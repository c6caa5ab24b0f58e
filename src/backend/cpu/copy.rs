//! Copy kernels: gather a strided view into row-major order, copy between two strided views,
//! fill a strided view.

use super::transpose::{Bits, Mapped, tiled_to_vec};
use crate::layout::{Coalesced, Layout};

/// The elements of `layout` over `src`, in row-major order of the layout's shape.
pub(crate) fn gather_to_vec<E: Copy + Send + Sync>(src: &[E], layout: &Layout) -> Vec<E> {
    if let Some(out) = tiled_to_vec(src, layout, &Bits) {
        return out;
    }
    map_to_vec(src, layout, |x| x)
}

/// `f` applied to every element of `layout` over `src`, in row-major order. Large inputs are
/// split into element ranges across the thread pool (see [`super::pointwise::build`]); the
/// output buffer comes from the buffer pool. A source whose innermost dim is strided (a
/// transposed or permuted view) is copied in tiles (see [`super::transpose`]).
pub(crate) fn map_to_vec<E: Copy + Sync, F: Send>(
    src: &[E],
    layout: &Layout,
    f: impl Fn(E) -> F + Sync,
) -> Vec<F> {
    if let Some(out) = tiled_to_vec(src, layout, &Mapped(&f)) {
        return out;
    }
    let out_layout = Layout::contiguous(layout.sizes()).expect("numel is checked in layouts");
    super::pointwise::build([&out_layout, layout], |out, [_, start], [_, stride]| {
        if stride == 1 {
            let n = out.len();
            for (d, &x) in out.iter_mut().zip(&src[start..start + n]) {
                d.write(f(x));
            }
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
pub(crate) fn copy_strided<S: Copy, D>(
    dst: &mut [D],
    dst_layout: &Layout,
    src: &[S],
    src_layout: &Layout,
    f: impl Fn(S) -> D,
) {
    debug_assert_eq!(dst_layout.sizes(), src_layout.sizes());
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

/// Writes `value` at every element of `layout` over `dst`.
pub(crate) fn fill_strided<E: Copy>(dst: &mut [E], layout: &Layout, value: E) {
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
