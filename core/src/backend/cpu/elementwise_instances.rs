//! The elementwise kernels (unary, binary, comparison, `where_`, `masked_fill_`) of each
//! element type, instantiated in this crate: non-generic functions, compiled here once per
//! dtype, at this crate's opt-level (why: `namedtensor-backend`'s `cpu/instances.rs`). They
//! have a crate of their own so that a cold build compiles them in a process apart from the
//! other kernels (each about half the peak memory of one crate holding both; BENCHMARKS.md,
//! session 25).
//!
//! # Invariants
//! - [`retype`], [`retype_mut`] and [`retype_vec`] are only applied where the caller's
//!   `match` on `E::DTYPE` selected `T`, so the `TypeId`s are equal and the reinterpretation
//!   is the identity;
//! - the operands of `binary`/`compare` are of the output's type or its compute type
//!   ([`Operand`]); anything else is a bug of the caller and panics.

use super::convert::{as_type, as_type_mut};
use super::elementwise::{
    map_inplace, map_new, masked_fill_inplace, select_new, zip_inplace, zip_new,
};
use super::host_buffer::HostBuffer;
use crate::backend::op::{BinaryLoop, BinaryOp, CompareOp, TestOp, UnaryLoop, UnaryOp};
use crate::dtype::{Element, Kernel, Native};
use crate::layout::Layout;
use half::{bf16, f16};
use std::marker::PhantomData;

/// `s` as a slice of `T`, which the caller knows to be `E` (see the invariants).
pub fn retype<E: Element, T: Element>(s: &[E]) -> &[T] {
    as_type(s).expect("dtype_match selected the slice's own type")
}

/// `s` as a mutable slice of `T`, which the caller knows to be `E`.
pub fn retype_mut<E: Element, T: Element>(s: &mut [E]) -> &mut [T] {
    as_type_mut(s).expect("dtype_match selected the slice's own type")
}

/// `v` as a vector of `E`, which the caller knows to be `T`.
pub fn retype_vec<T: Element, E: Element>(v: HostBuffer<T>) -> HostBuffer<E> {
    assert_eq!(
        T::DTYPE,
        E::DTYPE,
        "dtype_match selected the vector's own type"
    );
    // SAFETY: `T` and `E` are one type (asserted). (Not `convert::vec_into`, whose
    // converting path every generic caller would compile.)
    unsafe { v.retype::<E>() }
}

/// An operand of a binary kernel whose output type is `O`: of type `O` itself, or of `O`'s
/// compute type (an `f32` operand of an `f16` result).
#[derive(Clone, Copy)]
pub enum Operand<'a, O: Kernel> {
    /// Elements of the output's type.
    Own(&'a [O]),
    /// Elements of the output's compute type.
    Compute(&'a [O::Compute]),
}

/// `s` as an [`Operand`] of a kernel with output type `O`.
pub fn operand<A: Element, O: Element>(s: &[A]) -> Operand<'_, O> {
    if let Some(own) = as_type::<A, O>(s) {
        Operand::Own(own)
    } else if let Some(c) = as_type::<A, O::Compute>(s) {
        Operand::Compute(c)
    } else {
        panic!(
            "a {} operand of a {} kernel: the caller converts operands first",
            A::DTYPE,
            O::DTYPE
        )
    }
}

/// The elementwise kernels of one element type, instantiated in this crate (see the module
/// docs); `namedtensor-backend`'s CPU backend calls them.
pub trait ElementwiseInstances: Element {
    /// See `Backend::unary`.
    fn unary(uop: UnaryOp, src: &[Self], layout: &Layout) -> HostBuffer<Self>;
    /// See `Backend::unary_`.
    fn unary_(uop: UnaryOp, buf: &mut [Self], dst: &Layout);
    /// See `Backend::test`.
    fn test(top: TestOp, src: &[Self], layout: &Layout) -> HostBuffer<bool>;
    /// See `Backend::binary`.
    fn binary(
        bop: BinaryOp,
        a: Operand<'_, Self>,
        la: &Layout,
        b: Operand<'_, Self>,
        lb: &Layout,
    ) -> HostBuffer<Self>;
    /// See `Backend::binary_`.
    fn binary_(bop: BinaryOp, buf: &mut [Self], dst: &Layout, src: Operand<'_, Self>, ls: &Layout);
    /// See `Backend::compare`: compared in this type's compute type.
    fn compare(
        cop: CompareOp,
        a: Operand<'_, Self>,
        la: &Layout,
        b: Operand<'_, Self>,
        lb: &Layout,
    ) -> HostBuffer<bool>;
    /// See `Backend::where_`.
    fn where_(
        cond: &[bool],
        lc: &Layout,
        a: &[Self],
        la: &Layout,
        b: &[Self],
        lb: &Layout,
    ) -> HostBuffer<Self>;
    /// See `Backend::masked_fill_`.
    fn masked_fill_(buf: &mut [Self], dst: &Layout, mask: &[bool], lm: &Layout, value: Self);
}

/// [`map_new`] as a [`UnaryLoop`]: a fresh output of `E`, computed in `T`.
struct MapNew<'a, E, const VEC: bool> {
    src: &'a [E],
    layout: &'a Layout,
}

impl<E: Element, T: Element, const VEC: bool> UnaryLoop<T> for MapNew<'_, E, VEC> {
    type Output = HostBuffer<E>;
    #[inline(always)]
    fn run(self, f: impl Fn(T) -> T + Sync + Send + Copy) -> HostBuffer<E> {
        map_new::<E, T, T, E, VEC>(self.src, self.layout, f)
    }
}

/// [`map_inplace`] as a [`UnaryLoop`].
struct MapInplace<'a, E, const VEC: bool> {
    buf: &'a mut [E],
    dst: &'a Layout,
}

impl<E: Element, T: Element, const VEC: bool> UnaryLoop<T> for MapInplace<'_, E, VEC> {
    type Output = ();
    #[inline(always)]
    fn run(self, f: impl Fn(T) -> T + Sync + Send + Copy) {
        map_inplace::<E, T, VEC>(self.buf, self.dst, f)
    }
}

/// [`zip_new`] over two [`Operand`]s as a [`BinaryLoop`]: a fresh output of `O`, computed in
/// `T` with result `U` (`T`, or `bool` for comparisons, stored as `R`).
struct ZipNew<'a, O: Kernel, R> {
    a: Operand<'a, O>,
    la: &'a Layout,
    b: Operand<'a, O>,
    lb: &'a Layout,
    _out: PhantomData<R>,
}

impl<O: Element, T: Element, U: Element> BinaryLoop<T, U> for ZipNew<'_, O, U>
where
    O: Kernel<Compute: Element>,
{
    type Output = HostBuffer<U>;
    #[inline(always)]
    fn run(self, f: impl Fn(T, T) -> U + Sync + Send + Copy) -> HostBuffer<U> {
        let (la, lb) = (self.la, self.lb);
        match (self.a, self.b) {
            (Operand::Own(a), Operand::Own(b)) => zip_new::<O, O, T, U, U, false>(a, la, b, lb, f),
            (Operand::Own(a), Operand::Compute(b)) => {
                zip_new::<O, O::Compute, T, U, U, false>(a, la, b, lb, f)
            }
            (Operand::Compute(a), Operand::Own(b)) => {
                zip_new::<O::Compute, O, T, U, U, false>(a, la, b, lb, f)
            }
            (Operand::Compute(a), Operand::Compute(b)) => {
                zip_new::<O::Compute, O::Compute, T, U, U, false>(a, la, b, lb, f)
            }
        }
    }
}

/// The same, stored as the operand type `O` rather than the compute type.
struct ZipNewStore<'a, O: Kernel> {
    a: Operand<'a, O>,
    la: &'a Layout,
    b: Operand<'a, O>,
    lb: &'a Layout,
}

impl<O: Element, T: Element> BinaryLoop<T, T> for ZipNewStore<'_, O> {
    type Output = HostBuffer<O>;
    #[inline(always)]
    fn run(self, f: impl Fn(T, T) -> T + Sync + Send + Copy) -> HostBuffer<O> {
        let (la, lb) = (self.la, self.lb);
        match (self.a, self.b) {
            (Operand::Own(a), Operand::Own(b)) => zip_new::<O, O, T, T, O, false>(a, la, b, lb, f),
            (Operand::Own(a), Operand::Compute(b)) => {
                zip_new::<O, O::Compute, T, T, O, false>(a, la, b, lb, f)
            }
            (Operand::Compute(a), Operand::Own(b)) => {
                zip_new::<O::Compute, O, T, T, O, false>(a, la, b, lb, f)
            }
            (Operand::Compute(a), Operand::Compute(b)) => {
                zip_new::<O::Compute, O::Compute, T, T, O, false>(a, la, b, lb, f)
            }
        }
    }
}

/// [`zip_inplace`] as a [`BinaryLoop`].
struct ZipInplace<'a, E: Kernel> {
    buf: &'a mut [E],
    dst: &'a Layout,
    src: Operand<'a, E>,
    ls: &'a Layout,
}

impl<E: Element, T: Element> BinaryLoop<T, T> for ZipInplace<'_, E> {
    type Output = ();
    #[inline(always)]
    fn run(self, f: impl Fn(T, T) -> T + Sync + Send + Copy) {
        match self.src {
            Operand::Own(s) => zip_inplace::<E, E, T>(self.buf, self.dst, s, self.ls, f),
            Operand::Compute(s) => {
                zip_inplace::<E, E::Compute, T>(self.buf, self.dst, s, self.ls, f)
            }
        }
    }
}

/// One monomorphic loop per test (no branch on the test inside the loop).
fn test_new<E: Element, T: Native>(top: TestOp, src: &[E], layout: &Layout) -> HostBuffer<bool> {
    match top {
        TestOp::Nan => map_new::<E, T, bool, bool, false>(src, layout, |x| TestOp::Nan.eval(x)),
        TestOp::Inf => map_new::<E, T, bool, bool, false>(src, layout, |x| TestOp::Inf.eval(x)),
        TestOp::Finite => {
            map_new::<E, T, bool, bool, false>(src, layout, |x| TestOp::Finite.eval(x))
        }
        TestOp::Zero => map_new::<E, T, bool, bool, false>(src, layout, |x| TestOp::Zero.eval(x)),
    }
}

pub const FLOAT_ONLY: &str = "the ops layer refuses float-only operations on other types";

macro_rules! elementwise_instances {
    (@unary float, $t:ty, $c:ty, $uop:expr, $src:expr, $l:expr) => {
        $uop.with_float::<$c, _>(MapNew::<$t, true> { src: $src, layout: $l })
    };
    (@unary numeric, $t:ty, $c:ty, $uop:expr, $src:expr, $l:expr) => {
        $uop.with_numeric::<$c, _>(MapNew::<$t, false> { src: $src, layout: $l }).expect(FLOAT_ONLY)
    };
    (@unary_ float, $t:ty, $c:ty, $uop:expr, $buf:expr, $dst:expr) => {
        $uop.with_float::<$c, _>(MapInplace::<$t, true> { buf: $buf, dst: $dst })
    };
    (@unary_ numeric, $t:ty, $c:ty, $uop:expr, $buf:expr, $dst:expr) => {
        $uop.with_numeric::<$c, _>(MapInplace::<$t, false> { buf: $buf, dst: $dst }).expect(FLOAT_ONLY)
    };
    ($($kind:ident: $($t:ty => $c:ty),*;)*) => {$($(
        impl ElementwiseInstances for $t {
            fn unary(uop: UnaryOp, src: &[$t], layout: &Layout) -> HostBuffer<$t> {
                elementwise_instances!(@unary $kind, $t, $c, uop, src, layout)
            }
            fn unary_(uop: UnaryOp, buf: &mut [$t], dst: &Layout) {
                elementwise_instances!(@unary_ $kind, $t, $c, uop, buf, dst)
            }
            fn test(top: TestOp, src: &[$t], layout: &Layout) -> HostBuffer<bool> {
                test_new::<$t, $c>(top, src, layout)
            }
            fn binary(
                bop: BinaryOp,
                a: Operand<'_, $t>,
                la: &Layout,
                b: Operand<'_, $t>,
                lb: &Layout,
            ) -> HostBuffer<$t> {
                bop.with::<$c, _>(ZipNewStore { a, la, b, lb })
            }
            fn binary_(bop: BinaryOp, buf: &mut [$t], dst: &Layout, src: Operand<'_, $t>, ls: &Layout) {
                bop.with::<$c, _>(ZipInplace { buf, dst, src, ls })
            }
            fn compare(
                cop: CompareOp,
                a: Operand<'_, $t>,
                la: &Layout,
                b: Operand<'_, $t>,
                lb: &Layout,
            ) -> HostBuffer<bool> {
                cop.with::<$c, _>(ZipNew::<$t, bool> { a, la, b, lb, _out: PhantomData })
            }
            fn where_(
                cond: &[bool],
                lc: &Layout,
                a: &[$t],
                la: &Layout,
                b: &[$t],
                lb: &Layout,
            ) -> HostBuffer<$t> {
                select_new(cond, lc, a, la, b, lb)
            }
            fn masked_fill_(buf: &mut [$t], dst: &Layout, mask: &[bool], lm: &Layout, value: $t) {
                masked_fill_inplace(buf, dst, mask, lm, value)
            }
        }
    )*)*};
}

elementwise_instances! {
    float: f16 => f32, bf16 => f32, f32 => f32, f64 => f64;
    numeric: bool => bool, u8 => u8, i8 => i8, i16 => i16, i32 => i32, i64 => i64;
}
