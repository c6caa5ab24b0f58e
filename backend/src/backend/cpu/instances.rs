//! The CPU backend: the [`Backend`] methods, each a dispatch on the element type to a kernel
//! instantiated here, inside the library, once per dtype.
//!
//! # Why per dtype, here
//! A generic function is compiled in the crate that instantiates it, at that crate's
//! opt-level. If the kernels stayed generic up to the public API, a user's debug build would
//! run them unoptimised (80–200× slower). So every generic [`Backend`] method only matches
//! `E::DTYPE` ([`dtype_match!`]) and calls a method of [`Instances`] on the concrete type;
//! those methods are ordinary (non-generic) functions of this crate, compiled once, at this
//! crate's opt-level, which `[profile.dev.package."*"] opt-level = 3` raises in a
//! user's debug build. The generic part that remains is a jump on the dtype and a
//! reinterpretation of the slice.
//!
//! # Invariants
//! - [`retype`] and [`retype_vec`] are only applied at the type `dtype_match!` selected for
//!   `E::DTYPE`, so the `TypeId`s are equal and the reinterpretation is the identity;
//! - the operands of `binary`/`compare` are of the output's type or its compute type
//!   ([`Operand`]), as the [`Backend`] contract says; anything else is a bug of the caller
//!   and panics.

use super::adam::adam;
use super::convert::same_type;
use super::copy::gather_to_vec;
use super::elementwise_instances::{
    ElementwiseInstances, FLOAT_ONLY, operand, retype, retype_mut, retype_vec,
};
use super::host_buffer::HostBuffer;
use super::matmul::matmul_op;
use super::normalize::{normalize_backward_op, normalize_op};
use super::parallel::{for_each_chunk_mut, task_count};
use super::pool::reserve;
use super::reduction::{Reduced, arg_reduce_op, reduce_op};
use super::scan::{scan_op, softmax_backward_op, softmax_op};
use super::select::{cat, gather_op, index_select_op, scatter_add_op};
use super::shape::{flip_to_vec, mask_triangle};
use super::words;
use crate::backend::device::Device;
use crate::backend::op::{AdamStep, BinaryOp, CompareOp, ReduceOp, TestOp, UnaryOp};
use crate::backend::{Backend, check_adam_operands, check_lanes_have_entries};
use crate::dtype::{DType, Element, Kernel};
use crate::error::Result;
use crate::layout::{Layout, Window2d};
use half::{bf16, f16};

/// The host backend.
pub struct Cpu;

/// Runs `$body` with the type alias `$t` bound to the Rust type of the dtype `$d`.
macro_rules! dtype_match {
    ($d:expr, $t:ident => $body:expr) => {
        match $d {
            DType::Bool => {
                type $t = bool;
                $body
            }
            DType::U8 => {
                type $t = u8;
                $body
            }
            DType::I8 => {
                type $t = i8;
                $body
            }
            DType::I16 => {
                type $t = i16;
                $body
            }
            DType::I32 => {
                type $t = i32;
                $body
            }
            DType::I64 => {
                type $t = i64;
                $body
            }
            DType::F16 => {
                type $t = f16;
                $body
            }
            DType::BF16 => {
                type $t = bf16;
                $body
            }
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}

/// Runs `$body` with the type alias `$t` bound to the Rust type of the element type `$e`,
/// like [`dtype_match!`] but on `const` conditions: a generic instance compiles only its own
/// arm.
macro_rules! const_dtype_match {
    ($e:ty, $t:ident => $body:expr) => {
        const_dtype_match!(@arms $e, $t, $body;
            Bool bool, U8 u8, I8 i8, I16 i16, I32 i32, I64 i64, F16 f16, BF16 bf16, F32 f32, F64 f64)
    };
    (@arms $e:ty, $t:ident, $body:expr; $($d:ident $ty:ty),*) => {
        $(if const { <$e as Element>::DTYPE as u8 == DType::$d as u8 } {
            type $t = $ty;
            $body
        } else)* {
            unreachable!("every dtype has an arm")
        }
    };
}

/// A view of `Self` converted into a new vector of `T` with [`Element::cast`]'s rounding:
/// implemented here for every pair of element types, so that a conversion runs as an
/// instance of this crate (see the module docs), not as generic code compiled, unoptimised,
/// into a user's debug build.
trait CastTo<T>: Element {
    fn cast_to(src: &[Self], layout: &Layout) -> HostBuffer<T>;
}

/// The elements of `layout` over `src`, in row-major order, each converted with
/// [`Element::cast`]: a strided view is gathered first (by size, `words.rs`), then converted
/// in parallel chunks. A plain loop rather than `map_to_vec`'s engine (tiles, streamed
/// stores), which, for all 90 pairs, added 15 % to the crate's LLVM IR.
fn cast_contiguous<S: Element, T: Element>(src: &[S], layout: &Layout) -> HostBuffer<T> {
    let gathered;
    let src: &[S] = if layout.numel() == 0 {
        // An empty view's offset may lie anywhere (see `to_host`).
        &[]
    } else if layout.is_contiguous() {
        let start = layout.offset();
        &src[start..start + layout.numel()]
    } else {
        gathered = words::gather(src, layout);
        &gathered
    };
    let n = src.len();
    let mut out = super::pool::take::<T>(n);
    for_each_chunk_mut(
        &mut out.spare_capacity_mut()[..n],
        task_count(n, 1 << 14),
        64,
        |range, chunk| {
            for (o, &x) in chunk.iter_mut().zip(&src[range]) {
                o.write(x.cast::<T>());
            }
        },
    );
    // SAFETY: the chunks cover `0..n` and every slot of each was written above.
    unsafe { out.set_len(n) };
    out
}

macro_rules! cast_to_each {
    ($s:ty; $($t:ty),*) => {$(
        impl CastTo<$t> for $s {
            fn cast_to(src: &[$s], layout: &Layout) -> HostBuffer<$t> {
                if const { same_type::<$s, $t>() } {
                    retype_vec(words::gather(src, layout))
                } else {
                    cast_contiguous(src, layout)
                }
            }
        }
    )*};
}

macro_rules! cast_pairs {
    ($($s:ty),*) => {$(
        cast_to_each!($s; bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64);
    )*};
}

cast_pairs!(bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64);

/// The kernels of one element type, instantiated in this crate (see the module docs).
pub trait Instances: Element {
    /// See [`Backend::reduce`].
    fn reduce(rop: ReduceOp, src: &[Self], layout: &Layout, mask: &[bool]) -> Reduced<Self>;
    /// See [`Backend::arg_reduce`].
    fn arg_reduce(
        max: bool,
        src: &[Self],
        layout: &Layout,
        dim: usize,
    ) -> (HostBuffer<Self>, HostBuffer<i64>);
    /// See [`Backend::softmax`] (float types only).
    fn softmax(src: &[Self], layout: &Layout, dim: usize, log: bool) -> HostBuffer<Self>;
    /// See [`Backend::softmax_backward`] (float types only).
    fn softmax_backward(
        y: &[Self],
        ly: &Layout,
        g: &[Self],
        lg: &Layout,
        dim: usize,
        log: bool,
    ) -> HostBuffer<Self>;
    /// See [`Backend::normalize`] (float types only).
    fn normalize(
        src: &[Self],
        layout: &Layout,
        dim: usize,
        eps: f64,
        center: bool,
    ) -> (HostBuffer<Self>, HostBuffer<Self>);
    /// See [`Backend::normalize_backward`] (float types only).
    #[allow(clippy::too_many_arguments)]
    fn normalize_backward(
        y: &[Self],
        ly: &Layout,
        g: &[Self],
        lg: &Layout,
        r: &[Self],
        lr: &Layout,
        dim: usize,
        center: bool,
    ) -> HostBuffer<Self>;
    /// See [`Backend::adam_`] (float types only), over the parameter's and the gradient's
    /// runs of elements.
    fn adam(
        p: &mut [Self],
        g: &[Self],
        m: &mut [Self],
        v: &mut [Self],
        vmax: Option<&mut [Self]>,
        step: &AdamStep,
    );
    /// See [`Backend::scan`].
    fn scan(prod: bool, src: &[Self], layout: &Layout, dim: usize) -> HostBuffer<Self::Sum>;
    /// See [`Backend::index_select`].
    fn index_select(
        op: &'static str,
        src: &[Self],
        layout: &Layout,
        dim: usize,
        index: &[i64],
        li: &Layout,
    ) -> Result<HostBuffer<Self>>;
    /// See [`Backend::gather`].
    fn gather(
        op: &'static str,
        src: &[Self],
        layout: &Layout,
        dim: usize,
        index: &[i64],
        li: &Layout,
    ) -> Result<HostBuffer<Self>>;
    /// See [`Backend::scatter_add`].
    #[allow(clippy::too_many_arguments)]
    fn scatter_add(
        op: &'static str,
        base: &[Self],
        lb: &Layout,
        dim: usize,
        index: &[i64],
        li: &Layout,
        src: &[Self],
        ls: &Layout,
    ) -> Result<HostBuffer<Self>>;
    /// See [`Backend::cat`].
    fn cat(parts: &[(&[Self], &Layout)], dim: usize, out_shape: &[usize]) -> HostBuffer<Self>;
    /// See [`Backend::matmul`] (not `bool`).
    fn matmul(a: &[Self], la: &Layout, b: &[Self], lb: &Layout) -> HostBuffer<Self>;
    /// See [`Backend::flip`].
    fn flip(src: &[Self], layout: &Layout, flip: &[bool]) -> HostBuffer<Self>;
    /// See [`Backend::triangle`].
    fn triangle(src: &[Self], layout: &Layout, diagonal: isize, lower: bool) -> HostBuffer<Self>;
    /// See [`Backend::fold2d`].
    fn fold2d(
        cols: &[Self],
        layout: &Layout,
        window: &Window2d,
        hw: (usize, usize),
        winners: Option<(&[i64], &Layout)>,
    ) -> HostBuffer<Self>;
    /// See [`Backend::max_pool2d`].
    fn max_pool2d(
        src: &[Self],
        layout: &Layout,
        window: &Window2d,
    ) -> (HostBuffer<Self>, HostBuffer<i64>);
}

impl<E: Kernel> Reduced<E> {
    /// The values as a vector of `O`, which the caller knows to be the operation's type.
    fn into_vec<O: Element>(self) -> HostBuffer<O>
    where
        E: Element,
    {
        match self {
            Reduced::Own(v) => retype_vec(v),
            Reduced::Sum(v) => retype_vec(v),
            Reduced::Compute(v) => retype_vec(v),
            Reduced::Bool(v) => retype_vec(v),
        }
    }
}

macro_rules! instances {
    (@softmax float, $t:ty, $c:ty, $src:expr, $l:expr, $dim:expr, $log:expr) => {
        softmax_op::<$t, $c>($src, $l, $dim, $log)
    };
    (@softmax numeric, $t:ty, $c:ty, $src:expr, $l:expr, $dim:expr, $log:expr) => {{
        let _ = ($src, $l, $dim, $log);
        unreachable!("{}", FLOAT_ONLY)
    }};
    (@softmax_backward float, $t:ty, $c:ty, $y:expr, $ly:expr, $g:expr, $lg:expr, $dim:expr, $log:expr) => {
        softmax_backward_op::<$t, $c>($y, $ly, $g, $lg, $dim, $log)
    };
    (@softmax_backward numeric, $t:ty, $c:ty, $y:expr, $ly:expr, $g:expr, $lg:expr, $dim:expr, $log:expr) => {{
        let _ = ($y, $ly, $g, $lg, $dim, $log);
        unreachable!("{}", FLOAT_ONLY)
    }};
    (@normalize float, $t:ty, $c:ty, $($arg:expr),*) => {
        normalize_op::<$t, $c>($($arg),*)
    };
    (@normalize numeric, $t:ty, $c:ty, $($arg:expr),*) => {{
        let _ = ($($arg),*);
        unreachable!("{}", FLOAT_ONLY)
    }};
    (@normalize_backward float, $t:ty, $c:ty, $($arg:expr),*) => {
        normalize_backward_op::<$t, $c>($($arg),*)
    };
    (@normalize_backward numeric, $t:ty, $c:ty, $($arg:expr),*) => {{
        let _ = ($($arg),*);
        unreachable!("{}", FLOAT_ONLY)
    }};
    (@adam float, $t:ty, $c:ty, $($arg:expr),*) => {
        adam::<$t, $c>($($arg),*)
    };
    (@adam numeric, $t:ty, $c:ty, $($arg:expr),*) => {{
        let _ = ($($arg),*);
        unreachable!("{}", FLOAT_ONLY)
    }};
    ($($kind:ident: $($t:ty => $c:ty),*;)*) => {$($(
        impl Instances for $t {
            fn reduce(rop: ReduceOp, src: &[$t], layout: &Layout, mask: &[bool]) -> Reduced<$t> {
                reduce_op(rop, src, layout, mask)
            }
            fn arg_reduce(max: bool, src: &[$t], layout: &Layout, dim: usize) -> (HostBuffer<$t>, HostBuffer<i64>) {
                arg_reduce_op(max, src, layout, dim)
            }
            fn softmax(src: &[$t], layout: &Layout, dim: usize, log: bool) -> HostBuffer<$t> {
                instances!(@softmax $kind, $t, $c, src, layout, dim, log)
            }
            fn softmax_backward(
                y: &[$t],
                ly: &Layout,
                g: &[$t],
                lg: &Layout,
                dim: usize,
                log: bool,
            ) -> HostBuffer<$t> {
                instances!(@softmax_backward $kind, $t, $c, y, ly, g, lg, dim, log)
            }
            fn normalize(
                src: &[$t],
                layout: &Layout,
                dim: usize,
                eps: f64,
                center: bool,
            ) -> (HostBuffer<$t>, HostBuffer<$t>) {
                instances!(@normalize $kind, $t, $c, src, layout, dim, eps, center)
            }
            fn normalize_backward(
                y: &[$t],
                ly: &Layout,
                g: &[$t],
                lg: &Layout,
                r: &[$t],
                lr: &Layout,
                dim: usize,
                center: bool,
            ) -> HostBuffer<$t> {
                instances!(@normalize_backward $kind, $t, $c, y, ly, g, lg, r, lr, dim, center)
            }
            fn adam(
                p: &mut [$t],
                g: &[$t],
                m: &mut [$t],
                v: &mut [$t],
                vmax: Option<&mut [$t]>,
                step: &AdamStep,
            ) {
                instances!(@adam $kind, $t, $c, p, g, m, v, vmax, step)
            }
            fn scan(prod: bool, src: &[$t], layout: &Layout, dim: usize) -> HostBuffer<<$t as Kernel>::Sum> {
                scan_op(prod, src, layout, dim)
            }
            fn index_select(
                op: &'static str,
                src: &[$t],
                layout: &Layout,
                dim: usize,
                index: &[i64],
                li: &Layout,
            ) -> Result<HostBuffer<$t>> {
                index_select_op(op, src, layout, dim, index, li)
            }
            fn gather(
                op: &'static str,
                src: &[$t],
                layout: &Layout,
                dim: usize,
                index: &[i64],
                li: &Layout,
            ) -> Result<HostBuffer<$t>> {
                gather_op(op, src, layout, dim, index, li)
            }
            fn scatter_add(
                op: &'static str,
                base: &[$t],
                lb: &Layout,
                dim: usize,
                index: &[i64],
                li: &Layout,
                src: &[$t],
                ls: &Layout,
            ) -> Result<HostBuffer<$t>> {
                scatter_add_op(op, base, lb, dim, index, li, src, ls)
            }
            fn cat(parts: &[(&[$t], &Layout)], dim: usize, out_shape: &[usize]) -> HostBuffer<$t> {
                cat(out_shape, dim, parts)
            }
            fn matmul(a: &[$t], la: &Layout, b: &[$t], lb: &Layout) -> HostBuffer<$t> {
                matmul_op(a, la, b, lb)
            }
            fn flip(src: &[$t], layout: &Layout, flip: &[bool]) -> HostBuffer<$t> {
                flip_to_vec(src, layout, flip)
            }
            fn triangle(src: &[$t], layout: &Layout, diagonal: isize, lower: bool) -> HostBuffer<$t> {
                let mut data = gather_to_vec(src, layout);
                let r = layout.rank();
                let (m, n) = (layout.sizes()[r - 2], layout.sizes()[r - 1]);
                mask_triangle(&mut data, m, n, diagonal, lower, <$t as Element>::ZERO);
                data
            }
            fn fold2d(
                cols: &[$t],
                layout: &Layout,
                window: &Window2d,
                hw: (usize, usize),
                winners: Option<(&[i64], &Layout)>,
            ) -> HostBuffer<$t> {
                super::window::fold2d(cols, layout, window, hw, winners)
            }
            fn max_pool2d(src: &[$t], layout: &Layout, window: &Window2d) -> (HostBuffer<$t>, HostBuffer<i64>) {
                super::window::max_pool2d(src, layout, window)
            }
        }
    )*)*};
}

instances! {
    float: f16 => f32, bf16 => f32, f32 => f32, f64 => f64;
    numeric: bool => bool, u8 => u8, i8 => i8, i16 => i16, i32 => i32, i64 => i64;
}

impl Backend for Cpu {
    type Buffer<E: Element> = HostBuffer<E>;

    fn len<E: Element>(buf: &HostBuffer<E>) -> usize {
        buf.len()
    }

    fn device<E: Element>(_buf: &HostBuffer<E>) -> Device {
        Device::Cpu
    }

    fn from_host<E: Element>(
        _op: &'static str,
        _device: Device,
        data: &[E],
    ) -> Result<HostBuffer<E>> {
        // A pool buffer, so that a large one is aligned and recycled like every other output.
        let mut out = super::pool::take(data.len());
        out.extend_from_slice(data);
        Ok(out)
    }

    fn full<E: Element>(
        op: &'static str,
        _device: Device,
        len: usize,
        value: E,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, len)?;
        Ok(words::full_of(len, value))
    }

    fn to_host<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, layout.numel())?;
        if layout.numel() == 0 {
            // The offset of an empty view may lie anywhere, even past the buffer.
            return Ok(HostBuffer::new());
        }
        if layout.is_contiguous() {
            let start = layout.offset();
            let mut out = super::pool::take(layout.numel());
            out.extend_from_slice(&src[start..start + layout.numel()]);
            return Ok(out);
        }
        Ok(words::gather(src, layout))
    }

    fn set<E: Element>(
        _op: &'static str,
        buf: &mut HostBuffer<E>,
        index: usize,
        value: E,
    ) -> Result<()> {
        buf[index] = value;
        Ok(())
    }

    fn cast<E: Element, F: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
    ) -> Result<HostBuffer<F>> {
        reserve::<F>(op, layout.numel())?;
        if const { same_type::<E, F>() } {
            return Ok(retype_vec(words::gather(src, layout)));
        }
        // The conversion of each pair of types is an instance of this crate (`CastTo`); the
        // `const` match compiles only the pair's own call into each generic instance.
        Ok(
            const_dtype_match!(E, S => const_dtype_match!(F, T => retype_vec::<T, F>(
                <S as CastTo<T>>::cast_to(retype(src), layout)
            ))),
        )
    }

    fn fill_<E: Element>(
        _op: &'static str,
        buf: &mut HostBuffer<E>,
        dst: &Layout,
        value: E,
    ) -> Result<()> {
        words::fill(buf, dst, value);
        Ok(())
    }

    fn copy_<E: Element, F: Element>(
        _op: &'static str,
        buf: &mut HostBuffer<E>,
        dst: &Layout,
        src: &HostBuffer<F>,
        src_layout: &Layout,
    ) -> Result<()> {
        if const { same_type::<E, F>() } {
            words::copy(buf, dst, retype(src), src_layout);
        } else {
            super::copy_cast(buf, dst, src, src_layout);
        }
        Ok(())
    }

    fn unary<E: Element>(
        op: &'static str,
        uop: UnaryOp,
        src: &HostBuffer<E>,
        layout: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::unary(uop, retype(src), layout))))
    }

    fn unary_<E: Element>(
        _op: &'static str,
        uop: UnaryOp,
        buf: &mut HostBuffer<E>,
        dst: &Layout,
    ) -> Result<()> {
        dtype_match!(E::DTYPE, T => T::unary_(uop, retype_mut(buf), dst));
        Ok(())
    }

    fn test<E: Element>(
        op: &'static str,
        top: TestOp,
        src: &HostBuffer<E>,
        layout: &Layout,
    ) -> Result<HostBuffer<bool>> {
        reserve::<bool>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => T::test(top, retype(src), layout)))
    }

    fn binary<A: Element, B: Element, O: Element>(
        op: &'static str,
        bop: BinaryOp,
        a: &HostBuffer<A>,
        la: &Layout,
        b: &HostBuffer<B>,
        lb: &Layout,
    ) -> Result<HostBuffer<O>> {
        reserve::<O>(op, la.numel())?;
        Ok(dtype_match!(O::DTYPE, T => retype_vec(T::binary(
            bop,
            operand::<A, T>(a),
            la,
            operand::<B, T>(b),
            lb
        ))))
    }

    /// The scalar read from the stack: no buffer of its own.
    fn binary_scalar<A: Element, B: Element, O: Element>(
        op: &'static str,
        bop: BinaryOp,
        a: &HostBuffer<A>,
        la: &Layout,
        s: B,
        scalar_left: bool,
    ) -> Result<HostBuffer<O>> {
        reserve::<O>(op, la.numel())?;
        let (one, ls) = ([s], Layout::repeated(la.sizes()));
        Ok(dtype_match!(O::DTYPE, T => retype_vec(if scalar_left {
            T::binary(bop, operand::<B, T>(&one), &ls, operand::<A, T>(a), la)
        } else {
            T::binary(bop, operand::<A, T>(a), la, operand::<B, T>(&one), &ls)
        })))
    }

    fn binary_<E: Element, B: Element>(
        _op: &'static str,
        bop: BinaryOp,
        buf: &mut HostBuffer<E>,
        dst: &Layout,
        src: &HostBuffer<B>,
        src_layout: &Layout,
    ) -> Result<()> {
        dtype_match!(E::DTYPE, T => T::binary_(
            bop,
            retype_mut(buf),
            dst,
            operand::<B, T>(src),
            src_layout
        ));
        Ok(())
    }

    fn compare<A: Element, B: Element, P: Element>(
        op: &'static str,
        cop: CompareOp,
        a: &HostBuffer<A>,
        la: &Layout,
        b: &HostBuffer<B>,
        lb: &Layout,
    ) -> Result<HostBuffer<bool>> {
        reserve::<bool>(op, la.numel())?;
        Ok(dtype_match!(P::DTYPE, T => T::compare(
            cop,
            operand::<A, T>(a),
            la,
            operand::<B, T>(b),
            lb
        )))
    }

    fn where_<E: Element>(
        op: &'static str,
        cond: &HostBuffer<bool>,
        lc: &Layout,
        a: &HostBuffer<E>,
        la: &Layout,
        b: &HostBuffer<E>,
        lb: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, la.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::where_(
            cond,
            lc,
            retype(a),
            la,
            retype(b),
            lb
        ))))
    }

    fn masked_fill_<E: Element>(
        _op: &'static str,
        buf: &mut HostBuffer<E>,
        dst: &Layout,
        mask: &HostBuffer<bool>,
        mask_layout: &Layout,
        value: E,
    ) -> Result<()> {
        dtype_match!(E::DTYPE, T => T::masked_fill_(
            retype_mut(buf),
            dst,
            mask,
            mask_layout,
            crate::dtype::cast::<E, T>(value)
        ));
        Ok(())
    }

    fn reduce<E: Element, O: Element>(
        op: &'static str,
        rop: ReduceOp,
        src: &HostBuffer<E>,
        layout: &Layout,
        mask: &[bool],
    ) -> Result<HostBuffer<O>> {
        reserve::<O>(op, kept_count(layout, mask))?;
        Ok(dtype_match!(E::DTYPE, T => T::reduce(rop, retype(src), layout, mask).into_vec()))
    }

    fn arg_reduce<E: Element>(
        op: &'static str,
        max: bool,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
    ) -> Result<(HostBuffer<E>, HostBuffer<i64>)> {
        reserve::<E>(
            op,
            layout
                .numel()
                .checked_div(layout.sizes().get(dim).copied().unwrap_or(1))
                .unwrap_or(0),
        )?;
        Ok(dtype_match!(E::DTYPE, T => {
            let (values, indices) = T::arg_reduce(max, retype(src), layout, dim);
            (retype_vec(values), indices)
        }))
    }

    fn softmax<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::softmax(retype(src), layout, dim, log))))
    }

    fn softmax_backward<E: Element>(
        op: &'static str,
        y: &HostBuffer<E>,
        ly: &Layout,
        g: &HostBuffer<E>,
        lg: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, ly.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::softmax_backward(
            retype(y),
            ly,
            retype(g),
            lg,
            dim,
            log
        ))))
    }

    fn normalize<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
        eps: f64,
        center: bool,
    ) -> Result<(HostBuffer<E>, HostBuffer<E>)> {
        check_lanes_have_entries(op, layout, dim)?;
        reserve::<E>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => {
            let (y, r) = T::normalize(retype(src), layout, dim, eps, center);
            (retype_vec(y), retype_vec(r))
        }))
    }

    fn normalize_backward<E: Element>(
        op: &'static str,
        y: &HostBuffer<E>,
        ly: &Layout,
        g: &HostBuffer<E>,
        lg: &Layout,
        r: &HostBuffer<E>,
        lr: &Layout,
        dim: usize,
        center: bool,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, ly.numel())?;
        Ok(
            dtype_match!(E::DTYPE, T => retype_vec(T::normalize_backward(
                retype(y),
                ly,
                retype(g),
                lg,
                retype(r),
                lr,
                dim,
                center
            ))),
        )
    }

    fn adam_<E: Element>(
        op: &'static str,
        p: &mut HostBuffer<E>,
        lp: &Layout,
        g: &HostBuffer<E>,
        lg: &Layout,
        m: &mut HostBuffer<E>,
        v: &mut HostBuffer<E>,
        vmax: Option<&mut HostBuffer<E>>,
        step: &AdamStep,
    ) -> Result<()> {
        let mut lens = vec![m.len(), v.len()];
        lens.extend(vmax.as_ref().map(|x| x.len()));
        check_adam_operands(op, lp, p.len(), lg, g.len(), &lens, step.amsgrad)?;
        let (n, po, go) = (lp.numel(), lp.offset(), lg.offset());
        if n == 0 {
            return Ok(());
        }
        dtype_match!(E::DTYPE, T => T::adam(
            &mut retype_mut(p)[po..po + n],
            &retype(g)[go..go + n],
            retype_mut(m),
            retype_mut(v),
            vmax.map(|x| retype_mut::<E, T>(x)),
            step
        ));
        Ok(())
    }

    fn scan<E: Element, O: Element>(
        op: &'static str,
        prod: bool,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
    ) -> Result<HostBuffer<O>> {
        reserve::<O>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::scan(prod, retype(src), layout, dim))))
    }

    fn sort<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
        descending: bool,
    ) -> Result<(HostBuffer<E>, HostBuffer<i64>)> {
        // The sorted (entry, position) pairs, then the two outputs.
        reserve::<(E, i64)>(op, layout.numel())?;
        reserve::<E>(op, layout.numel())?;
        reserve::<i64>(op, layout.numel())?;
        Ok(super::sort::sort(src, layout, dim, descending))
    }

    fn index_select<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
        index: &HostBuffer<i64>,
        index_layout: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(
            op,
            layout
                .numel()
                .checked_div(layout.sizes()[dim])
                .unwrap_or(0)
                .saturating_mul(index_layout.numel()),
        )?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::index_select(
            op,
            retype(src),
            layout,
            dim,
            index,
            index_layout
        )?)))
    }

    fn gather<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        dim: usize,
        index: &HostBuffer<i64>,
        index_layout: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, index_layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::gather(
            op,
            retype(src),
            layout,
            dim,
            index,
            index_layout
        )?)))
    }

    fn scatter_add<E: Element>(
        op: &'static str,
        base: &HostBuffer<E>,
        lb: &Layout,
        dim: usize,
        index: &HostBuffer<i64>,
        li: &Layout,
        src: &HostBuffer<E>,
        ls: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, lb.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::scatter_add(
            op,
            retype(base),
            lb,
            dim,
            index,
            li,
            retype(src),
            ls
        )?)))
    }

    fn cat<E: Element>(
        op: &'static str,
        parts: &[(&HostBuffer<E>, &Layout)],
        dim: usize,
        out_shape: &[usize],
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(
            op,
            out_shape
                .iter()
                .try_fold(1usize, |a, &s| a.checked_mul(s))
                .unwrap_or(usize::MAX),
        )?;
        Ok(dtype_match!(E::DTYPE, T => {
            let parts: Vec<(&[T], &Layout)> = parts.iter().map(|&(v, l)| (retype(v), l)).collect();
            retype_vec(T::cat(&parts, dim, out_shape))
        }))
    }

    fn matmul<E: Element>(
        op: &'static str,
        a: &HostBuffer<E>,
        la: &Layout,
        b: &HostBuffer<E>,
        lb: &Layout,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, matmul_count(la, lb))?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::matmul(retype(a), la, retype(b), lb))))
    }

    fn flip<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        flip: &[bool],
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::flip(retype(src), layout, flip))))
    }

    fn unfold2d<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        window: &Window2d,
        pad: E,
    ) -> Result<HostBuffer<E>> {
        let r = layout.rank();
        let (oh, ow) = window.output_size(layout.sizes()[r - 2], layout.sizes()[r - 1])?;
        let (kh, kw) = window.kernel;
        let lead: usize = layout.sizes()[..r - 2].iter().product();
        reserve::<E>(op, lead.saturating_mul(kh * kw).saturating_mul(oh * ow))?;
        Ok(words::unfold2d(src, layout, window, pad))
    }

    fn fold2d<E: Element>(
        op: &'static str,
        cols: &HostBuffer<E>,
        layout: &Layout,
        window: &Window2d,
        hw: (usize, usize),
        winners: Option<(&HostBuffer<i64>, &Layout)>,
    ) -> Result<HostBuffer<E>> {
        let lead: usize = layout.sizes()[..layout.rank() - 4].iter().product();
        reserve::<E>(op, lead.saturating_mul(hw.0 * hw.1))?;
        let winners = winners.map(|(b, l)| (b.as_slice(), l));
        Ok(
            dtype_match!(E::DTYPE, T => retype_vec(T::fold2d(retype(cols), layout, window, hw, winners))),
        )
    }

    fn max_pool2d<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        window: &Window2d,
    ) -> Result<(HostBuffer<E>, HostBuffer<i64>)> {
        let r = layout.rank();
        let (oh, ow) = window.output_size(layout.sizes()[r - 2], layout.sizes()[r - 1])?;
        let lead: usize = layout.sizes()[..r - 2].iter().product();
        reserve::<(E, i64)>(op, lead.saturating_mul(oh * ow))?;
        Ok(dtype_match!(E::DTYPE, T => {
            let (values, taps) = T::max_pool2d(retype(src), layout, window);
            (retype_vec(values), taps)
        }))
    }

    fn triangle<E: Element>(
        op: &'static str,
        src: &HostBuffer<E>,
        layout: &Layout,
        diagonal: isize,
        lower: bool,
    ) -> Result<HostBuffer<E>> {
        reserve::<E>(op, layout.numel())?;
        Ok(dtype_match!(E::DTYPE, T => retype_vec(T::triangle(
            retype(src),
            layout,
            diagonal,
            lower
        ))))
    }
}

/// The element count of a reduction's result: the product of the kept sizes.
fn kept_count(layout: &Layout, mask: &[bool]) -> usize {
    let kept = layout.sizes().iter().zip(mask).filter(|&(_, &m)| !m);
    kept.fold(1usize, |a, (&s, _)| a.saturating_mul(s))
}

/// The element count of a batched matrix product `[batch…, m, k] · [batch…, k, n]`.
fn matmul_count(la: &Layout, lb: &Layout) -> usize {
    let (a, b) = (la.sizes(), lb.sizes());
    let rows = a[..a.len() - 1]
        .iter()
        .fold(1usize, |x, &s| x.saturating_mul(s));
    rows.saturating_mul(b[b.len() - 1])
}
