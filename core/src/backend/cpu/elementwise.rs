//! The elementwise operations on host slices, generic over the element and compute types and
//! over the scalar function; `instances.rs` instantiates them once per dtype and operation.
//!
//! Every function takes its operands as slices plus layouts that lie within them. Inputs of
//! the fresh-output functions (`*_new`) are seen at the output's sizes (a broadcast operand is
//! a stride-0 view, never a copy) and the output is a new row-major buffer written once per
//! element by the pool's threads ([`pointwise::build`]). The in-place functions (`*_inplace`)
//! write through a destination that has no two indices on one element and is not one of the
//! inputs ([`pointwise::apply`]).
//!
//! `VEC` compiles a loop for the CPU's widest vector instructions (`vmath::vectorized`): for
//! operations bound by arithmetic (`exp`, rounding) rather than memory. Loops that convert
//! `f16`/`bf16` are always compiled so; the others are compiled once, for the baseline, and
//! stream a large output through `stream::write_blocks`.

use super::host_buffer::HostBuffer;
use super::pointwise::{self, In};
use super::stream::Store;
use super::vmath::vectorized_if;
use crate::dtype::Element;
use crate::layout::Layout;

/// `f(x)` for every element of `layout` over `src`, loaded as `T`, stored as `O`.
pub fn map_new<S: Element, T: Element, U: Element, O: Element, const VEC: bool>(
    src: &[S],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync,
) -> HostBuffer<O> {
    let store = Store::for_output::<O>(layout.numel());
    pointwise::build(layout.sizes(), [layout], |out, [start], [stride]| {
        vectorized_if!(VEC || O::DTYPE.is_half(), |isa| pointwise::unary::<
            S,
            T,
            U,
            O,
        >(
            out, src, start, stride, &f, isa, store
        ))
    })
}

/// `f(x, y)` elementwise over `la` (over `a`) and `lb` (over `b`), which have the same sizes,
/// loaded as `T`, stored as `O`.
pub fn zip_new<A: Element, B: Element, T: Element, U: Element, O: Element, const VEC: bool>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: impl Fn(T, T) -> U + Sync,
) -> HostBuffer<O> {
    let store = Store::for_output::<O>(la.numel());
    pointwise::build(la.sizes(), [la, lb], |out, st, sd| {
        let (a, b) = (In::new(a, st[0], sd[0]), In::new(b, st[1], sd[1]));
        vectorized_if!(VEC || O::DTYPE.is_half(), |isa| {
            pointwise::binary::<A, B, T, U, O>(out, a, b, &f, isa, store)
        })
    })
}

/// `x = f(x)` through `dst` over `buf`, computed in `T`.
pub fn map_inplace<E: Element, T: Element, const VEC: bool>(
    buf: &mut [E],
    dst: &Layout,
    f: impl Fn(T) -> T + Sync,
) {
    pointwise::apply(buf, [dst], |run, _, _| {
        vectorized_if!(VEC, |_| pointwise::unary_inplace::<E, T>(run, &f))
    });
}

/// `x = f(x, y)` through `dst` over `buf`, with `y` from `ls` over `src` (same sizes),
/// computed in `T`.
pub fn zip_inplace<E: Element, B: Element, T: Element>(
    buf: &mut [E],
    dst: &Layout,
    src: &[B],
    ls: &Layout,
    f: impl Fn(T, T) -> T + Sync,
) {
    pointwise::apply(buf, [dst, ls], |run, st, sd| {
        pointwise::binary_inplace::<E, B, T>(run, In::new(src, st[1], sd[1]), &f)
    });
}

/// `cond ? a : b` elementwise (all three at the output's sizes).
pub fn select_new<E: Element>(
    cond: &[bool],
    lc: &Layout,
    a: &[E],
    la: &Layout,
    b: &[E],
    lb: &Layout,
) -> HostBuffer<E> {
    pointwise::build(la.sizes(), [lc, la, lb], |out, st, sd| {
        pointwise::select::<E, E, E>(
            out,
            In::new(cond, st[0], sd[0]),
            In::new(a, st[1], sd[1]),
            In::new(b, st[2], sd[2]),
        )
    })
}

/// `x = value` through `dst` over `buf` where `lm` over `mask` is true.
pub fn masked_fill_inplace<E: Element>(
    buf: &mut [E],
    dst: &Layout,
    mask: &[bool],
    lm: &Layout,
    value: E,
) {
    pointwise::apply(buf, [dst, lm], |run, st, sd| {
        pointwise::masked_fill_inplace(run, In::new(mask, st[1], sd[1]), value)
    });
}
