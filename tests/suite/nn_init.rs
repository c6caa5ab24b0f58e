//! `nn::init` (PyTorch's `torch.nn.init`): the bounds and moments of each distribution
//! against their closed forms, orthogonality by the Gram matrix, and the errors. The draws
//! come from the process's generator, shared by the tests of this binary, so the checks
//! hold for any seed: statistical tolerances are ≥ 5 standard errors.

use namedtensor::nn::init::{self, FanMode, Nonlinearity, fans};
use namedtensor::{DynTensor, ErrorKind, Tensor, dims};

dims! { Out, In, KernelH, KernelW, Rows }

fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// `std` within `rel` of `want`, and the mean within 5 standard errors of `mean`.
fn assert_moments(v: &[f64], mean: f64, want_std: f64, rel: f64) {
    let (m, s) = moments(v);
    let se = want_std / (v.len() as f64).sqrt();
    assert!(
        (m - mean).abs() <= 5.0 * se,
        "mean {m}, want {mean} ± {}",
        5.0 * se
    );
    assert!(
        (s / want_std - 1.0).abs() <= rel,
        "std {s}, want {want_std}"
    );
}

#[test]
fn gains_and_fans_are_pytorchs() {
    assert_eq!(Nonlinearity::Linear.gain(), 1.0);
    assert_eq!(Nonlinearity::Sigmoid.gain(), 1.0);
    assert_eq!(Nonlinearity::Selu.gain(), 0.75);
    assert!((Nonlinearity::LeakyRelu(0.01).gain() - (2.0f64 / 1.0001).sqrt()).abs() < 1e-15);
    assert!((Nonlinearity::LeakyRelu(5f64.sqrt()).gain() - (1.0f64 / 3.0).sqrt()).abs() < 1e-15);
    assert_eq!(fans(&[10, 4]).unwrap(), (4, 10));
    assert_eq!(fans(&[16, 8, 3, 3]).unwrap(), (72, 144));
    assert_eq!(fans(&[5]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn xavier_has_glorots_bound_and_spread() {
    let w = Tensor::<f64, (Out, In)>::zeros([200, 300]);
    init::xavier_uniform_(&w, 2.0).unwrap();
    let bound = 2.0 * (6.0f64 / 500.0).sqrt();
    let v = w.to_vec();
    assert!(v.iter().all(|x| x.abs() <= bound));
    assert_moments(&v, 0.0, bound / 3f64.sqrt(), 0.02);
    init::xavier_normal_(&w, 0.5).unwrap();
    assert_moments(&w.to_vec(), 0.0, 0.5 * (2.0f64 / 500.0).sqrt(), 0.02);
}

#[test]
fn kaiming_keeps_the_variance_of_the_chosen_fan() {
    // A convolution weight: fan in 8·3·3 = 72, fan out 16·3·3 = 144.
    let w = Tensor::<f32, (Out, In, KernelH, KernelW)>::zeros([160, 80, 3, 3]);
    let as_f64 = |t: &Tensor<f32, (Out, In, KernelH, KernelW)>| -> Vec<f64> {
        t.to_vec().iter().map(|&x| x as f64).collect()
    };
    let (fan_in, fan_out) = (720.0f64, 1440.0f64);
    init::kaiming_normal_(&w, FanMode::FanIn, Nonlinearity::Relu).unwrap();
    assert_moments(&as_f64(&w), 0.0, 2f64.sqrt() / fan_in.sqrt(), 0.02);
    init::kaiming_normal_(&w, FanMode::FanOut, Nonlinearity::Tanh).unwrap();
    assert_moments(&as_f64(&w), 0.0, 5.0 / 3.0 / fan_out.sqrt(), 0.02);
    init::kaiming_uniform_(&w, FanMode::FanIn, Nonlinearity::LeakyRelu(5f64.sqrt())).unwrap();
    // PyTorch's default Linear/Conv weight: bound 1/√fan_in.
    let bound = 1.0 / fan_in.sqrt();
    let v = as_f64(&w);
    assert!(v.iter().all(|x| x.abs() <= bound * (1.0 + 1e-6)));
    assert_moments(&v, 0.0, bound / 3f64.sqrt(), 0.02);
}

#[test]
fn trunc_normal_has_the_truncated_moments_and_stays_in_range() {
    // Closed forms with φ, Φ of the standard normal: for [a, b], the mean is
    // (φ(a) − φ(b)) / Z and the variance 1 + (aφ(a) − bφ(b)) / Z − mean², Z = Φ(b) − Φ(a).
    let phi = |x: f64| (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let cdf = |x: f64| 0.5 * (1.0 + libm_erf(x / 2f64.sqrt()));
    for (a, b) in [(-2.0, 2.0), (-0.5, 2.0), (1.0, 3.0), (-0.1, 0.1)] {
        let z = cdf(b) - cdf(a);
        let mean = (phi(a) - phi(b)) / z;
        let var = 1.0 + (a * phi(a) - b * phi(b)) / z - mean * mean;
        let t = Tensor::<f64, (Rows,)>::zeros([100_000]);
        // Scaled and shifted: mean 3, std 2, on [3 + 2a, 3 + 2b].
        init::trunc_normal_(&t, 3.0, 2.0, 3.0 + 2.0 * a, 3.0 + 2.0 * b).unwrap();
        let v = t.to_vec();
        assert!(
            v.iter()
                .all(|x| (3.0 + 2.0 * a..=3.0 + 2.0 * b).contains(x)),
            "[{a}, {b}]"
        );
        assert_moments(&v, 3.0 + 2.0 * mean, 2.0 * var.sqrt(), 0.02);
    }
    let t = Tensor::<f64, (Rows,)>::ones([3]);
    let e = init::trunc_normal_(&t, 0.0, 1.0, 1.0, 1.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        t.to_vec(),
        vec![1.0; 3],
        "an error leaves the tensor as it was"
    );
}

/// erf by its Taylor series (enough terms for |x| ≤ 3): an independent check of the CDF.
fn libm_erf(x: f64) -> f64 {
    let mut sum: f64 = 0.0;
    let mut term = x;
    let mut n = 0.0;
    while term.abs() > 1e-17 * sum.abs().max(1e-300) || n < 5.0 {
        sum += term / (2.0 * n + 1.0);
        n += 1.0;
        term *= -x * x / n;
        if n > 200.0 {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn orthogonal_gives_orthonormal_rows_or_columns_times_the_gain() {
    // W as a rows × cols matrix; the Gram matrix of the shorter side is gain²·I.
    let gram_is = |m: &DynTensor<f64>, gain: f64| {
        let m = m.reshape(&[m.shape()[0] as isize, -1]);
        let (r, c) = (m.shape()[0], m.shape()[1]);
        let gram = if r <= c {
            m.matmul(&m.t())
        } else {
            m.t().matmul(&m)
        };
        let k = r.min(c);
        let g = gram.to_vec();
        for i in 0..k {
            for j in 0..k {
                let want = if i == j { gain * gain } else { 0.0 };
                assert!(
                    (g[i * k + j] - want).abs() < 1e-12,
                    "({r}, {c}): gram[{i}][{j}] = {}",
                    g[i * k + j]
                );
            }
        }
    };
    let check = |shape: &[usize], gain: f64| {
        let w = Tensor::<f64, (Out, In)>::zeros([shape[0], shape[1]]);
        init::orthogonal_(&w, gain).unwrap();
        gram_is(w.as_dyn(), gain);
    };
    check(&[6, 6], 1.0);
    check(&[8, 3], 1.0);
    check(&[3, 8], 2.0);
    let kernel = Tensor::<f64, (Out, In, KernelH)>::zeros([4, 2, 3]);
    init::orthogonal_(&kernel, 0.5).unwrap();
    gram_is(kernel.as_dyn(), 0.5);
    let v = Tensor::<f64, (Rows,)>::ones([4]);
    assert_eq!(
        init::orthogonal_(&v, 1.0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(v.to_vec(), vec![1.0; 4]);
}

#[test]
fn filling_keeps_dtype_grad_and_device_and_records_nothing() {
    let w = Tensor::<f32, (Out, In)>::zeros([3, 4]).requires_grad_(true);
    init::constant_(&w, 0.25).unwrap();
    assert_eq!(w.to_vec(), vec![0.25f32; 12]);
    assert!(w.requires_grad() && w.as_dyn().is_leaf());
    init::ones_(&w).unwrap();
    init::uniform_(&w, -1.0, 3.0).unwrap();
    assert!(w.to_vec().iter().all(|x| (-1.0..3.0).contains(x)));
    init::normal_(&w, 5.0, 0.0).unwrap();
    assert_eq!(w.to_vec(), vec![5.0f32; 12]);
    assert_eq!(
        init::uniform_(&w, 2.0, 1.0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        init::normal_(&w, 0.0, -1.0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(w.to_vec(), vec![5.0f32; 12]);
}
