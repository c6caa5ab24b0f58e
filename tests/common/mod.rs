//! Independent references for the compute tests: elements are read from the raw storage with
//! index arithmetic written here (offset + Σ index·stride), and results are computed in `f64`.

#![allow(dead_code)]

use namedtensor::{DynTensor, Element};

/// Deterministic integers in `lo..=hi` as `f64` (a small LCG, independent of the library).
pub fn data(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (s >> 33) as i64;
            (lo + r.rem_euclid(hi - lo + 1)) as f64
        })
        .collect()
}

/// Uniform floats in `[lo, hi)` (not exactly representable in general).
pub fn floats(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    data(n, seed, 0, 1 << 30)
        .into_iter()
        .map(|v| lo + (hi - lo) * v / (1u64 << 30) as f64)
        .collect()
}

/// Every multi-index of `shape` in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut ix = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(ix.clone());
        for d in (0..shape.len()).rev() {
            ix[d] += 1;
            if ix[d] < shape[d] {
                break;
            }
            ix[d] = 0;
        }
    }
    out
}

/// Row-major flat index of `ix` in `shape`, where `ix` indexes a (broadcast) shape of rank at
/// least `shape.len()`: leading extra dims are ignored and size-1 dims read index 0.
pub fn bcast_flat(ix: &[usize], shape: &[usize]) -> usize {
    let off = ix.len() - shape.len();
    let mut flat = 0;
    for (d, &s) in shape.iter().enumerate() {
        let i = if s == 1 { 0 } else { ix[off + d] };
        flat = flat * s + i;
    }
    flat
}

/// The elements of `t` in row-major order, read from the storage by index arithmetic.
pub fn elems<E: Element>(t: &DynTensor<E>) -> Vec<E> {
    let storage = t.storage().to_vec();
    indices(t.shape())
        .iter()
        .map(|ix| {
            let pos = t.storage_offset()
                + ix.iter()
                    .zip(t.stride())
                    .map(|(&i, &s)| i * s)
                    .sum::<usize>();
            storage[pos]
        })
        .collect()
}

pub fn elems_f64<E: Element>(t: &DynTensor<E>) -> Vec<f64> {
    elems(t).into_iter().map(|x| x.to_f64()).collect()
}

/// The layouts tests run every op on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Contiguous,
    Transposed,
    Offset,
    Stepped,
    Expanded,
}

pub const KINDS: [Kind; 5] = [
    Kind::Contiguous,
    Kind::Transposed,
    Kind::Offset,
    Kind::Stepped,
    Kind::Expanded,
];

/// A tensor of logical shape `shape` holding `vals` (row-major) in the layout `kind`: a
/// permuted storage, a narrowed one (offset), a step-2 slice, or (`Expanded`) the first entry
/// of dim 0 expanded along it, so that its values are `vals` with dim 0 replaced by entry 0.
pub fn view<E: Element>(vals: &[f64], shape: &[usize], kind: Kind) -> DynTensor<E> {
    let n: usize = shape.iter().product();
    assert_eq!(vals.len(), n);
    let r = shape.len();
    let cast = |v: f64| E::from_f64(v);
    match kind {
        _ if r == 0 => DynTensor::from_vec(vals.iter().map(|&v| cast(v)).collect(), shape),
        Kind::Contiguous => DynTensor::from_vec(vals.iter().map(|&v| cast(v)).collect(), shape),
        Kind::Transposed => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let mut base = vec![E::ZERO; n];
            for (k, ix) in indices(shape).iter().enumerate() {
                let rix: Vec<usize> = ix.iter().rev().copied().collect();
                base[bcast_flat(&rix, &rev)] = cast(vals[k]);
            }
            let order: Vec<isize> = (0..r as isize).rev().collect();
            DynTensor::from_vec(base, &rev).permute(&order)
        }
        Kind::Offset => {
            let mut bshape = shape.to_vec();
            bshape[0] += 2;
            let bn: usize = bshape.iter().product();
            let mut base = vec![cast(99.0); bn];
            for (k, ix) in indices(shape).iter().enumerate() {
                let mut bix = ix.clone();
                bix[0] += 1;
                base[bcast_flat(&bix, &bshape)] = cast(vals[k]);
            }
            DynTensor::from_vec(base, &bshape).narrow(0, 1, shape[0])
        }
        Kind::Stepped => {
            let mut bshape = shape.to_vec();
            bshape[r - 1] *= 2;
            let bn: usize = bshape.iter().product();
            let mut base = vec![cast(77.0); bn];
            for (k, ix) in indices(shape).iter().enumerate() {
                let mut bix = ix.clone();
                bix[r - 1] *= 2;
                base[bcast_flat(&bix, &bshape)] = cast(vals[k]);
            }
            DynTensor::from_vec(base, &bshape).slice(-1, None, None, 2)
        }
        Kind::Expanded => {
            let mut bshape = shape.to_vec();
            bshape[0] = 1;
            let bn: usize = bshape.iter().product();
            let row: Vec<E> = vals[..bn.min(vals.len())]
                .iter()
                .map(|&v| cast(v))
                .chain(std::iter::repeat(E::ZERO))
                .take(bn)
                .collect();
            let target: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
            DynTensor::from_vec(row, &bshape).expand(&target)
        }
    }
}

/// Relative and absolute tolerance for results of type `E` computed from the same inputs in
/// `f64` (one rounding to `E` plus the compute type's error).
pub fn tol<E: Element>() -> (f64, f64) {
    match E::DTYPE {
        namedtensor::DType::F64 => (1e-12, 1e-12),
        namedtensor::DType::F32 => (2e-6, 1e-6),
        namedtensor::DType::F16 => (2e-3, 1e-3),
        namedtensor::DType::BF16 => (1.6e-2, 1e-2),
        _ => (0.0, 0.0),
    }
}

/// Equal within tolerance, NaN equal to NaN, infinities equal to themselves.
pub fn close(got: f64, want: f64, rtol: f64, atol: f64) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if got.is_infinite() || want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= atol + rtol * want.abs()
}

#[track_caller]
pub fn assert_close_all(got: &[f64], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(g, w, rtol, atol),
            "{what}: element {i}: got {g}, want {w} (rtol {rtol}, atol {atol})"
        );
    }
}

pub mod views;
#[allow(unused_imports)] // each test file uses a part
pub use views::*;

#[macro_use]
pub mod devices;

/// Proptest's configuration with `cases` cases, or with `PROPTEST_CASES` cases where that
/// variable is set. (`ProptestConfig::with_cases` alone would override proptest's own
/// variable.) CI's valgrind step sets it low: memcheck runs each case ~50 times slower, and
/// what it looks for (a bad read or write in unsafe code) needs the code paths, not the count.
pub fn proptest_cases(cases: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    proptest::test_runner::Config::with_cases(cases)
}
