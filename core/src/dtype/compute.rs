//! What arithmetic means for each element type.
//!
//! - [`Kernel`] (a hidden supertrait of [`Element`]) says, for each of the ten element types,
//!   which type arithmetic is carried out in ([`Kernel::Compute`]: `f32` for `f16`/`bf16`, the
//!   type itself otherwise), what sums and products return ([`Kernel::Sum`]: `i64` for
//!   integers and `bool`, as in PyTorch) and what true division returns ([`Kernel::Real`]:
//!   `f32` for integers and `bool`).
//! - [`Native`] is the arithmetic of the eight compute types (`bool`, the five integers, `f32`,
//!   `f64`), [`NativeFloat`] the math functions of `f32` and `f64`.
//! - [`cast`] converts one value between element types.
//!
//! Integer arithmetic wraps (like PyTorch's); float `max`/`min` propagate NaN. Every function
//! here is `#[inline(always)]` and branch-light, so that kernels' loops over them vectorise.

use super::Element;
use half::{bf16, f16};
use std::any::TypeId;

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
    /// `e^x`, branch-free so that loops over it vectorise (see `backend/cpu/vmath.rs`).
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
    /// `(erf(x), e^(-x²))`, from one `exp` where the implementation allows (`f32`).
    fn erf_gauss(self) -> (Self, Self);
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
    ($($t:ident : $erf:path, $exp:path, $tanh:path, $erf_gauss:path);*) => {$(
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
            fn tanh(self) -> Self { $tanh(self) }
            #[inline(always)]
            fn erf(self) -> Self { $erf(self) }
            #[inline(always)]
            fn erf_gauss(self) -> (Self, Self) { $erf_gauss(self) }
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
    f32: super::erf::erf_f32, super::exp::exp_f32, super::exp::tanh_f32,
        super::erf::erf_and_gauss_f32;
    f64: libm::erf, super::exp::exp_f64, f64::tanh, super::erf::erf_and_gauss_f64
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

/// One value converted to another element type: a no-op for the same type, else
/// [`Element::cast`].
#[inline(always)]
#[doc(hidden)]
pub fn cast<S: Element, T: Element>(x: S) -> T {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        unsafe { std::mem::transmute_copy::<S, T>(&x) }
    } else {
        x.cast::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
