//! The CUDA backend: the [`Backend`] methods on [`CudaBuffer`]s, built on the kernels of
//! `compute.rs` and `copy.rs`.
//!
//! # Types
//! A kernel computes `f16`/`bf16` in `f32` and rounds once on store, like the CPU's compute
//! types, and runs on operands of one dtype: operands of two types are converted on the
//! device to the type the CPU computes in ([`kernel_dtype`]) first, before a broadcast one is
//! expanded, so it is never materialised at the output's size.
//!
//! # In-place writes
//! An in-place method computes into a new buffer and copies it back through the destination,
//! which the caller guarantees has no two indices on one element, so the result is the one a
//! write in any order would give (the rule the CPU follows too).
//!
//! # Locks and contexts
//! The caller (`storage::dispatch`) holds the locks of every storage for the whole call.
//! Kernels are queued on the device's single stream while they are held, so they run in the
//! order the locks were granted. Allocation, kernel loading and launches make the device's
//! primary context current on the calling thread first (`device.rs`).

use super::copy;
use super::device::CudaDevice;
use super::kernels::Supports;
use super::{CudaBuffer, blas, compute};
use crate::backend::cpu::host_buffer::HostBuffer;
use crate::backend::device::Device;
use crate::backend::op::{AdamStep, BinaryOp, CompareOp, ReduceOp, TestOp, UnaryOp, constant_test};
use crate::backend::{Backend, check_adam_operands, check_lanes_have_entries};
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, Window2d};
use std::sync::Arc;

/// The CUDA devices' backend.
pub struct Cuda;

/// The ordinal of a CUDA device (the dispatch only hands this backend its own devices).
fn ordinal(device: Device) -> usize {
    match device {
        Device::Cuda(n) => n,
        Device::Cpu => unreachable!("the CPU is not a CUDA device"),
    }
}

/// The type the CPU computes `dtype` in (`f16`/`bf16` in `f32`).
pub fn compute_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// The dtype a binary kernel runs in for operands `a`, `b`, computed in `t` (the CPU's compute
/// type) and stored as `o`: the operands' own type or the result's where the kernel computes
/// that in `t` (no conversion, one rounding), else `t` itself.
pub fn kernel_dtype(a: DType, b: DType, t: DType, o: DType) -> DType {
    if a == b && compute_dtype(a) == t {
        a
    } else if compute_dtype(o) == t {
        o
    } else {
        t
    }
}

/// `buf` (contiguous, `shape`) converted to `dtype` on the device if it is of another.
pub fn converted(
    op: &'static str,
    buf: CudaBuffer,
    shape: &[usize],
    dtype: DType,
) -> Result<CudaBuffer> {
    if buf.dtype() == dtype {
        Ok(buf)
    } else {
        copy::cast(op, &buf, &Layout::contiguous(shape)?, dtype)
    }
}

/// `(buf, layout)` as dtype `k`: the buffer itself when it has dtype `k`, else a converted
/// contiguous copy of the view kept in `slot`, with the view's layout redone over it.
pub fn operand<'a>(
    op: &'static str,
    buf: &'a CudaBuffer,
    layout: &Layout,
    k: DType,
    slot: &'a mut Option<CudaBuffer>,
) -> Result<(&'a CudaBuffer, Layout)> {
    if buf.dtype() == k {
        return Ok((buf, layout.clone()));
    }
    // A broadcast view is converted at its own size (its stride-0 dims gathered once).
    let compact = layout.collapse_broadcast();
    let c = copy::cast(op, buf, &compact, k)?;
    let sizes: Vec<isize> = layout.sizes().iter().map(|&s| s as isize).collect();
    let back = Layout::contiguous(compact.sizes())?.expand(&sizes)?;
    Ok((&*slot.insert(c), back))
}

/// A one-element buffer holding `v` converted to `dtype`, on `like`'s device.
pub fn scalar_buf(op: &'static str, like: &CudaBuffer, dtype: DType, v: f64) -> Result<CudaBuffer> {
    let dev = like.cuda_device();
    match dtype {
        DType::Bool => scalar_on(op, dev, bool::from_f64(v)),
        DType::U8 => scalar_on(op, dev, u8::from_f64(v)),
        DType::I8 => scalar_on(op, dev, i8::from_f64(v)),
        DType::I16 => scalar_on(op, dev, i16::from_f64(v)),
        DType::I32 => scalar_on(op, dev, i32::from_f64(v)),
        DType::I64 => scalar_on(op, dev, i64::from_f64(v)),
        DType::F16 => scalar_on(op, dev, half::f16::from_f64(v)),
        DType::BF16 => scalar_on(op, dev, half::bf16::from_f64(v)),
        DType::F32 => scalar_on(op, dev, v as f32),
        DType::F64 => scalar_on(op, dev, v),
    }
}

/// A one-element buffer holding `value`, written by the fill kernel (the value travels as a
/// launch argument: no host-to-device copy, nothing waits for the device).
fn scalar_on<E: Element>(op: &'static str, dev: &Arc<CudaDevice>, value: E) -> Result<CudaBuffer> {
    full_on(op, dev, 1, value)
}

/// `len` copies of `value` on `dev`.
fn full_on<E: Element>(
    op: &'static str,
    dev: &Arc<CudaDevice>,
    len: usize,
    value: E,
) -> Result<CudaBuffer> {
    if super::is_all_zero_bits(value) {
        return CudaBuffer::zeros(op, dev, E::DTYPE, len);
    }
    let mut b = CudaBuffer::alloc(op, dev, E::DTYPE, len)?;
    copy::fill(op, &mut b, &Layout::contiguous(&[len])?, value)?;
    Ok(b)
}

/// The layout of a one-element buffer broadcast to `shape`.
pub fn scalar_layout(shape: &[usize]) -> Result<Layout> {
    let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    Layout::contiguous(&[])?.expand(&sizes)
}

/// `cop(x, s)` for the view `(x, l)` and a scalar `s` in its dtype.
pub fn compare_scalar(
    op: &'static str,
    cop: CompareOp,
    x: &CudaBuffer,
    l: &Layout,
    s: f64,
) -> Result<CudaBuffer> {
    let sb = scalar_buf(op, x, x.dtype(), s)?;
    compute::compare(op, cop, x, l, &sb, &scalar_layout(l.sizes())?)
}

/// `bop(a, b)` elementwise (both at the output's sizes), computed as the CPU does in the
/// compute type `t` and stored as `o`: a new contiguous buffer of dtype `o`.
#[allow(clippy::too_many_arguments)]
fn binary_bufs(
    op: &'static str,
    bop: BinaryOp,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
    t: DType,
    o: DType,
) -> Result<CudaBuffer> {
    if o == DType::Bool {
        return bool_binary(op, bop, a, la, b, lb);
    }
    let k = kernel_dtype(a.dtype(), b.dtype(), t, o);
    let (mut sa, mut sb) = (None, None);
    let (a, la) = operand(op, a, la, k, &mut sa)?;
    let (b, lb) = operand(op, b, lb, k, &mut sb)?;
    let r = compute::binary(op, bop, a, &la, b, &lb)?;
    converted(op, r, la.sizes(), o)
}

/// `bop` on `bool` operands: `add`/`maximum` are `or`, `mul`/`minimum` are `and`, computed as
/// the maximum or minimum of bytes.
fn bool_binary(
    op: &'static str,
    bop: BinaryOp,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<CudaBuffer> {
    let byte_op = match bop {
        BinaryOp::Add | BinaryOp::Maximum => BinaryOp::Maximum,
        BinaryOp::Mul | BinaryOp::Minimum => BinaryOp::Minimum,
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("{} is not supported for bool tensors", bop.name()),
            ));
        }
    };
    let (mut sa, mut sb) = (None, None);
    let (a, la) = operand(op, a, la, DType::U8, &mut sa)?;
    let (b, lb) = operand(op, b, lb, DType::U8, &mut sb)?;
    let r = compute::binary(op, byte_op, a, &la, b, &lb)?;
    converted(op, r, la.sizes(), DType::Bool)
}

/// `(buf, layout)` reduced by `rop` over the dims in `mask` (every dim where `mask` is true):
/// a contiguous buffer in the shape of the kept dims.
pub fn reduce_buf(
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

/// Writes the contiguous `result` back through `dst` over `buf`.
fn write_back(
    op: &'static str,
    buf: &mut CudaBuffer,
    dst: &Layout,
    result: &CudaBuffer,
) -> Result<()> {
    copy::copy(op, buf, dst, result, &Layout::contiguous(dst.sizes())?)
}

impl Backend for Cuda {
    type Buffer<E: Element> = CudaBuffer;

    fn len<E: Element>(buf: &CudaBuffer) -> usize {
        buf.len()
    }

    fn device<E: Element>(buf: &CudaBuffer) -> Device {
        buf.device()
    }

    fn from_host<E: Element>(op: &'static str, device: Device, data: &[E]) -> Result<CudaBuffer> {
        CudaBuffer::from_host(op, &super::device::get(op, ordinal(device))?, data)
    }

    fn full<E: Element>(
        op: &'static str,
        device: Device,
        len: usize,
        value: E,
    ) -> Result<CudaBuffer> {
        full_on(op, &super::device::get(op, ordinal(device))?, len, value)
    }

    fn to_host<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
    ) -> Result<HostBuffer<E>> {
        copy::gather_to_host(op, src, layout).map(HostBuffer::from)
    }

    fn set<E: Element>(
        op: &'static str,
        buf: &mut CudaBuffer,
        index: usize,
        value: E,
    ) -> Result<()> {
        buf.write(op, index, &[value])
    }

    fn cast<E: Element, F: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
    ) -> Result<CudaBuffer> {
        copy::cast(op, src, layout, F::DTYPE)
    }

    fn fill_<E: Element>(
        op: &'static str,
        buf: &mut CudaBuffer,
        dst: &Layout,
        value: E,
    ) -> Result<()> {
        copy::fill(op, buf, dst, value)
    }

    fn copy_<E: Element, F: Element>(
        op: &'static str,
        buf: &mut CudaBuffer,
        dst: &Layout,
        src: &CudaBuffer,
        src_layout: &Layout,
    ) -> Result<()> {
        copy::copy(op, buf, dst, src, src_layout)
    }

    fn unary<E: Element>(
        op: &'static str,
        uop: UnaryOp,
        src: &CudaBuffer,
        layout: &Layout,
    ) -> Result<CudaBuffer> {
        compute::unary(op, uop, src, layout)
    }

    fn unary_<E: Element>(
        op: &'static str,
        uop: UnaryOp,
        buf: &mut CudaBuffer,
        dst: &Layout,
    ) -> Result<()> {
        let r = compute::unary(op, uop, buf, dst)?;
        write_back(op, buf, dst, &r)
    }

    fn test<E: Element>(
        op: &'static str,
        top: TestOp,
        src: &CudaBuffer,
        layout: &Layout,
    ) -> Result<CudaBuffer> {
        if let Some(v) = constant_test::<E>(top) {
            let one = scalar_buf(op, src, DType::Bool, v as u8 as f64)?;
            return copy::cast(op, &one, &scalar_layout(layout.sizes())?, DType::Bool);
        }
        match top {
            TestOp::Nan => compute::compare(op, CompareOp::Ne, src, layout, src, layout),
            TestOp::Zero => compare_scalar(op, CompareOp::Eq, src, layout, 0.0),
            // |x| == inf is infinite; |x| < inf is finite (false for NaN).
            TestOp::Inf | TestOp::Finite => {
                let abs = compute::unary(op, UnaryOp::Abs, src, layout)?;
                let cop = if top == TestOp::Inf {
                    CompareOp::Eq
                } else {
                    CompareOp::Lt
                };
                let whole = Layout::contiguous(layout.sizes())?;
                compare_scalar(op, cop, &abs, &whole, f64::INFINITY)
            }
        }
    }

    fn binary<A: Element, B: Element, O: Element>(
        op: &'static str,
        bop: BinaryOp,
        a: &CudaBuffer,
        la: &Layout,
        b: &CudaBuffer,
        lb: &Layout,
    ) -> Result<CudaBuffer> {
        binary_bufs(op, bop, a, la, b, lb, compute_dtype(O::DTYPE), O::DTYPE)
    }

    fn binary_<E: Element, B: Element>(
        op: &'static str,
        bop: BinaryOp,
        buf: &mut CudaBuffer,
        dst: &Layout,
        src: &CudaBuffer,
        src_layout: &Layout,
    ) -> Result<()> {
        let (t, o) = (compute_dtype(E::DTYPE), E::DTYPE);
        let r = binary_bufs(op, bop, buf, dst, src, src_layout, t, o)?;
        write_back(op, buf, dst, &r)
    }

    fn compare<A: Element, B: Element, P: Element>(
        op: &'static str,
        cop: CompareOp,
        a: &CudaBuffer,
        la: &Layout,
        b: &CudaBuffer,
        lb: &Layout,
    ) -> Result<CudaBuffer> {
        let k = kernel_dtype(A::DTYPE, B::DTYPE, compute_dtype(P::DTYPE), DType::Bool);
        let (mut sa, mut sb) = (None, None);
        let (a, la) = operand(op, a, la, k, &mut sa)?;
        let (b, lb) = operand(op, b, lb, k, &mut sb)?;
        debug_assert!(cop.supports(k));
        compute::compare(op, cop, a, &la, b, &lb)
    }

    fn where_<E: Element>(
        op: &'static str,
        cond: &CudaBuffer,
        lc: &Layout,
        a: &CudaBuffer,
        la: &Layout,
        b: &CudaBuffer,
        lb: &Layout,
    ) -> Result<CudaBuffer> {
        compute::where_(op, cond, lc, a, la, b, lb)
    }

    fn masked_fill_<E: Element>(
        op: &'static str,
        buf: &mut CudaBuffer,
        dst: &Layout,
        mask: &CudaBuffer,
        mask_layout: &Layout,
        value: E,
    ) -> Result<()> {
        let v = scalar_on(op, buf.cuda_device(), value)?;
        let lv = scalar_layout(dst.sizes())?;
        let r = compute::where_(op, mask, mask_layout, &v, &lv, buf, dst)?;
        write_back(op, buf, dst, &r)
    }

    fn reduce<E: Element, O: Element>(
        op: &'static str,
        rop: ReduceOp,
        src: &CudaBuffer,
        layout: &Layout,
        mask: &[bool],
    ) -> Result<CudaBuffer> {
        let kept: Vec<usize> = (0..layout.rank())
            .filter(|&d| !mask[d])
            .map(|d| layout.sizes()[d])
            .collect();
        let r = match rop {
            ReduceOp::Any | ReduceOp::All => {
                let count: usize = (0..layout.rank())
                    .filter(|&d| mask[d])
                    .map(|d| layout.sizes()[d])
                    .product();
                if count == 0 {
                    // any of nothing is false, all of nothing is true
                    let v = scalar_buf(op, src, DType::Bool, (rop == ReduceOp::All) as u8 as f64)?;
                    return copy::cast(op, &v, &scalar_layout(&kept)?, DType::Bool);
                }
                // Truth values as bytes (a cast to bool is `x != 0`), reduced by max or min.
                let bools = copy::cast(op, src, layout, DType::Bool)?;
                let whole = Layout::contiguous(layout.sizes())?;
                let bytes = copy::cast(op, &bools, &whole, DType::U8)?;
                let byte_op = if rop == ReduceOp::Any {
                    ReduceOp::Max
                } else {
                    ReduceOp::Min
                };
                reduce_buf(op, byte_op, &bytes, &whole, mask)?
            }
            // The mean of f16/bf16 is taken in f32, as on the CPU.
            ReduceOp::Mean if src.dtype() != O::DTYPE => {
                let c = copy::cast(op, src, layout, O::DTYPE)?;
                reduce_buf(op, rop, &c, &Layout::contiguous(layout.sizes())?, mask)?
            }
            _ => reduce_buf(op, rop, src, layout, mask)?,
        };
        converted(op, r, &kept, O::DTYPE)
    }

    fn arg_reduce<E: Element>(
        op: &'static str,
        max: bool,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
    ) -> Result<(CudaBuffer, CudaBuffer)> {
        let mut mask = vec![false; layout.rank()];
        mask[dim] = true;
        let (value, index) = if max {
            (ReduceOp::Max, ReduceOp::ArgMax)
        } else {
            (ReduceOp::Min, ReduceOp::ArgMin)
        };
        Ok((
            reduce_buf(op, value, src, layout, &mask)?,
            reduce_buf(op, index, src, layout, &mask)?,
        ))
    }

    fn softmax<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<CudaBuffer> {
        along_last_dim::<E>(op, &[layout], dim, |l| {
            compute::softmax(op, src, &l[0], log)
        })
    }

    fn softmax_backward<E: Element>(
        op: &'static str,
        y: &CudaBuffer,
        ly: &Layout,
        g: &CudaBuffer,
        lg: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<CudaBuffer> {
        along_last_dim::<E>(op, &[ly, lg], dim, |l| {
            compute::softmax_backward(op, y, &l[0], g, &l[1], log)
        })
    }

    fn normalize<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
        eps: f64,
        center: bool,
    ) -> Result<(CudaBuffer, CudaBuffer)> {
        check_lanes_have_entries(op, layout, dim)?;
        let [y, r] = along_last_dim_n::<E, 2>(op, &[layout], dim, [false, true], |l| {
            let (y, r) = compute::normalize(op, src, &l[0], eps, center)?;
            Ok([y, r])
        })?;
        Ok((y, r))
    }

    fn normalize_backward<E: Element>(
        op: &'static str,
        y: &CudaBuffer,
        ly: &Layout,
        g: &CudaBuffer,
        lg: &Layout,
        r: &CudaBuffer,
        lr: &Layout,
        dim: usize,
        center: bool,
    ) -> Result<CudaBuffer> {
        along_last_dim::<E>(op, &[ly, lg, lr], dim, |l| {
            compute::normalize_backward(op, y, &l[0], g, &l[1], r, &l[2], center)
        })
    }

    fn adam_<E: Element>(
        op: &'static str,
        p: &mut CudaBuffer,
        lp: &Layout,
        g: &CudaBuffer,
        lg: &Layout,
        m: &mut CudaBuffer,
        v: &mut CudaBuffer,
        vmax: Option<&mut CudaBuffer>,
        step: &AdamStep,
    ) -> Result<()> {
        let mut lens = vec![m.len(), v.len()];
        lens.extend(vmax.as_ref().map(|x| x.len()));
        check_adam_operands(op, lp, p.len(), lg, g.len(), &lens, step.amsgrad)?;
        compute::adam_(op, p, lp, g, lg, m, v, vmax, step)
    }

    fn scan<E: Element, O: Element>(
        op: &'static str,
        prod: bool,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
    ) -> Result<CudaBuffer> {
        // Converted to the result type first, then scanned one thread per lane (accumulating
        // in f64 or wrapping i64, as the CPU).
        let x = copy::cast(op, src, layout, O::DTYPE)?;
        let sizes = layout.sizes();
        let (len, inner) = if sizes.is_empty() {
            (1, 1)
        } else {
            (sizes[dim], sizes[dim + 1..].iter().product())
        };
        let outer = layout.numel().checked_div(len * inner).unwrap_or(0);
        compute::scan(op, &x, outer, len, inner, prod)
    }

    fn sort<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
        descending: bool,
    ) -> Result<(CudaBuffer, CudaBuffer)> {
        // The lanes made contiguous rows (`dim` moved last) by one strided copy, sorted, and
        // put back in the input's dim order by one more copy unless `dim` was already last.
        let rank = layout.rank();
        let n = layout.sizes()[dim];
        let order: Vec<usize> = (0..rank).filter(|&d| d != dim).chain([dim]).collect();
        let row_sizes: Vec<usize> = order.iter().map(|&d| layout.sizes()[d]).collect();
        let row_strides: Vec<usize> = order.iter().map(|&d| layout.strides()[d]).collect();
        let keys =
            copy::cast_strided(op, src, &row_sizes, &row_strides, layout.offset(), E::DTYPE)?;
        let rows = layout.numel().checked_div(n).unwrap_or(0);
        let (values, indices) = compute::sort(op, keys, rows, n, descending)?;
        if dim + 1 == rank {
            return Ok((values, indices));
        }
        let contiguous = crate::layout::contiguous_strides(&row_sizes)
            .ok_or_else(|| Error::overflow(op, format!("the sizes {row_sizes:?}")))?;
        let mut back = vec![0; rank];
        for (k, &d) in order.iter().enumerate() {
            back[d] = contiguous[k];
        }
        Ok((
            copy::cast_strided(op, &values, layout.sizes(), &back, 0, E::DTYPE)?,
            copy::cast_strided(op, &indices, layout.sizes(), &back, 0, DType::I64)?,
        ))
    }

    fn index_select<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
        index: &CudaBuffer,
        index_layout: &Layout,
    ) -> Result<CudaBuffer> {
        check_index_range(op, index, index_layout, dim, layout.sizes())?;
        let mut shape = layout.sizes().to_vec();
        shape[dim] = index_layout.numel();
        let ls = indexed_source(layout, &shape, dim);
        let mut istrides = vec![0; shape.len()];
        if index_layout.rank() == 1 {
            istrides[dim] = index_layout.strides()[0];
        }
        let li = Layout::from_parts_unchecked(shape, istrides, index_layout.offset());
        let (stride, size) = (layout.strides()[dim], layout.sizes()[dim]);
        compute::index(op, src, &ls, index, &li, stride, size)
    }

    fn gather<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        dim: usize,
        index: &CudaBuffer,
        index_layout: &Layout,
    ) -> Result<CudaBuffer> {
        check_index_range(op, index, index_layout, dim, layout.sizes())?;
        let ls = indexed_source(layout, index_layout.sizes(), dim);
        let (stride, size) = (layout.strides()[dim], layout.sizes()[dim]);
        compute::index(op, src, &ls, index, index_layout, stride, size)
    }

    fn scatter_add<E: Element>(
        op: &'static str,
        base: &CudaBuffer,
        lb: &Layout,
        dim: usize,
        index: &CudaBuffer,
        li: &Layout,
        src: &CudaBuffer,
        ls: &Layout,
    ) -> Result<CudaBuffer> {
        check_index_range(op, index, li, dim, lb.sizes())?;
        compute::scatter_add(op, base, lb, dim, index, li, src, ls)
    }

    fn cat<E: Element>(
        op: &'static str,
        parts: &[(&CudaBuffer, &Layout)],
        dim: usize,
        out_shape: &[usize],
    ) -> Result<CudaBuffer> {
        // Allocated on the device and each part copied into its slice of it.
        let full = Layout::contiguous(out_shape)?;
        let dev = parts[0].0.cuda_device();
        let mut out = CudaBuffer::alloc(op, dev, E::DTYPE, full.numel())?;
        let mut at = 0;
        for &(buf, layout) in parts {
            let len = layout.sizes()[dim];
            let slot = full.narrow(dim as isize, at as isize, len)?;
            copy::copy(op, &mut out, &slot, buf, layout)?;
            at += len;
        }
        Ok(out)
    }

    fn matmul<E: Element>(
        op: &'static str,
        a: &CudaBuffer,
        la: &Layout,
        b: &CudaBuffer,
        lb: &Layout,
    ) -> Result<CudaBuffer> {
        blas::matmul(op, a, la, b, lb)
    }

    fn unfold2d<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        window: &Window2d,
        pad: E,
    ) -> Result<CudaBuffer> {
        super::window::unfold2d(op, src, layout, window, pad)
    }

    fn fold2d<E: Element>(
        op: &'static str,
        cols: &CudaBuffer,
        layout: &Layout,
        window: &Window2d,
        hw: (usize, usize),
        winners: Option<(&CudaBuffer, &Layout)>,
    ) -> Result<CudaBuffer> {
        super::window::fold2d(op, cols, layout, window, hw, winners)
    }

    fn max_pool2d<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        window: &Window2d,
    ) -> Result<(CudaBuffer, CudaBuffer)> {
        if !E::DTYPE.is_float() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("max pooling is defined for float tensors, not {}", E::DTYPE),
            ));
        }
        super::window::max_pool2d(op, src, layout, window)
    }

    fn flip<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        flip: &[bool],
    ) -> Result<CudaBuffer> {
        if layout.numel() == 0 {
            return copy::cast(op, src, layout, E::DTYPE);
        }
        // One strided copy whose flipped dims start at their last element and step back
        // (strides modulo 2^64, see `copy::cast_strided`).
        let (sizes, mut offset) = (layout.sizes(), layout.offset());
        let strides: Vec<usize> = (0..layout.rank())
            .map(|d| {
                let s = layout.strides()[d];
                if flip[d] {
                    offset += (sizes[d] - 1) * s;
                    s.wrapping_neg()
                } else {
                    s
                }
            })
            .collect();
        copy::cast_strided(op, src, sizes, &strides, offset, E::DTYPE)
    }

    fn triangle<E: Element>(
        op: &'static str,
        src: &CudaBuffer,
        layout: &Layout,
        diagonal: isize,
        lower: bool,
    ) -> Result<CudaBuffer> {
        // A `[m, n]` keep-mask built on the host and uploaded, broadcast over the batch, then
        // a select against zero.
        let shape = layout.sizes();
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
        let mask = CudaBuffer::from_host(op, src.cuda_device(), &keep)?;
        let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
        let lm = Layout::contiguous(&[m, n])?.expand(&sizes)?;
        let zero = scalar_buf(op, src, E::DTYPE, 0.0)?;
        compute::where_(op, &mask, &lm, src, layout, &zero, &scalar_layout(shape)?)
    }
}

/// Runs a row kernel `f`, which works along the last dim, on `layouts` (of equal sizes) with
/// `dim` moved last (a 0-d layout as one row of one element), then moves the dim of its
/// contiguous result back: softmax and its gradient along any dim.
fn along_last_dim<E: Element>(
    op: &'static str,
    layouts: &[&Layout],
    dim: usize,
    f: impl FnOnce(&[Layout]) -> Result<CudaBuffer>,
) -> Result<CudaBuffer> {
    let [r] = along_last_dim_n::<E, 1>(op, layouts, dim, [false], |l| Ok([f(l)?]))?;
    Ok(r)
}

/// [`along_last_dim`] for a kernel with `N` contiguous results: result `i` has the moved
/// layouts' sizes, or with `reduced[i]` those sizes with the last set to 1 (one entry per
/// row, as normalisation's `rstd`); each is moved back the same way.
fn along_last_dim_n<E: Element, const N: usize>(
    op: &'static str,
    layouts: &[&Layout],
    dim: usize,
    reduced: [bool; N],
    f: impl FnOnce(&[Layout]) -> Result<[CudaBuffer; N]>,
) -> Result<[CudaBuffer; N]> {
    if layouts[0].rank() == 0 {
        let rows = layouts
            .iter()
            .map(|l| l.unsqueeze(0))
            .collect::<Result<Vec<_>>>()?;
        return f(&rows);
    }
    let last = layouts[0].rank() - 1;
    let moved = layouts
        .iter()
        .map(|l| l.transpose(dim as isize, last as isize))
        .collect::<Result<Vec<_>>>()?;
    let results = f(&moved)?;
    if dim == last {
        return Ok(results);
    }
    let mut back = Vec::with_capacity(N);
    for (r, reduced) in results.into_iter().zip(reduced) {
        let mut sizes = moved[0].sizes().to_vec();
        if reduced {
            sizes[last] = 1;
        }
        let l = Layout::contiguous(&sizes)?.transpose(dim as isize, last as isize)?;
        back.push(copy::cast(op, &r, &l, E::DTYPE)?);
    }
    Ok(back
        .try_into()
        .unwrap_or_else(|_| unreachable!("one result per kernel output")))
}
