//! Pointwise unary and binary operations against f64 references computed here, on contiguous,
//! transposed, offset, step-sliced and expanded inputs; in-place forms; aliasing; threads;
//! error cases.

use crate::common;

use common::*;
use half::{bf16, f16};
use namedtensor::{DynTensor, Element, ErrorKind, Float, Numeric};
use proptest::prelude::*;

/// erf by its Taylor series (accurate to ~1e-14 for |x| <= 3), independent of the library.
fn erf_ref(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..80 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

type UnaryCase<E> = (
    &'static str,
    fn(&DynTensor<E>) -> DynTensor<E>,
    fn(f64) -> f64,
);

fn float_cases<E: Float>() -> Vec<UnaryCase<E>> {
    vec![
        ("exp", |t| t.exp(), f64::exp),
        ("log", |t| t.log(), f64::ln),
        ("log1p", |t| t.log1p(), f64::ln_1p),
        ("expm1", |t| t.expm1(), f64::exp_m1),
        ("sqrt", |t| t.sqrt(), f64::sqrt),
        ("rsqrt", |t| t.rsqrt(), |x| 1.0 / x.sqrt()),
        ("sin", |t| t.sin(), f64::sin),
        ("cos", |t| t.cos(), f64::cos),
        ("tan", |t| t.tan(), f64::tan),
        ("tanh", |t| t.tanh(), f64::tanh),
        ("sigmoid", |t| t.sigmoid(), |x| 1.0 / (1.0 + (-x).exp())),
        (
            "gelu",
            |t| t.gelu(),
            |x| 0.5 * x * (1.0 + erf_ref(x / 2f64.sqrt())),
        ),
        (
            "gelu_tanh",
            |t| t.gelu_tanh(),
            |x| {
                0.5 * x
                    * (1.0
                        + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
            },
        ),
        ("silu", |t| t.silu(), |x| x / (1.0 + (-x).exp())),
        ("floor", |t| t.floor(), f64::floor),
        ("ceil", |t| t.ceil(), f64::ceil),
        ("round", |t| t.round(), f64::round_ties_even),
        ("trunc", |t| t.trunc(), f64::trunc),
        ("recip", |t| t.recip(), |x| 1.0 / x),
        ("powf", |t| t.powf(1.5), |x| x.powf(1.5)),
        ("neg", |t| t.neg(), |x| -x),
        ("abs", |t| t.abs(), f64::abs),
        (
            "sign",
            |t| t.sign(),
            |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            },
        ),
        ("square", |t| t.square(), |x| x * x),
        ("relu", |t| t.relu(), |x| x.max(0.0)),
        ("clamp", |t| t.clamp(-0.5, 1.25), |x| x.clamp(-0.5, 1.25)),
    ]
}

/// Runs every float op on every layout of a few shapes; inputs are positive (log, sqrt) and
/// rounded to `E` first, so the reference sees exactly the tensor's values.
fn check_float_unary<E: Float>() {
    let (rtol, atol) = tol::<E>();
    for shape in [
        vec![3usize, 4],
        vec![2, 3, 5],
        vec![7],
        vec![],
        vec![0, 3],
        vec![3, 300],
    ] {
        let n: usize = shape.iter().product();
        let vals = floats(n, 11, 0.05, 2.5);
        for kind in KINDS {
            if shape.is_empty() && kind != Kind::Contiguous {
                continue;
            }
            let t = view::<E>(&vals, &shape, kind);
            let input = elems_f64(&t);
            for (name, op, reference) in float_cases::<E>() {
                let r = op(&t);
                assert_eq!(r.shape(), &shape[..], "{name} shape");
                assert!(r.is_contiguous());
                let want: Vec<f64> = input
                    .iter()
                    .map(|&x| E::from_f64(reference(x)).to_f64())
                    .collect();
                // One extra rounding of the compute type may separate the two.
                let (rt, at) = if name == "tan" {
                    (rtol * 4.0, atol * 4.0)
                } else {
                    (rtol, atol)
                };
                assert_close_all(
                    &elems_f64(&r),
                    &want,
                    rt,
                    at,
                    &format!("{name} {kind:?} {shape:?} {}", E::DTYPE),
                );
                // The input is unchanged.
                assert_eq!(elems_f64(&t), input);
            }
        }
    }
}

#[test]
fn float_unary_ops_match_reference_on_every_layout() {
    check_float_unary::<f32>();
    check_float_unary::<f64>();
    check_float_unary::<f16>();
    check_float_unary::<bf16>();
}

#[test]
fn special_values() {
    let t = DynTensor::from_vec(
        vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0],
        &[5],
    );
    assert!(t.relu().to_vec()[0].is_nan());
    assert!(t.clamp(0.0, 1.0).to_vec()[0].is_nan());
    assert_eq!(&t.clamp(0.0, 1.0).to_vec()[1..], &[1.0, 0.0, 0.0, 0.0]);
    assert_eq!(t.sigmoid().to_vec()[1..3], [1.0, 0.0]);
    assert_eq!(t.exp().to_vec()[2], 0.0);
    assert_eq!(t.sign().to_vec()[0], 0.0);
    assert_eq!(
        DynTensor::from_vec(vec![2.5f64, -2.5, 3.5], &[3])
            .round()
            .to_vec(),
        vec![2.0, -2.0, 4.0]
    );
    // clamp with min > max gives max everywhere, as PyTorch
    assert_eq!(
        DynTensor::from_vec(vec![0.0f32, 5.0], &[2])
            .clamp(3.0, 1.0)
            .to_vec(),
        vec![1.0, 1.0]
    );
}

fn check_numeric_unary<E: Numeric>(lo: i64, hi: i64) {
    type Case<E> = (
        &'static str,
        fn(&DynTensor<E>) -> DynTensor<E>,
        fn(f64) -> f64,
    );
    let cases: Vec<Case<E>> = vec![
        ("neg", |t| t.neg(), |x| -x),
        ("abs", |t| t.abs(), f64::abs),
        (
            "sign",
            |t| t.sign(),
            |x| x.signum() * (x != 0.0) as u8 as f64,
        ),
        ("square", |t| t.square(), |x| x * x),
        ("relu", |t| t.relu(), |x| x.max(0.0)),
        ("clamp", |t| t.clamp(1, 5), |x| x.clamp(1.0, 5.0)),
        ("clamp_min", |t| t.clamp_min(2), |x| x.max(2.0)),
        ("clamp_max", |t| t.clamp_max(2), |x| x.min(2.0)),
    ];
    for shape in [vec![3usize, 4], vec![2, 3, 5], vec![4, 70]] {
        let n: usize = shape.iter().product();
        let vals = data(n, 5, lo, hi);
        for kind in KINDS {
            let t = view::<E>(&vals, &shape, kind);
            let input = elems_f64(&t);
            for (name, op, reference) in &cases {
                if E::DTYPE == namedtensor::DType::U8 && *name == "neg" {
                    continue;
                }
                let want: Vec<f64> = input
                    .iter()
                    .map(|&x| E::from_f64(reference(x)).to_f64())
                    .collect();
                assert_close_all(
                    &elems_f64(&op(&t)),
                    &want,
                    0.0,
                    0.0,
                    &format!("{name} {kind:?} {}", E::DTYPE),
                );
            }
        }
    }
}

#[test]
fn numeric_unary_ops_on_integers() {
    check_numeric_unary::<i8>(-9, 9);
    check_numeric_unary::<i16>(-9, 9);
    check_numeric_unary::<i32>(-9, 9);
    check_numeric_unary::<i64>(-9, 9);
    check_numeric_unary::<u8>(0, 9);
    assert_eq!(
        DynTensor::from_vec(vec![3u8], &[1]).neg().to_vec(),
        vec![253]
    ); // wraps
    assert_eq!(
        DynTensor::from_vec(vec![i8::MIN], &[1]).abs().to_vec(),
        vec![i8::MIN]
    );
}

/// An in-place op writes exactly the view's elements and nothing else of the storage.
fn check_inplace<E: Element>(
    vals: &[f64],
    shape: &[usize],
    kind: Kind,
    apply: impl Fn(&DynTensor<E>),
    reference: impl Fn(f64) -> f64,
    rtol: f64,
    atol: f64,
) {
    let t = view::<E>(vals, shape, kind);
    let before_storage = t.storage().to_vec();
    let before = elems_f64(&t);
    apply(&t);
    let after = elems_f64(&t);
    let want: Vec<f64> = before
        .iter()
        .map(|&x| E::from_f64(reference(x)).to_f64())
        .collect();
    assert_close_all(
        &after,
        &want,
        rtol,
        atol,
        &format!("in place {kind:?} {shape:?}"),
    );
    // Positions outside the view are untouched.
    let mut reached = vec![false; before_storage.len()];
    for ix in indices(shape) {
        let pos = t.storage_offset()
            + ix.iter()
                .zip(t.stride())
                .map(|(&i, &s)| i * s)
                .sum::<usize>();
        reached[pos] = true;
    }
    for (p, (b, a)) in before_storage.iter().zip(t.storage().to_vec()).enumerate() {
        if !reached[p] {
            assert_eq!(
                b.to_f64().to_bits(),
                a.to_f64().to_bits(),
                "position {p} outside the view changed"
            );
        }
    }
}

#[test]
fn inplace_unary_writes_through_views() {
    for shape in [vec![3usize, 4], vec![2, 3, 5], vec![5, 300]] {
        let n: usize = shape.iter().product();
        let vals = floats(n, 3, 0.1, 2.0);
        for kind in [
            Kind::Contiguous,
            Kind::Transposed,
            Kind::Offset,
            Kind::Stepped,
        ] {
            check_inplace::<f32>(
                &vals,
                &shape,
                kind,
                |t| {
                    t.exp_();
                },
                f64::exp,
                2e-6,
                1e-6,
            );
            check_inplace::<f16>(
                &vals,
                &shape,
                kind,
                |t| {
                    t.sqrt_();
                },
                f64::sqrt,
                2e-3,
                1e-3,
            );
            check_inplace::<bf16>(
                &vals,
                &shape,
                kind,
                |t| {
                    t.neg_();
                },
                |x| -x,
                0.0,
                0.0,
            );
            check_inplace::<f64>(
                &vals,
                &shape,
                kind,
                |t| {
                    t.clamp_(0.5, 1.5);
                },
                |x| x.clamp(0.5, 1.5),
                0.0,
                0.0,
            );
            let ints = data(n, 4, -5, 5);
            check_inplace::<i32>(
                &ints,
                &shape,
                kind,
                |t| {
                    t.abs_();
                },
                f64::abs,
                0.0,
                0.0,
            );
        }
    }
}

#[test]
fn inplace_into_expanded_view_is_refused_and_changes_nothing() {
    let base = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let e = base.expand(&[4, 3]);
    assert_eq!(
        e.try_exp_().unwrap_err().kind(),
        ErrorKind::OverlappingWrite
    );
    assert_eq!(
        e.try_add_scalar_(1.0).unwrap_err().kind(),
        ErrorKind::OverlappingWrite
    );
    let err = e.try_add_(&DynTensor::<f32>::ones(&[4, 3])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OverlappingWrite);
    assert_eq!(
        e.try_masked_fill_(&DynTensor::from_vec(vec![true], &[1]), 0.0)
            .unwrap_err()
            .kind(),
        ErrorKind::OverlappingWrite
    );
    assert_eq!(base.to_vec(), vec![1.0, 2.0, 3.0]);
}

/// The broadcast shape, computed independently of the library.
fn bshape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let x = if i < a.len() { a[a.len() - 1 - i] } else { 1 };
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 1 };
        out[r - 1 - i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    Some(out)
}

/// Reference broadcast: `f(a[ix], b[ix])` for every index of the broadcast shape.
fn bref(
    a: &[f64],
    sa: &[usize],
    b: &[f64],
    sb: &[usize],
    f: impl Fn(f64, f64) -> f64,
) -> (Vec<usize>, Vec<f64>) {
    let s = bshape(sa, sb).expect("broadcastable");
    let v = indices(&s)
        .iter()
        .map(|ix| f(a[bcast_flat(ix, sa)], b[bcast_flat(ix, sb)]))
        .collect();
    (s, v)
}

const PAIRS: &[(&[usize], &[usize])] = &[
    (&[3, 4], &[4]),
    (&[3, 4], &[3, 4]),
    (&[2, 1, 4], &[3, 1]),
    (&[5, 1, 4, 1], &[3, 1, 1]),
    (&[], &[2, 3]),
    (&[4, 1], &[1]),
    (&[0, 4], &[1, 4]),
    (&[2, 700], &[2, 1]),
    (&[3, 1], &[3, 300]),
];

type BinCase<A, B, O> = (
    &'static str,
    fn(&DynTensor<A>, &DynTensor<B>) -> DynTensor<O>,
    fn(f64, f64) -> f64,
);

fn check_binary<A: Element, B: Element, O: Element>(
    cases: &[BinCase<A, B, O>],
    la: (i64, i64),
    lb: (i64, i64),
    rtol: f64,
    atol: f64,
) {
    for (sa, sb) in PAIRS {
        for (sa, sb) in [(*sa, *sb), (*sb, *sa)] {
            let va = data(sa.iter().product(), 21, la.0, la.1);
            let vb = data(sb.iter().product(), 22, lb.0, lb.1);
            for ka in KINDS {
                for kb in [
                    Kind::Contiguous,
                    Kind::Transposed,
                    Kind::Stepped,
                    Kind::Expanded,
                ] {
                    if (sa.is_empty() && ka != Kind::Contiguous)
                        || (sb.is_empty() && kb != Kind::Contiguous)
                    {
                        continue;
                    }
                    let a = view::<A>(&va, sa, ka);
                    let b = view::<B>(&vb, sb, kb);
                    let (ea, eb) = (elems_f64(&a), elems_f64(&b));
                    for (name, op, f) in cases {
                        let r = op(&a, &b);
                        let (s, want) = bref(&ea, sa, &eb, sb, f);
                        assert_eq!(r.shape(), &s[..], "{name} {sa:?} {sb:?}");
                        let want: Vec<f64> =
                            want.into_iter().map(|w| O::from_f64(w).to_f64()).collect();
                        assert_close_all(
                            &elems_f64(&r),
                            &want,
                            rtol,
                            atol,
                            &format!("{name} {sa:?}{ka:?} {sb:?}{kb:?} {}·{}", A::DTYPE, B::DTYPE),
                        );
                    }
                    assert_eq!(elems_f64(&a), ea);
                    assert_eq!(elems_f64(&b), eb);
                }
            }
        }
    }
}

fn py_rem(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

#[test]
fn binary_ops_broadcast_on_every_layout_f32() {
    let cases: Vec<BinCase<f32, f32, f32>> = vec![
        ("add", |a, b| a + b, |x, y| x + y),
        ("sub", |a, b| a - b, |x, y| x - y),
        ("mul", |a, b| a * b, |x, y| x * y),
        ("div", |a, b| a / b, |x, y| x / y),
        ("maximum", |a, b| a.maximum(b), f64::max),
        ("minimum", |a, b| a.minimum(b), f64::min),
        ("pow", |a, b| a.pow(b), f64::powf),
        ("remainder", |a, b| a.remainder(b), py_rem),
        ("fmod", |a, b| a.fmod(b), |x, y| x % y),
    ];
    check_binary(&cases, (-9, 9), (1, 4), 2e-6, 1e-6);
}

#[test]
fn binary_ops_broadcast_f64_f16_bf16_and_integers() {
    let f64s: Vec<BinCase<f64, f64, f64>> = vec![
        ("add", |a, b| a + b, |x, y| x + y),
        ("div", |a, b| a / b, |x, y| x / y),
    ];
    check_binary(&f64s, (-9, 9), (1, 4), 1e-15, 0.0);
    let halfs: Vec<BinCase<f16, f16, f16>> = vec![
        ("add", |a, b| a + b, |x, y| x + y),
        ("mul", |a, b| a * b, |x, y| x * y),
        ("div", |a, b| a / b, |x, y| x / y),
        ("maximum", |a, b| a.maximum(b), f64::max),
    ];
    check_binary(&halfs, (-9, 9), (1, 4), 0.0, 0.0); // one rounding of an exact f32 result
    let bf: Vec<BinCase<bf16, bf16, bf16>> = vec![
        ("sub", |a, b| a - b, |x, y| x - y),
        ("mul", |a, b| a * b, |x, y| x * y),
    ];
    check_binary(&bf, (-9, 9), (1, 4), 0.0, 0.0);
    let ints: Vec<BinCase<i32, i32, i32>> = vec![
        ("add", |a, b| a + b, |x, y| x + y),
        ("sub", |a, b| a - b, |x, y| x - y),
        ("mul", |a, b| a * b, |x, y| x * y),
        ("remainder", |a, b| a.remainder(b), py_rem),
        ("fmod", |a, b| a.fmod(b), |x, y| x % y),
        ("pow", |a, b| a.pow(b), f64::powf),
        ("maximum", |a, b| a.maximum(b), f64::max),
    ];
    check_binary(&ints, (-9, 9), (1, 4), 0.0, 0.0);
    let int_div: Vec<BinCase<i32, i32, f32>> = vec![("div", |a, b| a / b, |x, y| x / y)];
    check_binary(&int_div, (-9, 9), (1, 4), 2e-7, 0.0);
}

#[test]
fn mixed_dtypes_broadcast() {
    let c: Vec<BinCase<u8, i8, i16>> = vec![
        ("add", |a, b| a + b, |x, y| x + y),
        ("sub", |a, b| a - b, |x, y| x - y),
    ];
    check_binary(&c, (0, 200), (-100, 100), 0.0, 0.0);
    let c: Vec<BinCase<i64, f32, f32>> = vec![("mul", |a, b| a * b, |x, y| x * y)];
    check_binary(&c, (-1000, 1000), (-9, 9), 0.0, 0.0);
    let c: Vec<BinCase<f16, bf16, f32>> = vec![("add", |a, b| a + b, |x, y| x + y)];
    check_binary(&c, (-50, 50), (-50, 50), 0.0, 0.0);
    let c: Vec<BinCase<bool, f64, f64>> = vec![("mul", |a, b| a * b, |x, y| x * y)];
    check_binary(&c, (0, 1), (-9, 9), 0.0, 0.0);
    let c: Vec<BinCase<f64, i16, f64>> = vec![("div", |a, b| a / b, |x, y| x / y)];
    check_binary(&c, (-9, 9), (1, 9), 1e-15, 0.0);
}

#[test]
fn bool_arithmetic_follows_pytorch() {
    let a = DynTensor::from_vec(vec![true, true, false, false], &[4]);
    let b = DynTensor::from_vec(vec![true, false, true, false], &[4]);
    assert_eq!((&a + &b).to_vec(), vec![true, true, true, false]);
    assert_eq!((&a * &b).to_vec(), vec![true, false, false, false]);
    let q: Vec<f32> = (&a / &b).to_vec(); // bool / bool → f32
    assert_eq!(&q[..3], &[1.0, f32::INFINITY, 0.0]);
    assert!(q[3].is_nan());
    assert_eq!(
        a.try_sub(&b).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!((&a + 2).to_vec(), vec![3i64, 3, 2, 2]); // bool tensor + int scalar → i64
    assert_eq!((&a * 0.5).to_vec(), vec![0.5f32, 0.5, 0.0, 0.0]);
}

proptest! {
    /// A number operand (read by the backend as it is, without a tensor of its own, where
    /// nothing is recorded) against the definition: each element with the number, in the
    /// output's compute type and rounded once, on both sides, on every kind of view; and
    /// against the recorded path (which puts the number in a 0-d tensor), bit for bit.
    #[test]
    fn scalar_operands_match_the_definition_on_every_view(
        shape in shape(0..=3, 0..5), kind in view_kind(), s in -4.0f64..4.0, seed in 0u64..100,
    ) {
        let t = make_view::<f32>(&shape, kind, seed);
        let h = make_view::<f16>(&shape, kind, seed);
        let i = make_view::<i32>(&shape, kind, seed);
        let sf = s as f32;
        let si = s as i32;
        type F32Case = (fn(&DynTensor<f32>, f64) -> DynTensor<f32>, fn(f32, f32) -> f32);
        let cases: [F32Case; 6] = [
            (|t, s| t + s, |x, s| x + s),
            (|t, s| s - t, |x, s| s - x),
            (|t, s| t * s, |x, s| x * s),
            (|t, s| t / s, |x, s| x / s),
            (|t, s| s / t, |x, s| s / x),
            (|t, s| t.maximum_scalar(s), f32::max),
        ];
        for (k, (op, def)) in cases.iter().enumerate() {
            let got = op(&t, s);
            let want: Vec<f32> = t.to_vec().into_iter().map(|x| def(x, sf)).collect();
            prop_assert_eq!(got.shape(), t.shape());
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            prop_assert_eq!(bits(got.to_vec()), bits(want), "f32 case {}", k);
            // The recorded path: the number as a 0-d tensor.
            let tracked = op(&t.detach().requires_grad_(true), s).detach();
            prop_assert_eq!(bits(tracked.to_vec()), bits(got.to_vec()), "recorded, case {}", k);
            // f16: computed in f32, rounded once.
            let got = op_half(&h, s, k);
            let want: Vec<f16> =
                h.to_vec().into_iter().map(|x| f16::from_f32(def(x.to_f32(), sf))).collect();
            prop_assert_eq!(got.to_vec(), want, "f16 case {}", k);
        }
        let (prod, diff): (DynTensor<i32>, DynTensor<i32>) = (&i * si as i64, si as i64 - &i);
        prop_assert_eq!(prod.to_vec(), i.to_vec().iter().map(|x| x * si).collect::<Vec<_>>());
        prop_assert_eq!(diff.to_vec(), i.to_vec().iter().map(|x| si - x).collect::<Vec<_>>());
    }
}

/// The `k`-th case of `scalar_operands_match_the_definition_on_every_view` on an f16 tensor.
fn op_half(h: &DynTensor<f16>, s: f64, k: usize) -> DynTensor<f16> {
    match k {
        0 => h + s,
        1 => s - h,
        2 => h * s,
        3 => h / s,
        4 => s / h,
        _ => h.maximum_scalar(s),
    }
}

#[test]
fn scalar_operands_on_both_sides() {
    let a = DynTensor::from_vec(vec![1.0f32, 2.0, 4.0], &[3]);
    assert_eq!((&a + 1.0).to_vec(), vec![2.0, 3.0, 5.0]);
    assert_eq!((2.0 * &a).to_vec(), vec![2.0, 4.0, 8.0]);
    assert_eq!((1.0 - &a).to_vec(), vec![0.0, -1.0, -3.0]);
    assert_eq!((&a - 1).to_vec(), vec![0.0, 1.0, 3.0]);
    assert_eq!((8.0 / &a).to_vec(), vec![8.0, 4.0, 2.0]);
    assert_eq!((a.clone() / 2i64).to_vec(), vec![0.5, 1.0, 2.0]);
    assert_eq!((-&a).to_vec(), vec![-1.0, -2.0, -4.0]);
    assert_eq!((-a.clone() + a.clone()).to_vec(), vec![0.0; 3]);
    let i = DynTensor::from_vec(vec![1i32, 2, 3], &[3]);
    let f: DynTensor<f32> = &i + 1.5; // integer tensor, float scalar → f32
    assert_eq!(f.to_vec(), vec![2.5, 3.5, 4.5]);
    let k: DynTensor<i32> = &i * 3; // integer scalar keeps the tensor's type
    assert_eq!(k.to_vec(), vec![3, 6, 9]);
    assert_eq!((10 - &i).to_vec(), vec![9, 8, 7]);
    assert_eq!((6 / &i).to_vec(), vec![6.0f32, 3.0, 2.0]);
    let h = DynTensor::from_vec(vec![f16::from_f32(1.5)], &[1]);
    let h2: DynTensor<f16> = &h * 2.0; // float scalar keeps a float tensor's type
    assert_eq!(h2.item().to_f32(), 3.0);
    // The scalar is applied in the compute type (f32), then rounded once to f16.
    assert_eq!((&h + 0.1).item(), f16::from_f32(1.5f32 + 0.1f32));
    assert_eq!(i.add_scalar(2).to_vec(), vec![3, 4, 5]);
    assert_eq!(i.maximum_scalar(2).to_vec(), vec![2, 2, 3]);
    assert_eq!(i.remainder_scalar(2).to_vec(), vec![1, 0, 1]);
    assert_eq!(
        i.try_remainder_scalar(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(i.fmod_scalar(0.0).to_vec()[0].is_nan()); // float divisor: NaN, not an error
}

#[test]
fn binary_inplace_through_views_with_broadcast_source() {
    for shape in [vec![4usize, 6], vec![3, 2, 5], vec![6, 300]] {
        let n: usize = shape.iter().product();
        let vals = data(n, 7, -9, 9);
        let last = *shape.last().unwrap();
        let src_vals = data(last, 8, 1, 5);
        let src = DynTensor::from_vec(src_vals.iter().map(|&v| v as f32).collect(), &[last]);
        for kind in [
            Kind::Contiguous,
            Kind::Transposed,
            Kind::Offset,
            Kind::Stepped,
        ] {
            type Ip = (
                &'static str,
                fn(&DynTensor<f32>, &DynTensor<f32>),
                fn(f64, f64) -> f64,
            );
            let ops: Vec<Ip> = vec![
                (
                    "add_",
                    |t, s| {
                        t.add_(s);
                    },
                    |x, y| x + y,
                ),
                (
                    "sub_",
                    |t, s| {
                        t.sub_(s);
                    },
                    |x, y| x - y,
                ),
                (
                    "mul_",
                    |t, s| {
                        t.mul_(s);
                    },
                    |x, y| x * y,
                ),
                (
                    "div_",
                    |t, s| {
                        t.div_(s);
                    },
                    |x, y| x / y,
                ),
                (
                    "maximum_",
                    |t, s| {
                        t.maximum_(s);
                    },
                    f64::max,
                ),
            ];
            for (name, op, f) in &ops {
                let t = view::<f32>(&vals, &shape, kind);
                let before = elems_f64(&t);
                op(&t, &src);
                let want: Vec<f64> = indices(&shape)
                    .iter()
                    .zip(&before)
                    .map(|(ix, &x)| (f(x, src_vals[ix[ix.len() - 1]]) as f32) as f64)
                    .collect();
                assert_close_all(
                    &elems_f64(&t),
                    &want,
                    0.0,
                    0.0,
                    &format!("{name} {kind:?} {shape:?}"),
                );
            }
            // Scalar forms, and the half types through the blocked path.
            let t = view::<bf16>(&vals, &shape, kind);
            let before = elems_f64(&t);
            t.mul_scalar_(2.0)
                .add_scalar_(1)
                .sub_scalar_(0.5)
                .div_scalar_(2.0);
            let want: Vec<f64> = before
                .iter()
                .map(|&x| bf16::from_f64((x * 2.0 + 1.0 - 0.5) / 2.0).to_f64())
                .collect();
            assert_close_all(&elems_f64(&t), &want, 0.0, 0.0, "bf16 scalar chain");
            let t = view::<i16>(&vals, &shape, kind);
            let before = elems_f64(&t);
            t.add_(&DynTensor::from_vec(vec![3u8], &[1])).mul_scalar_(2);
            let want: Vec<f64> = before.iter().map(|&x| (x + 3.0) * 2.0).collect();
            assert_close_all(&elems_f64(&t), &want, 0.0, 0.0, "i16 in place");
        }
    }
}

#[test]
fn inplace_promotion_must_fit_the_destination() {
    let i = DynTensor::from_vec(vec![1i32, 2], &[2]);
    let e = i
        .try_add_(&DynTensor::from_vec(vec![0.5f64], &[1]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        i.try_div_scalar_(2).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(i.to_vec(), vec![1, 2]);
    // f64 source into f32 destination: computed in f64, stored rounded.
    let f = DynTensor::from_vec(vec![1.0f32], &[1]);
    f.add_(&DynTensor::from_vec(vec![1e-9f64], &[1]));
    assert_eq!(f.item(), 1.0);
    let b = DynTensor::from_vec(vec![true, false], &[2]);
    assert!(b.try_add_(&DynTensor::from_vec(vec![1i32], &[1])).is_err());
    b.add_(&DynTensor::from_vec(vec![true], &[1]));
    assert_eq!(b.to_vec(), vec![true, true]);
}

#[test]
fn non_broadcastable_shapes_name_both_and_change_nothing() {
    let a = DynTensor::<f32>::ones(&[5, 2, 4, 1]);
    let b = DynTensor::<f32>::ones(&[3, 1, 1]);
    for err in [
        a.try_add(&b).unwrap_err(),
        a.try_mul(&b).unwrap_err(),
        a.try_div(&b).unwrap_err(),
        a.try_maximum(&b).unwrap_err(),
        a.try_lt(&b).unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
        let msg = err.to_string();
        assert!(
            msg.contains("[5, 2, 4, 1]") && msg.contains("[3, 1, 1]"),
            "{msg}"
        );
    }
    // In place: the source must broadcast to the destination's shape.
    let d = DynTensor::<f32>::ones(&[2, 3]);
    let e = d.try_add_(&DynTensor::<f32>::ones(&[4, 1, 3])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(e.to_string().contains("[4, 1, 3]") && e.to_string().contains("[2, 3]"));
    assert_eq!(d.to_vec(), vec![1.0; 6]);
    assert_eq!(a.to_vec(), vec![1.0; 40]);
    assert_eq!(b.to_vec(), vec![1.0; 3]);
    // Seed example shapes that do broadcast.
    assert_eq!(
        (&DynTensor::<f32>::ones(&[5, 1, 4, 1]) + &DynTensor::<f32>::ones(&[3, 1, 1])).shape(),
        &[5, 3, 4, 1]
    );
    assert_eq!(
        (&DynTensor::<f32>::ones(&[1]) + &DynTensor::<f32>::ones(&[3, 1, 7])).shape(),
        &[3, 1, 7]
    );
}

#[test]
fn aliasing_sources_are_read_before_writing() {
    // a += a.t(): the source overlaps the destination in a different order.
    for n in [3usize, 40] {
        let vals = data(n * n, 9, -9, 9);
        let a = DynTensor::from_vec(vals.clone(), &[n, n]);
        let copy = a.clone();
        let want = (&copy + &copy.t()).to_vec();
        a.add_(&a.t());
        assert_eq!(a.to_vec(), want);
        // Overlapping shifted views of one storage.
        let x = DynTensor::from_vec(vals.iter().map(|&v| v as f32).collect(), &[n * n]);
        let xc = x.clone();
        let (dst, src) = (x.narrow(0, 1, n * n - 1), x.narrow(0, 0, n * n - 1));
        let want = (&xc.narrow(0, 1, n * n - 1) * &xc.narrow(0, 0, n * n - 1)).to_vec();
        dst.mul_(&src);
        assert_eq!(dst.to_vec(), want);
        assert_eq!(x.get(&[0]), xc.get(&[0]));
        // masked_fill_ with a mask computed from the same storage is a different storage,
        // but a source of the same storage through a view is copied too.
        let y = DynTensor::from_vec(vals.iter().map(|&v| v as i64).collect(), &[n, n]);
        let yc = y.clone();
        y.sub_(&y.select(0, 0));
        let want = (&yc - &yc.select(0, 0)).to_vec();
        assert_eq!(y.to_vec(), want);
    }
}

#[test]
fn threads_writing_views_of_one_storage() {
    let t = DynTensor::<f64>::zeros(&[8, 512]);
    let a = DynTensor::<f64>::ones(&[64, 64]);
    let b = DynTensor::<f64>::ones(&[64, 64]);
    std::thread::scope(|s| {
        for i in 0..8 {
            let row = t.select(0, i as isize);
            let whole = t.shallow_clone();
            s.spawn(move || {
                for _ in 0..50 {
                    whole.add_scalar_(1.0);
                    row.mul_scalar_(1.0);
                    // Reads and writes the same storage through overlapping views.
                    whole
                        .narrow(1, 0, 256)
                        .add_(&whole.narrow(1, 256, 256).mul_scalar(0.0));
                }
            });
        }
        // Two storages updated from each other in opposite orders: no deadlock.
        let (a1, b1) = (a.shallow_clone(), b.shallow_clone());
        s.spawn(move || {
            for _ in 0..100 {
                a1.add_(&b1);
            }
        });
        let (a2, b2) = (a.shallow_clone(), b.shallow_clone());
        s.spawn(move || {
            for _ in 0..100 {
                b2.add_(&a2.t());
            }
        });
    });
    assert_eq!(t.to_vec(), vec![400.0; 8 * 512]);
    // Every op saw the whole other tensor at one moment, so each stays uniform.
    let (va, vb) = (a.to_vec(), b.to_vec());
    assert!(va.iter().all(|&x| x == va[0] && x.is_finite() && x > 1.0));
    assert!(vb.iter().all(|&x| x == vb[0] && x.is_finite() && x > 1.0));
}

#[test]
fn comparisons_where_and_masked_fill() {
    let va = data(12, 1, -3, 3);
    let vb = data(4, 2, -3, 3);
    for ka in KINDS {
        let a = view::<f32>(&va, &[3, 4], ka);
        let b = view::<i32>(&vb, &[4], Kind::Contiguous);
        let (ea, eb) = (elems_f64(&a), elems_f64(&b));
        type Cmp = (
            fn(&DynTensor<f32>, &DynTensor<i32>) -> DynTensor<bool>,
            fn(f64, f64) -> bool,
        );
        let cmps: Vec<Cmp> = vec![
            (|a, b| a.eq(b), |x, y| x == y),
            (|a, b| a.ne(b), |x, y| x != y),
            (|a, b| a.lt(b), |x, y| x < y),
            (|a, b| a.le(b), |x, y| x <= y),
            (|a, b| a.gt(b), |x, y| x > y),
            (|a, b| a.ge(b), |x, y| x >= y),
        ];
        for (op, f) in cmps {
            let (_, want) = bref(&ea, &[3, 4], &eb, &[4], |x, y| f(x, y) as u8 as f64);
            assert_eq!(elems_f64(&op(&a, &b)), want);
        }
        assert_eq!(
            elems_f64(&a.gt_scalar(0.5)),
            ea.iter()
                .map(|&x| (x > 0.5) as u8 as f64)
                .collect::<Vec<_>>()
        );
        let cond = a.gt_scalar(0);
        let w = namedtensor::where_(&cond, &a, &DynTensor::from_vec(vec![-1i64], &[1]));
        assert_eq!(
            elems_f64(&w),
            ea.iter()
                .map(|&x| if x > 0.0 { x } else { -1.0 })
                .collect::<Vec<_>>()
        );
        // 3-way broadcast: cond [3, 1], a [4], b [3, 4] (transposed).
        let c3 = DynTensor::from_vec(vec![true, false, true], &[3, 1]);
        let w3 = namedtensor::where_(&c3, &b, &a);
        let want: Vec<f64> = indices(&[3, 4])
            .iter()
            .map(|ix| {
                if ix[0] != 1 {
                    eb[ix[1]]
                } else {
                    ea[ix[0] * 4 + ix[1]]
                }
            })
            .collect();
        assert_eq!(elems_f64(&w3), want);
        let m = a.masked_fill(
            &DynTensor::from_vec(vec![true, false, false, true], &[4]),
            9.0,
        );
        let want: Vec<f64> = indices(&[3, 4])
            .iter()
            .map(|ix| {
                if ix[1] == 0 || ix[1] == 3 {
                    9.0
                } else {
                    ea[ix[0] * 4 + ix[1]]
                }
            })
            .collect();
        assert_eq!(elems_f64(&m), want);
        if ka != Kind::Expanded {
            a.masked_fill_(&a.lt_scalar(0), 0.0);
            assert_eq!(
                elems_f64(&a),
                ea.iter().map(|&x| x.max(0.0)).collect::<Vec<_>>()
            );
        }
    }
    let e = namedtensor::ops::try_where_(
        &DynTensor::from_vec(vec![true; 3], &[3]),
        &DynTensor::<f32>::ones(&[2, 1]),
        &DynTensor::<f32>::ones(&[4]),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
}

#[test]
fn selection_with_operands_sharing_one_storage() {
    // The condition, the operands and the mask may all be views of one storage: each storage
    // is locked once, in the global order.
    let m = DynTensor::from_vec(vec![true, false, true, false], &[2, 2]);
    let w = namedtensor::where_(&m, &m.t(), &m.narrow(0, 1, 1));
    assert_eq!(w.to_vec(), vec![true, false, false, false]);
    assert_eq!(m.masked_fill(&m, false).to_vec(), vec![false; 4]);
    m.t().masked_fill_(&m, true); // mask read before writing
    assert_eq!(m.to_vec(), vec![true, true, true, false]);
    let t = DynTensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3]);
    let other = t.shallow_clone();
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..200 {
                other.mul_scalar_(1.0);
            }
        });
        for _ in 0..200 {
            let c = t.gt_scalar(0.0);
            assert_eq!(
                namedtensor::where_(&c, &t, &t.neg()).to_vec(),
                vec![1.0, 2.0, 3.0]
            );
        }
    });
}

#[test]
fn logical_and_float_classification() {
    let a = DynTensor::from_vec(vec![true, false, true, false], &[4]);
    let b = DynTensor::from_vec(vec![1.0f32, 1.0, 0.0, f32::NAN], &[4]);
    assert_eq!(a.logical_and(&b).to_vec(), vec![true, false, false, false]);
    assert_eq!(a.logical_or(&b).to_vec(), vec![true, true, true, true]); // NaN is true
    assert_eq!(a.logical_xor(&b).to_vec(), vec![false, true, true, true]);
    assert_eq!(a.logical_not().to_vec(), vec![false, true, false, true]);
    assert_eq!(b.isnan().to_vec(), vec![false, false, false, true]);
    assert_eq!(b.isfinite().to_vec(), vec![true, true, true, false]);
    assert!(!b.allclose(&b, 1e-5, 1e-8));
    let x = DynTensor::<f64>::randn(&[50, 3], 1);
    assert!(x.allclose(&(&x + 1e-10), 1e-5, 1e-8));
    assert!(!x.allclose(&(&x + 1e-3), 1e-5, 1e-8));
    assert!(x.t().allclose(&x.t().contiguous(), 0.0, 0.0));
}

#[test]
fn large_tensors_take_the_parallel_paths() {
    namedtensor::set_parallel_threshold(1 << 10);
    let n = 1 << 17;
    let va = floats(n, 1, -2.0, 2.0);
    let vb = floats(n, 2, 0.5, 2.0);
    for (ka, kb) in [
        (Kind::Contiguous, Kind::Contiguous),
        (Kind::Transposed, Kind::Stepped),
        (Kind::Offset, Kind::Expanded),
    ] {
        let a = view::<f32>(&va, &[256, 512], ka);
        let b = view::<f16>(&vb, &[256, 512], kb);
        let (ea, eb) = (elems_f64(&a), elems_f64(&b));
        let r = &a * &b;
        let want: Vec<f64> = ea
            .iter()
            .zip(&eb)
            .map(|(x, y)| (x * y) as f32 as f64)
            .collect();
        assert_close_all(&elems_f64(&r), &want, 1e-7, 0.0, "f32·f16");
        let h = b.exp();
        let want: Vec<f64> = eb.iter().map(|y| f16::from_f64(y.exp()).to_f64()).collect();
        assert_close_all(&elems_f64(&h), &want, 2e-3, 0.0, "f16 exp");
        if ka != Kind::Expanded {
            let before = elems_f64(&a);
            a.add_(&b);
            let want: Vec<f64> = before
                .iter()
                .zip(&eb)
                .map(|(x, y)| (x + y) as f32 as f64)
                .collect();
            assert_close_all(&elems_f64(&a), &want, 1e-7, 0.0, "f32 += f16");
        }
    }
}

/// Random shape (rank 0–4, sizes 0–5) and a random view of it.
fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..=5, 0..=4)
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop::sample::select(KINDS.to_vec())
}

/// A broadcast pair: an output shape, and for each operand a suffix of it with some dims 1.
fn bcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (
        shape_strategy(),
        0usize..=4,
        0usize..=4,
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(s, da, db, ma, mb)| {
            let mk = |drop: usize, mask: u8| -> Vec<usize> {
                let drop = drop.min(s.len());
                s[drop..]
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| if mask >> i & 1 == 1 { 1 } else { x })
                    .collect()
            };
            (mk(da, ma), mk(db, mb))
        })
}

proptest! {
    #![proptest_config(common::proptest_cases(200))]

    #[test]
    fn prop_unary_on_random_views(shape in shape_strategy(), kind in kind_strategy(), seed in any::<u64>()) {
        let kind = if shape.is_empty() { Kind::Contiguous } else { kind };
        let n: usize = shape.iter().product();
        let vals = data(n, seed, -5, 5);
        let t = view::<f32>(&vals, &shape, kind);
        let e = elems_f64(&t);
        let want: Vec<f64> = e.iter().map(|&x| (x.exp() as f32) as f64).collect();
        assert_close_all(&elems_f64(&t.exp()), &want, 2e-6, 0.0, "exp");
        let i = view::<i32>(&vals, &shape, kind);
        prop_assert_eq!(elems_f64(&i.neg()), e.iter().map(|&x| -x).collect::<Vec<_>>());
    }

    #[test]
    fn prop_binary_random_broadcast(pair in bcast_pair(), ka in kind_strategy(), kb in kind_strategy(), seed in any::<u64>()) {
        let (sa, sb) = pair;
        let ka = if sa.is_empty() { Kind::Contiguous } else { ka };
        let kb = if sb.is_empty() { Kind::Contiguous } else { kb };
        let va = data(sa.iter().product(), seed, -9, 9);
        let vb = data(sb.iter().product(), seed ^ 1, 1, 9);
        let a = view::<f64>(&va, &sa, ka);
        let b = view::<i16>(&vb, &sb, kb);
        let (ea, eb) = (elems_f64(&a), elems_f64(&b));
        for (r, f) in [
            (&a + &b, (|x, y| x + y) as fn(f64, f64) -> f64),
            (&a * &b, |x, y| x * y),
            (a.maximum(&b), f64::max),
            (&a / &b, |x, y| x / y),
        ] {
            let (s, want) = bref(&ea, &sa, &eb, &sb, f);
            prop_assert_eq!(r.shape(), &s[..]);
            prop_assert_eq!(elems_f64(&r), want);
        }
        let c = b.lt(&a);
        let (_, want) = bref(&eb, &sb, &ea, &sa, |x, y| (x < y) as u8 as f64);
        prop_assert_eq!(elems_f64(&c), want);
    }

    #[test]
    fn prop_inplace_broadcast_into_views(shape in prop::collection::vec(1usize..=5, 1..=4), kind in prop::sample::select(vec![Kind::Contiguous, Kind::Transposed, Kind::Offset, Kind::Stepped]), keep in any::<u8>(), seed in any::<u64>()) {
        let n: usize = shape.iter().product();
        let vals = data(n, seed, -9, 9);
        let src_shape: Vec<usize> = shape.iter().enumerate().map(|(i, &s)| if keep >> i & 1 == 1 { s } else { 1 }).collect();
        let sv = data(src_shape.iter().product(), seed ^ 7, -9, 9);
        let t = view::<i64>(&vals, &shape, kind);
        let src = DynTensor::from_vec(sv.iter().map(|&v| v as i32).collect(), &src_shape);
        let before = elems_f64(&t);
        t.sub_(&src);
        let want: Vec<f64> = indices(&shape).iter().zip(&before).map(|(ix, &x)| x - sv[bcast_flat(ix, &src_shape)]).collect();
        prop_assert_eq!(elems_f64(&t), want);
    }
}

#[test]
fn clamp_of_integers_with_float_bounds_is_an_error() {
    // PyTorch promotes `clamp(int_tensor, 0.5, 6.5)` to a float tensor; these methods keep the
    // tensor's type, so float bounds on integers are refused rather than truncated.
    let i = DynTensor::from_vec(vec![-2i64, 5, 9], &[3]);
    for e in [
        i.try_clamp(0.5, 6.5).unwrap_err(),
        i.try_clamp_min(0.5).unwrap_err(),
        i.try_clamp_max(6.5f32).unwrap_err(),
        i.try_clamp_(0.5, 6.5).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("promotes"), "{e}");
    }
    assert_eq!(i.to_vec(), vec![-2, 5, 9], "nothing written");
    // Integer bounds of any integer type, and float bounds on float tensors, still work.
    assert_eq!(i.clamp(0i32, 6i32).to_vec(), vec![0, 5, 6]);
    assert_eq!(i.clamp_min(0u8).to_vec(), vec![0, 5, 9]);
    assert_eq!(
        i.to_dtype::<f32>().clamp(0.5, 6.5).to_vec(),
        vec![0.5, 5.0, 6.5]
    );
    let h = DynTensor::from_vec(vec![-2.0f64, 0.25], &[2]);
    assert_eq!(h.clamp(0i64, 1i64).to_vec(), vec![0.0, 0.25]);
    let r = std::panic::catch_unwind(|| i.clamp(0.5, 6.5));
    assert!(r.is_err());
}

/// Outputs from `streaming_threshold()` bytes up (8 MiB unless `NAMEDTENSOR_STREAM_MIN_BYTES`
/// says otherwise: CI's valgrind run lowers it) are written with non-temporal stores in whole
/// 64-byte lines: results of every element size (1, 4, 8 bytes), from offset and broadcast
/// operands whose rows start off a line boundary, still match a plain loop element for
/// element.
#[test]
fn large_outputs_written_with_streaming_stores_match_the_reference() {
    // Rows of 2053 elements (not line-aligned), enough of them for an `f32` output past the
    // threshold: 2.1M elements by default.
    let cols = 2053;
    let rows = namedtensor::streaming_threshold().div_ceil(4 * cols) + 7;
    let n = rows * cols;
    let va: Vec<f32> = (0..n + 3).map(|i| (i % 1009) as f32 * 0.25 - 7.0).collect();
    let vb: Vec<f32> = (0..rows).map(|i| i as f32 - 500.0).collect();
    // `a` starts 3 elements into its storage; `b` is a column broadcast along the rows.
    let a = DynTensor::from_vec(va.clone(), &[n + 3])
        .narrow(0, 3, n)
        .reshape(&[rows as isize, cols as isize]);
    let b = DynTensor::from_vec(vb.clone(), &[rows, 1]);
    let sum = elems(&(&a + &b));
    let prod = elems(&a.mul_scalar(3.0));
    let gt = elems(&a.gt(&b));
    let wide = elems(&(&a.to_dtype::<f64>() * &b.to_dtype::<f64>()));
    let neg = elems(&a.neg());
    for (r, &y) in vb.iter().enumerate() {
        for c in 0..cols {
            let i = r * cols + c;
            let x = va[i + 3];
            assert_eq!(sum[i], x + y, "add at [{r}, {c}]");
            assert_eq!(prod[i], x * 3.0, "mul at [{r}, {c}]");
            assert_eq!(gt[i], x > y, "gt at [{r}, {c}]");
            assert_eq!(wide[i], x as f64 * y as f64, "f64 mul at [{r}, {c}]");
            assert_eq!(neg[i], -x, "neg at [{r}, {c}]");
        }
    }
}

/// `f16`/`bf16` are computed a 64-byte line at a time in `f32` (F16C / bit shifts) and large
/// outputs are streamed: every element still rounds like `half`'s own scalar conversion.
#[test]
fn large_half_outputs_round_like_scalar_conversions() {
    // Rows not line-aligned, an `f16` output past the streaming threshold (4.2M elements by
    // default).
    let cols = 2053;
    let rows = namedtensor::streaming_threshold().div_ceil(2 * cols) + 5;
    let n = rows * cols;
    let va: Vec<f32> = (0..n + 5)
        .map(|i| ((i * 7919) % 100_003) as f32 * 0.013 - 650.0)
        .collect();
    let vb: Vec<f32> = (0..cols).map(|i| i as f32 * 0.37 - 380.0).collect();
    fn check<H: namedtensor::Float>(
        va: &[f32],
        vb: &[f32],
        rows: usize,
        cols: usize,
        to: impl Fn(f32) -> H,
        back: impl Fn(H) -> f32,
    ) {
        let n = rows * cols;
        let a = DynTensor::from_vec(va.iter().map(|&x| to(x)).collect(), &[n + 5])
            .narrow(0, 5, n)
            .reshape(&[rows as isize, cols as isize]);
        let b = DynTensor::from_vec(vb.iter().map(|&x| to(x)).collect(), &[cols]);
        let (sum, prod, exp) = (elems(&(&a + &b)), elems(&(&b * &a)), elems(&a.exp()));
        for i in 0..n {
            let (x, y) = (back(to(va[i + 5])), back(to(vb[i % cols])));
            assert_eq!(back(sum[i]), back(to(x + y)), "add at {i}");
            assert_eq!(back(prod[i]), back(to(y * x)), "mul at {i}");
            let e = back(to((x as f64).exp() as f32));
            let got = back(exp[i]);
            assert!(
                got == e || (got - e).abs() <= e.abs() * 2e-2,
                "exp at {i}: {got} {e}"
            );
        }
    }
    check::<f16>(&va, &vb, rows, cols, f16::from_f32, f16::to_f32);
    check::<bf16>(&va, &vb, rows, cols, bf16::from_f32, bf16::to_f32);
}
