//! Backends: where elements live and how the primitive operations run there.
//!
//! A backend is a type implementing [`Backend`]: its buffer type and one method per primitive
//! operation. The methods take buffers plus [`Layout`](crate::Layout)s (any strides and offset;
//! the ops layer has already validated, promoted and broadcast them) and return new contiguous
//! buffers, row-major in the output shape, or write through a destination layout. They know
//! nothing of tensors, names or locks: `storage::dispatch` takes the locks and picks the
//! backend by the buffer's variant, once per primitive.
//!
//! What a backend must provide is the list of required methods below, checked by the compiler.
//! The operations themselves are tokens ([`op`]) that carry the CPU's scalar function and the
//! CUDA kernel's name, so both backends key on the same value.
//!
//! | folder | backend |
//! |---|---|
//! | `cpu/` | host memory; rayon pool, SIMD loops, `gemm`; kernels instantiated per dtype here |
//! | `cuda/` | NVRTC-compiled CUDA C kernels, cuBLAS (feature `cuda`) |

use crate::backend::cpu::host_buffer::HostBuffer;
use crate::dtype::Element;
use crate::error::Result;
use crate::layout::{Layout, Window2d};
use device::Device;
use op::{AdamStep, BinaryOp, CompareOp, ReduceOp, TestOp, UnaryOp};

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub use namedtensor_core::backend::op;

/// A device's buffers and primitive operations.
///
/// Conventions for every method:
/// - `op` names the public operation for error messages;
/// - input layouts lie within their buffers (checked by the caller) and, for the pointwise
///   primitives, all have the output's sizes (broadcast operands are stride-0 views);
/// - a destination layout (`dst`, methods ending in `_`) has no two indices on one element
///   and its buffer is not one of the inputs (the caller copies an aliasing input first);
/// - results are computed in the output's compute type ([`Kernel::Compute`](crate::dtype))
///   and rounded once on store.
pub trait Backend {
    /// The buffer holding elements of type `E` on this backend.
    type Buffer<E: Element>;

    // ---- memory ----

    /// The number of elements of `buf`.
    fn len<E: Element>(buf: &Self::Buffer<E>) -> usize;

    /// The device holding `buf`.
    fn device<E: Element>(buf: &Self::Buffer<E>) -> Device;

    /// A buffer on `device` (one of this backend's) holding `data`.
    fn from_host<E: Element>(
        op: &'static str,
        device: Device,
        data: &[E],
    ) -> Result<Self::Buffer<E>>;

    /// A buffer on `device` of `len` copies of `value`.
    fn full<E: Element>(
        op: &'static str,
        device: Device,
        len: usize,
        value: E,
    ) -> Result<Self::Buffer<E>>;

    /// The elements of `layout` over `src`, in row-major order, on the host.
    fn to_host<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
    ) -> Result<HostBuffer<E>>;

    /// Overwrites the element at storage position `index` (< len).
    fn set<E: Element>(
        op: &'static str,
        buf: &mut Self::Buffer<E>,
        index: usize,
        value: E,
    ) -> Result<()>;

    /// The elements of `layout` over `src`, converted to `F`, in a new contiguous buffer.
    fn cast<E: Element, F: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
    ) -> Result<Self::Buffer<F>>;

    /// Writes `value` at every element of `dst`.
    fn fill_<E: Element>(
        op: &'static str,
        buf: &mut Self::Buffer<E>,
        dst: &Layout,
        value: E,
    ) -> Result<()>;

    /// Copies the elements of `src_layout` over `src` into `dst` over `buf` (same sizes),
    /// converting to `E`.
    fn copy_<E: Element, F: Element>(
        op: &'static str,
        buf: &mut Self::Buffer<E>,
        dst: &Layout,
        src: &Self::Buffer<F>,
        src_layout: &Layout,
    ) -> Result<()>;

    // ---- pointwise ----

    /// `uop(x)` for every element of `layout` over `src`.
    fn unary<E: Element>(
        op: &'static str,
        uop: UnaryOp,
        src: &Self::Buffer<E>,
        layout: &Layout,
    ) -> Result<Self::Buffer<E>>;

    /// `x = uop(x)` through `dst`.
    fn unary_<E: Element>(
        op: &'static str,
        uop: UnaryOp,
        buf: &mut Self::Buffer<E>,
        dst: &Layout,
    ) -> Result<()>;

    /// `top(x)` for every element of `layout` over `src`, as `bool`.
    fn test<E: Element>(
        op: &'static str,
        top: TestOp,
        src: &Self::Buffer<E>,
        layout: &Layout,
    ) -> Result<Self::Buffer<bool>>;

    /// `bop(a, b)` elementwise, stored as `O`. Each operand's type is `O` or `O`'s compute
    /// type (the caller converts others first).
    fn binary<A: Element, B: Element, O: Element>(
        op: &'static str,
        bop: BinaryOp,
        a: &Self::Buffer<A>,
        la: &Layout,
        b: &Self::Buffer<B>,
        lb: &Layout,
    ) -> Result<Self::Buffer<O>>;

    /// `bop(a, s)` elementwise over `la` (`bop(s, a)` where `scalar_left`) for one value `s`
    /// (the number of `x * 2.0`), stored as `O`; `A` and `B` as in [`Backend::binary`]. By
    /// default `s` goes into a one-element buffer on `a`'s device, read at every position.
    fn binary_scalar<A: Element, B: Element, O: Element>(
        op: &'static str,
        bop: BinaryOp,
        a: &Self::Buffer<A>,
        la: &Layout,
        s: B,
        scalar_left: bool,
    ) -> Result<Self::Buffer<O>> {
        let one = Self::from_host(op, Self::device(a), &[s])?;
        let ls = Layout::repeated(la.sizes());
        if scalar_left {
            Self::binary(op, bop, &one, &ls, a, la)
        } else {
            Self::binary(op, bop, a, la, &one, &ls)
        }
    }

    /// `x = bop(x, y)` through `dst`, with `y` from `src` (of type `E` or `E`'s compute type).
    fn binary_<E: Element, B: Element>(
        op: &'static str,
        bop: BinaryOp,
        buf: &mut Self::Buffer<E>,
        dst: &Layout,
        src: &Self::Buffer<B>,
        src_layout: &Layout,
    ) -> Result<()>;

    /// `cop(a, b)` elementwise, compared in the compute type of `P`. Each operand's type is
    /// `P` or `P`'s compute type.
    fn compare<A: Element, B: Element, P: Element>(
        op: &'static str,
        cop: CompareOp,
        a: &Self::Buffer<A>,
        la: &Layout,
        b: &Self::Buffer<B>,
        lb: &Layout,
    ) -> Result<Self::Buffer<bool>>;

    /// `cond ? a : b` elementwise.
    #[allow(clippy::too_many_arguments)]
    fn where_<E: Element>(
        op: &'static str,
        cond: &Self::Buffer<bool>,
        lc: &Layout,
        a: &Self::Buffer<E>,
        la: &Layout,
        b: &Self::Buffer<E>,
        lb: &Layout,
    ) -> Result<Self::Buffer<E>>;

    /// `x = value` through `dst` where `mask` is true.
    fn masked_fill_<E: Element>(
        op: &'static str,
        buf: &mut Self::Buffer<E>,
        dst: &Layout,
        mask: &Self::Buffer<bool>,
        mask_layout: &Layout,
        value: E,
    ) -> Result<()>;

    // ---- reductions ----

    /// `src` seen through `layout` reduced by `rop` over the dims where `mask` is true, one
    /// value per kept position in row-major order. `O` is the operation's result type: the
    /// sum type for `sum`/`prod`, the compute type for `mean`, `E` for `max`/`min`, `bool`
    /// for `any`/`all`. The caller refuses `max`/`min` over no element.
    fn reduce<E: Element, O: Element>(
        op: &'static str,
        rop: ReduceOp,
        src: &Self::Buffer<E>,
        layout: &Layout,
        mask: &[bool],
    ) -> Result<Self::Buffer<O>>;

    /// The maximum (`max`) or minimum along `dim` (of size > 0) and the index of its first
    /// occurrence (of the first NaN, if any), one pair per kept position.
    fn arg_reduce<E: Element>(
        op: &'static str,
        max: bool,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
    ) -> Result<(Self::Buffer<E>, Self::Buffer<i64>)>;

    // ---- along one dim ----

    /// Softmax (or log-softmax) of a float `src` seen through `layout`, along `dim`, computed
    /// in the compute type with each lane's maximum subtracted first.
    fn softmax<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<Self::Buffer<E>>;

    /// The gradient of [`Backend::softmax`] (of log-softmax with `log`) along `dim`, from the
    /// forward's output `y` and its gradient `g`, seen through layouts of the same sizes:
    /// `y·(g − Σ g·y)`, or `g − exp(y)·Σ g`, each sum along `dim`, computed in the compute
    /// type; a contiguous result of those sizes (float types only). One pass where the four
    /// operations it replaces made three temporaries.
    #[allow(clippy::too_many_arguments)]
    fn softmax_backward<E: Element>(
        op: &'static str,
        y: &Self::Buffer<E>,
        ly: &Layout,
        g: &Self::Buffer<E>,
        lg: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<Self::Buffer<E>>;

    /// `layout` over a float `src` normalised along `dim`, computed in the compute type:
    /// per lane `y = (x − mean(x)) · r` with `r = 1 / sqrt(mean((x − mean(x))²) + eps)` (the
    /// biased variance), or without `center` `y = x · r` with `r = 1 / sqrt(mean(x²) + eps)`.
    /// Returns `y`, contiguous in the layout's sizes, and `r`, contiguous in those sizes
    /// with `dim`'s set to 1. `dim` has entries (else an error: the caller gives lanes of
    /// nothing their NaN). The kernel of layer norm and RMS norm: one read for each moment
    /// and one write, where the composite took seven passes.
    fn normalize<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
        eps: f64,
        center: bool,
    ) -> Result<(Self::Buffer<E>, Self::Buffer<E>)>;

    /// The gradient of [`Backend::normalize`] along `dim` from its output `y`, the output's
    /// gradient `g` (layouts of the same sizes) and its `r` (`lr`: those sizes with `dim`'s
    /// set to 1): `r · (g − mean(g) − y · mean(g · y))` per lane (without `center`, no
    /// `mean(g)` term), computed in the compute type; contiguous in `y`'s sizes (float types
    /// only).
    #[allow(clippy::too_many_arguments)]
    fn normalize_backward<E: Element>(
        op: &'static str,
        y: &Self::Buffer<E>,
        ly: &Layout,
        g: &Self::Buffer<E>,
        lg: &Layout,
        r: &Self::Buffer<E>,
        lr: &Layout,
        dim: usize,
        center: bool,
    ) -> Result<Self::Buffer<E>>;

    /// One Adam or AdamW step in place, element by element (see [`AdamStep`] for the rule),
    /// computed in the compute type and rounded once per stored value: the parameter `p`
    /// seen through `lp` and its gradient `g` through `lg` (contiguous layouts of the same
    /// sizes), the moments `m` and `v` and, with `step.amsgrad`, the running maximum `vmax`,
    /// each holding exactly the layout's number of elements (float types only). One pass
    /// where the op-by-op update made about fourteen.
    #[allow(clippy::too_many_arguments)]
    fn adam_<E: Element>(
        op: &'static str,
        p: &mut Self::Buffer<E>,
        lp: &Layout,
        g: &Self::Buffer<E>,
        lg: &Layout,
        m: &mut Self::Buffer<E>,
        v: &mut Self::Buffer<E>,
        vmax: Option<&mut Self::Buffer<E>>,
        step: &AdamStep,
    ) -> Result<()>;

    /// Running sums (or products) along `dim`, stored as `O` (the sum type of `E`),
    /// accumulating in `f64` for float results and in wrapping `i64` for integer ones.
    fn scan<E: Element, O: Element>(
        op: &'static str,
        prod: bool,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
    ) -> Result<Self::Buffer<O>>;

    /// The entries of `layout` over `src` ordered along `dim` (ascending, or descending),
    /// stably (equal entries keep their order; `-0.0` equals `0.0`), with NaN above every
    /// number as in PyTorch; and, for each, its position along `dim` in the input. Both
    /// row-major in the layout's shape.
    fn sort<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
        descending: bool,
    ) -> Result<(Self::Buffer<E>, Self::Buffer<i64>)>;

    // ---- indexed reads, joins, products ----

    /// `src` seen through `layout` with `dim` replaced by the entries the 1-D (or 0-d) `i64`
    /// view `index_layout` over `index` names. An index outside `0..size` is an
    /// [`ErrorKind::IndexOutOfRange`](crate::ErrorKind) error before anything is read.
    fn index_select<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
        index: &Self::Buffer<i64>,
        index_layout: &Layout,
    ) -> Result<Self::Buffer<E>>;

    /// One element per index: the result has the index's shape and element `i` is `src` at
    /// `i` with its `dim` coordinate replaced by `index[i]` (checked as for `index_select`).
    fn gather<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        dim: usize,
        index: &Self::Buffer<i64>,
        index_layout: &Layout,
    ) -> Result<Self::Buffer<E>>;

    /// `base` through `base_layout` as a new row-major buffer, then, for every element `i` of
    /// the `i64` view `index_layout` over `index` in row-major order, `src` at `i` (through
    /// `src_layout`, which has the index's sizes) added at `i` with its `dim` coordinate
    /// replaced by `index[i]`: PyTorch's `scatter_add`, the adjoint of [`Backend::gather`].
    /// The index's sizes are at most the base's in every dim but `dim`; an index outside
    /// `0..size` of `dim` is an [`ErrorKind::IndexOutOfRange`](crate::ErrorKind) error before
    /// anything is written. Repeated indices accumulate, in the index's row-major order.
    #[allow(clippy::too_many_arguments)]
    fn scatter_add<E: Element>(
        op: &'static str,
        base: &Self::Buffer<E>,
        base_layout: &Layout,
        dim: usize,
        index: &Self::Buffer<i64>,
        index_layout: &Layout,
        src: &Self::Buffer<E>,
        src_layout: &Layout,
    ) -> Result<Self::Buffer<E>>;

    /// The `parts` (buffer and view; equal sizes except in `dim`) joined along `dim` into a new
    /// buffer of `out_shape`.
    fn cat<E: Element>(
        op: &'static str,
        parts: &[(&Self::Buffer<E>, &Layout)],
        dim: usize,
        out_shape: &[usize],
    ) -> Result<Self::Buffer<E>>;

    /// The matrix products of `la` over `a` (sizes `[batch…, m, k]`) and `lb` over `b`
    /// (`[batch…, k, n]`, the same batch sizes; broadcast batch dims have stride 0), row-major
    /// `[batch…, m, n]`. `E` is not `bool` (the caller refuses it).
    fn matmul<E: Element>(
        op: &'static str,
        a: &Self::Buffer<E>,
        la: &Layout,
        b: &Self::Buffer<E>,
        lb: &Layout,
    ) -> Result<Self::Buffer<E>>;

    // ---- sliding windows over the last two dims ----

    /// The windows of `window` over `layout` (sizes `[lead…, H, W]`, rank ≥ 2): row-major
    /// `[lead…, KH, KW, OH, OW]`, entry `[…, a, b, i, j]` being the input at the coordinates
    /// [`Window2d::source`] gives, or `pad` where it gives none (im2col). The window fits the
    /// input (`Window2d::output_size` succeeded on `(H, W)`, giving `(OH, OW)`).
    fn unfold2d<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        window: &Window2d,
        pad: E,
    ) -> Result<Self::Buffer<E>>;

    /// The adjoint of [`Backend::unfold2d`] (col2im): `layout` over `cols` has sizes `[lead…,
    /// KH, KW, OH, OW]` for an input of `hw = (H, W)`, and the result, row-major `[lead…, H,
    /// W]`, holds at each input element the sum of the taps that read it, added in the
    /// compute type in `(KH, KW)` order (each tap reads an element at most once), rounded once
    /// (deterministic, and the same on every backend). With `winners` (an `i64` view of sizes
    /// `[lead…, OH, OW]` holding a tap number `a·KW + b`, checked `< KH·KW` by the caller), tap
    /// `(a, b)` of a window counts only where it is the window's winner (max pooling's
    /// gradient).
    fn fold2d<E: Element>(
        op: &'static str,
        cols: &Self::Buffer<E>,
        layout: &Layout,
        window: &Window2d,
        hw: (usize, usize),
        winners: Option<(&Self::Buffer<i64>, &Layout)>,
    ) -> Result<Self::Buffer<E>>;

    /// Max pooling over `layout` (sizes `[lead…, H, W]`): for each window, row-major `[lead…,
    /// OH, OW]`, its largest tap and that tap's number `a·KW + b`, taps in the padding counting
    /// as −∞; the first NaN wins, and otherwise the first of equal maxima (as `max_dim` over
    /// [`Backend::unfold2d`]'s taps). `E` is a float.
    fn max_pool2d<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        window: &Window2d,
    ) -> Result<(Self::Buffer<E>, Self::Buffer<i64>)>;

    // ---- rearranging copies ----

    /// The elements of `layout` over `src`, with the dims where `flip` is true reversed.
    fn flip<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        flip: &[bool],
    ) -> Result<Self::Buffer<E>>;

    /// The elements of `layout` (rank ≥ 2) with those outside the lower (`lower`) or upper
    /// triangle of the last two dims, relative to `diagonal`, set to zero.
    fn triangle<E: Element>(
        op: &'static str,
        src: &Self::Buffer<E>,
        layout: &Layout,
        diagonal: isize,
        lower: bool,
    ) -> Result<Self::Buffer<E>>;
}

/// Checks the operands of [`Backend::adam_`] on any backend: the parameter and gradient
/// layouts contiguous, of the same sizes and within their buffers (of `p_len` and `g_len`
/// elements), and one state buffer of exactly their number of elements for each of `m`, `v`
/// and, exactly when `amsgrad`, `vmax` (`state_lens`).
#[doc(hidden)]
pub fn check_adam_operands(
    op: &'static str,
    lp: &Layout,
    p_len: usize,
    lg: &Layout,
    g_len: usize,
    state_lens: &[usize],
    amsgrad: bool,
) -> Result<()> {
    use crate::error::{Error, ErrorKind};
    lp.check_within(op, p_len)?;
    lg.check_within(op, g_len)?;
    let n = lp.numel();
    let fail = |what: String| Err(Error::new(ErrorKind::InvalidArgument, op, what));
    if !lp.is_contiguous() || !lg.is_contiguous() || lp.sizes() != lg.sizes() {
        return fail(format!(
            "the fused step needs a contiguous parameter and gradient of one shape, not {:?} \
             with strides {:?} and {:?} with strides {:?}",
            lp.sizes(),
            lp.strides(),
            lg.sizes(),
            lg.strides()
        ));
    }
    if state_lens.len() != 2 + amsgrad as usize || state_lens.iter().any(|&l| l != n) {
        return fail(format!(
            "state buffers of {state_lens:?} elements for a parameter of {n} (amsgrad: \
             {amsgrad})"
        ));
    }
    Ok(())
}

/// Checks that `dim` of `layout` has entries, as [`Backend::normalize`] requires.
#[doc(hidden)]
pub fn check_lanes_have_entries(op: &'static str, layout: &Layout, dim: usize) -> Result<()> {
    if layout.sizes().get(dim) != Some(&0) {
        return Ok(());
    }
    Err(crate::error::Error::new(
        crate::error::ErrorKind::InvalidArgument,
        op,
        format!(
            "normalisation along dim {dim} of size 0 in {:?}",
            layout.sizes()
        ),
    ))
}
