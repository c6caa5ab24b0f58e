//! The one place that picks a backend: for every primitive, a match on the operands' buffers
//! that calls the [`Backend`] method of their device. The locks are taken here too (shared for
//! the storages an operation reads, exclusive for the one it writes, in the global order; see
//! the aliasing rules in [`crate::storage`]), so the ops layer above only validates, promotes
//! and broadcasts, and the backends below only compute.
//!
//! Operands on two devices are an [`ErrorKind::Device`](crate::ErrorKind) error naming both,
//! before anything runs.

// `op` names the operation in device errors, which only a device backend raises.
#![cfg_attr(not(feature = "cuda"), allow(unused_variables))]

use super::{Buffer, HostBuffer, Storage, with_read_buffers_all, with_write_read_buffers};
use crate::backend::Backend;
use crate::backend::cpu::Cpu;
#[cfg(feature = "cuda")]
use crate::backend::cuda::Cuda;
use crate::backend::device::Device;
#[cfg(feature = "cuda")]
use crate::backend::device::mixed_devices;
use crate::backend::op::{AdamStep, BinaryOp, CompareOp, ReduceOp, TestOp, UnaryOp};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, Window2d};

#[cfg(feature = "cuda")]
use crate::backend::cuda::CudaBuffer;

/// Calls `$method` of the backend that holds every one of the buffers `$b`, binding each to
/// its backend's buffer as `$x`; buffers of two devices are a [`mixed_devices`] error.
macro_rules! on_backend {
    ($op:expr, ($($b:expr => $x:ident),+), $B:ident => $call:expr, $wrap:ident) => {{
        #[cfg(feature = "cuda")]
        let devices = [$($b.device(),)+];
        #[allow(unreachable_patterns)]
        match ($($b,)+) {
            ($(Buffer::Cpu($x),)+) => {
                type $B = Cpu;
                $wrap!(Cpu, $call)
            }
            #[cfg(feature = "cuda")]
            ($(Buffer::Cuda($x),)+) => {
                type $B = Cuda;
                $wrap!(Cuda, $call)
            }
            #[cfg(feature = "cuda")]
            _ => {
                let other = devices.iter().copied().find(|d| *d != devices[0]);
                Err(mixed_devices($op, devices[0], other.unwrap_or(devices[0])))
            }
        }
    }};
}

/// Wraps a backend's new buffer in its [`Buffer`] variant.
macro_rules! new_buffer {
    (Cpu, $call:expr) => {
        $call.map(Buffer::Cpu)
    };
    (Cuda, $call:expr) => {
        $call.map(Buffer::Cuda)
    };
}

/// Passes a backend's result through.
macro_rules! as_is {
    ($_b:ident, $call:expr) => {
        $call
    };
}

/// `uop` of the view `layout` over `src`, in a new contiguous buffer.
#[doc(hidden)]
pub fn unary<E: Element>(
    op: &'static str,
    uop: UnaryOp,
    src: &Storage<E>,
    layout: &Layout,
) -> Result<Buffer<E>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::unary::<E>(op, uop, s, layout), new_buffer)
}

/// `uop` in place through `dst` over `buf`.
#[doc(hidden)]
pub fn unary_<E: Element>(
    op: &'static str,
    uop: UnaryOp,
    buf: &Storage<E>,
    dst: &Layout,
) -> Result<()> {
    // SAFETY: the in-place kernel writes elements only.
    let mut g = unsafe { buf.write(op) }?;
    on_backend!(op, (&mut *g => d), B => B::unary_::<E>(op, uop, d, dst), as_is)
}

/// `top` of the view `layout` over `src`, as `bool`.
#[doc(hidden)]
pub fn test<E: Element>(
    op: &'static str,
    top: TestOp,
    src: &Storage<E>,
    layout: &Layout,
) -> Result<Buffer<bool>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::test::<E>(op, top, s, layout), new_buffer)
}

/// `bop(a, b)` elementwise into a new buffer of `O` (see [`Backend::binary`]).
#[doc(hidden)]
pub fn binary<A: Element, B: Element, O: Element>(
    op: &'static str,
    bop: BinaryOp,
    a: &Storage<A>,
    la: &Layout,
    b: &Storage<B>,
    lb: &Layout,
) -> Result<Buffer<O>> {
    super::with_read_buffers2(
        a,
        b,
        |ga, gb| on_backend!(op, (ga => x, gb => y), K => K::binary::<A, B, O>(op, bop, x, la, y, lb), new_buffer),
    )
}

/// `bop(a, s)` (or `bop(s, a)` where `scalar_left`) for the one value `s`.
pub fn binary_scalar<A: Element, B: Element, O: Element>(
    op: &'static str,
    bop: BinaryOp,
    a: &Storage<A>,
    la: &Layout,
    s: B,
    scalar_left: bool,
) -> Result<Buffer<O>> {
    let g = a.read();
    on_backend!(op, (&*g => x), K => K::binary_scalar::<A, B, O>(op, bop, x, la, s, scalar_left), new_buffer)
}

/// `bop` in place through `dst` over `buf`, with the second operand from `src`.
#[doc(hidden)]
pub fn binary_<E: Element, B: Element>(
    op: &'static str,
    bop: BinaryOp,
    buf: &Storage<E>,
    dst: &Layout,
    src: &Storage<B>,
    ls: &Layout,
) -> Result<()> {
    // SAFETY: the in-place kernel writes elements only.
    unsafe {
        with_write_read_buffers(
            op,
            buf,
            src,
            |gd, gs| on_backend!(op, (gd => d, gs => s), K => K::binary_::<E, B>(op, bop, d, dst, s, ls), as_is),
        )
    }
}

/// `cop(a, b)` elementwise, compared in the compute type of `P`.
#[doc(hidden)]
pub fn compare<A: Element, B: Element, P: Element>(
    op: &'static str,
    cop: CompareOp,
    a: &Storage<A>,
    la: &Layout,
    b: &Storage<B>,
    lb: &Layout,
) -> Result<Buffer<bool>> {
    super::with_read_buffers2(
        a,
        b,
        |ga, gb| on_backend!(op, (ga => x, gb => y), K => K::compare::<A, B, P>(op, cop, x, la, y, lb), new_buffer),
    )
}

/// `cond ? a : b` elementwise.
#[allow(clippy::too_many_arguments)]
#[doc(hidden)]
pub fn where_<E: Element>(
    op: &'static str,
    cond: &Storage<bool>,
    lc: &Layout,
    a: &Storage<E>,
    la: &Layout,
    b: &Storage<E>,
    lb: &Layout,
) -> Result<Buffer<E>> {
    super::with_read_buffers3(
        cond,
        a,
        b,
        |gc, ga, gb| on_backend!(op, (gc => c, ga => x, gb => y), K => K::where_::<E>(op, c, lc, x, la, y, lb), new_buffer),
    )
}

/// `value` written through `dst` over `buf` where `mask` is true.
#[doc(hidden)]
pub fn masked_fill_<E: Element>(
    op: &'static str,
    buf: &Storage<E>,
    dst: &Layout,
    mask: &Storage<bool>,
    lm: &Layout,
    value: E,
) -> Result<()> {
    // SAFETY: the in-place kernel writes elements only.
    unsafe {
        with_write_read_buffers(
            op,
            buf,
            mask,
            |gd, gm| on_backend!(op, (gd => d, gm => m), K => K::masked_fill_::<E>(op, d, dst, m, lm, value), as_is),
        )
    }
}

/// `src` seen through `layout` reduced by `rop` over the dims in `mask` (see
/// [`Backend::reduce`]).
#[doc(hidden)]
pub fn reduce<E: Element, O: Element>(
    op: &'static str,
    rop: ReduceOp,
    src: &Storage<E>,
    layout: &Layout,
    mask: &[bool],
) -> Result<Buffer<O>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::reduce::<E, O>(op, rop, s, layout, mask), new_buffer)
}

/// The maximum (or minimum) along `dim` and its index (see [`Backend::arg_reduce`]).
#[doc(hidden)]
pub fn arg_reduce<E: Element>(
    op: &'static str,
    max: bool,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
) -> Result<(Buffer<E>, Buffer<i64>)> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::arg_reduce::<E>(op, max, s, layout, dim), new_pair)
}

/// Softmax (or log-softmax) along `dim` (see [`Backend::softmax`]).
#[doc(hidden)]
pub fn softmax<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
    log: bool,
) -> Result<Buffer<E>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::softmax::<E>(op, s, layout, dim, log), new_buffer)
}

/// The gradient of a softmax along `dim` from its output `y` and the output's gradient `g`
/// (see [`Backend::softmax_backward`]).
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn softmax_backward<E: Element>(
    op: &'static str,
    y: &Storage<E>,
    ly: &Layout,
    g: &Storage<E>,
    lg: &Layout,
    dim: usize,
    log: bool,
) -> Result<Buffer<E>> {
    super::with_read_buffers2(
        y,
        g,
        |gy, gg| on_backend!(op, (gy => a, gg => b), K => K::softmax_backward::<E>(op, a, ly, b, lg, dim, log), new_buffer),
    )
}

/// `src` normalised along `dim`, and each lane's `1 / sqrt(var + eps)` (see
/// [`Backend::normalize`]).
#[doc(hidden)]
pub fn normalize<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
    eps: f64,
    center: bool,
) -> Result<(Buffer<E>, Buffer<E>)> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::normalize::<E>(op, s, layout, dim, eps, center), new_pair)
}

/// The gradient of [`normalize`] from its output `y`, the output's gradient `g` and its `r`
/// (see [`Backend::normalize_backward`]).
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn normalize_backward<E: Element>(
    op: &'static str,
    y: &Storage<E>,
    ly: &Layout,
    g: &Storage<E>,
    lg: &Layout,
    r: &Storage<E>,
    lr: &Layout,
    dim: usize,
    center: bool,
) -> Result<Buffer<E>> {
    super::with_read_buffers3(
        y,
        g,
        r,
        |gy, gg, gr| on_backend!(op, (gy => a, gg => b, gr => c), K => K::normalize_backward::<E>(op, a, ly, b, lg, c, lr, dim, center), new_buffer),
    )
}

/// One Adam or AdamW step in place through the parameter `p` (see [`Backend::adam_`]):
/// `state` is `[m, v]`, or `[m, v, vmax]` with `step.amsgrad`; the storages written must be
/// distinct and distinct from the gradient's.
#[doc(hidden)]
pub fn adam_<E: Element>(
    op: &'static str,
    p: &Storage<E>,
    lp: &Layout,
    g: &Storage<E>,
    lg: &Layout,
    state: &[&Storage<E>],
    step: &AdamStep,
) -> Result<()> {
    let mut dsts = vec![p];
    dsts.extend(state);
    // SAFETY: the step writes elements only.
    unsafe {
        super::with_write_buffers_read(op, &dsts, g, |bufs, gg| match bufs {
            [p, m, v] => {
                on_backend!(op, (&mut **p => p, gg => g, &mut **m => m, &mut **v => v), K => K::adam_::<E>(op, p, lp, g, lg, m, v, None, step), as_is)
            }
            [p, m, v, x] => {
                on_backend!(op, (&mut **p => p, gg => g, &mut **m => m, &mut **v => v, &mut **x => x), K => K::adam_::<E>(op, p, lp, g, lg, m, v, Some(x), step), as_is)
            }
            _ => Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("{} state buffers for an Adam step (2 or 3)", state.len()),
            )),
        })
    }
}

/// Running sums or products along `dim`, as `O` (see [`Backend::scan`]).
#[doc(hidden)]
pub fn scan<E: Element, O: Element>(
    op: &'static str,
    prod: bool,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
) -> Result<Buffer<O>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::scan::<E, O>(op, prod, s, layout, dim), new_buffer)
}

/// The entries along `dim` in order, with their positions (see [`Backend::sort`]).
#[doc(hidden)]
pub fn sort<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
    descending: bool,
) -> Result<(Buffer<E>, Buffer<i64>)> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::sort::<E>(op, s, layout, dim, descending), new_pair)
}

/// Whole slices of `src` along `dim` picked by `index` (see [`Backend::index_select`]).
#[doc(hidden)]
pub fn index_select<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
    index: &Storage<i64>,
    li: &Layout,
) -> Result<Buffer<E>> {
    super::with_read_buffers2(
        src,
        index,
        |gs, gi| on_backend!(op, (gs => s, gi => i), B => B::index_select::<E>(op, s, layout, dim, i, li), new_buffer),
    )
}

/// One element of `src` per index along `dim` (see [`Backend::gather`]).
#[doc(hidden)]
pub fn gather<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    dim: usize,
    index: &Storage<i64>,
    li: &Layout,
) -> Result<Buffer<E>> {
    super::with_read_buffers2(
        src,
        index,
        |gs, gi| on_backend!(op, (gs => s, gi => i), B => B::gather::<E>(op, s, layout, dim, i, li), new_buffer),
    )
}

/// `base` with `src` added at the positions `index` names along `dim` (see
/// [`Backend::scatter_add`]).
#[allow(clippy::too_many_arguments)]
#[doc(hidden)]
pub fn scatter_add<E: Element>(
    op: &'static str,
    base: &Storage<E>,
    lb: &Layout,
    dim: usize,
    index: &Storage<i64>,
    li: &Layout,
    src: &Storage<E>,
    ls: &Layout,
) -> Result<Buffer<E>> {
    super::with_read_buffers3(
        base,
        index,
        src,
        |gb, gi, gs| on_backend!(op, (gb => b, gi => i, gs => s), B => B::scatter_add::<E>(op, b, lb, dim, i, li, s, ls), new_buffer),
    )
}

/// The views `parts` joined along `dim` into `out_shape` (see [`Backend::cat`]).
#[doc(hidden)]
pub fn cat<E: Element>(
    op: &'static str,
    parts: &[(&Storage<E>, &Layout)],
    dim: usize,
    out_shape: &[usize],
) -> Result<Buffer<E>> {
    let storages: Vec<&Storage<E>> = parts.iter().map(|p| p.0).collect();
    with_read_buffers_all(&storages, |bufs| {
        let first = bufs[0].device();
        if let Some(other) = bufs.iter().map(|b| b.device()).find(|&d| d != first) {
            #[cfg(feature = "cuda")]
            return Err(mixed_devices(op, first, other));
            #[cfg(not(feature = "cuda"))]
            unreachable!("{other}: only one device without the cuda feature");
        }
        let layouts = parts.iter().map(|p| p.1);
        match bufs[0] {
            Buffer::Cpu(_) => {
                let views: Vec<(&HostBuffer<E>, &Layout)> = bufs
                    .iter()
                    .zip(layouts)
                    .map(|(b, l)| match b {
                        Buffer::Cpu(v) => (v, l),
                        #[cfg(feature = "cuda")]
                        Buffer::Cuda(_) => unreachable!("checked: one device"),
                    })
                    .collect();
                Cpu::cat::<E>(op, &views, dim, out_shape).map(Buffer::Cpu)
            }
            #[cfg(feature = "cuda")]
            Buffer::Cuda(_) => {
                let views: Vec<(&CudaBuffer, &Layout)> = bufs
                    .iter()
                    .zip(layouts)
                    .map(|(b, l)| match b {
                        Buffer::Cuda(c) => (c, l),
                        Buffer::Cpu(_) => unreachable!("checked: one device"),
                    })
                    .collect();
                Cuda::cat::<E>(op, &views, dim, out_shape).map(Buffer::Cuda)
            }
        }
    })
}

/// The matrix products of `la` over `a` and `lb` over `b` (see [`Backend::matmul`]).
#[doc(hidden)]
pub fn matmul<E: Element>(
    op: &'static str,
    a: &Storage<E>,
    la: &Layout,
    b: &Storage<E>,
    lb: &Layout,
) -> Result<Buffer<E>> {
    super::with_read_buffers2(
        a,
        b,
        |ga, gb| on_backend!(op, (ga => x, gb => y), B => B::matmul::<E>(op, x, la, y, lb), new_buffer),
    )
}

/// The sliding windows of `window` over the last two dims (see [`Backend::unfold2d`]).
#[doc(hidden)]
pub fn unfold2d<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    window: &Window2d,
    pad: E,
) -> Result<Buffer<E>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::unfold2d::<E>(op, s, layout, window, pad), new_buffer)
}

/// The windows `cols` summed back onto an `hw` input, only the `winners`' taps where given
/// (see [`Backend::fold2d`]).
#[doc(hidden)]
pub fn fold2d<E: Element>(
    op: &'static str,
    cols: &Storage<E>,
    layout: &Layout,
    window: &Window2d,
    hw: (usize, usize),
    winners: Option<(&Storage<i64>, &Layout)>,
) -> Result<Buffer<E>> {
    match winners {
        None => {
            let g = cols.read();
            on_backend!(op, (&*g => c), B => B::fold2d::<E>(op, c, layout, window, hw, None), new_buffer)
        }
        Some((win, lw)) => super::with_read_buffers2(
            cols,
            win,
            |gc, gw| on_backend!(op, (gc => c, gw => w), B => B::fold2d::<E>(op, c, layout, window, hw, Some((w, lw))), new_buffer),
        ),
    }
}

/// Max pooling: each window's largest tap and its number (see [`Backend::max_pool2d`]).
#[doc(hidden)]
pub fn max_pool2d<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    window: &Window2d,
) -> Result<(Buffer<E>, Buffer<i64>)> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::max_pool2d::<E>(op, s, layout, window), new_pair)
}

/// The view `layout` over `src` with the dims where `flip` is true reversed.
#[doc(hidden)]
pub fn flip<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    flip: &[bool],
) -> Result<Buffer<E>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::flip::<E>(op, s, layout, flip), new_buffer)
}

/// The view `layout` over `src` outside a triangle of its last two dims zeroed.
#[doc(hidden)]
pub fn triangle<E: Element>(
    op: &'static str,
    src: &Storage<E>,
    layout: &Layout,
    diagonal: isize,
    lower: bool,
) -> Result<Buffer<E>> {
    let g = src.read();
    on_backend!(op, (&*g => s), B => B::triangle::<E>(op, s, layout, diagonal, lower), new_buffer)
}

/// Wraps a backend's pair of new buffers in their [`Buffer`] variant.
macro_rules! new_pair {
    (Cpu, $call:expr) => {
        $call.map(|(a, b)| (Buffer::Cpu(a), Buffer::Cpu(b)))
    };
    (Cuda, $call:expr) => {
        $call.map(|(a, b)| (Buffer::Cuda(a), Buffer::Cuda(b)))
    };
}
use new_pair;

/// Runs `$call` with `$B` bound to the backend of `$device`.
macro_rules! on_device {
    ($op:expr, $device:expr, $B:ident => $call:expr) => {
        match $device {
            Device::Cpu => {
                type $B = Cpu;
                $call.map(Buffer::Cpu)
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => {
                type $B = Cuda;
                $call.map(Buffer::Cuda)
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(crate::backend::device::no_cuda_feature($op)),
        }
    };
}

impl<E: Element> Buffer<E> {
    /// Number of elements.
    #[doc(hidden)]
    pub fn len(&self) -> usize {
        match self {
            Buffer::Cpu(b) => Cpu::len::<E>(b),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Cuda::len::<E>(b),
        }
    }

    /// Whether the buffer holds no elements.
    #[doc(hidden)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device holding the elements.
    #[doc(hidden)]
    pub fn device(&self) -> Device {
        match self {
            Buffer::Cpu(b) => Cpu::device::<E>(b),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Cuda::device::<E>(b),
        }
    }

    /// The element at storage position `index` (< len).
    #[doc(hidden)]
    pub fn get(&self, op: &'static str, index: usize) -> Result<E> {
        let one = Layout::new(&[1], &[1], index)?;
        Ok(self.gather_to_vec(op, &one)?[0])
    }

    /// Overwrites the element at storage position `index` (< len).
    #[doc(hidden)]
    pub fn set(&mut self, op: &'static str, index: usize, value: E) -> Result<()> {
        on_backend!(op, (self => b), B => B::set::<E>(op, b, index, value), as_is)
    }

    /// All elements in storage order, on the host.
    #[doc(hidden)]
    pub fn to_vec(&self, op: &'static str) -> Result<Vec<E>> {
        self.gather_to_vec(op, &Layout::contiguous(&[self.len()])?)
    }

    /// The elements of `layout` in row-major order, on the host, in a `Vec`: copied straight
    /// from a contiguous host view, else gathered into a host buffer first (copied once more
    /// where that is over-aligned; see [`HostBuffer::into_vec`]).
    #[doc(hidden)]
    pub fn gather_to_vec(&self, op: &'static str, layout: &Layout) -> Result<Vec<E>> {
        if let Buffer::Cpu(v) = self
            && layout.is_contiguous()
        {
            layout.check_within(op, self.len())?;
            let n = layout.numel();
            let mut out = Vec::new();
            out.try_reserve_exact(n).map_err(|_| {
                Error::new(
                    ErrorKind::OutOfMemory,
                    op,
                    format!("cannot allocate {n} elements of {} on the host", E::DTYPE),
                )
            })?;
            if n > 0 {
                // (The offset of an empty view may lie anywhere, even past the buffer.)
                out.extend_from_slice(&v[layout.offset()..layout.offset() + n]);
            }
            return Ok(out);
        }
        self.gather_to_host(op, layout).map(HostBuffer::into_vec)
    }

    /// The elements of `layout` in row-major order, in a new host buffer.
    #[doc(hidden)]
    pub fn gather_to_host(&self, op: &'static str, layout: &Layout) -> Result<HostBuffer<E>> {
        layout.check_within(op, self.len())?;
        on_backend!(op, (self => b), B => B::to_host::<E>(op, b, layout), as_is)
    }

    /// The elements of `layout` in a new contiguous buffer on the same device.
    #[doc(hidden)]
    pub fn gather(&self, op: &'static str, layout: &Layout) -> Result<Buffer<E>> {
        self.cast::<E>(op, layout)
    }

    /// The elements of `layout` converted to `F`, in a new contiguous buffer on the same device.
    #[doc(hidden)]
    pub fn cast<F: Element>(&self, op: &'static str, layout: &Layout) -> Result<Buffer<F>> {
        layout.check_within(op, self.len())?;
        on_backend!(op, (self => s), B => B::cast::<E, F>(op, s, layout), new_buffer)
    }

    /// Writes `value` at every element of `layout` (which has no two indices on one element).
    #[doc(hidden)]
    pub fn fill(&mut self, op: &'static str, layout: &Layout, value: E) -> Result<()> {
        layout.check_within(op, self.len())?;
        on_backend!(op, (self => s), B => B::fill_::<E>(op, s, layout, value), as_is)
    }

    /// Copies the elements of `src_layout` over `src` into `dst_layout` over `self` (same
    /// sizes), converting to `E`. `src` is another storage's buffer on the same device.
    #[doc(hidden)]
    pub fn copy_from<F: Element>(
        &mut self,
        op: &'static str,
        dst_layout: &Layout,
        src: &Buffer<F>,
        src_layout: &Layout,
    ) -> Result<()> {
        // The kernels below trust these; this method is reachable from outside the library.
        dst_layout.check_within(op, self.len())?;
        src_layout.check_within(op, src.len())?;
        if dst_layout.sizes() != src_layout.sizes() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!(
                    "a copy from sizes {:?} into sizes {:?}",
                    src_layout.sizes(),
                    dst_layout.sizes()
                ),
            ));
        }
        on_backend!(op, (self => d, src => s), B => B::copy_::<E, F>(op, d, dst_layout, s, src_layout), as_is)
    }

    /// The elements of `layout` moved to `device`, contiguous. Between devices the elements
    /// pass through the host; a contiguous host view is handed over without a gather.
    #[doc(hidden)]
    pub fn to_device(
        &self,
        op: &'static str,
        layout: &Layout,
        device: Device,
    ) -> Result<Buffer<E>> {
        if device == Device::Cpu {
            // The host is where elements pass through anyway: gathered once.
            return Ok(Buffer::Cpu(self.gather_to_host(op, layout)?));
        }
        let staged;
        let host: &[E] = match self {
            Buffer::Cpu(v) if layout.is_contiguous() && layout.numel() > 0 => {
                let start = layout.offset();
                &v[start..start + layout.numel()]
            }
            _ => {
                staged = self.gather_to_host(op, layout)?;
                &staged
            }
        };
        on_device!(op, device, B => B::from_host::<E>(op, device, host))
    }

    /// A buffer of `len` copies of `value` on `device`.
    #[doc(hidden)]
    pub fn full(op: &'static str, len: usize, value: E, device: Device) -> Result<Buffer<E>> {
        on_device!(op, device, B => B::full::<E>(op, device, len, value))
    }
}
