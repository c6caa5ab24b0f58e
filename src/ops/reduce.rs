//! Reductions: over all elements (`sum()`), one dim (`sum_dim(dim, keepdim)`) or several
//! (`sum_dims(&dims, keepdim)`).
//!
//! - `sum`/`prod` of integers and `bool` give `i64`, of floats the same type
//!   ([`SumOutput`](crate::SumOutput)). Float sums use blocked pairwise summation (see the
//!   kernel notes below), in `f32` for `f16`/`bf16`/`f32` and in `f64` for `f64`; integer sums
//!   accumulate in `i64` (wrapping).
//! - `mean`, `var`, `std`, `norm`, `logsumexp` are defined for float types and computed in
//!   `f32` (for `f16`/`bf16`) or the type itself. `var`/`std` use two passes (mean, then the
//!   sum of squared deviations), which is accurate for data far from 0.
//! - Empty reductions: `sum` gives 0, `prod` 1, `mean` NaN, `logsumexp` `-inf`; `max`, `min`,
//!   `amax`, `amin`, `argmax`, `argmin` of nothing are an error (`InvalidArgument`).
//! - `max`/`min`/`amax`/`amin` propagate NaN; `argmax`/`argmin` return the first extreme (the
//!   first NaN if there is one).
//! - An empty `dims` list reduces over all dims (as PyTorch's `dim=[]`); a dim listed twice
//!   is an error. A 0-d tensor accepts dim `0`/`-1`.
//!
//! Summation accuracy: leaves of up to 1024 adjacent elements are summed with 32 independent
//! accumulators and the leaf sums are combined pairwise, so the error is about
//! `(32 + 5 + log2(n / 1024)) ε Σ|x|` instead of `n ε Σ|x|` for a plain loop.

use super::{C, binary, unary};
use crate::autograd::same_type;
use crate::backend::op::{BinaryOp, CompareOp, ReduceOp, TestOp, UnaryOp};
use crate::dtype::{Element, Float};
use crate::dtype::{Kernel, Native, NativeFloat};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::normalize_dim;
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

/// The sum type of `E` (see [`SumOutput`](crate::SumOutput)).
type Sum<E> = <E as Kernel>::Sum;

/// The reduced-dim mask for `dims` (empty: every dim).
fn dims_mask(op: &'static str, dims: &[isize], rank: usize) -> Result<Vec<bool>> {
    if dims.is_empty() {
        return Ok(vec![true; rank]);
    }
    let mut mask = vec![false; rank];
    for &d in dims {
        if rank == 0 && (d == 0 || d == -1) {
            continue;
        }
        let n = normalize_dim(op, d, rank)?;
        if mask[n] {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("dim {d} appears more than once in the dims {dims:?}"),
            ));
        }
        mask[n] = true;
    }
    Ok(mask)
}

/// The kept shape of `shape` under `mask`, with size-1 dims for the reduced ones if `keepdim`.
pub(crate) fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(shape.len());
    for (&s, &m) in shape.iter().zip(mask) {
        match (m, keepdim) {
            (false, _) => out.push(s),
            (true, true) => out.push(1),
            (true, false) => {}
        }
    }
    out
}

fn reduced_count(shape: &[usize], mask: &[bool]) -> usize {
    shape
        .iter()
        .zip(mask)
        .filter(|&(_, &m)| m)
        .map(|(&s, _)| s)
        .product()
}

/// `t` reduced by `rop` over `mask`, as `O` (the operation's result type, see
/// [`Backend::reduce`](crate::backend::Backend)).
fn reduce_to<E: Element, O: Element>(
    op: &'static str,
    rop: ReduceOp,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
) -> Result<DynTensor<O>> {
    let buf = dispatch::reduce::<E, O>(op, rop, t.storage(), t.layout(), mask)?;
    let out = DynTensor::from_contiguous_buffer(buf, &reduced_shape(t.shape(), mask, keepdim))?;
    if !crate::autograd::tracks(t) {
        return Ok(out);
    }
    match rop {
        ReduceOp::Max | ReduceOp::Min if O::DTYPE == E::DTYPE => {
            let out = crate::autograd::extreme(op, t, mask, same_type::<_, DynTensor<E>>(out));
            Ok(same_type(out))
        }
        _ => crate::autograd::reduce(op, rop, t, mask, out),
    }
}

/// `t` reduced by `rop` over `mask` with the reduced dims kept, as `E` (recorded).
pub(crate) fn reduce_keepdim<E: Element>(
    op: &'static str,
    rop: ReduceOp,
    t: &DynTensor<E>,
    mask: &[bool],
) -> Result<DynTensor<E>> {
    reduce_to::<E, E>(op, rop, t, mask, true)
}

fn empty_error(op: &'static str, shape: &[usize]) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        op,
        format!(
            "cannot reduce over no elements (shape {shape:?}): {op} has no identity; reduce over \
             a non-empty dim"
        ),
    )
}

/// The maximum (`max`) or minimum over `mask`; an error over no element.
fn extreme<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
    max: bool,
) -> Result<DynTensor<E>> {
    if reduced_count(t.shape(), mask) == 0 {
        return Err(empty_error(op, t.shape()));
    }
    let rop = if max { ReduceOp::Max } else { ReduceOp::Min };
    reduce_to::<E, E>(op, rop, t, mask, keepdim)
}

fn arg_dim<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    dim: isize,
    keepdim: bool,
    max: bool,
) -> Result<(DynTensor<E>, DynTensor<i64>)> {
    if t.dim() == 0 && (dim == 0 || dim == -1) {
        return Ok((t.clone(), super::scalar_on(0, t.device())?));
    }
    let d = normalize_dim(op, dim, t.dim())?;
    if t.shape()[d] == 0 {
        return Err(empty_error(op, t.shape()));
    }
    let (values, indices) = dispatch::arg_reduce(op, max, t.storage(), t.layout(), d)?;
    let mut mask = vec![false; t.dim()];
    mask[d] = true;
    let shape = reduced_shape(t.shape(), &mask, keepdim);
    let values = DynTensor::from_contiguous_buffer(values, &shape)?;
    let indices = DynTensor::from_contiguous_buffer(indices, &shape)?;
    if crate::autograd::tracks(t) {
        let values = crate::autograd::pick(op, t, d, keepdim, &indices, values);
        return Ok((values, indices));
    }
    Ok((values, indices))
}

fn arg_all<E: Element>(op: &'static str, t: &DynTensor<E>, max: bool) -> Result<DynTensor<i64>> {
    if t.numel() == 0 {
        return Err(empty_error(op, t.shape()));
    }
    let flat = t.try_reshape(&[-1])?;
    Ok(arg_dim(op, &flat, 0, false, max)?.1.squeeze())
}

/// Whether any (`any`) or every element over `mask` is non-zero.
fn truth<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
    any: bool,
) -> Result<DynTensor<bool>> {
    let rop = if any { ReduceOp::Any } else { ReduceOp::All };
    reduce_to::<E, bool>(op, rop, t, mask, keepdim)
}

macro_rules! dims_forms {
    ($bound:ident, $out:ty;
     $(#[doc = $doc:literal])* $all:ident,
     $(#[doc = $doc_dim:literal])* $dim:ident, $try_dim:ident,
     $(#[doc = $doc_dims:literal])* $dims:ident, $try_dims:ident,
     |$t:ident, $mask:ident, $keepdim:ident| $body:expr) => {
        impl<E: $bound> DynTensor<E> {
            $(#[doc = $doc])*
            ///
            #[doc = concat!("Panics where [`DynTensor::", stringify!($try_dims), "`] with `&[]` \
                (every dim) fails; the panic names the caller's line.")]
            #[track_caller]
            pub fn $all(&self) -> DynTensor<$out> {
                let ($t, $mask, $keepdim) = (self, vec![true; self.dim()], false);
                or_panic($body)
            }

            $(#[doc = $doc_dim])*
            #[track_caller]
            pub fn $dim(&self, dim: isize, keepdim: bool) -> DynTensor<$out> {
                or_panic(self.$try_dim(dim, keepdim))
            }

            #[doc = concat!("[`DynTensor::", stringify!($dim), "`], or an error for a dim out \
                of range.")]
            ///
            /// ```
            /// use namedtensor::{DynTensor, ErrorKind};
            /// let t = DynTensor::<f32>::ones(&[2, 3]);
            #[doc = concat!("let e = t.", stringify!($try_dim), "(2, false).unwrap_err();")]
            /// assert_eq!(e.kind(), ErrorKind::DimOutOfRange);
            /// ```
            pub fn $try_dim(&self, dim: isize, keepdim: bool) -> Result<DynTensor<$out>> {
                self.$try_dims(&[dim], keepdim)
            }

            $(#[doc = $doc_dims])*
            #[track_caller]
            pub fn $dims(&self, dims: &[isize], keepdim: bool) -> DynTensor<$out> {
                or_panic(self.$try_dims(dims, keepdim))
            }

            #[doc = concat!("[`DynTensor::", stringify!($dims), "`], or an error for a dim out \
                of range or listed twice.")]
            ///
            /// ```
            /// let t = namedtensor::DynTensor::<f32>::ones(&[2, 3]);
            #[doc = concat!("assert!(t.", stringify!($try_dims), "(&[0, -2], false).is_err());")]
            /// ```
            pub fn $try_dims(&self, dims: &[isize], keepdim: bool) -> Result<DynTensor<$out>> {
                let $mask = dims_mask(stringify!($dims), dims, self.dim())?;
                let ($t, $keepdim) = (self, keepdim);
                $body
            }
        }
    };
}

dims_forms! { Element, Sum<E>;
    /// The sum of all elements, as a 0-d tensor (`i64` for integers and `bool`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![1u8, 200, 100], &[3]).sum().item(), 301i64);
    /// assert_eq!(DynTensor::<f32>::zeros(&[0]).sum().item(), 0.0);
    /// ```
    sum,
    /// The sum over dim `dim`; `keepdim` keeps it with size 1.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.sum_dim(0, false).to_vec(), vec![4.0, 6.0]);
    /// assert_eq!(t.sum_dim(-1, true).shape(), &[2, 1]);
    /// ```
    sum_dim, try_sum_dim,
    /// The sum over several dims (all of them for `&[]`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<i32>::ones(&[2, 3, 4]);
    /// assert_eq!(t.sum_dims(&[0, 2], false).to_vec(), vec![8i64, 8, 8]);
    /// ```
    sum_dims, try_sum_dims,
    |t, mask, keepdim| {
        reduce_to::<E, Sum<E>>("sum", ReduceOp::Sum, t, &mask, keepdim)
    }
}

dims_forms! { Element, Sum<E>;
    /// The product of all elements, as a 0-d tensor (`i64` for integers and `bool`; 1 when
    /// empty).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![2i32, 3, 4], &[3]).prod().item(), 24i64);
    /// ```
    prod,
    /// The product over dim `dim`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.prod_dim(1, false).to_vec(), vec![2.0, 12.0]);
    /// ```
    prod_dim, try_prod_dim,
    /// The product over several dims (all of them for `&[]`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.prod_dims(&[0, 1], true).to_vec(), vec![24.0]);
    /// ```
    prod_dims, try_prod_dims,
    |t, mask, keepdim| {
        reduce_to::<E, Sum<E>>("prod", ReduceOp::Prod, t, &mask, keepdim)
    }
}

dims_forms! { Float, E;
    /// The mean of all elements, as a 0-d tensor (NaN when empty).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![1.0f32, 2.0, 6.0], &[3]).mean().item(), 3.0);
    /// assert!(DynTensor::<f32>::zeros(&[0]).mean().item().is_nan());
    /// ```
    mean,
    /// The mean over dim `dim`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(t.mean_dim(0, false).to_vec(), vec![2.0, 3.0]);
    /// ```
    mean_dim, try_mean_dim,
    /// The mean over several dims (all of them for `&[]`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 1, 2]);
    /// assert_eq!(t.mean_dims(&[0, 2], true).to_vec(), vec![2.5]);
    /// ```
    mean_dims, try_mean_dims,
    |t, mask, keepdim| mean_impl::<E, E>("mean", t, &mask, keepdim)
}

dims_forms! { Element, E;
    /// The largest element, as a 0-d tensor (NaN if any is NaN). Panics for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![3i32, 7, -1], &[3]).amax().item(), 7);
    /// ```
    amax,
    /// The largest element over dim `dim` (values only; see [`DynTensor::max_dim`] for
    /// indices as well). An error for an empty dim.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 3.0, 2.0], &[2, 2]);
    /// assert_eq!(t.amax_dim(1, false).to_vec(), vec![5.0, 3.0]);
    /// ```
    amax_dim, try_amax_dim,
    /// The largest element over several dims (all of them for `&[]`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 3.0, 2.0], &[2, 2]);
    /// assert_eq!(t.amax_dims(&[0, 1], false).item(), 5.0);
    /// ```
    amax_dims, try_amax_dims,
    |t, mask, keepdim| extreme("amax", t, &mask, keepdim, true)
}

dims_forms! { Element, E;
    /// The smallest element, as a 0-d tensor (NaN if any is NaN). Panics for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![3i32, 7, -1], &[3]).amin().item(), -1);
    /// ```
    amin,
    /// The smallest element over dim `dim`. An error for an empty dim.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 3.0, 2.0], &[2, 2]);
    /// assert_eq!(t.amin_dim(0, false).to_vec(), vec![1.0, 2.0]);
    /// ```
    amin_dim, try_amin_dim,
    /// The smallest element over several dims (all of them for `&[]`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 3.0, 2.0], &[2, 2]);
    /// assert_eq!(t.amin_dims(&[], true).to_vec(), vec![1.0]);
    /// ```
    amin_dims, try_amin_dims,
    |t, mask, keepdim| extreme("amin", t, &mask, keepdim, false)
}

dims_forms! { Float, E;
    /// The log of the sum of exponentials of all elements, computed stably (the maximum is
    /// subtracted first); `-inf` when empty.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1000.0f64, 1000.0], &[2]);
    /// assert!((t.logsumexp().item() - (1000.0 + 2f64.ln())).abs() < 1e-9);
    /// ```
    logsumexp,
    /// `logsumexp` over dim `dim`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![0.0f32, 0.0, 1.0, 1.0], &[2, 2]);
    /// let l = t.logsumexp_dim(1, false).to_vec();
    /// assert!((l[0] - 2f32.ln()).abs() < 1e-6 && (l[1] - 1.0 - 2f32.ln()).abs() < 1e-6);
    /// ```
    logsumexp_dim, try_logsumexp_dim,
    /// `logsumexp` over several dims (all of them for `&[]`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<f32>::zeros(&[2, 2]);
    /// assert!((t.logsumexp_dims(&[0, 1], false).item() - 4f32.ln()).abs() < 1e-6);
    /// ```
    logsumexp_dims, try_logsumexp_dims,
    |t, mask, keepdim| logsumexp_impl(t, &mask, keepdim)
}

/// The mean over `mask`, computed in the compute type and stored as `O`.
fn mean_impl<E: Float, O: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
) -> Result<DynTensor<O>> {
    let m = reduce_to::<E, C<E>>(op, ReduceOp::Mean, t, mask, keepdim)?;
    super::converted::<C<E>, O>(&m)
}

/// `Σ uop(x - m)` over `mask` where `m` is a keepdim reduction of the same tensor, in the
/// compute type, with the dims kept.
fn centered_sum<E: Float>(
    op: &'static str,
    t: &DynTensor<E>,
    m: &DynTensor<C<E>>,
    mask: &[bool],
    uop: UnaryOp,
) -> Result<DynTensor<C<E>>> {
    let d = binary::<E, C<E>, C<E>>(op, BinaryOp::Sub, t, m)?;
    sum_c(op, &unary(op, uop, &d)?, mask)
}

fn sum_c<T: Native>(op: &'static str, t: &DynTensor<T>, mask: &[bool]) -> Result<DynTensor<T>> {
    reduce_to::<T, T>(op, ReduceOp::Sum, t, mask, true)
}

/// Drops the reduced dims of a keepdim result unless `keepdim`.
fn finish_shape<T: Element>(
    r: DynTensor<T>,
    shape: &[usize],
    mask: &[bool],
    keepdim: bool,
) -> Result<DynTensor<T>> {
    if keepdim {
        return Ok(r);
    }
    let s: Vec<isize> = reduced_shape(shape, mask, false)
        .iter()
        .map(|&s| s as isize)
        .collect();
    r.try_reshape(&s)
}

fn var_impl<E: Float>(
    t: &DynTensor<E>,
    mask: &[bool],
    correction: usize,
    keepdim: bool,
    sqrt: bool,
) -> Result<DynTensor<E>> {
    let op = if sqrt { "std" } else { "var" };
    let n = reduced_count(t.shape(), mask);
    let m = mean_impl::<E, C<E>>(op, t, mask, true)?;
    let ss = centered_sum(op, t, &m, mask, UnaryOp::Square)?;
    let denom = <C<E> as NativeFloat>::c(n.saturating_sub(correction) as f64);
    let denom = super::scalar_on(denom, t.device())?;
    let v = binary::<C<E>, C<E>, C<E>>(op, BinaryOp::Div, &ss, &denom)?;
    let v = if sqrt { root(op, &v)? } else { v };
    finish_shape(super::converted::<C<E>, E>(&v)?, t.shape(), mask, keepdim)
}

/// A tensor of the kept dims' shape (with `keepdim`) holding `value`, on `t`'s device.
fn filled<E: Element, T: Element>(
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
    value: T,
) -> Result<DynTensor<T>> {
    DynTensor::full_on(&reduced_shape(t.shape(), mask, keepdim), value, t.device())
}

fn logsumexp_impl<E: Float>(
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
) -> Result<DynTensor<E>> {
    let op = "logsumexp";
    // The maximum is subtracted for range; an infinite maximum (or none, over no element) is
    // not, as in PyTorch, so that `inf - inf` never makes a NaN.
    let zero = <C<E> as Element>::ZERO;
    let m = if reduced_count(t.shape(), mask) == 0 {
        filled(t, mask, true, zero)?
    } else {
        // The shift only keeps exp in range; its gradient cancels, so it is not recorded.
        let m = reduce_to::<E, E>(op, ReduceOp::Max, &t.detach(), mask, true)?;
        let m = super::converted::<E, C<E>>(&m)?;
        let finite = super::test(op, TestOp::Finite, &m)?;
        super::select(op, &finite, &m, &super::scalar_on(zero, t.device())?)?
    };
    let s = centered_sum(op, t, &m, mask, UnaryOp::Exp)?;
    let r = binary::<C<E>, C<E>, E>(op, BinaryOp::Add, &unary(op, UnaryOp::Log, &s)?, &m)?;
    finish_shape(r, t.shape(), mask, keepdim)
}

fn norm_impl<E: Float>(
    t: &DynTensor<E>,
    p: f64,
    mask: &[bool],
    keepdim: bool,
) -> Result<DynTensor<E>> {
    let op = "norm";
    let (m, k) = (mask, keepdim);
    if reduced_count(t.shape(), mask) == 0 {
        // The folds' identities: no element has norm 0 (+inf for p = -inf, a minimum).
        let v = if p == f64::NEG_INFINITY {
            f64::INFINITY
        } else {
            0.0
        };
        return Ok(constant_of(t, filled(t, m, k, E::from_f64(v))?));
    }
    // A general p gets one node with its own formula (below): computed unrecorded.
    let general = ![0.0, 1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY].contains(&p);
    let _unrecorded = general.then(|| crate::autograd::GradMode::set(false));
    let x = super::converted::<E, C<E>>(t)?;
    let abs = || unary(op, UnaryOp::Abs, &x);
    let sum = |y: &DynTensor<C<E>>| reduce_to::<C<E>, C<E>>(op, ReduceOp::Sum, y, m, k);
    let pow = |y: &DynTensor<C<E>>, e: f64| -> Result<DynTensor<C<E>>> {
        let e = super::scalar_on(<C<E> as NativeFloat>::c(e), t.device())?;
        binary::<C<E>, C<E>, C<E>>(op, BinaryOp::Pow, y, &e)
    };
    let r = match p {
        f64::INFINITY => reduce_to::<C<E>, C<E>>(op, ReduceOp::Max, &abs()?, m, k)?,
        f64::NEG_INFINITY => reduce_to::<C<E>, C<E>>(op, ReduceOp::Min, &abs()?, m, k)?,
        0.0 => {
            let zero = super::scalar_on(<C<E> as Element>::ZERO, t.device())?;
            let nonzero = super::compare::<C<E>, C<E>, C<E>>(op, CompareOp::Ne, &x, &zero)?;
            sum(&nonzero.try_to_dtype::<C<E>>()?)?
        }
        1.0 => sum(&abs()?)?,
        // The count of non-zeros: piecewise constant, its gradient is 0 (recorded below).
        2.0 => root(op, &sum(&unary(op, UnaryOp::Square, &x)?)?)?,
        _ => pow(&sum(&pow(&abs()?, p)?)?, 1.0 / p)?,
    };
    let r = super::converted::<C<E>, E>(&r)?;
    drop(_unrecorded);
    Ok(if p == 0.0 {
        constant_of(t, r)
    } else if general && crate::autograd::tracks(t) {
        crate::autograd::pnorm(op, t, p, m, r)
    } else {
        r
    })
}

/// `r`, a result of `norm` that does not depend on `t`'s values, kept in `t`'s graph with a
/// zero gradient (PyTorch returns such results tracked).
fn constant_of<E: Element>(t: &DynTensor<E>, r: DynTensor<E>) -> DynTensor<E> {
    if crate::autograd::tracks(t) {
        crate::autograd::constant("norm", t, r)
    } else {
        r
    }
}

impl<E: Float> DynTensor<E> {
    /// The variance of all elements with `correction` subtracted from the count in the
    /// denominator (1: the unbiased sample variance, PyTorch's default; 0: the population
    /// variance). A non-positive denominator gives `inf` or NaN, as in PyTorch.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4]);
    /// assert!((t.var(1).item() - 5.0 / 3.0).abs() < 1e-12);
    /// assert_eq!(t.var(0).item(), 1.25);
    /// ```
    #[track_caller]
    pub fn var(&self, correction: usize) -> DynTensor<E> {
        or_panic(var_impl(
            self,
            &vec![true; self.dim()],
            correction,
            false,
            false,
        ))
    }

    /// The variance over `dims` (all for `&[]`); see [`DynTensor::var`].
    /// Panics where [`DynTensor::try_var_dims`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 3.0, 2.0, 2.0], &[2, 2]);
    /// assert_eq!(t.var_dims(&[1], 0, false).to_vec(), vec![1.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn var_dims(&self, dims: &[isize], correction: usize, keepdim: bool) -> DynTensor<E> {
        or_panic(self.try_var_dims(dims, correction, keepdim))
    }

    /// [`DynTensor::var_dims`], or an error for a dim out of range or listed twice.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_var_dims(&[1], 1, false).is_err());
    /// ```
    pub fn try_var_dims(
        &self,
        dims: &[isize],
        correction: usize,
        keepdim: bool,
    ) -> Result<DynTensor<E>> {
        let mask = dims_mask("var", dims, self.dim())?;
        var_impl(self, &mask, correction, keepdim, false)
    }

    /// The standard deviation of all elements (see [`DynTensor::var`] for `correction`).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f64, 3.0], &[2]);
    /// assert_eq!(t.std(0).item(), 1.0);
    /// ```
    #[track_caller]
    pub fn std(&self, correction: usize) -> DynTensor<E> {
        or_panic(var_impl(
            self,
            &vec![true; self.dim()],
            correction,
            false,
            true,
        ))
    }

    /// The standard deviation over `dims` (all for `&[]`).
    /// Panics where [`DynTensor::try_std_dims`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 3.0, 2.0, 2.0], &[2, 2]);
    /// assert_eq!(t.std_dims(&[-1], 0, true).to_vec(), vec![1.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn std_dims(&self, dims: &[isize], correction: usize, keepdim: bool) -> DynTensor<E> {
        or_panic(self.try_std_dims(dims, correction, keepdim))
    }

    /// [`DynTensor::std_dims`], or an error for a dim out of range or listed twice.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_std_dims(&[0, 0], 1, false).is_err());
    /// ```
    pub fn try_std_dims(
        &self,
        dims: &[isize],
        correction: usize,
        keepdim: bool,
    ) -> Result<DynTensor<E>> {
        let mask = dims_mask("std", dims, self.dim())?;
        var_impl(self, &mask, correction, keepdim, true)
    }

    /// The `p`-norm of all elements: `(Σ |x|^p)^(1/p)`; `p = ∞` is the largest `|x|`, `-∞`
    /// the smallest, `0` the number of non-zero elements.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![3.0f32, -4.0], &[2]);
    /// assert_eq!(t.norm(2.0).item(), 5.0);
    /// assert_eq!(t.norm(1.0).item(), 7.0);
    /// assert_eq!(t.norm(f64::INFINITY).item(), 4.0);
    /// ```
    #[track_caller]
    pub fn norm(&self, p: f64) -> DynTensor<E> {
        or_panic(norm_impl(self, p, &vec![true; self.dim()], false))
    }

    /// The `p`-norm over `dims` (all for `&[]`). Panics where [`DynTensor::try_norm_dims`]
    /// fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![3.0f64, 4.0, 6.0, 8.0], &[2, 2]);
    /// assert_eq!(t.norm_dims(2.0, &[1], false).to_vec(), vec![5.0, 10.0]);
    /// ```
    #[track_caller]
    pub fn norm_dims(&self, p: f64, dims: &[isize], keepdim: bool) -> DynTensor<E> {
        or_panic(self.try_norm_dims(p, dims, keepdim))
    }

    /// [`DynTensor::norm_dims`], or an error for a dim out of range or listed twice.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_norm_dims(2.0, &[3], false).is_err());
    /// ```
    pub fn try_norm_dims(&self, p: f64, dims: &[isize], keepdim: bool) -> Result<DynTensor<E>> {
        let mask = dims_mask("norm", dims, self.dim())?;
        norm_impl(self, p, &mask, keepdim)
    }
}

impl<E: Element> DynTensor<E> {
    /// The largest element, as a 0-d tensor (NaN if any is NaN). Panics for an empty tensor
    /// (see [`DynTensor::try_max`]).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![2.0f32, 9.0, 4.0], &[3]).max().item(), 9.0);
    /// ```
    #[track_caller]
    pub fn max(&self) -> DynTensor<E> {
        or_panic(self.try_max())
    }

    /// [`DynTensor::max`], or an error (`InvalidArgument`) for an empty tensor.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let e = DynTensor::<f32>::zeros(&[0, 3]).try_max().unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn try_max(&self) -> Result<DynTensor<E>> {
        extreme("max", self, &vec![true; self.dim()], false, true)
    }

    /// The smallest element, as a 0-d tensor. Panics for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![2i8, -9, 4], &[3]).min().item(), -9);
    /// ```
    #[track_caller]
    pub fn min(&self) -> DynTensor<E> {
        or_panic(self.try_min())
    }

    /// [`DynTensor::min`], or an error for an empty tensor.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<i32>::zeros(&[0]).try_min().is_err());
    /// ```
    pub fn try_min(&self) -> Result<DynTensor<E>> {
        extreme("min", self, &vec![true; self.dim()], false, false)
    }

    /// The largest elements along `dim` and their indices (PyTorch's `max(dim)`); ties give
    /// the first index, a NaN wins. Panics where [`DynTensor::try_max_dim`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 7.0, 2.0], &[2, 2]);
    /// let (values, indices) = t.max_dim(1, false);
    /// assert_eq!((values.to_vec(), indices.to_vec()), (vec![5.0, 7.0], vec![1, 0]));
    /// ```
    #[track_caller]
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> (DynTensor<E>, DynTensor<i64>) {
        or_panic(self.try_max_dim(dim, keepdim))
    }

    /// [`DynTensor::max_dim`], or an error for a dim out of range or of size 0.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert!(DynTensor::<f32>::zeros(&[3, 0]).try_max_dim(1, false).is_err());
    /// assert_eq!(DynTensor::<f32>::zeros(&[0, 3]).try_max_dim(1, false).unwrap().0.shape(), &[0]);
    /// ```
    pub fn try_max_dim(&self, dim: isize, keepdim: bool) -> Result<(DynTensor<E>, DynTensor<i64>)> {
        arg_dim("max_dim", self, dim, keepdim, true)
    }

    /// The smallest elements along `dim` and their indices (PyTorch's `min(dim)`).
    /// Panics where [`DynTensor::try_min_dim`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1i32, 5, 7, 2], &[2, 2]);
    /// let (values, indices) = t.min_dim(0, true);
    /// assert_eq!((values.to_vec(), indices.to_vec(), values.shape()), (vec![1, 2], vec![0, 1], &[1, 2][..]));
    /// ```
    #[track_caller]
    pub fn min_dim(&self, dim: isize, keepdim: bool) -> (DynTensor<E>, DynTensor<i64>) {
        or_panic(self.try_min_dim(dim, keepdim))
    }

    /// [`DynTensor::min_dim`], or an error for a dim out of range or of size 0.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[2]).try_min_dim(1, false).is_err());
    /// ```
    pub fn try_min_dim(&self, dim: isize, keepdim: bool) -> Result<(DynTensor<E>, DynTensor<i64>)> {
        arg_dim("min_dim", self, dim, keepdim, false)
    }

    /// The index of the largest element in row-major order, as a 0-d `i64` tensor (the first
    /// one on ties; the first NaN if any). Panics for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 7.0, 2.0], &[2, 2]);
    /// assert_eq!(t.argmax().item(), 2);
    /// assert_eq!(t.t().argmax().item(), 1);
    /// ```
    #[track_caller]
    pub fn argmax(&self) -> DynTensor<i64> {
        or_panic(self.try_argmax())
    }

    /// [`DynTensor::argmax`], or an error for an empty tensor.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[0]).try_argmax().is_err());
    /// ```
    pub fn try_argmax(&self) -> Result<DynTensor<i64>> {
        arg_all("argmax", self, true)
    }

    /// The index of the smallest element in row-major order, as a 0-d `i64` tensor.
    /// Panics for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::from_vec(vec![3i32, -1, -1], &[3]).argmin().item(), 1);
    /// ```
    #[track_caller]
    pub fn argmin(&self) -> DynTensor<i64> {
        or_panic(self.try_argmin())
    }

    /// [`DynTensor::argmin`], or an error for an empty tensor.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<i64>::zeros(&[2, 0]).try_argmin().is_err());
    /// ```
    pub fn try_argmin(&self) -> Result<DynTensor<i64>> {
        arg_all("argmin", self, false)
    }

    /// The indices of the largest elements along `dim`.
    /// Panics where [`DynTensor::try_argmax_dim`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 7.0, 2.0], &[2, 2]);
    /// assert_eq!(t.argmax_dim(0, false).to_vec(), vec![1, 0]);
    /// ```
    #[track_caller]
    pub fn argmax_dim(&self, dim: isize, keepdim: bool) -> DynTensor<i64> {
        or_panic(self.try_argmax_dim(dim, keepdim))
    }

    /// [`DynTensor::argmax_dim`], or an error for a dim out of range or of size 0.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[2]).try_argmax_dim(-2, false).is_err());
    /// ```
    pub fn try_argmax_dim(&self, dim: isize, keepdim: bool) -> Result<DynTensor<i64>> {
        Ok(arg_dim("argmax_dim", self, dim, keepdim, true)?.1)
    }

    /// The indices of the smallest elements along `dim`.
    /// Panics where [`DynTensor::try_argmin_dim`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 5.0, 7.0, 2.0], &[2, 2]);
    /// assert_eq!(t.argmin_dim(1, true).to_vec(), vec![0, 1]);
    /// ```
    #[track_caller]
    pub fn argmin_dim(&self, dim: isize, keepdim: bool) -> DynTensor<i64> {
        or_panic(self.try_argmin_dim(dim, keepdim))
    }

    /// [`DynTensor::argmin_dim`], or an error for a dim out of range or of size 0.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[2, 0]).try_argmin_dim(1, false).is_err());
    /// ```
    pub fn try_argmin_dim(&self, dim: isize, keepdim: bool) -> Result<DynTensor<i64>> {
        Ok(arg_dim("argmin_dim", self, dim, keepdim, false)?.1)
    }

    /// Whether any element is non-zero (`true` for bool); false for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert!(DynTensor::from_vec(vec![0.0f32, 2.0], &[2]).any());
    /// assert!(!DynTensor::<bool>::zeros(&[0]).any());
    /// ```
    #[track_caller]
    pub fn any(&self) -> bool {
        or_panic(truth("any", self, &vec![true; self.dim()], false, true)).item()
    }

    /// Whether every element is non-zero; true for an empty tensor.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert!(!DynTensor::from_vec(vec![true, false], &[2]).all());
    /// assert!(DynTensor::<i32>::zeros(&[0]).all());
    /// ```
    #[track_caller]
    pub fn all(&self) -> bool {
        or_panic(truth("all", self, &vec![true; self.dim()], false, false)).item()
    }

    /// Whether any element along `dim` is non-zero. Panics for a dim out of range.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![true, false, false, false], &[2, 2]);
    /// assert_eq!(t.any_dim(1, false).to_vec(), vec![true, false]);
    /// ```
    #[track_caller]
    pub fn any_dim(&self, dim: isize, keepdim: bool) -> DynTensor<bool> {
        let mask = or_panic(dims_mask("any_dim", &[dim], self.dim()));
        or_panic(truth("any_dim", self, &mask, keepdim, true))
    }

    /// Whether every element along `dim` is non-zero. Panics for a dim out of range.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![true, true, false, true], &[2, 2]);
    /// assert_eq!(t.all_dim(0, false).to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn all_dim(&self, dim: isize, keepdim: bool) -> DynTensor<bool> {
        let mask = or_panic(dims_mask("all_dim", &[dim], self.dim()));
        or_panic(truth("all_dim", self, &mask, keepdim, false))
    }
}

/// `√v` as the last step of `std` and the 2-norm, whose gradient is 0 where the result is 0
/// (as in PyTorch), not `g / 0`.
fn root<T: Element>(op: &'static str, v: &DynTensor<T>) -> Result<DynTensor<T>> {
    if !crate::autograd::tracks(v) {
        return unary(op, UnaryOp::Sqrt, v);
    }
    let y = {
        let _off = crate::autograd::GradMode::no_grad();
        unary(op, UnaryOp::Sqrt, v)?
    };
    Ok(crate::autograd::root(op, v, y))
}
