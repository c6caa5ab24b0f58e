//! The reductions of the [`Backend`](crate::backend::Backend) on host slices: each
//! [`ReduceOp`] as a fold (identity, map, combine, finish) over [`reduce`], generic over the
//! element type; `instances.rs` instantiates them once per dtype.
//!
//! Accumulation types: sums and products in the compute type of the sum type (`i64` for
//! integers and `bool`, `f32` for `f16`/`bf16`); means in the compute type; maxima and minima
//! in the compute type, NaN propagating.

use super::host_buffer::HostBuffer;
use super::pool::take as take_buffer;
use super::reduce::{Fold, arg_reduce, reduce};
use crate::backend::op::ReduceOp;
use crate::dtype::{Element, Kernel, Native, cast};
use crate::layout::Layout;

/// A reduction's result, in the element type its operation gives.
pub enum Reduced<E: Kernel> {
    /// Of the input's type (`max`, `min`).
    Own(HostBuffer<E>),
    /// Of the input's sum type (`sum`, `prod`).
    Sum(HostBuffer<E::Sum>),
    /// Of the input's compute type (`mean`).
    Compute(HostBuffer<E::Compute>),
    /// Truth values (`any`, `all`).
    Bool(HostBuffer<bool>),
}

type C<E> = <E as Kernel>::Compute;
type Acc<E> = C<<E as Kernel>::Sum>;

/// `src` seen through `layout` reduced by `rop` over the dims flagged in `mask`, one value per
/// kept position in row-major order.
pub fn reduce_op<E: Element>(
    rop: ReduceOp,
    src: &[E],
    layout: &Layout,
    mask: &[bool],
) -> Reduced<E> {
    match rop {
        ReduceOp::Sum => Reduced::Sum(reduce::<E, C<E>, Acc<E>, E::Sum, _, _>(
            src,
            layout,
            mask,
            Fold {
                identity: <Acc<E> as Element>::ZERO,
                map: |x: C<E>| cast::<C<E>, Acc<E>>(x),
                combine: |a: Acc<E>, b| a.nadd(b),
            },
            cast::<Acc<E>, E::Sum>,
        )),
        ReduceOp::Prod => Reduced::Sum(reduce::<E, C<E>, Acc<E>, E::Sum, _, _>(
            src,
            layout,
            mask,
            Fold {
                identity: <Acc<E> as Element>::ONE,
                map: |x: C<E>| cast::<C<E>, Acc<E>>(x),
                combine: |a: Acc<E>, b| a.nmul(b),
            },
            cast::<Acc<E>, E::Sum>,
        )),
        // Two monomorphic folds (closures, not function pointers), so that the inner loop has
        // no branch and no indirect call.
        ReduceOp::Max => Reduced::Own(reduce::<E, C<E>, C<E>, E, _, _>(
            src,
            layout,
            mask,
            Fold {
                identity: <C<E> as Native>::LOWEST,
                map: |x: C<E>| x,
                combine: |a: C<E>, b| a.nmax(b),
            },
            cast::<C<E>, E>,
        )),
        ReduceOp::Min => Reduced::Own(reduce::<E, C<E>, C<E>, E, _, _>(
            src,
            layout,
            mask,
            Fold {
                identity: <C<E> as Native>::HIGHEST,
                map: |x: C<E>| x,
                combine: |a: C<E>, b| a.nmin(b),
            },
            cast::<C<E>, E>,
        )),
        ReduceOp::Mean => {
            let count: usize = layout
                .sizes()
                .iter()
                .zip(mask)
                .filter(|(_, m)| **m)
                .map(|(s, _)| s)
                .product();
            let n = <C<E> as Element>::from_f64(count as f64);
            Reduced::Compute(reduce::<E, C<E>, C<E>, C<E>, _, _>(
                src,
                layout,
                mask,
                Fold {
                    identity: <C<E> as Element>::ZERO,
                    map: |x: C<E>| x,
                    combine: |a: C<E>, b| a.nadd(b),
                },
                move |s: C<E>| s.ndiv(n),
            ))
        }
        ReduceOp::Any => Reduced::Bool(reduce::<E, C<E>, bool, bool, _, _>(
            src,
            layout,
            mask,
            Fold {
                identity: false,
                map: |x: C<E>| !x.is_zero(),
                combine: |a: bool, b: bool| a | b,
            },
            |a| a,
        )),
        ReduceOp::All => Reduced::Bool(reduce::<E, C<E>, bool, bool, _, _>(
            src,
            layout,
            mask,
            Fold {
                identity: true,
                map: |x: C<E>| !x.is_zero(),
                combine: |a: bool, b: bool| a & b,
            },
            |a| a,
        )),
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            unreachable!("arg reductions go through Backend::arg_reduce")
        }
    }
}

/// `x` beats `best` for argmax: larger, or the first NaN.
fn beats_max<T: Native>(x: T, best: T) -> bool {
    (x > best) || (x.is_nan() && !best.is_nan())
}

/// `x` beats `best` for argmin: smaller, or the first NaN.
fn beats_min<T: Native>(x: T, best: T) -> bool {
    (x < best) || (x.is_nan() && !best.is_nan())
}

/// The maximum (or minimum) along `dim` of `src` seen through `layout` and the index of its
/// first occurrence (of the first NaN, if any), one pair per kept position.
pub fn arg_reduce_op<E: Element>(
    max: bool,
    src: &[E],
    layout: &Layout,
    dim: usize,
) -> (HostBuffer<E>, HostBuffer<i64>) {
    let pairs = if max {
        arg_reduce::<E, C<E>>(src, layout, dim, beats_max)
    } else {
        arg_reduce::<E, C<E>>(src, layout, dim, beats_min)
    };
    let (mut values, mut taps) = (take_buffer(pairs.len()), take_buffer(pairs.len()));
    for &(v, t) in pairs.iter() {
        values.push(v);
        taps.push(t);
    }
    (values, taps)
}
