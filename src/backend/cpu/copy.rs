//! Copy kernels: gather a strided view into row-major order, copy between two strided views,
//! fill a strided view.

use super::parallel::for_each_row_chunk;
use super::transpose::{Bits, Mapped, tiled_to_vec};
use crate::layout::{Coalesced, Layout, contiguous_strides};

/// The elements of `layout` over `src`, in row-major order of the layout's shape.
pub(crate) fn gather_to_vec<E: Copy + Send + Sync>(src: &[E], layout: &Layout) -> Vec<E> {
    if let Some(out) = tiled_to_vec(src, layout, &Bits) {
        return out;
    }
    map_to_vec(src, layout, |x| x)
}

/// `f` applied to every element of `layout` over `src`, in row-major order. Large inputs are
/// split by rows across the thread pool. A source whose innermost dim is strided (a
/// transposed or permuted view) is copied in tiles (see [`super::transpose`]).
pub(crate) fn map_to_vec<E: Copy + Sync, F: Send>(
    src: &[E],
    layout: &Layout,
    f: impl Fn(E) -> F + Sync,
) -> Vec<F> {
    if let Some(out) = tiled_to_vec(src, layout, &Mapped(&f)) {
        return out;
    }
    let n = layout.numel();
    let out_strides = contiguous_strides(layout.sizes()).expect("numel is checked in layouts");
    // Walking the source jointly with the row-major output makes every walk row one
    // contiguous run of the output, at position `row * row_len`.
    let walk = Coalesced::new(
        layout.sizes(),
        [layout.strides(), &out_strides],
        [layout.offset(), 0],
    );
    let (rows, row_len) = (walk.rows(), walk.inner_len());
    let [stride, _] = walk.inner_strides();
    let mut out: Vec<F> = Vec::with_capacity(n);
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        rows,
        row_len,
        |range, chunk| {
            let mut rows_done = 0;
            walk.for_each_row(range, |[start, _]| {
                let dst = &mut chunk[rows_done * row_len..(rows_done + 1) * row_len];
                if stride == 1 {
                    for (d, &x) in dst.iter_mut().zip(&src[start..start + row_len]) {
                        d.write(f(x));
                    }
                } else {
                    for (i, d) in dst.iter_mut().enumerate() {
                        d.write(f(src[start + i * stride]));
                    }
                }
                rows_done += 1;
            });
        },
    );
    // SAFETY: the walk has `rows` rows of `row_len` elements, `rows * row_len == n`, and the
    // chunks handed out above cover rows `0..rows` exactly once, each writing all of its
    // `row_len` slots; so the first `n` slots are initialised.
    unsafe { out.set_len(n) };
    out
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
