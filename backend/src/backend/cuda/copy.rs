//! The core operations on CUDA buffers (`copy.cu`): strided gather with an element type
//! conversion (`contiguous`, `clone`, `to_vec`, `to_dtype`), strided copy with conversion
//! (`copy_`) and fill (`fill_`). Layouts are device-independent: the same [`Layout`] that
//! describes a CPU view describes the CUDA one.

use super::error::{device_error, driver};
use super::kernels::Kernel;
use super::launch::{elementwise_config, elementwise_config_for, kernel_layouts, scalar_bits};
use super::rt::PushKernelArg;
use super::storage::CudaBuffer;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::{Layout, contiguous_strides};

/// Fails unless both buffers are on one device.
pub fn same_device(op: &'static str, a: &CudaBuffer, b: &CudaBuffer) -> Result<()> {
    if a.device() != b.device() {
        return Err(device_error(
            op,
            format!(
                "expected tensors on one device, found {} and {}; move one with to_device()",
                a.device(),
                b.device()
            ),
        ));
    }
    Ok(())
}

/// The elements of `layout` over `src`, converted to `dtype`, in a new contiguous buffer on
/// the same device.
pub fn cast(
    op: &'static str,
    src: &CudaBuffer,
    layout: &Layout,
    dtype: DType,
) -> Result<CudaBuffer> {
    cast_strided(
        op,
        src,
        layout.sizes(),
        layout.strides(),
        layout.offset(),
        dtype,
    )
}

/// [`cast`] of the view `(sizes, strides, offset)`, whose strides are taken modulo 2^64 as the
/// kernels compute positions: a stride of `s.wrapping_neg()` walks backwards (`flip`). Every
/// position the view reaches must lie in `src`.
pub fn cast_strided(
    op: &'static str,
    src: &CudaBuffer,
    sizes: &[usize],
    strides: &[usize],
    offset: usize,
    dtype: DType,
) -> Result<CudaBuffer> {
    let dev = src.cuda_device();
    let n: usize = sizes.iter().product();
    let mut out = CudaBuffer::alloc(op, dev, dtype, n)?;
    if n == 0 {
        return Ok(out);
    }
    // A copy into the contiguous layout of the same sizes.
    let kernel = Kernel::copy(src.dtype(), dtype);
    let f = dev.function(op, &kernel)?;
    let out_strides = contiguous_strides(sizes).expect("numel is checked in layouts");
    let [out_l, src_l] = kernel_layouts(op, sizes, [&out_strides, strides], [0, offset])?;
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(&out_l)
        .arg(src.slice())
        .arg(&src_l)
        .arg(&n64);
    // SAFETY: the arguments match `nt_copy_S_D(D*, NtLayout, const S*, NtLayout, u64 n)`;
    // `out_l` is the contiguous layout of `n` elements of D, and `src_l` stays within `src`
    // (the caller's view fits its storage).
    let contiguous = out_l.is_contiguous() && src_l.is_contiguous();
    unsafe { args.launch(elementwise_config_for(n, contiguous)) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// The elements of `layout` over `src` in row-major order, on the host.
pub fn gather_to_host<E: Element>(
    op: &'static str,
    src: &CudaBuffer,
    layout: &Layout,
) -> Result<Vec<E>> {
    if layout.is_contiguous() {
        return src.read(op, layout.offset(), layout.numel());
    }
    let packed = cast(op, src, layout, E::DTYPE)?;
    packed.read(op, 0, layout.numel())
}

/// Copies the elements of `src_layout` over `src` into `dst_layout` over `dst` (same sizes),
/// converting the element type. `dst_layout` must not have two indices on one element, and
/// `src` must not be `dst` (the caller copies an aliasing source first).
pub fn copy(
    op: &'static str,
    dst: &mut CudaBuffer,
    dst_layout: &Layout,
    src: &CudaBuffer,
    src_layout: &Layout,
) -> Result<()> {
    same_device(op, dst, src)?;
    debug_assert_eq!(dst_layout.sizes(), src_layout.sizes());
    let n = dst_layout.numel();
    if n == 0 {
        return Ok(());
    }
    let dev = std::sync::Arc::clone(dst.cuda_device());
    let kernel = Kernel::copy(src.dtype(), dst.dtype());
    let f = dev.function(op, &kernel)?;
    let [dst_l, src_l] = kernel_layouts(
        op,
        dst_layout.sizes(),
        [dst_layout.strides(), src_layout.strides()],
        [dst_layout.offset(), src_layout.offset()],
    )?;
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(dst.slice_mut())
        .arg(&dst_l)
        .arg(src.slice())
        .arg(&src_l)
        .arg(&n64);
    // SAFETY: the arguments match `nt_copy_S_D(D*, NtLayout, const S*, NtLayout, u64)`; both
    // layouts fit their buffers, and the destination positions are distinct.
    let contiguous = dst_l.is_contiguous() && src_l.is_contiguous();
    unsafe { args.launch(elementwise_config_for(n, contiguous)) }
        .map_err(|e| driver(op, dev.device(), &format!("launching {}", kernel.name), e))?;
    Ok(())
}

/// Writes `value` at every element of `layout` over `dst`.
pub fn fill<E: Element>(
    op: &'static str,
    dst: &mut CudaBuffer,
    layout: &Layout,
    value: E,
) -> Result<()> {
    let n = layout.numel();
    if n == 0 {
        return Ok(());
    }
    let dev = std::sync::Arc::clone(dst.cuda_device());
    let kernel = Kernel::fill(E::DTYPE);
    let f = dev.function(op, &kernel)?;
    let [dst_l] = kernel_layouts(op, layout.sizes(), [layout.strides()], [layout.offset()])?;
    let (n64, bits) = (n as u64, scalar_bits(value));
    let mut args = dev.stream().launch_builder(&f);
    args.arg(dst.slice_mut()).arg(&dst_l).arg(&bits).arg(&n64);
    // SAFETY: the arguments match `nt_fill_T(T*, NtLayout, u64 value_bits, u64 n)` and the
    // layout fits the buffer.
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, dev.device(), &format!("launching {}", kernel.name), e))?;
    Ok(())
}
