//! The compute operations on CUDA buffers, for the positional tensor's compute methods:
//! elementwise unary ([`unary`]), broadcast binary ([`binary`]), comparisons ([`compare`]),
//! reductions over one dim ([`reduce`]) and softmax ([`softmax`]); matrix products are in
//! `blas.rs`.
//!
//! Every function takes buffers plus [`Layout`]s (any strides and offset) and returns a new
//! contiguous buffer on the same device, row-major in the output shape. Operand checks that
//! belong to the tensor API (broadcasting shapes, normalising dims, promoting dtypes) are the
//! caller's; what is checked here is what would otherwise make a kernel misbehave.

use super::copy::{cast, same_device};
use super::error::driver;
use super::kernels::{BinaryOp, CompareOp, Kernel, ReduceOp, Supports, UnaryOp};
use super::launch::{
    SORT_TILE, elementwise_config, elementwise_config_for, kernel_layouts, reduce_config,
    reduce_group, reduce_splits, rows_config, scan_block_per_lane, sort_tile_config,
};
use super::rt::PushKernelArg;
use super::storage::CudaBuffer;
use crate::backend::op::AdamStep;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;

fn unsupported(op: &'static str, what: &str, dtype: DType) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        op,
        format!("{what} is not defined for {dtype} tensors"),
    )
}

/// Checks that an auxiliary operand (`what`: a condition, an index) has `dtype` and is
/// viewed at the output's `sizes`, which its kernel assumes.
fn check_operand(
    op: &'static str,
    what: &str,
    buf: &CudaBuffer,
    layout: &Layout,
    dtype: DType,
    sizes: &[usize],
) -> Result<()> {
    if buf.dtype() == dtype && layout.sizes() == sizes {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidArgument,
        op,
        format!(
            "{what} must be of dtype {dtype} and viewed at the output's shape {sizes:?}, got {} {:?}",
            buf.dtype(),
            layout.sizes()
        ),
    ))
}

/// `op` applied to every element of `layout` over `src`.
///
/// Integer types support neg, abs, relu, square and sign (wrapping); every operation
/// supports f16, bf16 (computed in f32), f32 and f64.
pub fn unary(
    op: &'static str,
    uop: UnaryOp,
    src: &CudaBuffer,
    layout: &Layout,
) -> Result<CudaBuffer> {
    if !uop.supports(src.dtype()) {
        return Err(unsupported(op, uop.name(), src.dtype()));
    }
    let dev = src.cuda_device();
    let n = layout.numel();
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    if n == 0 {
        return Ok(out);
    }
    let kernel = Kernel::unary(uop, src.dtype());
    let f = dev.function(op, &kernel)?;
    let [l] = kernel_layouts(op, layout.sizes(), [layout.strides()], [layout.offset()])?;
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut()).arg(src.slice()).arg(&l).arg(&n64);
    // SAFETY: matches `nt_unary_OP_T(T* out, const T* in, NtLayout, u64 n)`; `out` holds n.
    unsafe { args.launch(elementwise_config_for(n, l.is_contiguous())) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// Checks the operands of an elementwise binary kernel: one device, one dtype, one shape.
fn check_pair(
    op: &'static str,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<()> {
    same_device(op, a, b)?;
    if a.dtype() != b.dtype() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "operands of {} and {} (convert one first)",
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    if la.sizes() != lb.sizes() {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "operand layouts must have the output's shape (broadcast with expand first): \
                 {:?} and {:?}",
                la.sizes(),
                lb.sizes()
            ),
        ));
    }
    Ok(())
}

/// Launches a `(out, a, la, b, lb, n)` kernel producing `out_dtype`.
fn launch_pair(
    op: &'static str,
    kernel: Kernel,
    out_dtype: DType,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<CudaBuffer> {
    let dev = a.cuda_device();
    let n = la.numel();
    let mut out = CudaBuffer::alloc(op, dev, out_dtype, n)?;
    if n == 0 {
        return Ok(out);
    }
    let f = dev.function(op, &kernel)?;
    let [ka, kb] = kernel_layouts(
        op,
        la.sizes(),
        [la.strides(), lb.strides()],
        [la.offset(), lb.offset()],
    )?;
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(a.slice())
        .arg(&ka)
        .arg(b.slice())
        .arg(&kb)
        .arg(&n64);
    // SAFETY: matches `nt_binary_OP_T` / `nt_compare_OP_T`
    // `(Out* out, const T* a, NtLayout, const T* b, NtLayout, u64 n)`; `out` holds n.
    unsafe {
        args.launch(elementwise_config_for(
            n,
            ka.is_contiguous() && kb.is_contiguous(),
        ))
    }
    .map_err(|e| driver(op, a.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// `a op b` elementwise. `la` and `lb` must both have the output's sizes (a broadcast dim has
/// stride 0, as `Layout::expand` makes it) and the buffers one dtype and device.
pub fn binary(
    op: &'static str,
    bop: BinaryOp,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<CudaBuffer> {
    check_pair(op, a, la, b, lb)?;
    if !bop.supports(a.dtype()) {
        return Err(unsupported(op, bop.name(), a.dtype()));
    }
    launch_pair(op, Kernel::binary(bop, a.dtype()), a.dtype(), a, la, b, lb)
}

/// `a op b` elementwise with a `bool` result; operands as for [`binary`].
pub fn compare(
    op: &'static str,
    cop: CompareOp,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<CudaBuffer> {
    check_pair(op, a, la, b, lb)?;
    launch_pair(
        op,
        Kernel::compare(cop, a.dtype()),
        DType::Bool,
        a,
        la,
        b,
        lb,
    )
}

/// Reduces `layout` over `src` along `dim` (`< rank`): the result has the shape without
/// `dim`, in row-major order, of dtype [`ReduceOp::out_dtype`].
///
/// The threads per output element depend on the shape (`reduce_group`); f16/bf16
/// accumulate in f32. An empty `dim` gives sum 0, prod 1, mean NaN, and is an error for
/// max/min/argmax/argmin.
pub fn reduce(
    op: &'static str,
    rop: ReduceOp,
    src: &CudaBuffer,
    layout: &Layout,
    dim: usize,
) -> Result<CudaBuffer> {
    if !rop.supports(src.dtype()) {
        return Err(unsupported(op, rop.name(), src.dtype()));
    }
    if dim >= layout.rank() {
        return Err(Error::dim_out_of_range(op, dim as isize, layout.rank()));
    }
    let (rlen, rstride) = (layout.sizes()[dim], layout.strides()[dim]);
    let mut outer_sizes = layout.sizes().to_vec();
    let mut outer_strides = layout.strides().to_vec();
    outer_sizes.remove(dim);
    outer_strides.remove(dim);
    let rows: usize = outer_sizes.iter().product();
    if rlen == 0 && rows > 0 && !rop.allows_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "{} of an empty dim {dim} (shape {:?}) has no value",
                rop.name(),
                layout.sizes()
            ),
        ));
    }
    let dev = src.cuda_device();
    let mut out = CudaBuffer::alloc(op, dev, rop.out_dtype(src.dtype()), rows)?;
    if rows == 0 {
        return Ok(out);
    }
    let kernel = Kernel::reduce(rop, src.dtype());
    let f = dev.function(op, &kernel)?;
    let [outer] = kernel_layouts(op, &outer_sizes, [&outer_strides], [layout.offset()])?;
    // Consecutive rows start at consecutive elements when the innermost remaining dim (of
    // more than one element) has stride 1.
    let rows_adjacent = outer_sizes
        .iter()
        .zip(&outer_strides)
        .rev()
        .find(|&(&size, _)| size > 1)
        .is_some_and(|(_, &stride)| stride == 1);
    let group = reduce_group(rows, rlen, rows_adjacent);
    let splits = reduce_splits(rows, rlen, group);
    // The partial accumulators of a split reduction, 16 bytes each (the largest accumulator:
    // argmax's value and index); none without a split (the kernel gets a null pointer it
    // never reads).
    let mut part = if splits > 1 {
        Some(CudaBuffer::alloc(op, dev, DType::U8, rows * splits * 16)?)
    } else {
        None
    };
    const NULL: u64 = 0;
    let (rows64, rlen64, rstride64, splits64) =
        (rows as u64, rlen as u64, rstride as u64, splits as u64);
    let passes: &[i32] = if splits > 1 { &[0, 1] } else { &[0] };
    for combine in passes {
        let config = if *combine == 1 {
            elementwise_config(rows)
        } else {
            reduce_config(rows, group, splits)
        };
        let mut args = dev.stream().launch_builder(&f);
        args.arg(out.slice_mut());
        match part.as_mut() {
            Some(p) => args.arg(p.slice_mut()),
            None => args.arg(&NULL),
        };
        args.arg(src.slice())
            .arg(&outer)
            .arg(&rows64)
            .arg(&rlen64)
            .arg(&rstride64)
            .arg(&group)
            .arg(&splits64)
            .arg(combine);
        // SAFETY: matches `nt_reduce_OP_T(Out*, void* part, const T*, NtLayout outer, u64
        // rows, u64 rlen, u64 rstride, unsigned group, u64 splits, int combine)`, the
        // reduction launched with NT_REDUCE_THREADS threads per block and `group` a power of
        // two dividing it; every position lies in the layout, which fits `src`; `out` holds
        // `rows` elements and, with more than one split, `part` rows * splits accumulators.
        unsafe { args.launch(config) }
            .map(|_| ())
            .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    }
    Ok(out)
}

/// Softmax (or log-softmax with `log`) of `layout` over `src` along its last dim, for float
/// dtypes (f16/bf16 computed in f32). A non-contiguous input is gathered first.
pub fn softmax(
    op: &'static str,
    src: &CudaBuffer,
    layout: &Layout,
    log: bool,
) -> Result<CudaBuffer> {
    if !src.dtype().is_float() {
        return Err(unsupported(op, "softmax", src.dtype()));
    }
    let Some(&cols) = layout.sizes().last() else {
        return Err(Error::dim_out_of_range(op, -1, 0));
    };
    let dev = src.cuda_device();
    let n = layout.numel();
    if n == 0 {
        return CudaBuffer::alloc(op, dev, src.dtype(), 0);
    }
    let rows = n / cols;
    let packed;
    let (input, offset) = if layout.is_contiguous() {
        (src, layout.offset())
    } else {
        packed = cast(op, src, layout, src.dtype())?;
        (&packed, 0)
    };
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    let kernel = Kernel::softmax(src.dtype());
    let f = dev.function(op, &kernel)?;
    let (offset64, rows64, cols64, log32) = (offset as u64, rows as u64, cols as u64, log as i32);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(input.slice())
        .arg(&offset64)
        .arg(&rows64)
        .arg(&cols64)
        .arg(&log32);
    // SAFETY: matches `nt_softmax_T(T* out, const T* in, u64 offset, u64 rows, u64 cols,
    // int log)` with NT_REDUCE_THREADS threads; the input rows are contiguous from `offset`
    // within the buffer, and `out` holds rows * cols elements.
    unsafe { args.launch(rows_config(rows)) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// The gradient of softmax (log-softmax with `log`) along the last dim, from the forward's
/// output `y` and its gradient `g` (layouts of the same sizes, float dtypes): a contiguous
/// result. Non-contiguous operands are gathered first.
pub fn softmax_backward(
    op: &'static str,
    y: &CudaBuffer,
    ly: &Layout,
    g: &CudaBuffer,
    lg: &Layout,
    log: bool,
) -> Result<CudaBuffer> {
    check_pair(op, y, ly, g, lg)?;
    if !y.dtype().is_float() {
        return Err(unsupported(op, "softmax_backward", y.dtype()));
    }
    let Some(&cols) = ly.sizes().last() else {
        return Err(Error::dim_out_of_range(op, -1, 0));
    };
    let dev = y.cuda_device();
    let n = ly.numel();
    if n == 0 {
        return CudaBuffer::alloc(op, dev, y.dtype(), 0);
    }
    // The kernel reads both operands as contiguous rows from 0: others are packed first.
    let (packed_y, packed_g) = (pack_from_zero(op, y, ly)?, pack_from_zero(op, g, lg)?);
    let (y, g) = (
        packed_y.as_ref().unwrap_or(y),
        packed_g.as_ref().unwrap_or(g),
    );
    let rows = n / cols;
    let mut out = CudaBuffer::alloc(op, dev, y.dtype(), n)?;
    let kernel = Kernel::softmax_backward(y.dtype());
    let f = dev.function(op, &kernel)?;
    let (rows64, cols64, log32) = (rows as u64, cols as u64, log as i32);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(y.slice())
        .arg(g.slice())
        .arg(&rows64)
        .arg(&cols64)
        .arg(&log32);
    // SAFETY: matches `nt_softmax_bwd_T(T* out, const T* y, const T* g, u64 rows, u64 cols,
    // int log)` with NT_REDUCE_THREADS threads; `y`, `g` and `out` each hold rows * cols
    // contiguous elements of the dtype.
    unsafe { args.launch(rows_config(rows)) }
        .map_err(|e| driver(op, y.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// `layout` over a float `src` normalised along its last dim (of size > 0), and each row's
/// `1 / sqrt(var + eps)` (see `Backend::normalize`): two contiguous buffers. A
/// non-contiguous input is gathered first.
pub fn normalize(
    op: &'static str,
    src: &CudaBuffer,
    layout: &Layout,
    eps: f64,
    center: bool,
) -> Result<(CudaBuffer, CudaBuffer)> {
    if !src.dtype().is_float() {
        return Err(unsupported(op, "normalize", src.dtype()));
    }
    let cols = match layout.sizes().last() {
        Some(&c) if c > 0 => c,
        _ => return Err(Error::dim_out_of_range(op, -1, layout.rank())),
    };
    let (dev, n) = (src.cuda_device(), layout.numel());
    let rows = n / cols;
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    let mut rstd = CudaBuffer::alloc(op, dev, src.dtype(), rows)?;
    if n == 0 {
        return Ok((out, rstd));
    }
    let packed = pack_from_zero(op, src, layout)?;
    let input = packed.as_ref().unwrap_or(src);
    let kernel = Kernel::normalize(src.dtype());
    let f = dev.function(op, &kernel)?;
    let (rows64, cols64, center32) = (rows as u64, cols as u64, center as i32);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(rstd.slice_mut())
        .arg(input.slice())
        .arg(&rows64)
        .arg(&cols64)
        .arg(&eps)
        .arg(&center32);
    // SAFETY: matches `nt_normalize_T(T* out, T* rstd, const T* in, u64 rows, u64 cols,
    // double eps, int center)` with NT_REDUCE_THREADS threads; the input holds rows * cols
    // contiguous elements from 0, `out` rows * cols and `rstd` rows.
    unsafe { args.launch(rows_config(rows)) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok((out, rstd))
}

/// The gradient of [`normalize`] along the last dim from its output `y`, the output's
/// gradient `g` (layouts of the same sizes) and `rstd` (those sizes with the last set to 1):
/// a contiguous result. Non-contiguous operands are gathered first.
#[allow(clippy::too_many_arguments)]
pub fn normalize_backward(
    op: &'static str,
    y: &CudaBuffer,
    ly: &Layout,
    g: &CudaBuffer,
    lg: &Layout,
    rstd: &CudaBuffer,
    lr: &Layout,
    center: bool,
) -> Result<CudaBuffer> {
    check_pair(op, y, ly, g, lg)?;
    same_device(op, y, rstd)?;
    if !y.dtype().is_float() || rstd.dtype() != y.dtype() {
        return Err(unsupported(op, "normalize_backward", y.dtype()));
    }
    let Some(&cols) = ly.sizes().last() else {
        return Err(Error::dim_out_of_range(op, -1, 0));
    };
    let (dev, n) = (y.cuda_device(), ly.numel());
    if n == 0 {
        return CudaBuffer::alloc(op, dev, y.dtype(), 0);
    }
    let rows = n / cols;
    if lr.numel() != rows || lr.rank() != ly.rank() || lr.sizes().last() != Some(&1) {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "rstd of sizes {:?} for rows of {:?}",
                lr.sizes(),
                ly.sizes()
            ),
        ));
    }
    let (packed_y, packed_g, packed_r) = (
        pack_from_zero(op, y, ly)?,
        pack_from_zero(op, g, lg)?,
        pack_from_zero(op, rstd, lr)?,
    );
    let (y, g, rstd) = (
        packed_y.as_ref().unwrap_or(y),
        packed_g.as_ref().unwrap_or(g),
        packed_r.as_ref().unwrap_or(rstd),
    );
    let mut out = CudaBuffer::alloc(op, dev, y.dtype(), n)?;
    let kernel = Kernel::normalize_backward(y.dtype());
    let f = dev.function(op, &kernel)?;
    let (rows64, cols64, center32) = (rows as u64, cols as u64, center as i32);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(y.slice())
        .arg(g.slice())
        .arg(rstd.slice())
        .arg(&rows64)
        .arg(&cols64)
        .arg(&center32);
    // SAFETY: matches `nt_normalize_bwd_T(T* out, const T* y, const T* g, const T* rstd,
    // u64 rows, u64 cols, int center)` with NT_REDUCE_THREADS threads; `y`, `g` and `out`
    // each hold rows * cols contiguous elements from 0 and `rstd` rows.
    unsafe { args.launch(rows_config(rows)) }
        .map_err(|e| driver(op, y.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// `b` seen through `l` as a new contiguous buffer, or `None` where it already is one from
/// element 0 (what the row kernels read).
fn pack_from_zero(op: &'static str, b: &CudaBuffer, l: &Layout) -> Result<Option<CudaBuffer>> {
    let from_zero = l.is_contiguous() && l.offset() == 0;
    (!from_zero).then(|| cast(op, b, l, b.dtype())).transpose()
}

/// One Adam or AdamW step in place (see `Backend::adam_`, whose operand checks the caller has
/// made: `p` and `g` contiguous runs of `n` elements from their layouts' offsets, each state
/// buffer of exactly `n`).
#[allow(clippy::too_many_arguments)]
pub fn adam_(
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
    same_device(op, p, g)?;
    same_device(op, p, m)?;
    same_device(op, p, v)?;
    let dtype = p.dtype();
    let same_types = [g.dtype(), m.dtype(), v.dtype()]
        .iter()
        .all(|&d| d == dtype);
    if !dtype.is_float() || !same_types {
        return Err(unsupported(op, "adam_", dtype));
    }
    let n = lp.numel();
    if n == 0 {
        return Ok(());
    }
    let dev = std::sync::Arc::clone(p.cuda_device());
    let mut unused;
    let (vmax, ams) = match vmax {
        Some(x) => {
            same_device(op, p, x)?;
            (x, 1i32)
        }
        None => {
            unused = CudaBuffer::alloc(op, &dev, dtype, 0)?;
            (&mut unused, 0i32)
        }
    };
    let kernel = Kernel::adam(dtype);
    let f = dev.function(op, &kernel)?;
    let (po, go, n64) = (lp.offset() as u64, lg.offset() as u64, n as u64);
    let scalars = [
        step.decay,
        step.l2,
        1.0 - step.beta1,
        step.beta2,
        1.0 - step.beta2,
        step.correction2_sqrt,
        step.eps,
        -step.step_size,
    ];
    let l2_on = (step.l2 != 0.0) as i32;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(p.slice_mut())
        .arg(&po)
        .arg(g.slice())
        .arg(&go)
        .arg(m.slice_mut())
        .arg(v.slice_mut())
        .arg(vmax.slice_mut())
        .arg(&n64);
    for s in &scalars {
        args.arg(s);
    }
    args.arg(&l2_on).arg(&ams);
    // SAFETY: matches `nt_adam_T(T* p, u64 p_offset, const T* g, u64 g_offset, T* m, T* v,
    // T* vmax, u64 n, double × 8, int l2_on, int ams)`; `p` and `g` hold n elements from
    // their offsets, `m` and `v` n each, and `vmax` n when `ams` (else it is not read).
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, dev.device(), &format!("launching {}", kernel.name), e))?;
    Ok(())
}

/// `cond ? a : b` elementwise (`select.cu`): the three layouts have the output's sizes (a
/// broadcast dim has stride 0), `cond` is `bool` and `a`, `b` share the output's dtype.
pub fn where_(
    op: &'static str,
    cond: &CudaBuffer,
    lc: &Layout,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<CudaBuffer> {
    check_pair(op, a, la, b, lb)?;
    same_device(op, cond, a)?;
    check_operand(op, "the condition", cond, lc, DType::Bool, la.sizes())?;
    let dev = a.cuda_device();
    let n = la.numel();
    let mut out = CudaBuffer::alloc(op, dev, a.dtype(), n)?;
    if n == 0 {
        return Ok(out);
    }
    let kernel = Kernel::where_(a.dtype());
    let f = dev.function(op, &kernel)?;
    let [kc, ka, kb] = kernel_layouts(
        op,
        la.sizes(),
        [lc.strides(), la.strides(), lb.strides()],
        [lc.offset(), la.offset(), lb.offset()],
    )?;
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(cond.slice())
        .arg(&kc)
        .arg(a.slice())
        .arg(&ka)
        .arg(b.slice())
        .arg(&kb)
        .arg(&n64);
    // SAFETY: matches `nt_where_T(T* out, const bool*, NtLayout, const T*, NtLayout,
    // const T*, NtLayout, u64 n)`; every layout fits its buffer and `out` holds n.
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, a.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// Indexed reads along one dim (`select.cu`): a contiguous buffer in the shape `ls.sizes()`
/// whose element `i` is `src[position(ls, i) + index[position(li, i)] * dstride]`.
///
/// `ls` is the source's view at the output's sizes with stride 0 in the indexed dim, whose
/// stride in the source is `dstride` and whose size is `size`; `li` is the `i64` index's view
/// at the output's sizes. Every index must be in `0..size`: the caller checks that before
/// calling (`ops::cuda::check_index_range`); the kernel still never reads outside the source
/// for one that is not (it stores zero).
#[allow(clippy::too_many_arguments)]
pub fn index(
    op: &'static str,
    src: &CudaBuffer,
    ls: &Layout,
    index: &CudaBuffer,
    li: &Layout,
    dstride: usize,
    size: usize,
) -> Result<CudaBuffer> {
    same_device(op, src, index)?;
    check_operand(op, "the index", index, li, DType::I64, ls.sizes())?;
    let dev = src.cuda_device();
    let n = ls.numel();
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    if n == 0 {
        return Ok(out);
    }
    let kernel = Kernel::index(src.dtype());
    let f = dev.function(op, &kernel)?;
    let [ks, ki] = kernel_layouts(
        op,
        ls.sizes(),
        [ls.strides(), li.strides()],
        [ls.offset(), li.offset()],
    )?;
    let (dstride64, size64, n64) = (dstride as u64, size as u64, n as u64);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(src.slice())
        .arg(&ks)
        .arg(index.slice())
        .arg(&ki)
        .arg(&dstride64)
        .arg(&size64)
        .arg(&n64);
    // SAFETY: matches `nt_index_T(T* out, const T* src, NtLayout, const i64* idx, NtLayout,
    // u64 dstride, u64 size, u64 n)`; `ls` with any index in 0..size in the indexed dim stays
    // within the source view, which fits `src`; the kernel skips other indices; `out` holds n.
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// `base` through `lb` copied into a new contiguous buffer, then `src` (through `ls`, at the
/// index's sizes) added at the positions the `i64` view `li` over `index` names along `dim`
/// (`select.cu`; indices checked by the caller). One thread per position of the index with
/// `dim` left out walks that dim in order (see the kernel).
#[allow(clippy::too_many_arguments)]
pub fn scatter_add(
    op: &'static str,
    base: &CudaBuffer,
    lb: &Layout,
    dim: usize,
    index: &CudaBuffer,
    li: &Layout,
    src: &CudaBuffer,
    ls: &Layout,
) -> Result<CudaBuffer> {
    same_device(op, base, index)?;
    same_device(op, base, src)?;
    check_operand(op, "the index", index, li, DType::I64, li.sizes())?;
    check_operand(op, "the source", src, ls, base.dtype(), li.sizes())?;
    let mut out = cast(op, base, lb, base.dtype())?;
    if li.numel() == 0 {
        return Ok(out);
    }
    let out_strides = Layout::contiguous(lb.sizes())?.strides().to_vec();
    let mut lanes_shape = li.sizes().to_vec();
    let len = std::mem::replace(&mut lanes_shape[dim], 1);
    let lanes: usize = lanes_shape.iter().product();
    let dev = base.cuda_device();
    let kernel = Kernel::scatter_add(base.dtype());
    let f = dev.function(op, &kernel)?;
    let [ko, ks, ki] = kernel_layouts(
        op,
        &lanes_shape,
        [&out_strides, ls.strides(), li.strides()],
        [0, ls.offset(), li.offset()],
    )?;
    let (ostride, size) = (out_strides[dim] as u64, lb.sizes()[dim] as u64);
    let (sstride, istride) = (ls.strides()[dim] as u64, li.strides()[dim] as u64);
    let (len64, lanes64) = (len as u64, lanes as u64);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(&ko)
        .arg(&ostride)
        .arg(&size)
        .arg(src.slice())
        .arg(&ks)
        .arg(&sstride)
        .arg(index.slice())
        .arg(&ki)
        .arg(&istride)
        .arg(&len64)
        .arg(&lanes64);
    // SAFETY: matches `nt_scatter_add_T(T* out, NtLayout lo, u64 ostride, u64 size, const T*
    // src, NtLayout ls, u64 sstride, const i64* idx, NtLayout li, u64 istride, u64 len, u64
    // lanes)`; `out` is the contiguous base (its sizes bound the index's in every dim but
    // `dim`, and an index < size stays inside it), `ls`/`li` with k < len stay inside their
    // views, which fit their buffers; lanes never share an output element.
    unsafe { args.launch(elementwise_config(lanes)) }
        .map_err(|e| driver(op, base.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// Inclusive running sum (or product with `prod`) along the middle dim of the contiguous
/// `[outer, len, inner]` buffer `src` (`select.cu`), into a new buffer of the same dtype,
/// which must be a float (accumulated in f64) or `i64` (wrapping). Many lanes run a thread
/// per `(outer, inner)` lane walking its `len` elements in order; few long ones a block per
/// lane (`scan_block_per_lane`, see the kernel).
pub fn scan(
    op: &'static str,
    src: &CudaBuffer,
    outer: usize,
    len: usize,
    inner: usize,
    prod: bool,
) -> Result<CudaBuffer> {
    if !super::kernels::scan_supports(src.dtype()) {
        return Err(unsupported(op, "a running sum or product", src.dtype()));
    }
    let dev = src.cuda_device();
    let n = outer * len * inner;
    debug_assert!(src.len() >= n);
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    let lanes = outer * inner;
    if n == 0 {
        return Ok(out);
    }
    let kernel = Kernel::scan(src.dtype());
    let f = dev.function(op, &kernel)?;
    let block_per_lane = scan_block_per_lane(lanes, len);
    let config = if block_per_lane {
        rows_config(lanes)
    } else {
        elementwise_config(lanes)
    };
    let (lanes64, len64, inner64) = (lanes as u64, len as u64, inner as u64);
    let (prod32, block32) = (prod as i32, block_per_lane as i32);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(src.slice())
        .arg(&lanes64)
        .arg(&len64)
        .arg(&inner64)
        .arg(&prod32)
        .arg(&block32);
    // SAFETY: matches `nt_scan_T(T* out, const T* in, u64 lanes, u64 len, u64 inner,
    // int prod, int block_per_lane)`, with NT_REDUCE_THREADS threads per block when
    // `block_per_lane` is set; both buffers hold outer * len * inner elements.
    unsafe { args.launch(config) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// The `rows` x `n` row-major entries of `keys` (contiguous) sorted along each row, stably,
/// in PyTorch's order (`sort.cu`), with the position each came from in its row: a tile pass
/// (each run of `SORT_TILE` entries sorted in shared memory) and then merge passes doubling
/// the run length until one run covers the row, alternating between `keys` and a second
/// buffer. Consumes `keys` (the tile pass sorts it in place).
pub fn sort(
    op: &'static str,
    keys: CudaBuffer,
    rows: usize,
    n: usize,
    descending: bool,
) -> Result<(CudaBuffer, CudaBuffer)> {
    let dev = keys.cuda_device().clone();
    let total = rows * n;
    debug_assert!(keys.len() >= total);
    let mut cur = (keys, CudaBuffer::alloc(op, &dev, DType::I64, total)?);
    if total == 0 {
        return Ok(cur);
    }
    let kernel = Kernel::sort(cur.0.dtype());
    let f = dev.function(op, &kernel)?;
    let (rows64, n64, desc32) = (rows as u64, n as u64, descending as i32);
    let tile = SORT_TILE as usize;
    let launch = |out: &mut (CudaBuffer, CudaBuffer),
                  input: Option<&(CudaBuffer, CudaBuffer)>,
                  width: usize|
     -> Result<()> {
        let (pass, config) = match input {
            None => (0i32, sort_tile_config(rows * n.div_ceil(tile), n)),
            Some(_) => (1i32, elementwise_config(total)),
        };
        let width64 = width as u64;
        // The tile pass reads only its output: its input pointers are null, never read.
        const NULL: u64 = 0;
        let mut args = dev.stream().launch_builder(&f);
        args.arg(out.0.slice_mut()).arg(out.1.slice_mut());
        match input {
            Some((k, i)) => args.arg(k.slice()).arg(i.slice()),
            None => args.arg(&NULL).arg(&NULL),
        };
        args.arg(&rows64)
            .arg(&n64)
            .arg(&width64)
            .arg(&desc32)
            .arg(&pass);
        // SAFETY: matches `nt_sort_T(T* ko, i64* io, const T* ki, const i64* ii, u64 rows,
        // u64 n, u64 width, int desc, int pass)`; every buffer holds rows * n elements; the
        // tile pass runs at least a quarter of its network's size in threads per block
        // (sort_tile_config), as the kernel assumes.
        unsafe { args.launch(config) }
            .map(|_| ())
            .map_err(|e| driver(op, dev.device(), &format!("launching {}", kernel.name), e))
    };
    launch(&mut cur, None, tile)?;
    if n > tile {
        let mut other = (
            CudaBuffer::alloc(op, &dev, cur.0.dtype(), total)?,
            CudaBuffer::alloc(op, &dev, DType::I64, total)?,
        );
        let mut width = tile;
        while width < n {
            launch(&mut other, Some(&cur), width)?;
            std::mem::swap(&mut cur, &mut other);
            width *= 2;
        }
    }
    Ok(cur)
}
