//! Sliding windows over the last two dims on CUDA buffers (`kernels/window.cu`): im2col,
//! col2im and max pooling, one thread per output element each.
//!
//! Every function takes the caller's checked layouts (the window fits the input, a `winners`
//! view holds tap numbers below `KH·KW`) and returns new contiguous buffers. The leading dims
//! of a view are passed as an `NtLayout` of their own, the last two (or four) as strides.

use super::copy::same_device;
use super::error::driver;
use super::kernels::Kernel;
use super::launch::{KernelLayout, KernelWindow, elementwise_config, kernel_layouts, scalar_bits};
use super::rt::PushKernelArg;
use super::storage::CudaBuffer;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::{Layout, Window2d};

/// The layout of the leading dims of `layout`, all but its last `inner`, with its offset.
fn lead(op: &'static str, layout: &Layout, inner: usize) -> Result<(KernelLayout, usize)> {
    let r = layout.rank() - inner;
    let sizes = &layout.sizes()[..r];
    let [k] = kernel_layouts(op, sizes, [&layout.strides()[..r]], [layout.offset()])?;
    Ok((k, sizes.iter().product()))
}

/// See [`Backend::unfold2d`](crate::backend::Backend::unfold2d).
pub fn unfold2d<E: Element>(
    op: &'static str,
    src: &CudaBuffer,
    layout: &Layout,
    window: &Window2d,
    pad: E,
) -> Result<CudaBuffer> {
    let r = layout.rank();
    let g = KernelWindow::new(op, window, (layout.sizes()[r - 2], layout.sizes()[r - 1]))?;
    let (oh, ow) = g.positions();
    let (kl, leads) = lead(op, layout, 2)?;
    let n = leads * window.kernel.0 * window.kernel.1 * oh * ow;
    let dev = src.cuda_device();
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    if n == 0 {
        return Ok(out);
    }
    let kernel = Kernel::unfold2d(src.dtype());
    let f = dev.function(op, &kernel)?;
    let (hs, ws) = (
        layout.strides()[r - 2] as u64,
        layout.strides()[r - 1] as u64,
    );
    let (bits, n64) = (scalar_bits(pad), n as u64);
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(src.slice())
        .arg(&kl)
        .arg(&hs)
        .arg(&ws)
        .arg(&g)
        .arg(&bits)
        .arg(&n64);
    // SAFETY: matches `nt_unfold2d_T(T* out, const T* src, NtLayout lead, u64 hs, u64 ws,
    // NtWindow g, u64 pad_bits, u64 n)`; `out` holds the n = leads·KH·KW·OH·OW outputs, and
    // every source read is at a leading position plus an input coordinate inside `layout`'s
    // sizes (the kernel reads the padding value elsewhere), within the view, which fits `src`.
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// See [`Backend::fold2d`](crate::backend::Backend::fold2d).
pub fn fold2d(
    op: &'static str,
    cols: &CudaBuffer,
    layout: &Layout,
    window: &Window2d,
    hw: (usize, usize),
    winners: Option<(&CudaBuffer, &Layout)>,
) -> Result<CudaBuffer> {
    let r = layout.rank();
    let g = KernelWindow::new(op, window, hw)?;
    let (kl, leads) = lead(op, layout, 4)?;
    let [sa, sb, si, sj] = [r - 4, r - 3, r - 2, r - 1].map(|d| layout.strides()[d] as u64);
    let n = leads * hw.0 * hw.1;
    let dev = cols.cuda_device();
    let mut out = CudaBuffer::alloc(op, dev, cols.dtype(), n)?;
    if n == 0 {
        return Ok(out);
    }
    // Without winners the kernel never reads them: any live buffer and layout stand in.
    let (wbuf, wl, wi, wj, has) = match winners {
        Some((buf, lw)) => {
            same_device(op, cols, buf)?;
            debug_assert_eq!(buf.dtype(), DType::I64);
            let rw = lw.rank();
            let (k, _) = lead(op, lw, 2)?;
            (
                buf,
                k,
                lw.strides()[rw - 2] as u64,
                lw.strides()[rw - 1] as u64,
                1i32,
            )
        }
        None => (cols, kl, 0, 0, 0),
    };
    let kernel = Kernel::fold2d(cols.dtype());
    let f = dev.function(op, &kernel)?;
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(cols.slice())
        .arg(&kl)
        .arg(&sa)
        .arg(&sb)
        .arg(&si)
        .arg(&sj)
        .arg(&g)
        .arg(wbuf.slice())
        .arg(&wl)
        .arg(&wi)
        .arg(&wj)
        .arg(&has)
        .arg(&n64);
    // SAFETY: matches `nt_fold2d_T(T* out, const T* cols, NtLayout lead, u64 sa, u64 sb, u64
    // si, u64 sj, NtWindow g, const i64* winners, NtLayout wlead, u64 wi, u64 wj, int
    // has_winners, u64 n)`; `out` holds the n = leads·H·W outputs; every read of `cols` is at
    // a leading position plus a tap below (KH, KW) and a window below (OH, OW), inside
    // `layout`'s sizes, and every read of `winners` (only when `has` is 1) inside `lw`'s.
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, cols.device(), &format!("launching {}", kernel.name), e))?;
    Ok(out)
}

/// See [`Backend::max_pool2d`](crate::backend::Backend::max_pool2d).
pub fn max_pool2d(
    op: &'static str,
    src: &CudaBuffer,
    layout: &Layout,
    window: &Window2d,
) -> Result<(CudaBuffer, CudaBuffer)> {
    let r = layout.rank();
    let hw = (layout.sizes()[r - 2], layout.sizes()[r - 1]);
    let g = KernelWindow::new(op, window, hw)?;
    let (oh, ow) = g.positions();
    let (kl, leads) = lead(op, layout, 2)?;
    let n = leads * oh * ow;
    let dev = src.cuda_device();
    let mut out = CudaBuffer::alloc(op, dev, src.dtype(), n)?;
    let mut taps = CudaBuffer::alloc(op, dev, DType::I64, n)?;
    if n == 0 {
        return Ok((out, taps));
    }
    let kernel = Kernel::max_pool2d(src.dtype());
    let f = dev.function(op, &kernel)?;
    let (hs, ws) = (
        layout.strides()[r - 2] as u64,
        layout.strides()[r - 1] as u64,
    );
    let n64 = n as u64;
    let mut args = dev.stream().launch_builder(&f);
    args.arg(out.slice_mut())
        .arg(taps.slice_mut())
        .arg(src.slice())
        .arg(&kl)
        .arg(&hs)
        .arg(&ws)
        .arg(&g)
        .arg(&n64);
    // SAFETY: matches `nt_max_pool2d_T(T* out, i64* taps, const T* src, NtLayout lead, u64 hs,
    // u64 ws, NtWindow g, u64 n)`; `out` and `taps` hold the n = leads·OH·OW outputs, and
    // every source read is at a leading position plus an input coordinate inside `layout`'s
    // sizes, within the view, which fits `src`.
    unsafe { args.launch(elementwise_config(n)) }
        .map_err(|e| driver(op, src.device(), &format!("launching {}", kernel.name), e))?;
    Ok((out, taps))
}
