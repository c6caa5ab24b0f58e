//! The CUDA path of the compute operations (feature `cuda`).
//!
//! The pointwise operations have moved behind the backend seam (`backend::cuda::backend`);
//! the reductions, softmax, matrix products, joins and indexed reads below still come here from
//! their operation through `on_cuda!` and move next.
//!
//! Every function holds the shared locks of all the storages it reads, taken once each in the
//! global order, for its whole duration (kernel launches included). Kernels are queued on the
//! device's single stream while the locks are held, so they run in the order the locks were
//! granted.

use super::expand_layout;
use super::reduce::reduced_shape;
use crate::backend::cuda::backend::{
    binary_scalar as with_scalar, compare_scalar, compute_dtype, scalar_buf, scalar_layout,
};
use crate::backend::cuda::kernels::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::backend::cuda::{CudaBuffer, blas, compute, copy};
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, broadcast_shapes};
use crate::storage::{AnyStorage, Buffer, with_cuda_read};
use crate::tensor::DynTensor;

/// A tensor over `buf` (contiguous, `shape`), converted to `O` on the device if needed.
fn wrap<O: Element>(op: &'static str, buf: CudaBuffer, shape: &[usize]) -> Result<DynTensor<O>> {
    let buf = if buf.dtype() == O::DTYPE {
        buf
    } else {
        copy::cast(op, &buf, &Layout::contiguous(shape)?, O::DTYPE)?
    };
    DynTensor::from_contiguous_buffer(Buffer::Cuda(buf), shape)
}

/// Whether any element of `t` is zero (the integer-division check), on the host: the
/// elements are copied back, as the answer is needed there anyway.
pub(crate) fn any_zero<E: Element>(op: &'static str, t: &DynTensor<E>) -> Result<bool> {
    let host = with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        copy::gather_to_host::<E>(op, b[0], t.layout())
    })?;
    Ok(host.iter().any(|x| x.to_f64() == 0.0))
}

// ---------------------------------------------------------------------------------------
// Reductions

/// `(buf, layout)` reduced by `rop` over the dims in `mask` (every dim where `mask` is true):
/// a contiguous buffer in the shape of the kept dims.
fn reduce_buf(
    op: &'static str,
    rop: ReduceOp,
    buf: &CudaBuffer,
    layout: &Layout,
    mask: &[bool],
) -> Result<CudaBuffer> {
    let r = layout.rank();
    let kept: Vec<usize> = (0..r).filter(|&d| !mask[d]).collect();
    let reduced: Vec<usize> = (0..r).filter(|&d| mask[d]).collect();
    let order: Vec<isize> = kept.iter().chain(&reduced).map(|&d| d as isize).collect();
    let permuted = layout.permute(&order)?;
    let count: usize = reduced.iter().map(|&d| layout.sizes()[d]).product();
    let mut sizes: Vec<usize> = kept.iter().map(|&d| layout.sizes()[d]).collect();
    sizes.push(count);
    let isizes: Vec<isize> = sizes.iter().map(|&s| s as isize).collect();
    // The reduced dims as one: a view where the strides allow, else a packed copy.
    let packed;
    let (src, l) = match permuted.view(&isizes) {
        Ok(l) => (buf, l),
        Err(_) => {
            packed = copy::cast(op, buf, &permuted, buf.dtype())?;
            (&packed, Layout::contiguous(&sizes)?)
        }
    };
    compute::reduce(op, rop, src, &l, kept.len())
}

/// `t` reduced by `rop` over `mask`, stored as `O` (sum, prod, mean, max, min, argmax, argmin).
pub(crate) fn reduce<E: Element, O: Element>(
    op: &'static str,
    rop: ReduceOp,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
) -> Result<DynTensor<O>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let src = b[0];
        // A float mean into a wider type (f16 → f32 for var) converts first.
        let converted;
        let (src, layout) = if rop == ReduceOp::Mean && O::DTYPE.is_float() && O::DTYPE != E::DTYPE
        {
            converted = copy::cast(op, src, t.layout(), O::DTYPE)?;
            (&converted, Layout::contiguous(t.shape())?)
        } else {
            (src, t.layout().clone())
        };
        let r = reduce_buf(op, rop, src, &layout, mask)?;
        wrap::<O>(op, r, &reduced_shape(t.shape(), mask, keepdim))
    })
}

/// any (`any`) or all of the truth values of `t` over `mask`.
pub(crate) fn truth<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
    any: bool,
) -> Result<DynTensor<bool>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let shape = reduced_shape(t.shape(), mask, keepdim);
        let count: usize = t
            .shape()
            .iter()
            .zip(mask)
            .filter(|(_, m)| **m)
            .map(|(s, _)| s)
            .product();
        if count == 0 {
            // any of nothing is false, all of nothing is true
            let v = scalar_buf(op, b[0], DType::Bool, (!any) as u8 as f64)?;
            let r = copy::cast(op, &v, &scalar_layout(&shape)?, DType::Bool)?;
            return wrap::<bool>(op, r, &shape);
        }
        let bools = copy::cast(op, b[0], t.layout(), DType::Bool)?;
        let bytes = copy::cast(op, &bools, &Layout::contiguous(t.shape())?, DType::U8)?;
        let rop = if any { ReduceOp::Max } else { ReduceOp::Min };
        let r = reduce_buf(op, rop, &bytes, &Layout::contiguous(t.shape())?, mask)?;
        wrap::<bool>(op, r, &shape)
    })
}

/// The float reductions built from kernels, in the compute type `k` of `t`.
pub(crate) enum Composite {
    /// Variance with `correction`, or its square root.
    Var { correction: usize, sqrt: bool },
    /// `log Σ exp`.
    LogSumExp,
    /// The `p`-norm.
    Norm(f64),
}

/// `t` reduced over `mask` by `what`, computed in `t`'s compute type, stored as `E`.
pub(crate) fn composite<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    mask: &[bool],
    keepdim: bool,
    what: Composite,
) -> Result<DynTensor<E>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let k = compute_dtype(E::DTYPE);
        let shape = t.shape();
        let lx = Layout::contiguous(shape)?;
        let x = copy::cast(op, b[0], t.layout(), k)?;
        let out_shape = reduced_shape(shape, mask, keepdim);
        let kept = reduced_shape(shape, mask, true);
        let count: usize = shape
            .iter()
            .zip(mask)
            .filter(|(_, m)| **m)
            .map(|(s, _)| s)
            .product();
        // A reduced buffer seen at `shape` again (size-1 dims broadcast).
        let back = || expand_layout(&Layout::contiguous(&kept)?, shape);
        let r = match what {
            Composite::Var { correction, sqrt } => {
                let m = reduce_buf(op, ReduceOp::Mean, &x, &lx, mask)?;
                let d = compute::binary(op, BinaryOp::Sub, &x, &lx, &m, &back()?)?;
                let sq = compute::binary(op, BinaryOp::Mul, &d, &lx, &d, &lx)?;
                let ss = reduce_buf(op, ReduceOp::Sum, &sq, &lx, mask)?;
                let denom = count.saturating_sub(correction) as f64;
                let v = with_scalar(op, BinaryOp::Div, &ss, &kept, denom)?;
                if sqrt {
                    compute::unary(op, UnaryOp::Sqrt, &v, &Layout::contiguous(&kept)?)?
                } else {
                    v
                }
            }
            Composite::LogSumExp => {
                if count == 0 {
                    let v = scalar_buf(op, &x, k, f64::NEG_INFINITY)?;
                    copy::cast(op, &v, &scalar_layout(&kept)?, k)?
                } else {
                    // The maximum, limited to the finite range: an infinite maximum is then
                    // not subtracted from itself (no NaN), and the result is still ±inf.
                    let m = reduce_buf(op, ReduceOp::Max, &x, &lx, mask)?;
                    let big = if k == DType::F64 {
                        f64::MAX
                    } else {
                        f32::MAX as f64
                    };
                    let m = with_scalar(op, BinaryOp::Minimum, &m, &kept, big)?;
                    let m = with_scalar(op, BinaryOp::Maximum, &m, &kept, -big)?;
                    let d = compute::binary(op, BinaryOp::Sub, &x, &lx, &m, &back()?)?;
                    let e = compute::unary(op, UnaryOp::Exp, &d, &lx)?;
                    let s = reduce_buf(op, ReduceOp::Sum, &e, &lx, mask)?;
                    let lk = Layout::contiguous(&kept)?;
                    let l = compute::unary(op, UnaryOp::Log, &s, &lk)?;
                    compute::binary(op, BinaryOp::Add, &l, &lk, &m, &lk)?
                }
            }
            Composite::Norm(p) => {
                let lk = Layout::contiguous(&kept)?;
                if p == 0.0 {
                    let nz = compare_scalar(op, CompareOp::Ne, &x, &lx, 0.0)?;
                    let nzk = copy::cast(op, &nz, &lx, k)?;
                    reduce_buf(op, ReduceOp::Sum, &nzk, &lx, mask)?
                } else if count == 0 {
                    let v = scalar_buf(
                        op,
                        &x,
                        k,
                        if p == f64::NEG_INFINITY {
                            f64::INFINITY
                        } else {
                            0.0
                        },
                    )?;
                    copy::cast(op, &v, &scalar_layout(&kept)?, k)?
                } else {
                    let a = compute::unary(op, UnaryOp::Abs, &x, &lx)?;
                    if p == f64::INFINITY {
                        reduce_buf(op, ReduceOp::Max, &a, &lx, mask)?
                    } else if p == f64::NEG_INFINITY {
                        reduce_buf(op, ReduceOp::Min, &a, &lx, mask)?
                    } else if p == 1.0 {
                        reduce_buf(op, ReduceOp::Sum, &a, &lx, mask)?
                    } else if p == 2.0 {
                        let sq = compute::binary(op, BinaryOp::Mul, &a, &lx, &a, &lx)?;
                        let s = reduce_buf(op, ReduceOp::Sum, &sq, &lx, mask)?;
                        compute::unary(op, UnaryOp::Sqrt, &s, &lk)?
                    } else {
                        let pw = with_scalar(op, BinaryOp::Pow, &a, shape, p)?;
                        let s = reduce_buf(op, ReduceOp::Sum, &pw, &lx, mask)?;
                        with_scalar(op, BinaryOp::Pow, &s, &kept, 1.0 / p)?
                    }
                }
            }
        };
        wrap::<E>(op, r, &out_shape)
    })
}

// ---------------------------------------------------------------------------------------
// Softmax and matrix products

/// Softmax (or log-softmax) of `t` along the normalised dim `d`.
pub(crate) fn softmax<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    d: usize,
    log: bool,
) -> Result<DynTensor<E>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        if t.dim() == 0 {
            let r = compute::softmax(op, b[0], &t.layout().unsqueeze(0)?, log)?;
            return wrap::<E>(op, r, &[]);
        }
        let last = t.dim() - 1;
        // The kernel works on the last dim: move `d` there, and the result back.
        let moved = t.layout().transpose(d as isize, last as isize)?;
        let r = compute::softmax(op, b[0], &moved, log)?;
        if d == last {
            return wrap::<E>(op, r, t.shape());
        }
        let back = Layout::contiguous(moved.sizes())?.transpose(d as isize, last as isize)?;
        let r = copy::cast(op, &r, &back, E::DTYPE)?;
        wrap::<E>(op, r, t.shape())
    })
}

/// The matrix product of `a` and `b` (shapes checked by the caller's plan) through cuBLAS,
/// in `out_shape`.
pub(crate) fn matmul<E: Element>(
    op: &'static str,
    a: &DynTensor<E>,
    b: &DynTensor<E>,
    out_shape: &[usize],
) -> Result<DynTensor<E>> {
    let storages = [a.storage() as &dyn AnyStorage, b.storage()];
    with_cuda_read(op, &storages, |bufs| {
        // 1-D operands as a row (left) or a column (right) matrix.
        let la = if a.dim() == 1 {
            a.layout().unsqueeze(0)?
        } else {
            a.layout().clone()
        };
        let lb = if b.dim() == 1 {
            b.layout().unsqueeze(-1)?
        } else {
            b.layout().clone()
        };
        let (ra, rb) = (la.rank(), lb.rank());
        let batch = broadcast_shapes(op, &la.sizes()[..ra - 2], &lb.sizes()[..rb - 2])?;
        let (m, k, n) = (la.sizes()[ra - 2], la.sizes()[ra - 1], lb.sizes()[rb - 1]);
        let with = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
        let la = expand_layout(&la, &with([m, k]))?;
        let lb = expand_layout(&lb, &with([k, n]))?;
        let r = blas::matmul(op, bufs[0], &la, bufs[1], &lb)?;
        let t = wrap::<E>(op, r, &with([m, n]))?;
        let s: Vec<isize> = out_shape.iter().map(|&s| s as isize).collect();
        t.try_reshape(&s)
    })
}

/// `tensors` joined along `d` into `out_shape` (checked by `ops::join`): the result is
/// allocated on the device and each part copied into its slice of it.
pub(crate) fn cat<E: Element>(
    op: &'static str,
    tensors: &[&DynTensor<E>],
    d: usize,
    out_shape: &[usize],
) -> Result<DynTensor<E>> {
    let storages: Vec<&dyn AnyStorage> = tensors
        .iter()
        .map(|t| t.storage() as &dyn AnyStorage)
        .collect();
    with_cuda_read(op, &storages, |bufs| {
        let full = Layout::contiguous(out_shape)?;
        let mut out = CudaBuffer::alloc(op, bufs[0].cuda_device(), E::DTYPE, full.numel())?;
        let mut at = 0;
        for (buf, t) in bufs.iter().zip(tensors) {
            let len = t.shape()[d];
            let part = full.narrow(d as isize, at as isize, len)?;
            copy::copy(op, &mut out, &part, buf, t.layout())?;
            at += len;
        }
        DynTensor::from_contiguous_buffer(Buffer::Cuda(out), out_shape)
    })
}

/// Fails unless every element of the `i64` view `(index, layout)` is in `0..shape[dim]`.
///
/// The check runs before any indexed read is launched: the minimum and the maximum of the
/// indices are reduced on the device and copied back (two scalars), so an out-of-range index
/// is an [`ErrorKind::IndexOutOfRange`] error with the CPU's message, reporting the smallest
/// negative or else the largest too-large index (the CPU reports the first in order).
fn check_index_range(
    op: &'static str,
    index: &CudaBuffer,
    layout: &Layout,
    dim: usize,
    shape: &[usize],
) -> Result<()> {
    if layout.numel() == 0 {
        return Ok(());
    }
    let flat = if layout.rank() == 0 {
        layout.unsqueeze(0)?
    } else {
        layout.clone()
    };
    let all = vec![true; flat.rank()];
    let lo = reduce_buf(op, ReduceOp::Min, index, &flat, &all)?.read::<i64>(op, 0, 1)?[0];
    let hi = reduce_buf(op, ReduceOp::Max, index, &flat, &all)?.read::<i64>(op, 0, 1)?[0];
    let size = shape[dim];
    let bad = if lo < 0 {
        lo
    } else if hi as u64 >= size as u64 {
        hi
    } else {
        return Ok(());
    };
    Err(Error::new(
        ErrorKind::IndexOutOfRange,
        op,
        format!("index {bad} is out of range for dim {dim} of size {size} (shape {shape:?})"),
    ))
}

/// The source view of an indexed read: `t`'s layout at `sizes` with stride 0 in `d`.
fn indexed_source(t: &Layout, sizes: &[usize], d: usize) -> Layout {
    let mut strides = t.strides().to_vec();
    strides[d] = 0;
    Layout::from_parts_unchecked(sizes.to_vec(), strides, t.offset())
}

/// `index_select` along the normalised dim `d` with a 1-D (or 0-d) `index` (see
/// `ops::index_select`).
pub(crate) fn index_select<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    d: usize,
    index: &DynTensor<i64>,
) -> Result<DynTensor<E>> {
    let storages = [t.storage() as &dyn AnyStorage, index.storage()];
    with_cuda_read(op, &storages, |bufs| {
        check_index_range(op, bufs[1], index.layout(), d, t.shape())?;
        let mut shape = t.shape().to_vec();
        shape[d] = index.numel();
        let ls = indexed_source(t.layout(), &shape, d);
        let mut istrides = vec![0; shape.len()];
        if index.dim() == 1 {
            istrides[d] = index.stride()[0];
        }
        let li = Layout::from_parts_unchecked(shape.clone(), istrides, index.storage_offset());
        let r = compute::index(op, bufs[0], &ls, bufs[1], &li, t.stride()[d], t.shape()[d])?;
        wrap::<E>(op, r, &shape)
    })
}

/// `gather` along the normalised dim `d` (shapes checked by `ops::index_select`).
pub(crate) fn gather<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    d: usize,
    index: &DynTensor<i64>,
) -> Result<DynTensor<E>> {
    let storages = [t.storage() as &dyn AnyStorage, index.storage()];
    with_cuda_read(op, &storages, |bufs| {
        check_index_range(op, bufs[1], index.layout(), d, t.shape())?;
        let ls = indexed_source(t.layout(), index.shape(), d);
        let r = compute::index(
            op,
            bufs[0],
            &ls,
            bufs[1],
            index.layout(),
            t.stride()[d],
            t.shape()[d],
        )?;
        wrap::<E>(op, r, index.shape())
    })
}

/// A contiguous copy of `t` reversed along every dim where `flip` is true: one strided copy
/// whose flipped dims start at their last element and step back (strides modulo 2^64, see
/// `copy::cast_strided`).
pub(crate) fn flip<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    flip: &[bool],
) -> Result<DynTensor<E>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let r = if t.numel() == 0 {
            copy::cast(op, b[0], t.layout(), E::DTYPE)?
        } else {
            let (sizes, mut offset) = (t.shape(), t.storage_offset());
            let strides: Vec<usize> = (0..t.dim())
                .map(|d| {
                    let s = t.stride()[d];
                    if flip[d] {
                        offset += (sizes[d] - 1) * s;
                        s.wrapping_neg()
                    } else {
                        s
                    }
                })
                .collect();
            copy::cast_strided(op, b[0], sizes, &strides, offset, E::DTYPE)?
        };
        wrap::<E>(op, r, t.shape())
    })
}

/// The elements of `layout` (a view over `t`'s storage, e.g. `repeat`'s stride-0 tiling) in a
/// new contiguous tensor of `shape` (the same number of elements).
pub(crate) fn gather_view<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    layout: &Layout,
    shape: &[usize],
) -> Result<DynTensor<E>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let r = copy::cast(op, b[0], layout, E::DTYPE)?;
        wrap::<E>(op, r, shape)
    })
}

/// `tril` (`lower`) or `triu` of `t` (rank ≥ 2, checked by the caller): a `[m, n]` keep-mask
/// built on the host and uploaded, broadcast over the batch, then a select against zero.
pub(crate) fn triangle<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    diagonal: isize,
    lower: bool,
) -> Result<DynTensor<E>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let shape = t.shape();
        let r = shape.len();
        let (m, n) = (shape[r - 2], shape[r - 1]);
        let keep: Vec<bool> = (0..m * n)
            .map(|k| {
                let (i, j) = ((k / n) as isize, (k % n) as isize);
                if lower {
                    j <= i.saturating_add(diagonal)
                } else {
                    j >= i.saturating_add(diagonal)
                }
            })
            .collect();
        let mask = CudaBuffer::from_host(op, b[0].cuda_device(), &keep)?;
        let lm = expand_layout(&Layout::contiguous(&[m, n])?, shape)?;
        let zero = scalar_buf(op, b[0], E::DTYPE, 0.0)?;
        let res = compute::where_(
            op,
            &mask,
            &lm,
            b[0],
            t.layout(),
            &zero,
            &scalar_layout(shape)?,
        )?;
        wrap::<E>(op, res, shape)
    })
}

/// `cumsum` / `cumprod` (`prod`) of `t` seen as `[outer, len, inner]` around the scanned
/// dim, into `O` (`SumOutput`): the input is converted to `O` on the device, then scanned by
/// `compute::scan` (one thread per lane; accumulation in f64 or wrapping i64, as the CPU).
pub(crate) fn scan<E: Element, O: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    len: usize,
    inner: usize,
    prod: bool,
) -> Result<DynTensor<O>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let x = copy::cast(op, b[0], t.layout(), O::DTYPE)?;
        let lane = len * inner;
        let outer = t.numel().checked_div(lane).unwrap_or(0);
        let r = compute::scan(op, &x, outer, len, inner, prod)?;
        wrap::<O>(op, r, t.shape())
    })
}
