//! Compute operations on [`DynTensor`]: pointwise math, arithmetic with
//! broadcasting and type promotion, comparisons and selection, reductions, softmax and
//! cumulative sums; sorting (`sort`, `argsort`, `topk`); matrix products and `einsum`; joining, selecting
//! and rearranging (`cat`, `stack`, `index_select`, `gather`, `split`, `flip`, `repeat`,
//! `tril`); save/load.
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
mod conv;
mod einsum;
mod flip;
mod index_select;
mod join;
mod matmul;
mod normalize;
mod npy;
mod reduce;
mod repeat;
mod save_tensor;
mod serialize;
mod softmax;
mod sort;
mod split;
mod triangular;
mod unary;

/// Type promotion (defined with the element types, in [`crate::dtype::promote`]).
pub use crate::dtype::promote;
pub use crate::dtype::promote::{
    DivOutput, Promote, Promoted, ScalarDivOutput, ScalarPromote, ScalarPromoted, SumOutput,
    can_cast,
};
pub use crate::layout::Window2d;
pub use compare::{try_where_, where_};
pub(crate) use conv::{ConvPlan, conv2d_grads};
pub use einsum::{einsum, try_einsum};
pub(crate) use normalize::{normalize, normalize_backward, normalized_by_ops, single_dim};
pub use npy::{NpzFile, load_npz, save_npz};
pub(crate) use reduce::reduce_keepdim;
pub use save_tensor::{LeBytes, SaveTensor};
pub use serialize::{SafetensorsFile, load_tensors, load_tensors_from_bytes, save_tensors};
pub(crate) use serialize::{load_with_metadata, save_with_metadata};
pub(crate) use softmax::softmax_backward;

use crate::autograd;
use crate::backend::device::Device;
use crate::backend::op::{BinaryOp, CompareOp, ReduceOp, TestOp, UnaryOp};
use crate::dtype::Element;
use crate::dtype::Kernel;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, broadcast_shapes};
use crate::storage::dispatch;
use crate::tensor::DynTensor;

/// The compute type of `E`.
pub(crate) type C<E> = <E as Kernel>::Compute;

/// `layout` broadcast to `shape` (a stride-0 view where it grows).
pub(crate) fn expand_layout(layout: &Layout, shape: &[usize]) -> Result<Layout> {
    let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    layout.expand(&sizes)
}

/// `uop` of every element of `t`.
pub(crate) fn unary<E: Element>(
    op: &'static str,
    uop: UnaryOp,
    t: &DynTensor<E>,
) -> Result<DynTensor<E>> {
    let buf = dispatch::unary(op, uop, t.storage(), t.layout())?;
    let out = DynTensor::from_contiguous_buffer(buf, t.shape())?;
    if autograd::tracks(t) {
        return Ok(autograd::unary(uop, t, out));
    }
    Ok(out)
}

/// `x = uop(x)` through the view `dst`.
pub(crate) fn unary_<E: Element>(op: &'static str, uop: UnaryOp, dst: &DynTensor<E>) -> Result<()> {
    if autograd::inplace_recorded(op, dst, false)? {
        return autograd::unary_inplace(op, uop, dst, || {
            dispatch::unary_(op, uop, dst.storage(), dst.layout())
        });
    }
    dst.check_overlap(op)?;
    dispatch::unary_(op, uop, dst.storage(), dst.layout())
}

/// `top` of every element of `t`.
pub(crate) fn test<E: Element>(
    op: &'static str,
    top: TestOp,
    t: &DynTensor<E>,
) -> Result<DynTensor<bool>> {
    let buf = dispatch::test(op, top, t.storage(), t.layout())?;
    DynTensor::from_contiguous_buffer(buf, t.shape())
}

/// Whether an operand of type `A` goes into a kernel with output `O` as it is: it is `O` or
/// `O`'s compute type (see [`Backend::binary`](crate::backend::Backend)). Others are converted
/// to the compute type first, at their own size, before broadcasting.
fn fits<A: Element, O: Element>() -> bool {
    A::DTYPE == O::DTYPE || A::DTYPE == <C<O> as Element>::DTYPE
}

/// `bop(a, b)` with broadcasting, computed in the compute type of `O` and stored as `O`.
pub(crate) fn binary<A: Element, B: Element, O: Element>(
    op: &'static str,
    bop: BinaryOp,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> Result<DynTensor<O>> {
    if autograd::tracks(a) || autograd::tracks(b) {
        let out = {
            let _off = autograd::GradMode::no_grad();
            binary_untracked::<A, B, O>(op, bop, a, b)?
        };
        return Ok(autograd::binary(bop, a, b, out));
    }
    binary_untracked::<A, B, O>(op, bop, a, b)
}

/// [`binary`] without recording.
fn binary_untracked<A: Element, B: Element, O: Element>(
    op: &'static str,
    bop: BinaryOp,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> Result<DynTensor<O>> {
    let broadcast;
    let shape = if a.shape() == b.shape() {
        a.shape()
    } else {
        broadcast = broadcast_shapes(op, a.shape(), b.shape())?;
        &broadcast
    };
    match (fits::<A, O>(), fits::<B, O>()) {
        (true, true) => binary_fitting::<A, B, O>(op, bop, a, b, shape),
        (false, true) => {
            let a = a.try_to_dtype::<C<O>>()?;
            binary_fitting::<C<O>, B, O>(op, bop, &a, b, shape)
        }
        (true, false) => {
            let b = b.try_to_dtype::<C<O>>()?;
            binary_fitting::<A, C<O>, O>(op, bop, a, &b, shape)
        }
        (false, false) => {
            let (a, b) = (a.try_to_dtype::<C<O>>()?, b.try_to_dtype::<C<O>>()?);
            binary_fitting::<C<O>, C<O>, O>(op, bop, &a, &b, shape)
        }
    }
}

/// [`binary`] on operands that fit `O`, broadcast to `shape`.
fn binary_fitting<A: Element, B: Element, O: Element>(
    op: &'static str,
    bop: BinaryOp,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    shape: &[usize],
) -> Result<DynTensor<O>> {
    if a.shape() == b.shape() {
        // Nothing to broadcast: the operands' own layouts.
        let buf =
            dispatch::binary::<A, B, O>(op, bop, a.storage(), a.layout(), b.storage(), b.layout())?;
        return DynTensor::from_contiguous_buffer(buf, shape);
    }
    let (la, lb) = (
        expand_layout(a.layout(), shape)?,
        expand_layout(b.layout(), shape)?,
    );
    let buf = dispatch::binary::<A, B, O>(op, bop, a.storage(), &la, b.storage(), &lb)?;
    DynTensor::from_contiguous_buffer(buf, shape)
}

/// `bop(t, s)` (or `bop(s, t)` if `scalar_left`) with the scalar `s`, already in the compute
/// type of `O`.
pub(crate) fn binary_scalar<E: Element, O: Element>(
    op: &'static str,
    bop: BinaryOp,
    t: &DynTensor<E>,
    s: C<O>,
    scalar_left: bool,
) -> Result<DynTensor<O>> {
    if !autograd::tracks(t) && fits::<E, O>() {
        // Nothing to record: the backend reads the scalar as it is (no tensor for it).
        let buf = dispatch::binary_scalar::<E, C<O>, O>(
            op,
            bop,
            t.storage(),
            t.layout(),
            s,
            scalar_left,
        )?;
        return DynTensor::from_contiguous_buffer(buf, t.shape());
    }
    let s = scalar_on(s, t.device())?;
    if scalar_left {
        binary::<C<O>, E, O>(op, bop, &s, t)
    } else {
        binary::<E, C<O>, O>(op, bop, t, &s)
    }
}

/// `cop(a, b)` with broadcasting, compared in the compute type of `P`.
pub(crate) fn compare<A: Element, B: Element, P: Element>(
    op: &'static str,
    cop: CompareOp,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> Result<DynTensor<bool>> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    match (fits::<A, P>(), fits::<B, P>()) {
        (true, true) => compare_fitting::<A, B, P>(op, cop, a, b, &shape),
        (false, true) => {
            let a = a.try_to_dtype::<C<P>>()?;
            compare_fitting::<C<P>, B, P>(op, cop, &a, b, &shape)
        }
        (true, false) => {
            let b = b.try_to_dtype::<C<P>>()?;
            compare_fitting::<A, C<P>, P>(op, cop, a, &b, &shape)
        }
        (false, false) => {
            let (a, b) = (a.try_to_dtype::<C<P>>()?, b.try_to_dtype::<C<P>>()?);
            compare_fitting::<C<P>, C<P>, P>(op, cop, &a, &b, &shape)
        }
    }
}

/// [`compare`] on operands that fit `P`, broadcast to `shape`.
fn compare_fitting<A: Element, B: Element, P: Element>(
    op: &'static str,
    cop: CompareOp,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    shape: &[usize],
) -> Result<DynTensor<bool>> {
    let (la, lb) = (
        expand_layout(a.layout(), shape)?,
        expand_layout(b.layout(), shape)?,
    );
    let buf = dispatch::compare::<A, B, P>(op, cop, a.storage(), &la, b.storage(), &lb)?;
    DynTensor::from_contiguous_buffer(buf, shape)
}

/// `t` as a tensor of `O`: itself (a shared handle) when it is one, else a converted copy.
pub(crate) fn converted<A: Element, O: Element>(t: &DynTensor<A>) -> Result<DynTensor<O>> {
    match (t as &dyn std::any::Any).downcast_ref::<DynTensor<O>>() {
        Some(same) => Ok(same.shallow_clone()),
        None => t.try_to_dtype::<O>(),
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

/// `src` broadcast to `dst`'s shape and, if it shares `dst`'s storage, copied first.
pub(crate) fn inplace_source<E: Element, B: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
) -> Result<DynTensor<B>> {
    let src = src.with_layout(inplace_source_layout(op, dst, src)?);
    if src.storage().lock_order() == dst.storage().lock_order() {
        Ok(src.clone())
    } else {
        Ok(src)
    }
}

/// The layout of `src` broadcast to `dst`'s shape, or the error naming both shapes.
fn inplace_source_layout<E: Element, B: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
) -> Result<Layout> {
    expand_layout(src.layout(), dst.shape()).map_err(|_| {
        Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the source of shape {:?} cannot be broadcast to the destination's shape {:?}",
                src.shape(),
                dst.shape()
            ),
        )
    })
}

/// `x = bop(x, y)` through the view `dst`, with `y` from `src` broadcast to its shape,
/// computed in the compute type of `P` (the promoted type of `E` and `B`, which the caller has
/// checked may be stored into `E`).
pub(crate) fn binary_<E: Element, B: Element, P: Element>(
    op: &'static str,
    bop: BinaryOp,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
) -> Result<()> {
    if autograd::inplace_recorded(op, dst, autograd::tracks(src))? {
        inplace_source_layout(op, dst, src)?; // the shape check
        return autograd::record_inplace(op, dst, |old| {
            converted::<P, E>(&binary::<E, B, P>(op, bop, old, src)?)
        });
    }
    dst.check_overlap(op)?;
    inplace_source_layout(op, dst, src)?; // the shape check, before anything is converted
    if P::DTYPE != E::DTYPE {
        // Computed in the wider type, then stored: a new tensor copied back.
        let r = binary::<E, B, P>(op, bop, dst, src)?;
        return dst.try_copy_(&r).map(drop);
    }
    if fits::<B, E>() {
        let src = inplace_source(op, dst, src)?;
        return dispatch::binary_(
            op,
            bop,
            dst.storage(),
            dst.layout(),
            src.storage(),
            src.layout(),
        );
    }
    let converted = src.try_to_dtype::<C<E>>()?;
    let src = inplace_source(op, dst, &converted)?;
    dispatch::binary_(
        op,
        bop,
        dst.storage(),
        dst.layout(),
        src.storage(),
        src.layout(),
    )
}

/// An error naming `op` unless the gradient `g` has the shape of the output `y` it belongs to
/// (the backends' one-pass gradients take both at one shape).
pub(crate) fn check_gradient_shape<A: Element, B: Element>(
    op: &'static str,
    y: &DynTensor<A>,
    g: &DynTensor<B>,
) -> Result<()> {
    if y.shape() == g.shape() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::ShapeMismatch,
        op,
        format!(
            "the gradient's shape {:?} differs from the output's {:?}",
            g.shape(),
            y.shape()
        ),
    ))
}

/// Whether any element of `t` is zero.
pub(crate) fn any_zero<E: Element>(op: &'static str, t: &DynTensor<E>) -> Result<bool> {
    any_true(op, &test(op, TestOp::Zero, t)?)
}

/// Whether any element of `t` is true.
pub(crate) fn any_true(op: &'static str, t: &DynTensor<bool>) -> Result<bool> {
    let all = vec![true; t.dim()];
    let any = dispatch::reduce::<bool, bool>(op, ReduceOp::Any, t.storage(), t.layout(), &all)?;
    DynTensor::<bool>::from_contiguous_buffer(any, &[])?.try_item()
}

/// `cond ? a : b` elementwise for operands of one type, broadcasting all three.
pub(crate) fn select<E: Element>(
    op: &'static str,
    cond: &DynTensor<bool>,
    a: &DynTensor<E>,
    b: &DynTensor<E>,
) -> Result<DynTensor<E>> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let shape = broadcast_shapes(op, cond.shape(), &shape)?;
    let lc = expand_layout(cond.layout(), &shape)?;
    let (la, lb) = (
        expand_layout(a.layout(), &shape)?,
        expand_layout(b.layout(), &shape)?,
    );
    let buf = dispatch::where_(op, cond.storage(), &lc, a.storage(), &la, b.storage(), &lb)?;
    let out = DynTensor::from_contiguous_buffer(buf, &shape)?;
    if autograd::tracks(a) || autograd::tracks(b) {
        return Ok(autograd::select(cond, a, b, out));
    }
    Ok(out)
}

/// `cop(t, c)` with the constant `c`, compared in `E`'s compute type.
pub(crate) fn compare_scalar<E: Element>(
    op: &'static str,
    cop: CompareOp,
    t: &DynTensor<E>,
    c: f64,
) -> Result<DynTensor<bool>> {
    let s = scalar_on(<C<E> as Element>::from_f64(c), t.device())?;
    compare::<E, C<E>, E>(op, cop, t, &s)
}

/// An error for an operation that PyTorch does not define on `bool` tensors.
pub(crate) fn bool_unsupported(op: &'static str, what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        op,
        format!("{what} is not supported for bool tensors"),
    )
}
