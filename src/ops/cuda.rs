//! The CUDA path of the compute operations (feature `cuda`).
//!
//! # Dispatch
//! Each operation in `ops` looks at its operands' devices once, at its top (`on_cuda!`): all
//! on the CPU falls through to the CPU code, unchanged (the check is one comparison per
//! operand, no lock); otherwise the operation comes here. [`with_cuda_read`] then refuses
//! operands on two devices with an [`ErrorKind::Device`] error naming both, before anything
//! runs.
//!
//! The CPU helpers (`map`, `zip`, `map_inplace`, `zip_inplace`) take the operation's public
//! name; here that name selects the kernel ([`unary_op`], [`binary_op`], [`compare_op`]). A
//! name without a kernel is an [`unsupported`] error naming the operation and the device,
//! never a CPU fallback and never a guess. Operations whose parameters live in the CPU
//! closure (clamp, powf) call this module directly with them.
//!
//! # Types
//! A kernel computes `f16`/`bf16` in `f32` and rounds once on store, like the CPU's compute
//! types. Mixed operands are converted on the device to the type the CPU computes in
//! ([`kernel_dtype`]) before the kernel runs; a broadcast operand is converted before it is
//! expanded, so it is never materialised at the output's size.
//!
//! # Locks and contexts
//! Every function holds the shared locks of all the storages it reads, taken once each in the
//! global order, for its whole duration (kernel launches included); in-place forms hold the
//! destination's exclusive lock over computing and writing back, so they are one operation
//! for other threads, as on the CPU. Kernels are queued on the device's single stream while
//! the locks are held, so they run in the order the locks were granted. Allocation, kernel
//! loading and launches make the device's primary context current on the calling thread
//! first (`backend::cuda::device`), so any thread may call in.

use super::expand_layout;
use super::reduce::reduced_shape;
use crate::backend::cuda::kernels::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::backend::cuda::{CudaBuffer, blas, compute, copy};
use crate::backend::device::Device;
use crate::backend::device::mixed_devices;
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, broadcast_shapes};
use crate::storage::{AnyStorage, Buffer, with_cuda_read, with_write_read_buffers};
use crate::tensor::DynTensor;

/// The error for an operation that has no CUDA implementation.
pub(crate) fn unsupported(op: &'static str, device: Device) -> Error {
    Error::new(
        ErrorKind::Device,
        op,
        format!(
            "{op} is not implemented for tensors on {device}; move them to the CPU with \
             to_device(Device::Cpu) first"
        ),
    )
}

/// The operation's name without an in-place `_` and a `_scalar` suffix (`add_scalar_` → `add`).
fn base_name(op: &str) -> &str {
    let op = op.strip_suffix('_').unwrap_or(op);
    op.strip_suffix("_scalar").unwrap_or(op)
}

/// The unary kernel of the public operation `op` (same name, same semantics).
pub(crate) fn unary_op(op: &str) -> Option<UnaryOp> {
    let name = base_name(op);
    UnaryOp::ALL.iter().copied().find(|u| u.name() == name)
}

/// The binary kernel of the public operation `op`.
pub(crate) fn binary_op(op: &str) -> Option<BinaryOp> {
    let name = base_name(op);
    BinaryOp::ALL.iter().copied().find(|b| b.name() == name)
}

/// The comparison kernel of the public operation `op`.
pub(crate) fn compare_op(op: &str) -> Option<CompareOp> {
    let name = base_name(op);
    CompareOp::ALL.iter().copied().find(|c| c.name() == name)
}

/// The type the CPU computes `dtype` in (`f16`/`bf16` in `f32`).
fn compute_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// The dtype a binary kernel runs in for operands `a`, `b`, computed in `t` (the CPU's compute
/// type) and stored as `o`: the operands' own type or the result's where the kernel computes
/// that in `t` (no conversion, one rounding), else `t` itself.
fn kernel_dtype(a: DType, b: DType, t: DType, o: DType) -> DType {
    if a == b && compute_dtype(a) == t {
        a
    } else if compute_dtype(o) == t {
        o
    } else {
        t
    }
}

/// A tensor over `buf` (contiguous, `shape`), converted to `O` on the device if needed.
fn wrap<O: Element>(op: &'static str, buf: CudaBuffer, shape: &[usize]) -> Result<DynTensor<O>> {
    let buf = if buf.dtype() == O::DTYPE {
        buf
    } else {
        copy::cast(op, &buf, &Layout::contiguous(shape)?, O::DTYPE)?
    };
    DynTensor::from_contiguous_buffer(Buffer::Cuda(buf), shape)
}

/// `(buf, layout)` as dtype `k`, its layout expanded to `shape`: the buffer itself when it
/// has dtype `k`, else a converted copy of the (unexpanded) view kept in `slot`.
fn operand<'a>(
    op: &'static str,
    buf: &'a CudaBuffer,
    layout: &Layout,
    k: DType,
    shape: &[usize],
    slot: &'a mut Option<CudaBuffer>,
) -> Result<(&'a CudaBuffer, Layout)> {
    if buf.dtype() == k {
        return Ok((buf, expand_layout(layout, shape)?));
    }
    let converted = copy::cast(op, buf, layout, k)?;
    let l = expand_layout(&Layout::contiguous(layout.sizes())?, shape)?;
    Ok((&*slot.insert(converted), l))
}

/// A one-element buffer holding `v` converted to `dtype`, on `like`'s device.
fn scalar_buf(op: &'static str, like: &CudaBuffer, dtype: DType, v: f64) -> Result<CudaBuffer> {
    let dev = like.cuda_device();
    match dtype {
        DType::Bool => CudaBuffer::from_host(op, dev, &[bool::from_f64(v)]),
        DType::U8 => CudaBuffer::from_host(op, dev, &[u8::from_f64(v)]),
        DType::I8 => CudaBuffer::from_host(op, dev, &[i8::from_f64(v)]),
        DType::I16 => CudaBuffer::from_host(op, dev, &[i16::from_f64(v)]),
        DType::I32 => CudaBuffer::from_host(op, dev, &[i32::from_f64(v)]),
        DType::I64 => CudaBuffer::from_host(op, dev, &[i64::from_f64(v)]),
        DType::F16 => CudaBuffer::from_host(op, dev, &[half::f16::from_f64(v)]),
        DType::BF16 => CudaBuffer::from_host(op, dev, &[half::bf16::from_f64(v)]),
        DType::F32 => CudaBuffer::from_host(op, dev, &[v as f32]),
        DType::F64 => CudaBuffer::from_host(op, dev, &[v]),
    }
}

/// The layout of a one-element buffer broadcast to `shape`.
fn scalar_layout(shape: &[usize]) -> Result<Layout> {
    expand_layout(&Layout::contiguous(&[])?, shape)
}

/// `bop(a, s)` with the scalar `s` (in `a`'s dtype) broadcast to `a`'s contiguous `shape`.
fn with_scalar(
    op: &'static str,
    bop: BinaryOp,
    a: &CudaBuffer,
    shape: &[usize],
    s: f64,
) -> Result<CudaBuffer> {
    let sb = scalar_buf(op, a, a.dtype(), s)?;
    compute::binary(
        op,
        bop,
        a,
        &Layout::contiguous(shape)?,
        &sb,
        &scalar_layout(shape)?,
    )
}

/// `cop(x, s)` for the view `(x, l)` and a scalar `s` in its dtype.
fn compare_scalar(
    op: &'static str,
    cop: CompareOp,
    x: &CudaBuffer,
    l: &Layout,
    s: f64,
) -> Result<CudaBuffer> {
    let sb = scalar_buf(op, x, x.dtype(), s)?;
    compute::compare(op, cop, x, l, &sb, &scalar_layout(l.sizes())?)
}

/// The unary operation `op` of the view `(buf, layout)`, into a contiguous buffer.
fn unary_buf(op: &'static str, buf: &CudaBuffer, layout: &Layout) -> Result<CudaBuffer> {
    let float = buf.dtype().is_float();
    match base_name(op) {
        "logical_not" => compare_scalar(op, CompareOp::Eq, buf, layout, 0.0),
        "isnan" => compute::compare(op, CompareOp::Ne, buf, layout, buf, layout),
        "isinf" | "isfinite" if !float => {
            let bools = scalar_buf(
                op,
                buf,
                DType::Bool,
                (base_name(op) == "isfinite") as u8 as f64,
            )?;
            copy::cast(op, &bools, &scalar_layout(layout.sizes())?, DType::Bool)
        }
        // |x| == inf is infinite; |x| < inf is finite (false for NaN).
        "isinf" | "isfinite" => {
            let abs = compute::unary(op, UnaryOp::Abs, buf, layout)?;
            let cop = if base_name(op) == "isinf" {
                CompareOp::Eq
            } else {
                CompareOp::Lt
            };
            compare_scalar(
                op,
                cop,
                &abs,
                &Layout::contiguous(layout.sizes())?,
                f64::INFINITY,
            )
        }
        _ => match unary_op(op) {
            Some(u) => compute::unary(op, u, buf, layout),
            None => Err(unsupported(op, buf.device())),
        },
    }
}

/// `op` applied to every element of `t` (see `ops::map`), on `t`'s CUDA device.
pub(crate) fn map<S: Element, O: Element>(
    op: &'static str,
    t: &DynTensor<S>,
) -> Result<DynTensor<O>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let r = unary_buf(op, b[0], t.layout())?;
        wrap::<O>(op, r, t.shape())
    })
}

/// `op` applied in place through the view `dst` (see `ops::map_inplace`); the caller has
/// checked that `dst` is writable.
pub(crate) fn map_inplace<E: Element>(op: &'static str, dst: &DynTensor<E>) -> Result<()> {
    let mut guard = dst.storage().write();
    let Buffer::Cuda(d) = &mut *guard else {
        return Err(Error::new(ErrorKind::Device, op, "expected a CUDA tensor"));
    };
    let r = unary_buf(op, d, dst.layout())?;
    copy::copy(op, d, dst.layout(), &r, &Layout::contiguous(dst.shape())?)
}

/// The parameter of a unary operation that the CPU keeps in its closure.
pub(crate) enum Param<E> {
    /// clamp: `maximum(x, lo)` then `minimum(x, hi)`, bounds already in the tensor's type
    /// (as the CPU converts them), run in the tensor's type.
    Clamp(Option<E>, Option<E>),
    /// `x^e`, run in the compute type with `e` converted to it (as the CPU does).
    Powf(f64),
}

/// The view `(buf, layout)` after the steps of `param`, a new contiguous buffer of the
/// dtype the steps ran in.
fn param_buf<E: Element>(
    op: &'static str,
    buf: &CudaBuffer,
    layout: &Layout,
    param: &Param<E>,
) -> Result<CudaBuffer> {
    let (k, steps) = match param {
        Param::Clamp(lo, hi) => {
            let mut steps = Vec::new();
            if let Some(lo) = lo {
                steps.push((
                    BinaryOp::Maximum,
                    CudaBuffer::from_host(op, buf.cuda_device(), &[*lo])?,
                ));
            }
            if let Some(hi) = hi {
                steps.push((
                    BinaryOp::Minimum,
                    CudaBuffer::from_host(op, buf.cuda_device(), &[*hi])?,
                ));
            }
            (E::DTYPE, steps)
        }
        Param::Powf(e) => {
            let k = compute_dtype(E::DTYPE);
            (k, vec![(BinaryOp::Pow, scalar_buf(op, buf, k, *e)?)])
        }
    };
    let shape = layout.sizes();
    let ls = scalar_layout(shape)?;
    let mut slot = None;
    let (x, lx) = operand(op, buf, layout, k, shape, &mut slot)?;
    let mut cur: Option<CudaBuffer> = None;
    for (bop, sb) in &steps {
        let next = match &cur {
            None => compute::binary(op, *bop, x, &lx, sb, &ls)?,
            Some(c) => compute::binary(op, *bop, c, &Layout::contiguous(shape)?, sb, &ls)?,
        };
        cur = Some(next);
    }
    match cur {
        Some(c) => Ok(c),
        None => copy::cast(op, x, &lx, k),
    }
}

/// `t` after the steps of `param` (clamp, powf), stored as `E`.
pub(crate) fn map_param<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    param: &Param<E>,
) -> Result<DynTensor<E>> {
    with_cuda_read(op, &[t.storage() as &dyn AnyStorage], |b| {
        let r = param_buf(op, b[0], t.layout(), param)?;
        wrap::<E>(op, r, t.shape())
    })
}

/// [`map_param`] written back through `dst` (writable, checked by the caller).
pub(crate) fn map_param_inplace<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    param: &Param<E>,
) -> Result<()> {
    let mut guard = dst.storage().write();
    let Buffer::Cuda(d) = &mut *guard else {
        return Err(Error::new(ErrorKind::Device, op, "expected a CUDA tensor"));
    };
    let r = param_buf(op, d, dst.layout(), param)?;
    copy::copy(op, d, dst.layout(), &r, &Layout::contiguous(dst.shape())?)
}

/// Logical and/or/xor of the truth values of two views broadcast to `shape`.
#[allow(clippy::too_many_arguments)]
fn logical_bufs(
    op: &'static str,
    name: &str,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
    shape: &[usize],
) -> Result<CudaBuffer> {
    // Truth values as 0/1 bytes (a cast to bool is `x != 0`), combined by min/max/!=.
    let as_u8 = |buf: &CudaBuffer, l: &Layout| -> Result<CudaBuffer> {
        let t = copy::cast(op, buf, l, DType::Bool)?;
        copy::cast(op, &t, &Layout::contiguous(l.sizes())?, DType::U8)
    };
    let (ta, tb) = (as_u8(a, la)?, as_u8(b, lb)?);
    let la = expand_layout(&Layout::contiguous(la.sizes())?, shape)?;
    let lb = expand_layout(&Layout::contiguous(lb.sizes())?, shape)?;
    match name {
        "logical_xor" => compute::compare(op, CompareOp::Ne, &ta, &la, &tb, &lb),
        _ => {
            let bop = if name == "logical_and" {
                BinaryOp::Minimum
            } else {
                BinaryOp::Maximum
            };
            compute::binary(op, bop, &ta, &la, &tb, &lb)
        }
    }
}

/// `op(a, b)` elementwise over the broadcast shape `shape`, computed as the CPU does in `t`
/// and stored as `o`; a new contiguous buffer (of dtype `o` or one [`wrap`] converts).
#[allow(clippy::too_many_arguments)]
fn zip_bufs(
    op: &'static str,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
    t: DType,
    o: DType,
    shape: &[usize],
) -> Result<CudaBuffer> {
    let name = base_name(op);
    if matches!(name, "logical_and" | "logical_or" | "logical_xor") {
        return logical_bufs(op, name, a, la, b, lb, shape);
    }
    let k = kernel_dtype(a.dtype(), b.dtype(), t, o);
    let (mut sa, mut sb) = (None, None);
    let (a, la) = operand(op, a, la, k, shape, &mut sa)?;
    let (b, lb) = operand(op, b, lb, k, shape, &mut sb)?;
    if let Some(c) = compare_op(op) {
        compute::compare(op, c, a, &la, b, &lb)
    } else if let Some(bop) = binary_op(op) {
        compute::binary(op, bop, a, &la, b, &lb)
    } else {
        Err(unsupported(op, a.device()))
    }
}

/// `op(a, b)` with broadcasting (see `ops::zip`), computed in `T`, stored as `O`.
pub(crate) fn zip<A: Element, B: Element, T: Element, O: Element>(
    op: &'static str,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> Result<DynTensor<O>> {
    let storages = [a.storage() as &dyn AnyStorage, b.storage()];
    with_cuda_read(op, &storages, |bufs| {
        let shape = broadcast_shapes(op, a.shape(), b.shape())?;
        let r = zip_bufs(
            op,
            bufs[0],
            a.layout(),
            bufs[1],
            b.layout(),
            T::DTYPE,
            O::DTYPE,
            &shape,
        )?;
        wrap::<O>(op, r, &shape)
    })
}

/// Runs `f` with `dst`'s device buffer locked for writing and `src`'s for reading (distinct
/// storages, locked in the global order); a `Device` error if the two are on different
/// devices or not on CUDA.
fn with_cuda_write_read<A: Element, B: Element, R>(
    op: &'static str,
    dst: &DynTensor<A>,
    src: &DynTensor<B>,
    f: impl FnOnce(&mut CudaBuffer, &CudaBuffer) -> Result<R>,
) -> Result<R> {
    if dst.device() != src.device() {
        return Err(mixed_devices(op, dst.device(), src.device()));
    }
    with_write_read_buffers(dst.storage(), src.storage(), |d, s| match (d, s) {
        (Buffer::Cuda(d), Buffer::Cuda(s)) => f(d, s),
        _ => Err(Error::new(ErrorKind::Device, op, "expected CUDA tensors")),
    })
}

/// `dst = op(dst, src)` through the view `dst`, `src` already broadcast to its shape and not
/// sharing its storage (see `ops::zip_inplace`), computed in `T`.
pub(crate) fn zip_inplace<E: Element, B: Element, T: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
) -> Result<()> {
    with_cuda_write_read(op, dst, src, |d, s| {
        let shape = dst.shape();
        let r = zip_bufs(
            op,
            d,
            dst.layout(),
            s,
            src.layout(),
            T::DTYPE,
            E::DTYPE,
            shape,
        )?;
        copy::copy(op, d, dst.layout(), &r, &Layout::contiguous(shape)?)
    })
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

// ---------------------------------------------------------------------------------------
// Selection, joining, indexing and scans

/// `cond ? a : b` over the broadcast shape `shape` (see `ops::try_where_`), the operands
/// converted to the promoted type `O` on the device first (before they are expanded).
pub(crate) fn where_<A: Element, B: Element, O: Element>(
    op: &'static str,
    cond: &DynTensor<bool>,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    shape: &[usize],
) -> Result<DynTensor<O>> {
    let storages = [cond.storage() as &dyn AnyStorage, a.storage(), b.storage()];
    with_cuda_read(op, &storages, |bufs| {
        let (mut sa, mut sb) = (None, None);
        let (ab, la) = operand(op, bufs[1], a.layout(), O::DTYPE, shape, &mut sa)?;
        let (bb, lb) = operand(op, bufs[2], b.layout(), O::DTYPE, shape, &mut sb)?;
        let lc = expand_layout(cond.layout(), shape)?;
        let r = compute::where_(op, bufs[0], &lc, ab, &la, bb, &lb)?;
        wrap::<O>(op, r, shape)
    })
}

/// A copy of `t` with `value` where `mask` (its layout `lm` already broadcast to `t`'s shape)
/// is true.
pub(crate) fn masked_fill<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    mask: &DynTensor<bool>,
    lm: &Layout,
    value: E,
) -> Result<DynTensor<E>> {
    let storages = [mask.storage() as &dyn AnyStorage, t.storage()];
    with_cuda_read(op, &storages, |bufs| {
        let v = CudaBuffer::from_host(op, bufs[1].cuda_device(), &[value])?;
        let lv = scalar_layout(t.shape())?;
        let r = compute::where_(op, bufs[0], lm, &v, &lv, bufs[1], t.layout())?;
        wrap::<E>(op, r, t.shape())
    })
}

/// `value` written through the view `dst` where `mask` (already broadcast to its shape and
/// not sharing its storage, see `ops::inplace_source`) is true; `dst` is writable.
pub(crate) fn masked_fill_<E: Element>(
    op: &'static str,
    dst: &DynTensor<E>,
    mask: &DynTensor<bool>,
    value: E,
) -> Result<()> {
    with_cuda_write_read(op, dst, mask, |d, m| {
        let shape = dst.shape();
        let v = CudaBuffer::from_host(op, d.cuda_device(), &[value])?;
        let lv = scalar_layout(shape)?;
        let r = compute::where_(op, m, mask.layout(), &v, &lv, d, dst.layout())?;
        copy::copy(op, d, dst.layout(), &r, &Layout::contiguous(shape)?)
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
