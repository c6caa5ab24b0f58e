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
use crate::backend::cuda::backend::{reduce_buf, scalar_buf, scalar_layout};
use crate::backend::cuda::kernels::ReduceOp;
use crate::backend::cuda::{CudaBuffer, blas, compute, copy};
use crate::dtype::Element;
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

// ---------------------------------------------------------------------------------------
// Reductions

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
