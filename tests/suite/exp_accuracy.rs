//! Accuracy of the vectorised `exp` and `tanh` (and of the ops built on them) against independent
//! references: `f64::exp` for `f32` results, and for `f64` results a double-double
//! evaluation written here (range reduction by a 3-part ln 2, Taylor series in
//! double-double arithmetic) so that the `f64` reference does not rest on any one libm.
//! Errors are measured in units in the last place of the exact result.

use namedtensor::DynTensor;

/// `2^e` exactly, for `-1074 <= e <= 1023`.
fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// The size of one ulp of an `f32` result `y` (normal or subnormal).
fn ulp_f32(y: f64) -> f64 {
    let y = y.abs();
    if y < f32::MIN_POSITIVE as f64 {
        return pow2(-149);
    }
    pow2(y.log2().floor() as i32 - 23)
}

/// The error of `got` in `f32` ulps of the exact value `want`, with inf/NaN/0 compared exactly.
fn err_f32(got: f32, want: f64) -> f64 {
    let w32 = want as f32;
    if w32.is_infinite() || got.is_infinite() || want == 0.0 {
        return if got as f64 == want || got == w32 {
            0.0
        } else {
            f64::INFINITY
        };
    }
    (got as f64 - want).abs() / ulp_f32(want)
}

/// `f32` inputs: a dense even sweep of `[lo, hi]` plus every float next to the given points.
fn sweep_f32(lo: f32, hi: f32, n: usize, around: &[f32]) -> Vec<f32> {
    let mut xs: Vec<f32> = (0..n)
        .map(|i| lo + (hi - lo) * (i as f32 / (n - 1) as f32))
        .collect();
    for &a in around {
        let mut x = a;
        let mut y = a;
        for _ in 0..2000 {
            xs.push(x);
            xs.push(y);
            x = x.next_up();
            y = y.next_down();
        }
    }
    xs
}

#[test]
fn exp_f32_within_one_ulp_over_its_whole_range() {
    // Overflow at ln(f32::MAX) = 88.7228; the smallest subnormal 2^-149 at -103.28, and
    // results below half of it (-103.97) round to 0; normal results end at -87.34.
    let xs = sweep_f32(
        -104.5,
        89.5,
        4_000_001,
        &[
            88.722_84,
            -87.336_55,
            -103.279_31,
            -103.972_08,
            0.0,
            0.346_573_6,
            -0.346_573_6,
            1.0,
            -1.0,
            10.0,
        ],
    );
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    let got = t.exp().to_vec();
    let mut worst = (0.0f64, 0.0f32);
    let mut worst_sub = 0.0f64;
    for (&x, &y) in xs.iter().zip(&got) {
        let want = (x as f64).exp();
        let e = err_f32(y, want);
        if want < f32::MIN_POSITIVE as f64 {
            worst_sub = worst_sub.max(e);
        } else if e > worst.0 {
            worst = (e, x);
        }
    }
    println!(
        "exp f32: max error {:.3} ulp at x = {:e} (normal results), {worst_sub:.3} ulp (subnormal)",
        worst.0, worst.1
    );
    assert!(worst.0 <= 1.0, "max error {} ulp at {}", worst.0, worst.1);
    assert!(worst_sub <= 1.0, "subnormal max error {worst_sub} ulp");
}

#[test]
fn exp_special_values_and_boundaries() {
    let xs = vec![
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        88.72283,  // largest finite result
        88.722_84, // overflows
        1e30,
        -1e30,
        -103.972_07, // 2^-149.999..: rounds up to the smallest subnormal
        -103.972_09, // below half the smallest subnormal: 0
        f32::MAX,
        f32::MIN,
        1e-30,
    ];
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    let y = t.exp().to_vec();
    assert_eq!(y[0], 1.0);
    assert_eq!(y[1], 1.0);
    assert_eq!(y[2], f32::INFINITY);
    assert_eq!(y[3], 0.0);
    assert!(y[4].is_nan());
    assert!(y[5].is_finite() && y[5] > 3.4e38, "{}", y[5]);
    assert_eq!(y[6], f32::INFINITY);
    assert_eq!(y[7], f32::INFINITY);
    assert_eq!(y[8], 0.0);
    assert_eq!(y[9], f32::from_bits(1));
    assert_eq!(y[10], 0.0);
    assert_eq!(y[11], f32::INFINITY);
    assert_eq!(y[12], 0.0);
    assert_eq!(y[13], 1.0);

    let xs = vec![
        0.0f64,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        709.782_712_893_383_9,  // largest finite result
        709.782_712_893_384_1,  // overflows
        -745.133_219_101_941_1, // smallest subnormal
        -745.2,                 // 0
        f64::MAX,
        f64::MIN,
    ];
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    let y = t.exp().to_vec();
    assert_eq!(y[0], 1.0);
    assert_eq!(y[1], f64::INFINITY);
    assert_eq!(y[2], 0.0);
    assert!(y[3].is_nan());
    assert!(y[4].is_finite() && y[4] > 1.79e308, "{}", y[4]);
    assert_eq!(y[5], f64::INFINITY);
    assert_eq!(y[6], f64::from_bits(1));
    assert_eq!(y[7], 0.0);
    assert_eq!(y[8], f64::INFINITY);
    assert_eq!(y[9], 0.0);
}

/// A double-double `(hi, lo)` with `hi + lo` the value, `|lo| <= ulp(hi)/2`.
#[derive(Clone, Copy)]
struct Dd(f64, f64);

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd(s, (a - (s - bb)) + (b - bb))
}

fn two_prod(a: f64, b: f64) -> Dd {
    let p = a * b;
    Dd(p, a.mul_add(b, -p))
}

fn dd_add(a: Dd, b: Dd) -> Dd {
    let s = two_sum(a.0, b.0);
    let t = s.1 + a.1 + b.1;
    two_sum(s.0, t)
}

fn dd_mul(a: Dd, b: Dd) -> Dd {
    let p = two_prod(a.0, b.0);
    two_sum(p.0, p.1 + a.0 * b.1 + a.1 * b.0)
}

/// `e^x = (hi + lo)·2^k` for `|x| <= 746`, returned as `((hi, lo), k)`: `x = k·ln2 + r` with
/// ln 2 in three parts (each product with `k` exact), then `e^r` by its Taylor series to 27
/// terms in double-double arithmetic.
fn exp_dd_parts(x: f64) -> (Dd, i32) {
    // ln 2 = l1 + l2 + l3 to ~1e-50, with l1 cut to 32 bits so that k·l1 is exact.
    let l1 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    let l2 = std::f64::consts::LN_2 - l1; // exact: the low bits of LN_2
    let l3 = 2.319_046_813_846_299_6e-17;
    let k = (x / std::f64::consts::LN_2).round();
    let r = dd_add(Dd(x - k * l1, 0.0), two_prod(-k, l2));
    let r = dd_add(r, Dd(-k * l3, 0.0));
    let mut sum = Dd(1.0, 0.0);
    let mut term = Dd(1.0, 0.0);
    for n in 1..28 {
        term = dd_mul(term, r);
        // term / n in double-double: q = term·(1/n), then one correction step.
        let inv = 1.0 / n as f64;
        let q = dd_mul(term, Dd(inv, 0.0));
        let rem = dd_add(term, dd_mul(q, Dd(-(n as f64), 0.0)));
        term = dd_add(q, Dd(rem.0 * inv, 0.0));
        sum = dd_add(sum, term);
    }
    (sum, k as i32)
}

/// `e^x` as a double-double, for `|x| <= 700`.
fn exp_dd(x: f64) -> Dd {
    let (sum, k) = exp_dd_parts(x);
    let s = pow2(k);
    Dd(sum.0 * s, sum.1 * s)
}

#[test]
fn exp_f64_within_one_ulp_of_a_double_double_reference() {
    let n = 1_000_001;
    let mut xs: Vec<f64> = (0..n)
        .map(|i| -700.0 + 1400.0 * (i as f64 / (n - 1) as f64))
        .collect();
    // Fine sweeps around 0 and around ±ln2/2, where the reduced argument changes sign or k.
    for c in [0.0, 0.346_573_590_279_972_6, -0.346_573_590_279_972_6, 1.0] {
        xs.extend((0..20_000).map(|i| c + (i as f64 - 10_000.0) * 1e-9));
    }
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    let got = t.exp().to_vec();
    let mut worst = (0.0f64, 0.0f64);
    let mut worst_libm = 0.0f64;
    for (&x, &y) in xs.iter().zip(&got) {
        let want = exp_dd(x);
        let ulp = pow2(want.0.abs().log2().floor() as i32 - 52);
        let e = ((y - want.0) - want.1).abs() / ulp;
        if e > worst.0 {
            worst = (e, x);
        }
        worst_libm = worst_libm.max(((x.exp() - want.0) - want.1).abs() / ulp);
    }
    println!(
        "exp f64: max error {:.3} ulp at x = {:e} (std's f64::exp: {worst_libm:.3} ulp)",
        worst.0, worst.1
    );
    assert!(
        worst_libm <= 0.51,
        "the reference disagrees with libm: {worst_libm} ulp"
    );
    assert!(worst.0 <= 1.0, "max error {} ulp at {}", worst.0, worst.1);
}

#[test]
fn exp_f64_subnormal_results() {
    // Results below 2^-1022, measured in units of the smallest subnormal 2^-1074.
    let n = 200_001;
    let xs: Vec<f64> = (0..n)
        .map(|i| -745.2 + (745.2 - 708.3) * (i as f64 / (n - 1) as f64))
        .collect();
    let got = DynTensor::from_vec(xs.clone(), &[n]).exp().to_vec();
    let mut worst = 0.0f64;
    for (&x, &y) in xs.iter().zip(&got) {
        let (sum, k) = exp_dd_parts(x);
        if !(-1200..=-1022).contains(&k) {
            continue;
        }
        let want_units = (sum.0 + sum.1) * pow2(k + 1074); // exact scaling
        if want_units < 2f64.powi(52) {
            worst = worst.max((y / f64::from_bits(1) - want_units).abs());
        }
    }
    println!("exp f64 subnormal results: max error {worst:.3} ulp");
    assert!(worst <= 1.0, "max error {worst} ulp");
}

#[test]
fn sigmoid_and_softmax_follow_exp() {
    // sigmoid is 1 / (1 + e^-x): below x = -88.7 e^-x overflows and the result is 0 (as
    // before the vectorised exp), so its accuracy is checked above that.
    let xs: Vec<f32> = (0..2001).map(|i| -100.0 + 0.1 * i as f32).collect();
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    for (&x, &y) in xs.iter().zip(&t.sigmoid().to_vec()) {
        if x < -88.7 {
            assert_eq!(y, 0.0);
            continue;
        }
        let want = 1.0 / (1.0 + (-(x as f64)).exp());
        assert!(err_f32(y, want) <= 2.0, "sigmoid({x}) = {y}, want {want}");
    }
    let rows = DynTensor::from_vec(xs[..2000].to_vec(), &[20, 100]);
    let s = rows.softmax(-1).to_vec();
    let ls = rows.log_softmax(-1).to_vec();
    for r in 0..20 {
        let row: Vec<f64> = xs[r * 100..(r + 1) * 100]
            .iter()
            .map(|&v| v as f64)
            .collect();
        let m = row.iter().cloned().fold(f64::MIN, f64::max);
        let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..100 {
            let want = (row[c] - m).exp() / z;
            assert!((s[r * 100 + c] as f64 - want).abs() <= 1e-6 * want.max(1e-30) + 1e-38);
            let want_log = row[c] - m - z.ln();
            assert!((ls[r * 100 + c] as f64 - want_log).abs() <= 2e-5 * want_log.abs().max(1.0));
        }
    }
}

#[test]
fn tanh_f32_within_two_ulp() {
    // A dense sweep over the range where tanh is not ±1 in f32, and the floats around the
    // switch between the polynomial and the exp form (0.625), 0 and the tiny values.
    let xs = sweep_f32(
        -10.0,
        10.0,
        4_000_001,
        &[0.625, -0.625, 0.0, 1e-30, -1e-30, 9.0, -9.0],
    );
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    let got = t.tanh().to_vec();
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &y) in xs.iter().zip(&got) {
        let e = err_f32(y, (x as f64).tanh());
        if e > worst.0 {
            worst = (e, x);
        }
    }
    println!(
        "tanh f32: max error {:.3} ulp at x = {:e}",
        worst.0, worst.1
    );
    assert!(worst.0 <= 2.0, "max error {} ulp at {}", worst.0, worst.1);
    let special = DynTensor::from_vec(
        vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            100.0,
            -100.0,
        ],
        &[6],
    )
    .tanh()
    .to_vec();
    assert!(special[0].is_nan());
    assert_eq!(&special[1..3], &[1.0, -1.0]);
    assert!(special[3] == 0.0 && special[3].is_sign_negative());
    assert_eq!(&special[4..], &[1.0, -1.0]);
}

#[test]
fn erf_f32_within_two_ulp_and_exact_at_its_special_values() {
    // A dense sweep over [-5, 5] (past 3.92 the result is 1), the floats next to the switch
    // between the two ranges (±1) and to 0, and tiny arguments down to subnormals.
    let mut xs = sweep_f32(-5.0, 5.0, 2_000_001, &[1.0, -1.0, 0.0, 3.92, 4.0]);
    xs.extend((0..120).map(|i| 2f32.powi(-i)));
    xs.extend((0..120).map(|i| -(2f32.powi(-i)) * 1.37));
    let t = DynTensor::from_vec(xs.clone(), &[xs.len()]);
    let got = t.erf().to_vec();
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &y) in xs.iter().zip(&got) {
        let e = err_f32(y, libm::erf(x as f64));
        if e > worst.0 {
            worst = (e, x);
        }
    }
    assert!(worst.0 < 2.0, "erf: {} ulp at x = {}", worst.0, worst.1);
    let special = [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        10.0,
    ];
    let got = DynTensor::from_vec(special.to_vec(), &[special.len()])
        .erf()
        .to_vec();
    assert_eq!(got[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(got[1].to_bits(), (-0.0f32).to_bits());
    assert_eq!(got[2..4], [1.0, -1.0]);
    assert!(got[4].is_nan());
    // Subnormal: within one step of the smallest subnormal.
    let tiny = 1e-40f32 as f64 * std::f64::consts::FRAC_2_SQRT_PI;
    assert!(err_f32(got[5], tiny) <= 1.0, "erf(1e-40) = {}", got[5]);
    assert_eq!(got[6], 1.0);
}
