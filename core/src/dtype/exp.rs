//! `e^x` for `f32` and `f64`, and `tanh` for `f32`, in straight-line code that vectorises.
//!
//! libm's `expf`/`exp` are scalar calls with branches, so a loop over them runs one element
//! at a time (about 4× slower than NumPy's SIMD `exp`; BENCHMARKS.md, "Measurements behind
//! design choices"). [`exp_f32`] and [`exp_f64`] are branch-free straight-line code instead:
//!
//! 1. `x` is clamped to a range just wider than the one with finite, non-zero results
//!    (comparisons that are false for NaN, so NaN passes through unchanged);
//! 2. `x = k·ln2 + r` with `k = round(x·log2 e)` (rounded by adding and subtracting
//!    `1.5·2^23` (`f32`) or `1.5·2^52` (`f64`), whose low mantissa bits then hold `k`) and `r`
//!    computed with `ln2` split in a high part whose products with `k` are exact and a low part (Cody and Waite), so
//!    `|r| ≤ ln2/2` with an error below half an ulp of `r`;
//! 3. `e^r = 1 + r + r²·P(r)` with `P` a near-minimax polynomial on `[-ln2/2, ln2/2]`
//!    (Chebyshev fit of `(e^r - 1 - r)/r²`; relative error of the approximation 1.0e-8 for
//!    `f32` with degree 4, 1.7e-17 for `f64` with degree 9, both well below half an ulp),
//!    evaluated by Horner's rule in fused multiply-adds ([`horner`]);
//! 4. the result is scaled by `2^k` as two factors `2^(k>>1)` and `2^(k - (k>>1))`, each a
//!    normal number built from exponent bits: the first product is exact, and the second
//!    rounds once, so results in the subnormal range are rounded correctly from `e^r·2^(k>>1)`
//!    and results past the largest finite value become `+inf`.
//!
//! Measured against `f64::exp` for `f32` (4M points over `[-104.5, 89.5]` plus the floats
//! next to the overflow, underflow and reduction boundaries) and against a double-double
//! evaluation for `f64` (1M points over `[-700, 700]`, dense sweeps near 0 and ±ln2/2), the
//! largest error is 0.94 ulp for `f32` and 0.92 for `f64`, 0.75 ulp for subnormal results
//! (`tests/suite/exp_accuracy.rs`). Loops over them run near memory bandwidth when compiled for
//! wide vector registers (the CPU backend's `vmath::vectorized`).
//!
//! # Fused multiply-adds
//! Every `a·b + c` on the dependency chain is a `mul_add`: one rounding instead of two, and
//! half the latency. The chain of an element (about 25 dependent operations for `exp`, 50
//! for `erf`) is what bounds a vectorised loop over these functions, not the number of
//! operations: out-of-order execution overlaps only a few elements' chains. `mul_add` is
//! correctly rounded wherever it runs (an FMA instruction in code compiled for AVX2 or
//! AVX-512, as every loop of the CPU backend over these functions is, and libm's `fmaf`/`fma`
//! in baseline x86-64 code), so the results are the same bits on every CPU.

use num_traits::MulAdd;

/// `c[0] + x·(c[1] + x·(c[2] + …))`, by Horner's rule in fused multiply-adds (see the module
/// documentation); `c` a constant array, so the loop unrolls into straight-line code.
#[inline(always)]
pub(crate) fn horner<F: Copy + MulAdd<Output = F>>(x: F, c: &[F]) -> F {
    let (&last, rest) = c.split_last().expect("a polynomial has a coefficient");
    rest.iter().rev().fold(last, |acc, &k| acc.mul_add(x, k))
}

/// `e^x` for `f32`, branch-free (see the module documentation). Within 1 ulp of the exact
/// result; `+inf` above ~88.72, `0` below ~-103.97, correctly signed
/// infinities and NaN passed through.
#[inline(always)]
#[doc(hidden)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with 16 significant bits: k·LN2_HI is exact for |k| < 2^8.
    const LN2_HI: f32 = f32::from_bits(0x3f31_7200); // 0.693145751953125
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding 1.5·2^23 rounds a value of magnitude below 2^22 to an integer, left in the low
    // mantissa bits.
    const SHIFT: f32 = 12_582_912.0;
    // e^89 overflows and e^-104 is below half the smallest subnormal: clamping to these
    // bounds keeps k in [-150, 128], so both halves of 2^k below are normal numbers.
    const HI: f32 = 89.0;
    const LO: f32 = -104.0;
    const P: [f32; 5] = [
        0.5,
        0.166_665_77,
        0.041_666_556,
        0.008_363_203,
        0.001_392_621_3,
    ];
    // `clamp` keeps NaN.
    let x = x.clamp(LO, HI);
    // One rounding: `k` is `x·log2 e` rounded to the nearest integer.
    let z = x.mul_add(LOG2E, SHIFT);
    let k = (z.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
    let kf = z - SHIFT;
    // `x - k·LN2_HI` is exact; `r` (rounded) only feeds the polynomial, whose terms are
    // small enough that its rounding matters less there than in the linear term.
    let (rh, c) = ((-kf).mul_add(LN2_HI, x), kf * LN2_LO);
    let r = rh - c;
    let q = horner(r, &P);
    let p = 1.0 + (rh + (r * r).mul_add(q, -c));
    // For NaN, `k` is meaningless but the product stays NaN; wrapping keeps it panic-free.
    let k1 = k >> 1;
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32).wrapping_shl(23));
    let s2 = f32::from_bits((k.wrapping_sub(k1).wrapping_add(127) as u32).wrapping_shl(23));
    p * s1 * s2
}

/// `e^x` for `f64`, branch-free (see the module documentation). Within 1 ulp of the exact
/// result; `+inf` above ~709.78, `0` below ~-745.13.
#[inline(always)]
#[doc(hidden)]
pub fn exp_f64(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    // LN2_HI has 32 significant bits: k·LN2_HI is exact for |k| < 2^21.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // 6.93147180369123816490e-01
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5·2^52
    // e^710 overflows and e^-746 is below half the smallest subnormal: k stays in
    // [-1076, 1024].
    const HI: f64 = 710.0;
    const LO: f64 = -746.0;
    const P: [f64; 10] = [
        0.500_000_000_000_000_1,
        0.166_666_666_666_666_67,
        0.041_666_666_666_623_99,
        0.008_333_333_333_330_051,
        0.001_388_888_891_728_179_3,
        0.000_198_412_698_631_059_7,
        2.480_152_119_021_773e-5,
        2.755_726_837_868_419_3e-6,
        2.762_013_871_973_399_6e-7,
        2.510_042_415_700_506_7e-8,
    ];
    // `clamp` keeps NaN.
    let x = x.clamp(LO, HI);
    let z = x.mul_add(LOG2E, SHIFT);
    let k = (z.to_bits() as i64).wrapping_sub(SHIFT.to_bits() as i64);
    let kf = z - SHIFT;
    let (rh, c) = ((-kf).mul_add(LN2_HI, x), kf * LN2_LO);
    let r = rh - c;
    let q = horner(r, &P);
    let p = 1.0 + (rh + (r * r).mul_add(q, -c));
    let k1 = k >> 1;
    let s1 = f64::from_bits((k1.wrapping_add(1023) as u64).wrapping_shl(52));
    let s2 = f64::from_bits((k.wrapping_sub(k1).wrapping_add(1023) as u64).wrapping_shl(52));
    p * s1 * s2
}

/// `tanh x` for `f32`, branch-free on top of [`exp_f32`], so that a loop over it vectorises
/// (libm's `tanhf` is a scalar call, which made `tanh` the slowest step of an attention
/// layer; BENCHMARKS.md). Within 1.51 ulp of the exact result over a 4M-point sweep of
/// `[-10, 10]` (`tests/suite/exp_accuracy.rs` asserts 2), computed on `|x|` with `x`'s sign put
/// back at the end:
/// - `|x| < 0.625`: `|x| + |x|³·Q(x²)`, `Q` a degree-5 least-squares fit of
///   `(tanh x − x)/x³` weighted for relative error;
/// - otherwise `(1 − e)/(1 + e)` with `e = e^(−2|x|) ≤ 0.29`, where neither the
///   subtraction nor the division loses accuracy.
///
/// Both branches are computed and one is selected, which compiles to a blend. NaN gives
/// NaN, `±inf` gives `±1`, and `-0.0` stays `-0.0`.
#[inline(always)]
#[doc(hidden)]
pub fn tanh_f32(x: f32) -> f32 {
    const Q: [f32; 6] = [
        -0.333_333_3,
        0.133_332_06,
        -0.053_946_77,
        0.021_700_74,
        -0.008_177_47,
        0.002_143_02,
    ];
    let a = x.abs();
    let t = x * x;
    let q = horner(t, &Q);
    let small = (a * t).mul_add(q, a);
    let e = exp_f32(-2.0 * a);
    let large = (1.0 - e) / (1.0 + e);
    (if a < 0.625 { small } else { large }).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::horner;

    #[test]
    fn horner_evaluates_from_the_constant_term_up_with_one_rounding_per_step() {
        assert_eq!(
            horner(2.0f32, &[1.0, 3.0, 0.5]),
            1.0 + 2.0 * (3.0 + 2.0 * 0.5)
        );
        assert_eq!(horner(-3.0f64, &[7.0]), 7.0);
        // x·x - (1 + 2^-11) at x = 1 + 2^-12: x² = 1 + 2^-11 + 2^-24 rounds (a tie, to even)
        // to 1 + 2^-11, so a multiply then an add gives 0; one rounding keeps the 2^-24.
        let x = 1.0 + 2f32.powi(-12);
        assert_eq!(horner(x, &[-(1.0 + 2f32.powi(-11)), x]), 2f32.powi(-24));
        assert_eq!(x * x - (1.0 + 2f32.powi(-11)), 0.0);
    }
}
