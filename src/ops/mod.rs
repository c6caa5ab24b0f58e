//! Compute operations on [`DynTensor`]: pointwise math, arithmetic with
//! broadcasting and type promotion, comparisons and selection, reductions, softmax and
//! cumulative sums; matrix products; joining, selecting and rearranging (`cat`, `stack`,
//! `index_select`, `gather`, `split`, `flip`, `repeat`, `tril`); save/load.
//!
//! # Conventions
//! - Results are new contiguous tensors; inputs are never modified. Methods ending in `_`
//!   (`add_`, `exp_`, `masked_fill_`) write through the view they are called on instead, and
//!   return it; they fail on a view in which several indices share an element (an `expand`ed
//!   view, or an `as_strided` one whose strides collide). An in-place source that shares the destination's storage is copied first, so the
//!   result is the same as with a separate source.
//! - Binary operations broadcast with PyTorch's rules ([`broadcast_shapes`]);
//!   a broadcast operand is read through a stride-0 view, never copied.
//! - Mixed element types promote as in PyTorch ([`Promote`], [`ScalarPromote`]; full table in
//!   [`promote`]).
//! - `f16`/`bf16` are computed in `f32` (converted in blocks with SIMD conversions) and rounded
//!   once on store. Integer arithmetic wraps.
//! - Every fallible method `op` panics with the message of `try_op`, which returns
//!   [`Result`].
//!
//! ```
//! use namedtensor::DynTensor;
//! let x = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
//! let bias = DynTensor::from_vec(vec![10i32, 20, 30], &[3]);
//! let y = (&x + &bias).relu();                 // [2, 3] f32, bias broadcast over rows
//! assert_eq!(y.sum_dim(0, false).to_vec(), vec![25.0, 47.0, 69.0]);
//! let p = y.softmax(-1);                       // each row sums to 1
//! assert!((p.sum_dim(-1, false).to_vec()[0] - 1.0).abs() < 1e-6);
//! let (best, at) = x.max_dim(1, false);
//! assert_eq!((best.to_vec(), at.to_vec()), (vec![3.0, 6.0], vec![2, 2]));
//! x.t().mul_scalar_(2.0);                      // in place, through a transposed view
//! assert_eq!(x.to_vec(), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
//! ```

mod arith;
mod binary;
mod compare;
#[cfg(feature = "cuda")]
mod cuda;
mod flip;
mod index_select;
mod join;
mod matmul;
mod reduce;
mod repeat;
mod serialize;
mod softmax;
mod split;
mod triangular;
mod unary;

/// Type promotion (defined with the element types, in [`crate::dtype::promote`]).
pub use crate::dtype::promote;
pub use crate::dtype::promote::{
    DivOutput, Promote, Promoted, ScalarDivOutput, ScalarPromote, ScalarPromoted, SumOutput,
    can_cast,
};
pub use compare::{try_where_, where_};
pub use serialize::{load_tensors, save_tensors};

/// Sends an operation to its CUDA implementation (`ops::cuda`) when any of the listed
/// operands is not on the CPU, by returning `$cuda` from the enclosing function; all-CPU
/// operands fall through to the CPU code after one comparison each. Operands on two devices
/// reach the CUDA path, which refuses them with an error naming both. Without the `cuda`
/// feature no tensor can be anywhere else, and this expands to nothing.
macro_rules! on_cuda {
    ([$($t:expr),+], $cuda:expr) => {
        #[cfg(feature = "cuda")]
        {
            if $($t.device() != $crate::backend::device::Device::Cpu)||+ {
                return $cuda;
            }
        }
    };
}
pub(crate) use on_cuda;

use crate::backend::cpu::pointwise::{self, In};
use crate::backend::cpu::reduce::{Fold, reduce};
use crate::backend::cpu::stream::Store;
use crate::backend::cpu::vmath::{Isa, vectorized_if};
use crate::backend::device::Device;
use crate::dtype::Element;
use crate::dtype::{Kernel, Native};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, broadcast_shapes};
use crate::storage::{with_read2, with_write_read};
use crate::tensor::DynTensor;

/// The compute type of the promoted type of `A` and `B`.
pub(crate) type Cp<A, B> = <Promoted<A, B> as Kernel>::Compute;
/// The compute type of `E`.
pub(crate) type C<E> = <E as Kernel>::Compute;

/// `layout` broadcast to `shape` (a stride-0 view where it grows).
pub(crate) fn expand_layout(layout: &Layout, shape: &[usize]) -> Result<Layout> {
    let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    layout.expand(&sizes)
}

/// `f(x)` for every element of `t`, computed in `T`, stored as `O`.
pub(crate) fn map<S: Element, T: Element, U: Element, O: Element>(
    op: &'static str,
    t: &DynTensor<S>,
    f: impl Fn(T) -> U + Sync,
) -> Result<DynTensor<O>> {
    map_with::<S, T, U, O, false>(op, t, f)
}

/// [`map`] with its row loops compiled for the widest vector instructions of the CPU
/// ([`vectorized`]): for operations whose arithmetic, not memory, bounds them (`exp`,
/// `sigmoid`, rounding, …).
pub(crate) fn map_vec<S: Element, T: Element, U: Element, O: Element>(
    op: &'static str,
    t: &DynTensor<S>,
    f: impl Fn(T) -> U + Sync,
) -> Result<DynTensor<O>> {
    map_with::<S, T, U, O, true>(op, t, f)
}

fn map_with<S: Element, T: Element, U: Element, O: Element, const VEC: bool>(
    op: &'static str,
    t: &DynTensor<S>,
    f: impl Fn(T) -> U + Sync,
) -> Result<DynTensor<O>> {
    on_cuda!([t], cuda::map::<S, O>(op, t));
    let out_layout = Layout::contiguous(t.shape())?;
    let guard = t.storage().read();
    let src = guard.cpu(op)?;
    let stream = Store::wanted::<O>(out_layout.numel());
    let data = pointwise::build([&out_layout, t.layout()], |out, st, sd| {
        vectorized_if(
            VEC || stream || O::DTYPE.is_half(),
            #[inline(always)]
            |isa| pointwise::unary::<S, T, U, O>(out, src, st[1], sd[1], &f, isa, stream),
        )
    });
    DynTensor::from_contiguous_vec(data, t.shape())
}

/// `f(x, y)` for every element of the broadcast of `a` and `b`, computed in `T`, stored as `O`.
pub(crate) fn zip<A: Element, B: Element, T: Element, U: Element, O: Element>(
    op: &'static str,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    f: impl Fn(T, T) -> U + Sync,
) -> Result<DynTensor<O>> {
    zip_with::<A, B, T, U, O, false>(op, a, b, f)
}

/// [`zip`] with its row loops compiled for the widest vector instructions of the CPU.
pub(crate) fn zip_vec<A: Element, B: Element, T: Element, U: Element, O: Element>(
    op: &'static str,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    f: impl Fn(T, T) -> U + Sync,
) -> Result<DynTensor<O>> {
    zip_with::<A, B, T, U, O, true>(op, a, b, f)
}

fn zip_with<A: Element, B: Element, T: Element, U: Element, O: Element, const VEC: bool>(
    op: &'static str,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    f: impl Fn(T, T) -> U + Sync,
) -> Result<DynTensor<O>> {
    on_cuda!([a, b], cuda::zip::<A, B, T, O>(op, a, b));
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let la = expand_layout(a.layout(), &shape)?;
    let lb = expand_layout(b.layout(), &shape)?;
    let out_layout = Layout::contiguous(&shape)?;
    let stream = Store::wanted::<O>(out_layout.numel());
    let data = with_read2(op, a.storage(), b.storage(), |sa, sb| {
        pointwise::build([&out_layout, &la, &lb], |out, st, sd| {
            let (a, b) = (In::new(sa, st[1], sd[1]), In::new(sb, st[2], sd[2]));
            vectorized_if(
                VEC || stream || O::DTYPE.is_half(),
                #[inline(always)]
                |isa| pointwise::binary::<A, B, T, U, O>(out, a, b, &f, isa, stream),
            )
        })
    })?;
    DynTensor::from_contiguous_vec(data, &shape)
}

/// `f(x, y)` with a scalar `s` (already in the compute type) on the left or the right.
pub(crate) fn zip_scalar<E: Element, T: Element, U: Element, O: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    s: T,
    scalar_left: bool,
    f: impl Fn(T, T) -> U + Sync,
) -> Result<DynTensor<O>> {
    let s = scalar_on(s, t.device())?;
    if scalar_left {
        zip::<T, E, T, U, O>(op, &s, t, f)
    } else {
        zip::<E, T, T, U, O>(op, t, &s, f)
    }
}

/// A 0-d tensor holding `v` on `device` (a one-element upload for a CUDA device).
pub(crate) fn scalar_on<T: Element>(v: T, device: Device) -> Result<DynTensor<T>> {
    let s = DynTensor::scalar(v);
    if device == Device::Cpu {
        Ok(s)
    } else {
        s.to_device(device)
    }
}

/// Checks that an in-place result of type `R` may be stored into `E` (see [`can_cast`]).
pub(crate) fn check_inplace_cast<R: Element, E: Element>(op: &'static str) -> Result<()> {
    if !can_cast(R::DTYPE, E::DTYPE) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "the result type {} cannot be stored into the destination's type {} in place",
                R::DTYPE,
                E::DTYPE
            ),
        ));
    }
    Ok(())
}

/// `dst[i] = f(dst[i])` through the view `dst`, computed in `T`.
pub(crate) fn map_inplace<E: Element, T: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    f: impl Fn(T) -> T + Sync,
) -> Result<()> {
    map_inplace_with::<E, T, false>(op, dst, f)
}

/// [`map_inplace`] with its row loops compiled for the widest vector instructions of the CPU.
pub(crate) fn map_inplace_vec<E: Element, T: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    f: impl Fn(T) -> T + Sync,
) -> Result<()> {
    map_inplace_with::<E, T, true>(op, dst, f)
}

fn map_inplace_with<E: Element, T: Element, const VEC: bool>(
    op: &'static str,
    dst: &DynTensor<E>,
    f: impl Fn(T) -> T + Sync,
) -> Result<()> {
    dst.check_writable(op)?;
    on_cuda!([dst], cuda::map_inplace(op, dst));
    let mut guard = dst.storage().write();
    let d = guard.cpu_mut(op)?;
    pointwise::apply(d, [dst.layout()], |run, _, _| {
        vectorized_if(
            VEC,
            #[inline(always)]
            |_| pointwise::unary_inplace::<E, T>(run, &f),
        )
    });
    Ok(())
}

/// `src` broadcast to `dst`'s shape and, if it shares `dst`'s storage, copied first.
pub(crate) fn inplace_source<E: Element, B: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
) -> Result<DynTensor<B>> {
    let layout = expand_layout(src.layout(), dst.shape()).map_err(|_| {
        Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the source of shape {:?} cannot be broadcast to the destination's shape {:?}",
                src.shape(),
                dst.shape()
            ),
        )
    })?;
    let src = src.with_layout(layout);
    if src.storage().lock_order() == dst.storage().lock_order() {
        Ok(src.clone())
    } else {
        Ok(src)
    }
}

/// `dst[i] = f(dst[i], src[i])` through the view `dst`, with `src` broadcast to its shape,
/// computed in `T`.
pub(crate) fn zip_inplace<E: Element, B: Element, T: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
    f: impl Fn(T, T) -> T + Sync,
) -> Result<()> {
    dst.check_writable(op)?;
    let src = inplace_source(op, dst, src)?;
    on_cuda!([dst, src], cuda::zip_inplace::<E, B, T>(op, dst, &src));
    with_write_read(op, dst.storage(), src.storage(), |d, s| {
        pointwise::apply(d, [dst.layout(), src.layout()], |run, st, sd| {
            pointwise::binary_inplace::<E, B, T>(run, In::new(s, st[1], sd[1]), &f)
        })
    })
}

/// Whether any element of `t` is zero.
pub(crate) fn any_zero<E: Element>(op: &'static str, t: &DynTensor<E>) -> Result<bool> {
    on_cuda!([t], cuda::any_zero(op, t));
    let guard = t.storage().read();
    let src = guard.cpu(op)?;
    let all = vec![true; t.dim()];
    let r = reduce::<E, C<E>, bool, bool, _, _>(
        src,
        t.layout(),
        &all,
        Fold {
            identity: false,
            map: |x: C<E>| x.is_zero(),
            combine: |a: bool, b: bool| a | b,
        },
        |a| a,
    );
    Ok(r[0])
}

/// An error for an operation that PyTorch does not define on `bool` tensors.
pub(crate) fn bool_unsupported(op: &'static str, what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        op,
        format!("{what} is not supported for bool tensors"),
    )
}

/// The elements of `t` in row-major order, converted to `T`, in a fresh buffer.
pub(crate) fn gather_as<E: Element, T: Element>(
    op: &'static str,
    t: &DynTensor<E>,
) -> Result<Vec<T>> {
    let out_layout = Layout::contiguous(t.shape())?;
    let guard = t.storage().read();
    let src = guard.cpu(op)?;
    Ok(pointwise::build(
        [&out_layout, t.layout()],
        |out, st, sd| {
            pointwise::unary::<E, T, T, T>(out, src, st[1], sd[1], &|x| x, Isa::Baseline, false)
        },
    ))
}

/// `v` converted to `E`: the same buffer when `T` is `E`, else a converted copy.
pub(crate) fn vec_into<T: Element, E: Element>(v: Vec<T>) -> Vec<E> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<E>() {
        let mut v = std::mem::ManuallyDrop::new(v);
        // SAFETY: `T` and `E` are the same type, so pointer, length and capacity describe a
        // valid `Vec<E>`; the original is not dropped.
        return unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<E>(), v.len(), v.capacity()) };
    }
    let n = v.len();
    let layout = Layout::contiguous(&[n]).expect("a vector's length fits a layout");
    pointwise::build([&layout, &layout], |out, st, _| {
        pointwise::unary::<T, T, T, E>(out, &v, st[1], 1, &|x| x, Isa::Baseline, false)
    })
}
