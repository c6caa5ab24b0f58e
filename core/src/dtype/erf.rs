//! The error function for `f32` in straight-line code that vectorises.
//!
//! libm's `erff` is a scalar call with branches on the argument's range, and it calls `expf`
//! for large arguments: the exact GELU of a transformer's feed-forward layers spent 28 % of a
//! training step there (BENCHMARKS.md, session 9). [`erf_f32`] evaluates both of its ranges
//! for every element and selects one, so a loop over it vectorises like [`super::exp`]:
//!
//! - `|x| < 1`: `erf(x) = x + x·Q(x²)`, `Q` a degree-6 polynomial (a weighted least-squares fit
//!   of `erf(x)/x - 1` at 400 Chebyshev nodes). Keeping the exact `x` out of the polynomial
//!   leaves only the correction term (at most 13 % of the result) to rounding.
//! - `1 ≤ |x|`: `erf(x) = 1 - e^(-x²)·R(1/|x|)`, `R` a degree-8 fit of `erfc(a)·e^(a²)` on
//!   `[1, 4]`, with `|x|` clamped to 4 in `R` (where `erfc` is below a quarter of an ulp of 1,
//!   so the result is exactly 1). `e^(-x²)` is [`super::exp::exp_f32`].
//!
//! Both polynomials run in fused multiply-adds, as `exp`'s do (see [`super::exp`] for why, and
//! why the results are the same on every CPU).
//!
//! The sign is copied from `x` (odd function, `-0` stays `-0`); NaN passes through and `±inf`
//! gives `±1`. Largest error measured against `f64` libm `erf` over a dense sweep of
//! `[-5, 5]` and tiny arguments: below 2 ulp (`tests/suite/exp_accuracy.rs`).

use super::exp::{exp_f32, horner};

/// `erf(x)` for `f32`, branch-free (see the module documentation); within 2 ulp.
#[inline(always)]
#[doc(hidden)]
pub fn erf_f32(x: f32) -> f32 {
    erf_and_gauss_f32(x).0
}

/// `(erf(x), e^(-x²))` for `f32`, the second the `exp` that `erf`'s upper range needs anyway:
/// GELU's derivative `Φ(x) + x φ(x)` takes both from one call. The first is [`erf_f32`]
/// bit for bit: on `[1, 4]` the exponent is the clamped one, and above 4 either product is
/// below a quarter of an ulp of 1.
#[inline(always)]
pub(crate) fn erf_and_gauss_f32(x: f32) -> (f32, f32) {
    // erf(a)/a - 1 = Q(a²) on [0, 1].
    const Q: [f32; 7] = [
        0.128_379_17,
        -0.376_126_26,
        0.112_836_11,
        -0.026_855_42,
        0.005_192_293_3,
        -0.000_805_188_55,
        8.010_831e-5,
    ];
    // erfc(a)·e^(a²) = R(1/a) on [1, 4].
    const R: [f32; 9] = [
        0.000_246_987_36,
        0.559_415_46,
        0.039_473_172,
        -0.462_060_4,
        0.474_965_16,
        -0.210_593_22,
        -0.003_256_680_7,
        0.041_472_934,
        -0.012_079_884,
    ];
    let a = x.abs();
    let s = a * a;
    let near = a.mul_add(horner(s, &Q), a);
    // `clamp` keeps NaN, which then runs through to the result.
    let b = a.clamp(1.0, 4.0);
    let t = 1.0 / b;
    let gauss = exp_f32(-s);
    let far = (-gauss).mul_add(horner(t, &R), 1.0);
    let y = if a < 1.0 { near } else { far };
    (y.copysign(x), gauss)
}

/// `(erf(x), e^(-x²))` for `f64` (libm's `erf`; see [`erf_and_gauss_f32`]).
#[inline(always)]
pub(crate) fn erf_and_gauss_f64(x: f64) -> (f64, f64) {
    (libm::erf(x), super::exp::exp_f64(-(x * x)))
}
