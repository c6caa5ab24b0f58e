//! Per-type arithmetic the CPU kernels are generic over.
//!
//! - [`Kernel`] (a hidden supertrait of [`Element`]) says, for each of the ten element types,
//!   which type arithmetic is carried out in ([`Kernel::Compute`]: `f32` for `f16`/`bf16`, the
//!   type itself otherwise), what sums and products return ([`Kernel::Sum`]: `i64` for
//!   integers and `bool`, as in PyTorch) and what true division returns ([`Kernel::Real`]:
//!   `f32` for integers and `bool`).
//! - [`Native`] is the arithmetic of the eight compute types (`bool`, the five integers, `f32`,
//!   `f64`), [`NativeFloat`] the math functions of `f32` and `f64`.
//! - [`convert`] converts slices between element types, with SIMD conversions for
//!   `f16`/`bf16` ↔ `f32`, and a plain copy when the types are the same.
//!
//! Integer arithmetic wraps (like PyTorch's); float `max`/`min` propagate NaN.

use crate::dtype::{DType, Element};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use std::any::TypeId;
use std::mem::MaybeUninit;

/// What the kernels need to know about an element type. Implemented for the ten element types;
/// not nameable outside the crate.
pub trait Kernel: Copy + Send + Sync + 'static {
    /// The type arithmetic is carried out in: `f32` for `f16`/`bf16`, the type itself otherwise.
    type Compute: Native;
    /// The element type of sums, products and cumulative sums: `i64` for integers and `bool`,
    /// the type itself for floats.
    type Sum: Element;
    /// The element type of true division and of other results that must be real: `f32`
    /// (PyTorch's default float type) for integers and `bool`, the type itself for floats.
    type Real: Element;
}

/// Arithmetic of a compute type (`bool`, `u8`, `i8`, `i16`, `i32`, `i64`, `f32`, `f64`).
pub trait Native: Element {
    /// The smallest value (`-inf` for floats): the identity of `max`.
    const LOWEST: Self;
    /// The largest value (`+inf` for floats): the identity of `min`.
    const HIGHEST: Self;
    /// `a + b` (wrapping; `or` for bool).
    fn nadd(self, o: Self) -> Self;
    /// `a - b` (wrapping; `xor` for bool).
    fn nsub(self, o: Self) -> Self;
    /// `a * b` (wrapping; `and` for bool).
    fn nmul(self, o: Self) -> Self;
    /// `a / b` (integers truncate; a zero divisor gives 0 — callers check divisors first).
    fn ndiv(self, o: Self) -> Self;
    /// Python's remainder: the sign of the divisor (a zero integer divisor gives 0).
    fn nrem(self, o: Self) -> Self;
    /// C's `fmod`: the sign of the dividend (a zero integer divisor gives 0).
    fn nfmod(self, o: Self) -> Self;
    /// `a ** b`; integer powers with negative exponents follow PyTorch (1, ±1 or 0).
    fn npow(self, o: Self) -> Self;
    /// The larger value; NaN if either is NaN.
    fn nmax(self, o: Self) -> Self;
    /// The smaller value; NaN if either is NaN.
    fn nmin(self, o: Self) -> Self;
    /// `-a` (wrapping).
    fn nneg(self) -> Self;
    /// `|a|` (wrapping: `abs(i8::MIN) == i8::MIN`).
    fn nabs(self) -> Self;
    /// `-1`, `0` or `1` (`0` for NaN, as PyTorch's `(0 < a) - (a < 0)`).
    fn nsign(self) -> Self;
    /// Whether the value is NaN (never for integers).
    fn is_nan(self) -> bool;
    /// Whether the value is neither infinite nor NaN (always for integers).
    fn is_finite(self) -> bool;
    /// Whether the value is zero.
    fn is_zero(self) -> bool;
}

/// Math functions of `f32` and `f64`.
pub trait NativeFloat: Native {
    /// `e^x`, branch-free so that loops over it vectorise (see [`super::vmath`]).
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + x)`, accurate near 0.
    fn ln_1p(self) -> Self;
    /// `e^x - 1`, accurate near 0.
    fn exp_m1(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// Round toward `-inf`.
    fn floor(self) -> Self;
    /// Round toward `+inf`.
    fn ceil(self) -> Self;
    /// Round to nearest, ties to even (PyTorch's `round`).
    fn round(self) -> Self;
    /// Round toward zero.
    fn trunc(self) -> Self;
    /// `x^e` for a float exponent.
    fn powf(self, e: Self) -> Self;
    /// The value of an `f64` constant in this type.
    fn c(v: f64) -> Self;
}

macro_rules! int_native {
    ($($t:ty : $signed:tt),*) => {$(
        impl Native for $t {
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn nadd(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn nsub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)]
            fn nmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)]
            fn ndiv(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            #[inline(always)]
            fn nrem(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                int_native!(@fix $signed, r, o)
            }
            #[inline(always)]
            fn nfmod(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_rem(o) } }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn npow(self, o: Self) -> Self {
                if o < 0 {
                    // PyTorch's integer pow: 1^-n = 1, (-1)^-n = ±1, anything else truncates to 0.
                    #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
                    return if self == 1 {
                        1
                    } else if self.wrapping_add(1) == 0 && self < 0 {
                        if o.wrapping_rem(2) == 0 { 1 } else { self }
                    } else {
                        0
                    };
                }
                let e = (o as u64).min(u32::MAX as u64) as u32;
                self.wrapping_pow(e)
            }
            #[inline(always)]
            fn nmax(self, o: Self) -> Self { if self > o { self } else { o } }
            #[inline(always)]
            fn nmin(self, o: Self) -> Self { if self < o { self } else { o } }
            #[inline(always)]
            fn nneg(self) -> Self { (0 as $t).wrapping_sub(self) }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn nabs(self) -> Self { if self < 0 { (0 as $t).wrapping_sub(self) } else { self } }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn nsign(self) -> Self { ((0 < self) as $t).wrapping_sub((self < 0) as $t) }
            #[inline(always)]
            fn is_nan(self) -> bool { false }
            #[inline(always)]
            fn is_finite(self) -> bool { true }
            #[inline(always)]
            fn is_zero(self) -> bool { self == 0 }
        }
    )*};
    (@fix signed, $r:ident, $o:ident) => {
        if $r != 0 && (($r < 0) != ($o < 0)) { $r.wrapping_add($o) } else { $r }
    };
    (@fix unsigned, $r:ident, $o:ident) => { $r };
}
int_native!(u8: unsigned, i8: signed, i16: signed, i32: signed, i64: signed);

impl Native for bool {
    const LOWEST: Self = false;
    const HIGHEST: Self = true;
    #[inline(always)]
    fn nadd(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn nsub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn nmul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn ndiv(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn nrem(self, _o: Self) -> Self {
        false
    }
    #[inline(always)]
    fn nfmod(self, _o: Self) -> Self {
        false
    }
    #[inline(always)]
    fn npow(self, o: Self) -> Self {
        self | !o
    }
    #[inline(always)]
    fn nmax(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn nmin(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn nneg(self) -> Self {
        self
    }
    #[inline(always)]
    fn nabs(self) -> Self {
        self
    }
    #[inline(always)]
    fn nsign(self) -> Self {
        self
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        true
    }
    #[inline(always)]
    fn is_zero(self) -> bool {
        !self
    }
}

macro_rules! float_native {
    ($($t:ident : $erf:path, $exp:path);*) => {$(
        impl Native for $t {
            const LOWEST: Self = $t::NEG_INFINITY;
            const HIGHEST: Self = $t::INFINITY;
            #[inline(always)]
            fn nadd(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn nsub(self, o: Self) -> Self { self - o }
            #[inline(always)]
            fn nmul(self, o: Self) -> Self { self * o }
            #[inline(always)]
            fn ndiv(self, o: Self) -> Self { self / o }
            #[inline(always)]
            fn nrem(self, o: Self) -> Self {
                let r = self % o;
                if r != 0.0 && ((r < 0.0) != (o < 0.0)) { r + o } else { r }
            }
            #[inline(always)]
            fn nfmod(self, o: Self) -> Self { self % o }
            #[inline(always)]
            fn npow(self, o: Self) -> Self { self.powf(o) }
            // `a > b || a is NaN` selects a NaN from either side, and compiles to a compare and
            // a blend, so loops over it vectorise.
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn nmax(self, o: Self) -> Self { if self > o || self != self { self } else { o } }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn nmin(self, o: Self) -> Self { if self < o || self != self { self } else { o } }
            #[inline(always)]
            fn nneg(self) -> Self { -self }
            #[inline(always)]
            fn nabs(self) -> Self { self.abs() }
            #[inline(always)]
            fn nsign(self) -> Self { ((0.0 < self) as u8 as $t) - ((self < 0.0) as u8 as $t) }
            #[inline(always)]
            fn is_nan(self) -> bool { self.is_nan() }
            #[inline(always)]
            fn is_finite(self) -> bool { self.is_finite() }
            #[inline(always)]
            fn is_zero(self) -> bool { self == 0.0 }
        }
        impl NativeFloat for $t {
            #[inline(always)]
            fn exp(self) -> Self { $exp(self) }
            #[inline(always)]
            fn ln(self) -> Self { $t::ln(self) }
            #[inline(always)]
            fn ln_1p(self) -> Self { $t::ln_1p(self) }
            #[inline(always)]
            fn exp_m1(self) -> Self { $t::exp_m1(self) }
            #[inline(always)]
            fn sqrt(self) -> Self { $t::sqrt(self) }
            #[inline(always)]
            fn sin(self) -> Self { $t::sin(self) }
            #[inline(always)]
            fn cos(self) -> Self { $t::cos(self) }
            #[inline(always)]
            fn tan(self) -> Self { $t::tan(self) }
            #[inline(always)]
            fn tanh(self) -> Self { $t::tanh(self) }
            #[inline(always)]
            fn erf(self) -> Self { $erf(self) }
            #[inline(always)]
            fn floor(self) -> Self { $t::floor(self) }
            #[inline(always)]
            fn ceil(self) -> Self { $t::ceil(self) }
            #[inline(always)]
            fn round(self) -> Self { $t::round_ties_even(self) }
            #[inline(always)]
            fn trunc(self) -> Self { $t::trunc(self) }
            #[inline(always)]
            fn powf(self, e: Self) -> Self { $t::powf(self, e) }
            #[inline(always)]
            fn c(v: f64) -> Self { v as $t }
        }
    )*};
}
float_native!(
    f32: libm::erff, super::vmath::exp_f32;
    f64: libm::erf, super::vmath::exp_f64
);

macro_rules! kernel {
    ($($t:ty => $compute:ty, $sum:ty, $real:ty);* $(;)?) => {$(
        impl Kernel for $t {
            type Compute = $compute;
            type Sum = $sum;
            type Real = $real;
        }
    )*};
}
kernel! {
    bool => bool, i64, f32;
    u8 => u8, i64, f32;
    i8 => i8, i64, f32;
    i16 => i16, i64, f32;
    i32 => i32, i64, f32;
    i64 => i64, i64, f32;
    f16 => f32, f16, f16;
    bf16 => f32, bf16, bf16;
    f32 => f32, f32, f32;
    f64 => f64, f64, f64;
}

/// `s` seen as a slice of `T`, when `S` is `T`.
#[inline(always)]
pub(crate) fn as_type<S: 'static, T: 'static>(s: &[S]) -> Option<&[T]> {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        Some(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<T>(), s.len()) })
    } else {
        None
    }
}

/// `s` seen as a mutable slice of `T`, when `S` is `T`.
#[inline(always)]
pub(crate) fn as_type_mut<S: 'static, T: 'static>(s: &mut [S]) -> Option<&mut [T]> {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        Some(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<T>(), s.len()) })
    } else {
        None
    }
}

/// `s` seen as a mutable slice of uninitialised `T`, when `S` is `T`.
#[inline(always)]
pub(crate) fn as_uninit_type_mut<S: 'static, T: 'static>(
    s: &mut [MaybeUninit<S>],
) -> Option<&mut [MaybeUninit<T>]> {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        Some(unsafe {
            std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<MaybeUninit<T>>(), s.len())
        })
    } else {
        None
    }
}

/// One value converted to another element type: a no-op for the same type, else
/// [`Element::cast`].
#[inline(always)]
pub(crate) fn cast<S: Element, T: Element>(x: S) -> T {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        unsafe { std::mem::transmute_copy::<S, T>(&x) }
    } else {
        x.cast::<T>()
    }
}

/// Converts `src` into `dst` (same length) elementwise with [`Element::cast`]'s rounding: a
/// copy for the same type, SIMD conversions between `f16`/`bf16` and `f32`/`f64`.
#[inline]
pub(crate) fn convert<S: Element, T: Element>(src: &[S], dst: &mut [T]) {
    debug_assert_eq!(src.len(), dst.len());
    if let Some(s) = as_type::<S, T>(src) {
        dst.copy_from_slice(s);
        return;
    }
    match (S::DTYPE, T::DTYPE) {
        (DType::F16, DType::F32) => f16_to_f32(
            as_type::<S, f16>(src).unwrap(),
            as_type_mut::<T, f32>(dst).unwrap(),
        ),
        (DType::F32, DType::F16) => f32_to_f16(
            as_type::<S, f32>(src).unwrap(),
            as_type_mut::<T, f16>(dst).unwrap(),
        ),
        (DType::F16, DType::F64) => {
            as_type::<S, f16>(src)
                .unwrap()
                .convert_to_f64_slice(as_type_mut::<T, f64>(dst).unwrap());
        }
        (DType::F64, DType::F16) => {
            as_type_mut::<T, f16>(dst)
                .unwrap()
                .convert_from_f64_slice(as_type::<S, f64>(src).unwrap());
        }
        (DType::BF16, DType::F32) => bf16_to_f32(
            as_type::<S, bf16>(src).unwrap(),
            as_type_mut::<T, f32>(dst).unwrap(),
        ),
        (DType::F32, DType::BF16) => f32_to_bf16(
            as_type::<S, f32>(src).unwrap(),
            as_type_mut::<T, bf16>(dst).unwrap(),
        ),
        _ => {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = s.cast::<T>();
            }
        }
    }
}

/// `f16` → `f32`: a whole-slice F16C loop where the CPU has it (8 per instruction, with no
/// call per chunk), else `half`'s slice conversion.
#[inline]
fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU supports F16C (and AVX, which F16C implies).
        return unsafe { x86::f16_to_f32_f16c(src, dst) };
    }
    src.convert_to_f32_slice(dst)
}

/// `f32` → `f16`, rounding to nearest even: F16C where available, else `half`.
#[inline]
fn f32_to_f16(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU supports F16C (and AVX, which F16C implies).
        return unsafe { x86::f32_to_f16_f16c(src, dst) };
    }
    dst.convert_from_f32_slice(src)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use half::slice::HalfFloatSliceExt;
    use half::{bf16, f16};
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support F16C and AVX.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn f16_to_f32_f16c(src: &[f16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let body = n - n % 8;
        let (s, d) = (src.as_ptr().cast::<u16>(), dst.as_mut_ptr());
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= n, within both slices; unaligned loads and stores.
            unsafe {
                let h = _mm_loadu_si128(s.add(i).cast::<__m128i>());
                _mm256_storeu_ps(d.add(i), _mm256_cvtph_ps(h));
            }
            i += 8;
        }
        src[body..n].convert_to_f32_slice(&mut dst[body..n]);
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bf16_to_f32_avx2(src: &[bf16], dst: &mut [f32]) {
        super::bf16_to_f32_plain(src, dst)
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn f32_to_bf16_avx2(src: &[f32], dst: &mut [bf16]) {
        super::f32_to_bf16_plain(src, dst)
    }

    /// # Safety
    /// The CPU must support F16C and AVX.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn f32_to_f16_f16c(src: &[f32], dst: &mut [f16]) {
        let n = src.len().min(dst.len());
        let body = n - n % 8;
        let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u16>());
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= n, within both slices; unaligned loads and stores.
            unsafe {
                let f = _mm256_loadu_ps(s.add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(f);
                _mm_storeu_si128(d.add(i).cast::<__m128i>(), h);
            }
            i += 8;
        }
        dst[body..n].convert_from_f32_slice(&src[body..n]);
    }
}

/// `bf16` → `f32` is exact: the bits shifted into the high half. Written on bits so that the
/// loop vectorises; compiled for AVX2 as well and chosen at run time.
#[inline]
fn bf16_to_f32(src: &[bf16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2.
        return unsafe { x86::bf16_to_f32_avx2(src, dst) };
    }
    bf16_to_f32_plain(src, dst)
}

#[inline(always)]
fn bf16_to_f32_plain(src: &[bf16], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f32::from_bits((s.to_bits() as u32) << 16);
    }
}

/// `f32` → `bf16`, rounding to nearest even with NaN kept quiet (what `bf16::from_f32` does),
/// written branch-free on bits so that the loop vectorises (SSE2 cannot narrow 32-bit lanes to
/// 16 bits in one instruction, so the AVX2 build of the same loop is chosen when available).
#[inline]
fn f32_to_bf16(src: &[f32], dst: &mut [bf16]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2.
        return unsafe { x86::f32_to_bf16_avx2(src, dst) };
    }
    f32_to_bf16_plain(src, dst)
}

#[inline(always)]
fn f32_to_bf16_plain(src: &[f32], dst: &mut [bf16]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        let x = s.to_bits();
        let rounded = (x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16) as u16;
        let nan = ((x >> 16) as u16) | 0x0040;
        let is_nan = (x & 0x7FFF_FFFF) > 0x7F80_0000;
        *d = bf16::from_bits(if is_nan { nan } else { rounded });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_conversions_match_half() {
        let xs = [
            0.0f32,
            -0.0,
            1.0,
            f32::from_bits(0x3F80_8000), // 1 + 2^-8: a tie, rounds to even (down)
            f32::from_bits(0x3F81_8000), // 1 + 3·2^-8: a tie, rounds to even (up)
            3.0e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
            -2.5e-39,
            f32::MAX,
            65504.0,
            0.1,
        ];
        let mut b = [bf16::ZERO; 14];
        f32_to_bf16(&xs, &mut b);
        for (x, y) in xs.iter().zip(&b) {
            let want = bf16::from_f32(*x);
            assert!(
                want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                "{x}"
            );
        }
        let mut back = [0.0f32; 14];
        bf16_to_f32(&b, &mut back);
        for (y, z) in b.iter().zip(&back) {
            assert!(y.to_f32() == *z || z.is_nan());
        }
    }

    #[test]
    fn f16_conversions_match_half() {
        let xs: Vec<f32> = (0..1000)
            .map(|i| ((i as f32) - 500.0) * 0.37 + 1e-6 * i as f32)
            .chain([
                f32::NAN,
                f32::INFINITY,
                65520.0,
                1e-8,
                -0.0,
                65504.0,
                2049.0,
            ])
            .collect();
        let mut h = vec![f16::ZERO; xs.len()];
        f32_to_f16(&xs, &mut h);
        let mut back = vec![0.0f32; xs.len()];
        f16_to_f32(&h, &mut back);
        for ((x, y), z) in xs.iter().zip(&h).zip(&back) {
            let want = f16::from_f32(*x);
            assert!(
                want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                "{x}"
            );
            assert!(want.to_f32() == *z || z.is_nan(), "{x}");
        }
    }

    #[test]
    fn integer_remainder_and_pow_follow_pytorch() {
        assert_eq!((-7i32).nrem(3), 2);
        assert_eq!(7i32.nrem(-3), -2);
        assert_eq!((-7i32).nfmod(3), -1);
        assert_eq!(2i64.npow(-1), 0);
        assert_eq!((-1i8).npow(-3), -1);
        assert_eq!((-1i8).npow(-2), 1);
        assert_eq!(3i16.npow(3), 27);
        assert_eq!(i8::MIN.nabs(), i8::MIN);
        assert_eq!((-5.5f32).nrem(2.0), 0.5);
        assert!(f32::NAN.nmax(1.0).is_nan() && 1.0f32.nmax(f32::NAN).is_nan());
        assert_eq!(f64::NAN.nsign(), 0.0);
    }
}
