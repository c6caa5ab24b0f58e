//! Reductions, softmax and cumulative sums against f64 references computed here, on every
//! layout, over random dim sets with and without keepdim.
//!
//! Tolerances: results are compared with the f64 reference rounded to the output type. Sums of
//! `n` floats computed pairwise in `f32` are allowed a relative error of `1e-5` of `Σ|x|`
//! (the bound is ~50 ε); `f16`/`bf16` results one rounding of their type; `f64` `1e-12`.

use crate::common;

use common::*;
use half::{bf16, f16};
use namedtensor::{DynTensor, ErrorKind};

#[allow(dead_code)]
fn generic_float_sum<E: namedtensor::Float>(t: &DynTensor<E>) -> DynTensor<E> {
    t.sum() / t.mean() + t.amax() * t.norm(2.0)
}

#[allow(dead_code)]
fn generic_numeric<E: namedtensor::Numeric>(a: &DynTensor<E>, b: &DynTensor<E>) -> DynTensor<E> {
    (a + b).abs() - b
}
use proptest::prelude::*;

/// Groups the elements of a row-major tensor by their kept index: one bucket per output, each
/// in row-major order of the reduced dims. Returns the output shape and the buckets.
fn buckets(
    vals: &[f64],
    shape: &[usize],
    mask: &[bool],
    keepdim: bool,
) -> (Vec<usize>, Vec<Vec<f64>>) {
    let kept: Vec<usize> = shape
        .iter()
        .zip(mask)
        .filter(|&(_, &m)| !m)
        .map(|(&s, _)| s)
        .collect();
    let out_shape: Vec<usize> = shape
        .iter()
        .zip(mask)
        .filter_map(|(&s, &m)| {
            if !m {
                Some(s)
            } else if keepdim {
                Some(1)
            } else {
                None
            }
        })
        .collect();
    let k: usize = kept.iter().product();
    let mut b = vec![Vec::new(); k];
    for (ix, &v) in indices(shape).iter().zip(vals) {
        let kix: Vec<usize> = ix
            .iter()
            .zip(mask)
            .filter(|&(_, &m)| !m)
            .map(|(&i, _)| i)
            .collect();
        b[bcast_flat(&kix, &kept)].push(v);
    }
    (out_shape, b)
}

fn mask_of(dims: &[isize], rank: usize) -> Vec<bool> {
    if dims.is_empty() {
        return vec![true; rank];
    }
    let mut m = vec![false; rank];
    for &d in dims {
        m[if d < 0 {
            (d + rank as isize) as usize
        } else {
            d as usize
        }] = true;
    }
    m
}

fn ref_sum(x: &[f64]) -> f64 {
    x.iter().sum()
}
fn ref_mean(x: &[f64]) -> f64 {
    ref_sum(x) / x.len() as f64
}
fn ref_var(x: &[f64], c: usize) -> f64 {
    let m = ref_mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - c as f64)
}
fn ref_max(x: &[f64]) -> f64 {
    x.iter().fold(f64::NEG_INFINITY, |a, &b| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    })
}
fn ref_min(x: &[f64]) -> f64 {
    -ref_max(&x.iter().map(|v| -v).collect::<Vec<_>>())
}
fn ref_lse(x: &[f64]) -> f64 {
    let m = ref_max(x);
    let m = if m.is_finite() { m } else { 0.0 };
    x.iter().map(|v| (v - m).exp()).sum::<f64>().ln() + m
}
fn ref_norm(x: &[f64], p: f64) -> f64 {
    if p == f64::INFINITY {
        return x.iter().fold(0.0, |a, v| a.max(v.abs()));
    }
    if p == 0.0 {
        return x.iter().filter(|v| **v != 0.0).count() as f64;
    }
    x.iter().map(|v| v.abs().powf(p)).sum::<f64>().powf(1.0 / p)
}
fn ref_argmax(x: &[f64]) -> f64 {
    let mut bi = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[bi] {
            bi = i;
        }
    }
    bi as f64
}
fn ref_argmin(x: &[f64]) -> f64 {
    let mut bi = 0;
    for (i, &v) in x.iter().enumerate() {
        if v < x[bi] {
            bi = i;
        }
    }
    bi as f64
}

/// An op's result, its reference over one output's elements, and a tolerance scale.
type Case<E> = (&'static str, DynTensor<E>, Box<dyn Fn(&[f64]) -> f64>, f64);

const DIMSETS: &[&[isize]] = &[&[0], &[-1], &[1], &[0, 2], &[1, 2], &[0, 1, 2], &[]];

fn check_float_reductions<E: namedtensor::Float>(rtol: f64, atol: f64) {
    for shape in [
        vec![4usize, 5, 6],
        vec![3, 1, 7],
        vec![2, 300, 3],
        vec![1, 2, 1],
    ] {
        let n: usize = shape.iter().product();
        let vals = floats(n, 17, -2.0, 2.0);
        for kind in KINDS {
            let t = view::<E>(&vals, &shape, kind);
            let e = elems_f64(&t);
            for dims in DIMSETS {
                let mask = mask_of(dims, 3);
                for keepdim in [false, true] {
                    let (os, b) = buckets(&e, &shape, &mask, keepdim);
                    let cases: Vec<Case<E>> = vec![
                        ("sum", t.sum_dims(dims, keepdim), Box::new(ref_sum), 1.0),
                        ("mean", t.mean_dims(dims, keepdim), Box::new(ref_mean), 1.0),
                        (
                            "var",
                            t.var_dims(dims, 1, keepdim),
                            Box::new(|x| ref_var(x, 1)),
                            4.0,
                        ),
                        (
                            "var0",
                            t.var_dims(dims, 0, keepdim),
                            Box::new(|x| ref_var(x, 0)),
                            4.0,
                        ),
                        (
                            "std",
                            t.std_dims(dims, 1, keepdim),
                            Box::new(|x| ref_var(x, 1).sqrt()),
                            4.0,
                        ),
                        (
                            "norm2",
                            t.norm_dims(2.0, dims, keepdim),
                            Box::new(|x| ref_norm(x, 2.0)),
                            1.0,
                        ),
                        (
                            "norm1",
                            t.norm_dims(1.0, dims, keepdim),
                            Box::new(|x| ref_norm(x, 1.0)),
                            1.0,
                        ),
                        (
                            "norm3",
                            t.norm_dims(3.0, dims, keepdim),
                            Box::new(|x| ref_norm(x, 3.0)),
                            1.0,
                        ),
                        (
                            "norminf",
                            t.norm_dims(f64::INFINITY, dims, keepdim),
                            Box::new(|x| ref_norm(x, f64::INFINITY)),
                            1.0,
                        ),
                        ("amax", t.amax_dims(dims, keepdim), Box::new(ref_max), 1.0),
                        ("amin", t.amin_dims(dims, keepdim), Box::new(ref_min), 1.0),
                        (
                            "logsumexp",
                            t.logsumexp_dims(dims, keepdim),
                            Box::new(ref_lse),
                            1.0,
                        ),
                    ];
                    for (name, r, f, scale) in cases {
                        assert_eq!(r.shape(), &os[..], "{name} {dims:?} {keepdim}");
                        let got = elems_f64(&r);
                        for (i, bucket) in b.iter().enumerate() {
                            let want = E::from_f64(f(bucket)).to_f64();
                            // Error relative to the magnitude of the terms, not of the result.
                            let mag: f64 =
                                bucket.iter().map(|v| v.abs()).sum::<f64>().max(want.abs());
                            let ok = (got[i].is_nan() && want.is_nan())
                                || (got[i] - want).abs() <= atol * scale + rtol * scale * mag;
                            assert!(
                                ok,
                                "{name} {kind:?} {shape:?} dims {dims:?} keepdim {keepdim} {}: output {i}: got {}, want {want}",
                                E::DTYPE,
                                got[i]
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn float_reductions_match_reference() {
    check_float_reductions::<f32>(1e-5, 1e-6);
    check_float_reductions::<f64>(1e-12, 1e-12);
    check_float_reductions::<f16>(1e-3, 2e-3);
    check_float_reductions::<bf16>(8e-3, 1e-2);
}

#[test]
fn integer_and_bool_reductions() {
    let shape = [3usize, 4, 5];
    let vals = data(60, 3, -9, 9);
    for kind in KINDS {
        let t = view::<i32>(&vals, &shape, kind);
        let e = elems_f64(&t);
        for dims in DIMSETS {
            let mask = mask_of(dims, 3);
            for keepdim in [false, true] {
                let (os, b) = buckets(&e, &shape, &mask, keepdim);
                let s: DynTensor<i64> = t.sum_dims(dims, keepdim);
                assert_eq!(s.shape(), &os[..]);
                assert_eq!(
                    elems_f64(&s),
                    b.iter().map(|x| ref_sum(x)).collect::<Vec<_>>()
                );
                assert_eq!(
                    elems_f64(&t.amax_dims(dims, keepdim)),
                    b.iter().map(|x| ref_max(x)).collect::<Vec<_>>()
                );
                assert_eq!(
                    elems_f64(&t.amin_dims(dims, keepdim)),
                    b.iter().map(|x| ref_min(x)).collect::<Vec<_>>()
                );
                let small = view::<i8>(&data(60, 4, -2, 2), &shape, kind);
                let (_, bs) = buckets(&elems_f64(&small), &shape, &mask, keepdim);
                let p: DynTensor<i64> = small.prod_dims(dims, keepdim);
                assert_eq!(
                    elems_f64(&p),
                    bs.iter()
                        .map(|x| x.iter().product::<f64>())
                        .collect::<Vec<_>>()
                );
            }
        }
        let bools = view::<bool>(&data(60, 5, 0, 1), &shape, kind);
        let eb = elems_f64(&bools);
        assert_eq!(bools.sum().item(), eb.iter().sum::<f64>() as i64);
        assert_eq!(bools.any(), eb.iter().any(|&x| x != 0.0));
        assert_eq!(bools.all(), eb.iter().all(|&x| x != 0.0));
        let (_, b) = buckets(&eb, &shape, &[false, true, false], false);
        assert_eq!(
            elems_f64(&bools.any_dim(1, false)),
            b.iter()
                .map(|x| x.iter().any(|&v| v != 0.0) as u8 as f64)
                .collect::<Vec<_>>()
        );
        assert_eq!(
            elems_f64(&bools.all_dim(1, false)),
            b.iter()
                .map(|x| x.iter().all(|&v| v != 0.0) as u8 as f64)
                .collect::<Vec<_>>()
        );
    }
    // u8 sums do not wrap: they accumulate in i64.
    assert_eq!(DynTensor::<u8>::full(&[1000], 255).sum().item(), 255_000);
}

#[test]
fn max_min_with_indices_and_argmax() {
    for shape in [vec![4usize, 5, 6], vec![2, 40, 3], vec![30, 20]] {
        let r = shape.len();
        let n: usize = shape.iter().product();
        // Few distinct values: many ties, which must resolve to the first index.
        let vals = data(n, 8, -3, 3);
        for kind in KINDS {
            let t = view::<f32>(&vals, &shape, kind);
            let e = elems_f64(&t);
            for d in 0..r as isize {
                let mask = mask_of(&[d], r);
                for keepdim in [false, true] {
                    let (os, b) = buckets(&e, &shape, &mask, keepdim);
                    let (v, i) = t.max_dim(d, keepdim);
                    assert_eq!((v.shape(), i.shape()), (&os[..], &os[..]));
                    assert_eq!(
                        elems_f64(&v),
                        b.iter().map(|x| ref_max(x)).collect::<Vec<_>>()
                    );
                    assert_eq!(
                        elems_f64(&i),
                        b.iter().map(|x| ref_argmax(x)).collect::<Vec<_>>(),
                        "{kind:?} {shape:?} {d}"
                    );
                    let (v, i) = t.min_dim(d, keepdim);
                    assert_eq!(
                        elems_f64(&v),
                        b.iter().map(|x| ref_min(x)).collect::<Vec<_>>()
                    );
                    assert_eq!(
                        elems_f64(&i),
                        b.iter().map(|x| ref_argmin(x)).collect::<Vec<_>>()
                    );
                    assert_eq!(
                        elems_f64(&t.argmax_dim(d, keepdim)),
                        b.iter().map(|x| ref_argmax(x)).collect::<Vec<_>>()
                    );
                    assert_eq!(
                        elems_f64(&t.argmin_dim(d, keepdim)),
                        b.iter().map(|x| ref_argmin(x)).collect::<Vec<_>>()
                    );
                }
            }
            assert_eq!(t.argmax().item() as f64, ref_argmax(&e));
            assert_eq!(t.argmin().item() as f64, ref_argmin(&e));
            assert_eq!(t.max().item() as f64, ref_max(&e));
            assert_eq!(t.min().item() as f64, ref_min(&e));
        }
    }
    // NaN wins and propagates.
    let t = DynTensor::from_vec(vec![1.0f32, f32::NAN, 3.0, f32::NAN], &[4]);
    assert_eq!(t.argmax().item(), 1);
    assert_eq!(t.argmin().item(), 1);
    assert!(t.max().item().is_nan() && t.amin().item().is_nan());
    let h = DynTensor::from_vec(vec![f16::from_f32(1.0), f16::from_f32(-2.0)], &[2, 1]);
    assert_eq!(h.min_dim(0, false).1.to_vec(), vec![1]);
}

#[test]
fn large_f32_sums_are_accurate() {
    let n = 10_000_000;
    let t = DynTensor::<f32>::full(&[n], 0.1);
    let want = n as f64 * 0.1f32 as f64;
    let got = t.sum().item() as f64;
    eprintln!(
        "sum of 10M × 0.1f32: {got} (f64: {want}), relative error {:e}",
        (got - want) / want
    );
    assert!(
        ((got - want) / want).abs() < 1e-6,
        "sum of 10M × 0.1: {got} vs {want}"
    );
    let mean = t.mean().item() as f64;
    assert!(((mean - 0.1f32 as f64) / 0.1).abs() < 1e-6, "mean {mean}");
    // Random values, contiguous (inner pairwise) and column sums (outer, over 2^20 rows).
    let v: Vec<f32> = floats(1 << 22, 5, 0.0, 1.0)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    let want: f64 = v.iter().map(|&x| x as f64).sum();
    let t = DynTensor::from_vec(v.clone(), &[1 << 22]);
    let got = t.sum().item() as f64;
    assert!(((got - want) / want).abs() < 1e-6, "{got} vs {want}");
    let cols = t.view(&[1 << 20, 4]).sum_dim(0, false).to_vec();
    for (c, &g) in cols.iter().enumerate() {
        let w: f64 = v.iter().skip(c).step_by(4).map(|&x| x as f64).sum();
        assert!(((g as f64 - w) / w).abs() < 1e-6, "column {c}: {g} vs {w}");
    }
    // The outer traversal over 2^20 rows of 0.1 (8 columns): pairwise leaves and cascade; a
    // sequential column loop is off by ~1e-3 here.
    let want = (1u64 << 20) as f64 * 0.1f32 as f64;
    for (c, &g) in DynTensor::<f32>::full(&[1 << 20, 8], 0.1)
        .sum_dim(0, false)
        .to_vec()
        .iter()
        .enumerate()
    {
        assert!(
            ((g as f64 - want) / want).abs() < 1e-6,
            "column {c}: {g} vs {want}"
        );
    }
    // Wide columns (vectorised outer traversal).
    let rows = t.view(&[1 << 12, 1 << 10]).sum_dim(0, false).to_vec();
    for c in [0usize, 517, 1023] {
        let w: f64 = v.iter().skip(c).step_by(1 << 10).map(|&x| x as f64).sum();
        assert!(((rows[c] as f64 - w) / w).abs() < 1e-6);
    }
}

#[test]
fn parallel_reduction_paths() {
    namedtensor::set_parallel_threshold(1 << 10);
    // Few outputs with long reductions (split within an output), many outputs, outer with bands.
    for (shape, dims) in [
        (vec![2usize, 100_003], vec![1isize]),
        (vec![100_003], vec![0]),
        (vec![5_000, 16], vec![0]),
        (vec![3, 4_000, 40], vec![1]),
        (vec![4_000, 40], vec![1]),
        (vec![64, 64, 64], vec![0, 2]),
    ] {
        let n: usize = shape.iter().product();
        let vals = data(n, 2, -9, 9);
        for kind in [Kind::Contiguous, Kind::Transposed, Kind::Stepped] {
            let t = view::<f64>(&vals, &shape, kind);
            let e = elems_f64(&t);
            let mask = mask_of(&dims, shape.len());
            let (_, b) = buckets(&e, &shape, &mask, false);
            assert_eq!(
                elems_f64(&t.sum_dims(&dims, false)),
                b.iter().map(|x| ref_sum(x)).collect::<Vec<_>>(),
                "{shape:?} {kind:?}"
            );
            assert_eq!(
                elems_f64(&t.amax_dims(&dims, false)),
                b.iter().map(|x| ref_max(x)).collect::<Vec<_>>()
            );
            let h = view::<f16>(&vals, &shape, kind);
            let got = elems_f64(&h.sum_dims(&dims, false));
            for (g, x) in got.iter().zip(&b) {
                assert_eq!(
                    *g,
                    f16::from_f64(ref_sum(x)).to_f64(),
                    "f16 sums of small integers are exact in f32"
                );
            }
        }
    }
}

#[test]
fn empty_reductions() {
    let e = DynTensor::<f32>::zeros(&[0, 3]);
    assert_eq!(e.sum().item(), 0.0);
    assert_eq!(e.prod().item(), 1.0);
    assert!(e.mean().item().is_nan());
    assert_eq!(e.logsumexp().item(), f32::NEG_INFINITY);
    assert_eq!(e.sum_dim(0, false).to_vec(), vec![0.0; 3]);
    assert_eq!(e.sum_dim(1, true).shape(), &[0, 1]);
    assert_eq!(e.amax_dim(1, false).shape(), &[0]); // nothing to reduce per output, no outputs
    for err in [
        e.try_max().unwrap_err(),
        e.try_min().unwrap_err(),
        e.try_argmax().unwrap_err(),
        e.try_amax_dim(0, false).unwrap_err(),
        e.try_max_dim(0, false).unwrap_err(),
        e.try_argmin_dim(0, true).unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("[0, 3]"), "{err}");
    }
    assert_eq!(DynTensor::<i32>::zeros(&[0]).sum().item(), 0i64);
    assert_eq!(DynTensor::<i32>::zeros(&[0]).prod().item(), 1i64);
}

#[test]
fn bad_dims() {
    let t = DynTensor::<f32>::ones(&[2, 3]);
    assert_eq!(
        t.try_sum_dim(2, false).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_sum_dim(-3, false).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_mean_dims(&[0, 0], false).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        t.try_max_dim(5, false).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_softmax(2).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_cumsum(-3).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(t.to_vec(), vec![1.0; 6]);
    // A 0-d tensor accepts dim 0 / -1.
    let s = DynTensor::scalar(2.5f32);
    assert_eq!(s.sum_dim(0, false).item(), 2.5);
    assert_eq!(s.softmax(-1).item(), 1.0);
    assert_eq!(s.cumsum(0).item(), 2.5);
    assert_eq!(s.max_dim(0, false).1.item(), 0);
}

fn ref_softmax(x: &[f64]) -> Vec<f64> {
    let m = ref_max(x);
    let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
    x.iter().map(|v| (v - m).exp() / s).collect()
}

/// Applies `f` to every lane of `vals` (row-major `shape`) along `dim`.
fn along(vals: &[f64], shape: &[usize], dim: usize, f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let mut out = vec![0.0; vals.len()];
    let mask: Vec<bool> = (0..shape.len()).map(|d| d == dim).collect();
    let (_, b) = buckets(vals, shape, &mask, true);
    let kept: Vec<usize> = shape
        .iter()
        .enumerate()
        .filter(|(d, _)| *d != dim)
        .map(|(_, &s)| s)
        .collect();
    let mut pos = vec![0usize; b.len()];
    let lanes: Vec<Vec<f64>> = b.iter().map(|x| f(x)).collect();
    for (k, ix) in indices(shape).iter().enumerate() {
        let kix: Vec<usize> = ix
            .iter()
            .enumerate()
            .filter(|(d, _)| *d != dim)
            .map(|(_, &i)| i)
            .collect();
        let lane = bcast_flat(&kix, &kept);
        out[k] = lanes[lane][pos[lane]];
        pos[lane] += 1;
    }
    out
}

/// Rows with NaN, infinities and masked (`-inf`) entries, at lengths that reach the row
/// kernel's whole vectors and its remainder (3, 19, 64), along the last dim (contiguous rows)
/// and the first (columns): PyTorch's results, worked out by hand — a NaN or `+inf` anywhere
/// in a row, or a row of only `-inf`, makes the whole row NaN; `-inf` entries get 0 (log:
/// `-inf`) and the rest share the mass.
#[test]
fn softmax_rows_with_nan_and_infinities_match_pytorch() {
    fn check<E: namedtensor::Float>(len: usize, at: usize) {
        let cases: [(&str, Vec<f64>); 4] = [
            ("nan", {
                let mut v = vec![0.5; len];
                v[at] = f64::NAN;
                v
            }),
            ("+inf", {
                let mut v = vec![0.5; len];
                v[at] = f64::INFINITY;
                v
            }),
            ("all -inf", vec![f64::NEG_INFINITY; len]),
            ("masked", {
                let mut v = vec![1.0; len];
                v[at] = f64::NEG_INFINITY;
                v
            }),
        ];
        for (name, row) in cases {
            let x = DynTensor::<f64>::from_vec(row.clone(), &[1, len]).to_dtype::<E>();
            let xt = DynTensor::<f64>::from_vec(row.clone(), &[len, 1]).to_dtype::<E>();
            for (got, log) in [
                (x.softmax(-1).to_dtype::<f64>().to_vec(), false),
                (xt.softmax(0).to_dtype::<f64>().to_vec(), false),
                (x.log_softmax(-1).to_dtype::<f64>().to_vec(), true),
                (xt.log_softmax(0).to_dtype::<f64>().to_vec(), true),
            ] {
                let what = format!("{} len {len} at {at} {name} log {log}", E::DTYPE);
                if name == "masked" {
                    let share = 1.0 / (len - 1) as f64;
                    for (i, g) in got.iter().enumerate() {
                        let want = match (i == at, log) {
                            (true, false) => 0.0,
                            (true, true) => f64::NEG_INFINITY,
                            (false, false) => share,
                            (false, true) => share.ln(),
                        };
                        assert!(
                            g == &want || (g - want).abs() < 1e-6 * want.abs().max(1.0),
                            "{what}: {got:?}"
                        );
                    }
                } else {
                    assert!(got.iter().all(|g| g.is_nan()), "{what}: {got:?}");
                }
            }
        }
    }
    for (len, at) in [(3, 1), (19, 2), (19, 17), (64, 0), (64, 63)] {
        check::<f32>(len, at);
        check::<f64>(len, at);
    }
}

#[test]
fn softmax_log_softmax_cumsum_cumprod() {
    for shape in [vec![3usize, 4, 5], vec![2, 300], vec![300, 3]] {
        let n: usize = shape.iter().product();
        let vals = floats(n, 4, -30.0, 30.0);
        for kind in KINDS {
            let t = view::<f32>(&vals, &shape, kind);
            let e = elems_f64(&t);
            for d in 0..shape.len() {
                let want = along(&e, &shape, d, ref_softmax);
                assert_close_all(
                    &elems_f64(&t.softmax(d as isize)),
                    &want,
                    1e-5,
                    1e-7,
                    &format!("softmax {kind:?} {d}"),
                );
                let want: Vec<f64> = along(&e, &shape, d, |x| {
                    ref_softmax(x).iter().map(|p| p.ln()).collect()
                });
                assert_close_all(
                    &elems_f64(&t.log_softmax(d as isize)),
                    &want,
                    1e-5,
                    1e-5,
                    "log_softmax",
                );
                let want = along(&e, &shape, d, |x| {
                    x.iter()
                        .scan(0.0, |a, v| {
                            *a += v;
                            Some(*a)
                        })
                        .collect()
                });
                assert_close_all(
                    &elems_f64(&t.cumsum(d as isize)),
                    &want,
                    1e-6,
                    1e-4,
                    "cumsum",
                );
            }
        }
        let ints = data(n, 6, -2, 2);
        let ti = view::<i16>(&ints, &shape, Kind::Transposed);
        let ei = elems_f64(&ti);
        for d in 0..shape.len() {
            let c: DynTensor<i64> = ti.cumsum(d as isize);
            assert_eq!(
                elems_f64(&c),
                along(&ei, &shape, d, |x| x
                    .iter()
                    .scan(0.0, |a, v| {
                        *a += v;
                        Some(*a)
                    })
                    .collect())
            );
            let small = view::<f64>(&data(n, 7, 1, 2), &shape, Kind::Offset);
            let es = elems_f64(&small);
            assert_eq!(
                elems_f64(&small.cumprod(d as isize)),
                along(&es, &shape, d, |x| x
                    .iter()
                    .scan(1.0, |a, v| {
                        *a *= v;
                        Some(*a)
                    })
                    .collect())
            );
        }
    }
    // Stable for large inputs; f16 computed in f32.
    let big = DynTensor::from_vec(vec![1e4f32, 1e4, -1e4], &[3]);
    assert_eq!(big.softmax(0).to_vec(), vec![0.5, 0.5, 0.0]);
    let h = DynTensor::from_vec(vec![f16::from_f32(100.0), f16::from_f32(100.0)], &[2]);
    assert_eq!(h.softmax(0).to_vec(), vec![f16::from_f32(0.5); 2]);
    assert!(
        DynTensor::from_vec(vec![f32::NEG_INFINITY; 2], &[2])
            .softmax(0)
            .to_vec()[0]
            .is_nan()
    );
}

proptest! {
    #![proptest_config(common::proptest_cases(150))]

    #[test]
    fn prop_reductions_over_random_dims(
        shape in prop::collection::vec(0usize..=5, 0..=4),
        kind in prop::sample::select(KINDS.to_vec()),
        dimbits in any::<u8>(),
        keepdim in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let r = shape.len();
        let kind = if r == 0 { Kind::Contiguous } else { kind };
        let vals = data(shape.iter().product(), seed, -9, 9);
        let t = view::<f64>(&vals, &shape, kind);
        let e = elems_f64(&t);
        let dims: Vec<isize> = (0..r).filter(|d| dimbits >> d & 1 == 1).map(|d| d as isize).collect();
        let mask = mask_of(&dims, r);
        let (os, b) = buckets(&e, &shape, &mask, keepdim);
        let s = t.sum_dims(&dims, keepdim);
        prop_assert_eq!(s.shape(), &os[..]);
        prop_assert_eq!(elems_f64(&s), b.iter().map(|x| ref_sum(x)).collect::<Vec<_>>());
        let i = view::<i32>(&vals, &shape, kind);
        prop_assert_eq!(elems_f64(&i.sum_dims(&dims, keepdim)), b.iter().map(|x| ref_sum(x)).collect::<Vec<_>>());
        // As PyTorch: an error exactly when the reduced dims hold no element.
        let reduced: usize = shape.iter().zip(&mask).filter(|&(_, &m)| m).map(|(&s, _)| s).product();
        if reduced > 0 {
            prop_assert_eq!(elems_f64(&t.amax_dims(&dims, keepdim)), b.iter().map(|x| ref_max(x)).collect::<Vec<_>>());
        } else {
            prop_assert_eq!(t.try_amax_dims(&dims, keepdim).unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
        let m = t.mean_dims(&dims, keepdim);
        for (g, x) in elems_f64(&m).iter().zip(&b) {
            prop_assert!(close(*g, ref_mean(x), 1e-12, 1e-12));
        }
    }

    /// Rows that are contiguous and fit one leaf are folded in one vectorised call per chunk
    /// of outputs; the order of the additions is the one every other traversal uses, so the
    /// sums equal, bit for bit, those of the same rows read with a step (up to 256 elements,
    /// where a strided row is one block).
    #[test]
    fn prop_contiguous_row_sums_are_the_strided_ones_bit_for_bit(
        rows in 1usize..40,
        len in 1usize..=256,
        seed in any::<u64>(),
    ) {
        let wide = DynTensor::<f32>::randn(&[rows, len, 2], seed);
        let stepped = wide.select(2, 0);
        let dense = stepped.contiguous();
        // (One element is contiguous through any strides.)
        prop_assert!(dense.is_contiguous() && (rows * len == 1 || !stepped.is_contiguous()));
        prop_assert_eq!(dense.sum_dim(1, false).to_vec(), stepped.sum_dim(1, false).to_vec());
        prop_assert_eq!(dense.mean_dim(1, true).to_vec(), stepped.mean_dim(1, true).to_vec());
    }

    /// Rows longer than a leaf go through the same cascade whether many are summed at once
    /// or one at a time.
    #[test]
    fn prop_long_row_sums_are_each_rows_sum_bit_for_bit(
        rows in 1usize..6,
        len in 1025usize..5000,
        seed in any::<u64>(),
    ) {
        let x = DynTensor::<f32>::randn(&[rows, len], seed);
        let each: Vec<f32> = (0..rows).map(|i| x.select(0, i as isize).sum().item()).collect();
        prop_assert_eq!(x.sum_dim(1, false).to_vec(), each);
    }

    /// The backend's softmax gradient (what `backward` runs) against the formula composed of
    /// ops, on views of every kind for both operands, along every dim, in f64 and f32 (and
    /// bf16 computed in f32, against the formula in f32 on the same rounded values).
    #[test]
    fn prop_softmax_gradient_is_the_composed_formula(
        shape in prop::collection::vec(1usize..=6, 1..=4),
        kinds in (prop::sample::select(KINDS.to_vec()), prop::sample::select(KINDS.to_vec())),
        d in 0usize..4,
        log in any::<bool>(),
        seed in any::<u64>(),
    ) {
        fn case<E: namedtensor::Float>(
            shape: &[usize], kinds: (Kind, Kind), d: usize, log: bool, seed: u64, tol: f64,
        ) -> Result<(), TestCaseError> {
            let n = shape.iter().product();
            let x = view::<E>(&floats(n, seed, -6.0, 6.0), shape, kinds.0).requires_grad_(true);
            let g = view::<E>(&floats(n, seed ^ 0x5eed, -2.0, 2.0), shape, kinds.1);
            let d = d as isize;
            let y = if log { x.log_softmax(d) } else { x.softmax(d) };
            y.backward_with(&g, namedtensor::autograd::BackwardOptions::default()).unwrap();
            let got = elems_f64(&x.grad().unwrap());
            // The formula in f64 on the same (rounded) values of y and g.
            let (y, g) = (y.detach().to_dtype::<f64>(), g.to_dtype::<f64>());
            let want = if log {
                &g - &(y.exp() * g.sum_dim(d, true))
            } else {
                &y * &(&g - &(&g * &y).sum_dim(d, true))
            };
            for (i, (a, b)) in got.iter().zip(elems_f64(&want)).enumerate() {
                prop_assert!(
                    (a - b).abs() <= tol * (1.0 + b.abs()),
                    "{} {:?} {:?} dim {} log {}: element {} is {} against {}",
                    E::DTYPE, shape, kinds, d, log, i, a, b
                );
            }
            Ok(())
        }
        let d = d % shape.len();
        case::<f64>(&shape, kinds, d, log, seed, 1e-12)?;
        case::<f32>(&shape, kinds, d, log, seed, 1e-5)?;
        case::<bf16>(&shape, kinds, d, log, seed, 2e-2)?;
    }

    #[test]
    fn prop_softmax_lanes_sum_to_one(
        shape in prop::collection::vec(1usize..=5, 1..=4),
        kind in prop::sample::select(KINDS.to_vec()),
        d in 0usize..4,
        seed in any::<u64>(),
    ) {
        let d = d % shape.len();
        let vals = floats(shape.iter().product(), seed, -50.0, 50.0);
        let t = view::<f32>(&vals, &shape, kind);
        let s = t.softmax(d as isize);
        let sums = s.sum_dim(d as isize, false);
        for v in sums.to_vec() {
            prop_assert!((v - 1.0).abs() < 1e-5, "lane sums to {}", v);
        }
        prop_assert!(s.to_vec().iter().all(|&p| (0.0..=1.0).contains(&p)));
    }
}
