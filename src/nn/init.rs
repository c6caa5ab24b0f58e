//! PyTorch's initialisations: the layers' defaults, seeded (every layer draws its parameters
//! from a seed, the caller's or one from the process's generator, [`crate::random`], so a
//! model is the same on every machine and run), and the `torch.nn.init` family that
//! overwrites a parameter in place (`xavier_uniform_`, `kaiming_normal_`, `orthogonal_`,
//! `trunc_normal_`, …).

use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{DimTuple, Shape};
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::DynTensor;

pub use crate::random::derive_seed;

/// Samples of the uniform distribution on `[-bound, bound)`, named `S`.
///
/// # Errors
/// The errors of [`DynTensor::try_rand`] (a shape whose element count overflows, or that the
/// host cannot hold), and [`ErrorKind`]`::ShapeMismatch` when `sizes` does
/// not have the rank of `S`.
///
/// ```
/// use namedtensor::{dims, nn::init::uniform};
/// dims! { Out, In }
/// let w = uniform::<f64, (Out, In)>(&[20, 30], 0.25, 3).unwrap();
/// assert!(w.to_vec().iter().all(|x| x.abs() <= 0.25));
/// ```
pub fn uniform<E: Float, S: Shape>(sizes: &[usize], bound: f64, seed: u64) -> Result<Tensor<E, S>> {
    let unit = DynTensor::<E>::try_rand(sizes, seed)?;
    unit.try_mul_scalar(2.0 * bound)?
        .try_sub_scalar(bound)?
        .try_refine_names()
}

/// PyTorch's `Linear`/`Conv` default: the uniform distribution on
/// `[-1/sqrt(fan_in), 1/sqrt(fan_in)]` (`kaiming_uniform_(a=sqrt(5))` for weights, the same
/// bound for biases).
///
/// ```
/// assert_eq!(namedtensor::nn::init::fan_in_bound(16), 0.25);
/// ```
pub fn fan_in_bound(fan_in: usize) -> f64 {
    if fan_in == 0 {
        0.0
    } else {
        1.0 / (fan_in as f64).sqrt()
    }
}

// ---- torch.nn.init: filling a parameter in place --------------------------------------------
//
// Each function below overwrites a tensor's values in place (without recording a gradient,
// as PyTorch's `torch.no_grad()` inside them), keeps its dtype and device, and draws from
// the process's generator (`crate::random`): `manual_seed` first makes it reproducible.
// Fans follow PyTorch's layout convention, which every layer of this crate uses: dim 0 is
// the output, dim 1 the input, and the dims after them a receptive field (a kernel).

/// The nonlinearity a gain is for (PyTorch's `calculate_gain` names).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nonlinearity {
    /// `linear`, and the convolutions: 1.
    Linear,
    /// `sigmoid`: 1.
    Sigmoid,
    /// `tanh`: 5/3.
    Tanh,
    /// `relu`: √2.
    Relu,
    /// `leaky_relu` with this negative slope: √(2 / (1 + slope²)).
    LeakyRelu(f64),
    /// `selu`: 3/4.
    Selu,
}

impl Nonlinearity {
    /// The recommended gain (PyTorch's `calculate_gain`).
    ///
    /// ```
    /// use namedtensor::nn::init::Nonlinearity;
    /// assert_eq!(Nonlinearity::Relu.gain(), 2f64.sqrt());
    /// assert_eq!(Nonlinearity::Tanh.gain(), 5.0 / 3.0);
    /// assert_eq!(Nonlinearity::LeakyRelu(1.0).gain(), 1.0);
    /// ```
    pub fn gain(self) -> f64 {
        match self {
            Nonlinearity::Linear | Nonlinearity::Sigmoid => 1.0,
            Nonlinearity::Tanh => 5.0 / 3.0,
            Nonlinearity::Relu => 2f64.sqrt(),
            Nonlinearity::LeakyRelu(slope) => (2.0 / (1.0 + slope * slope)).sqrt(),
            Nonlinearity::Selu => 0.75,
        }
    }
}

/// Which fan Kaiming's initialisations keep the variance of: the input's (forward pass) or
/// the output's (backward pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// `mode='fan_in'`.
    FanIn,
    /// `mode='fan_out'`.
    FanOut,
}

/// `(fan_in, fan_out)` of a weight of `shape`: `shape[1]` and `shape[0]`, each times the
/// receptive field (the product of the dims after them); an error below two dims.
///
/// ```
/// use namedtensor::nn::init::fans;
/// assert_eq!(fans(&[8, 3, 5, 5]).unwrap(), (75, 200)); // a 5×5 convolution from 3 to 8
/// assert!(fans(&[8]).is_err());
/// ```
pub fn fans(shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "init",
            format!(
                "fan in and fan out need a tensor of at least 2 dims (output, input, …), not \
                 shape {shape:?}"
            ),
        ));
    }
    let field: usize = shape[2..].iter().product();
    Ok((shape[1] * field, shape[0] * field))
}

/// Overwrites `t` with `values` (one per element, in `t`'s logical order), in its dtype and
/// on its device, without recording a gradient.
fn fill<E: Float, S: DimTuple, P: DimTuple>(t: &Tensor<E, S, P>, values: Vec<f64>) -> Result<()> {
    let raw = t.as_dyn();
    let v = DynTensor::<E>::from_contiguous_vec(
        values.into_iter().map(E::from_f64).collect::<Vec<_>>(),
        raw.shape(),
    )?
    .to_device(raw.device())?;
    crate::autograd::no_grad(|| raw.try_copy_(&v).map(|_| ()))
}

/// `n` samples of the standard normal distribution, from the process's generator.
fn standard_normal(n: usize) -> Result<Vec<f64>> {
    Ok(DynTensor::<f64>::try_randn(&[n], next_seed())?.to_vec())
}

/// `n` samples of the uniform distribution on `[low, high)`, from the process's generator.
fn uniform_samples(n: usize, low: f64, high: f64) -> Result<Vec<f64>> {
    let unit = DynTensor::<f64>::try_rand(&[n], next_seed())?.to_vec();
    Ok(unit.into_iter().map(|u| low + (high - low) * u).collect())
}

fn invalid(op: &'static str, msg: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, op, msg)
}

/// Checks a standard deviation or gain: finite and ≥ 0.
fn check_scale(op: &'static str, what: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(invalid(
            op,
            format!("{what} = {v} must be a finite number ≥ 0"),
        ))
    }
}

/// Fills `t` with `value` (`torch.nn.init.constant_`).
///
/// ```
/// use namedtensor::nn::{init, Linear};
/// namedtensor::dims! { In, Out }
/// let fc = Linear::<In, Out>::new(3, 2);
/// init::constant_(&fc.weight, 0.5).unwrap();
/// init::zeros_(fc.bias.as_ref().unwrap()).unwrap();
/// assert_eq!(fc.weight.to_vec(), vec![0.5; 6]);
/// assert!(fc.weight.requires_grad()); // still a parameter
/// ```
pub fn constant_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    value: f64,
) -> Result<()> {
    fill(t, vec![value; t.as_dyn().numel()])
}

/// Fills `t` with zeros (`torch.nn.init.zeros_`).
pub fn zeros_<E: Float, S: DimTuple, P: DimTuple>(t: &Tensor<E, S, P>) -> Result<()> {
    constant_(t, 0.0)
}

/// Fills `t` with ones (`torch.nn.init.ones_`).
pub fn ones_<E: Float, S: DimTuple, P: DimTuple>(t: &Tensor<E, S, P>) -> Result<()> {
    constant_(t, 1.0)
}

/// Uniform samples on `[low, high)` (`torch.nn.init.uniform_`); an error unless
/// `low ≤ high`, both finite.
pub fn uniform_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    low: f64,
    high: f64,
) -> Result<()> {
    if !(low.is_finite() && high.is_finite() && low <= high) {
        return Err(invalid(
            "uniform_",
            format!("the range [{low}, {high}) is not finite with low ≤ high"),
        ));
    }
    fill(t, uniform_samples(t.as_dyn().numel(), low, high)?)
}

/// Normal samples of mean `mean` and standard deviation `std` (`torch.nn.init.normal_`).
pub fn normal_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    mean: f64,
    std: f64,
) -> Result<()> {
    check_scale("normal_", "std", std)?;
    if !mean.is_finite() {
        return Err(invalid("normal_", format!("mean = {mean} must be finite")));
    }
    let z = standard_normal(t.as_dyn().numel())?;
    fill(t, z.into_iter().map(|z| mean + std * z).collect())
}

/// Normal samples of mean `mean` and standard deviation `std` conditioned on `[low, high]`
/// (`torch.nn.init.trunc_normal_`, by the inverse of the normal CDF); an error unless
/// `low < high`.
///
/// ```
/// use namedtensor::{nn::init, Tensor};
/// namedtensor::dims! { Rows }
/// let t = Tensor::<f64, (Rows,)>::zeros([10_000]);
/// init::trunc_normal_(&t, 0.0, 1.0, -0.5, 2.0).unwrap();
/// assert!(t.to_vec().iter().all(|v| (-0.5..=2.0).contains(v)));
/// ```
pub fn trunc_normal_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    mean: f64,
    std: f64,
    low: f64,
    high: f64,
) -> Result<()> {
    const OP: &str = "trunc_normal_";
    check_scale(OP, "std", std)?;
    if !(mean.is_finite() && low < high) || low.is_nan() || high.is_nan() {
        return Err(invalid(
            OP,
            format!("mean = {mean} must be finite and the range [{low}, {high}] have low < high"),
        ));
    }
    let cdf = |x: f64| 0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
    let (l, u) = if std == 0.0 {
        (0.5, 0.5)
    } else {
        (cdf((low - mean) / std), cdf((high - mean) / std))
    };
    let p = uniform_samples(t.as_dyn().numel(), 2.0 * l - 1.0, 2.0 * u - 1.0)?;
    let values = p
        .into_iter()
        .map(|p| (mean + std * std::f64::consts::SQRT_2 * erfinv(p)).clamp(low, high))
        .collect();
    fill(t, values)
}

/// The inverse of the error function on `(-1, 1)`: Giles's single-precision approximation
/// ("Approximating the erfinv function", 2010), then two Newton steps on `erf` for double
/// precision; ±∞ at ±1.
fn erfinv(y: f64) -> f64 {
    if y <= -1.0 {
        return f64::NEG_INFINITY;
    }
    if y >= 1.0 {
        return f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let (coefficients, w): (&[f64], f64) = if w < 5.0 {
        (
            &[
                2.810_226_36e-8,
                3.432_739_39e-7,
                -3.523_387_7e-6,
                -4.391_506_54e-6,
                2.185_808_7e-4,
                -1.253_725_03e-3,
                -4.177_681_64e-3,
                0.246_640_727,
                1.501_409_41,
            ],
            w - 2.5,
        )
    } else {
        (
            &[
                -2.002_142_57e-4,
                1.009_505_58e-4,
                1.349_343_22e-3,
                -3.673_428_44e-3,
                5.739_507_73e-3,
                -7.622_461_3e-3,
                9.438_870_47e-3,
                1.001_674_06,
                2.832_976_82,
            ],
            w.sqrt() - 3.0,
        )
    };
    let mut x = coefficients.iter().fold(0.0, |p, &c| c + p * w) * y;
    for _ in 0..2 {
        let slope = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
        x -= (libm::erf(x) - y) / slope;
    }
    x
}

/// Xavier/Glorot uniform: on `±gain·√(6 / (fan_in + fan_out))` (`xavier_uniform_`).
///
/// ```
/// use namedtensor::nn::{init, Linear};
/// namedtensor::dims! { In, Out }
/// let fc = Linear::<In, Out>::new(30, 20);
/// init::xavier_uniform_(&fc.weight, 1.0).unwrap();
/// assert!(fc.weight.to_vec().iter().all(|w| w.abs() <= (6.0f32 / 50.0).sqrt()));
/// ```
pub fn xavier_uniform_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    gain: f64,
) -> Result<()> {
    check_scale("xavier_uniform_", "gain", gain)?;
    let (fan_in, fan_out) = fans(t.as_dyn().shape())?;
    let bound = gain * (6.0 / (fan_in + fan_out) as f64).sqrt();
    uniform_(t, -bound, bound)
}

/// Xavier/Glorot normal: standard deviation `gain·√(2 / (fan_in + fan_out))`
/// (`xavier_normal_`).
pub fn xavier_normal_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    gain: f64,
) -> Result<()> {
    check_scale("xavier_normal_", "gain", gain)?;
    let (fan_in, fan_out) = fans(t.as_dyn().shape())?;
    normal_(t, 0.0, gain * (2.0 / (fan_in + fan_out) as f64).sqrt())
}

/// The standard deviation Kaiming's initialisations give: `gain / √fan`.
fn kaiming_std(
    op: &'static str,
    shape: &[usize],
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<f64> {
    let (fan_in, fan_out) = fans(shape)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    if fan == 0 {
        return Err(invalid(
            op,
            format!("the fan of a tensor of shape {shape:?} is 0"),
        ));
    }
    Ok(nonlinearity.gain() / (fan as f64).sqrt())
}

/// Kaiming/He uniform: on `±gain·√(3 / fan)` (`kaiming_uniform_`; PyTorch's default layer
/// initialisation is `FanIn` with `LeakyRelu(√5)`).
///
/// ```
/// use namedtensor::nn::init::{self, FanMode, Nonlinearity};
/// use namedtensor::nn::Conv2d;
/// use namedtensor::ops::Window2d;
/// namedtensor::dims! { Channels, Features, Height, Width }
/// let conv = Conv2d::<Channels, Features, Height, Width>::new(3, 8, Window2d::new(3, 3));
/// init::kaiming_uniform_(&conv.weight, FanMode::FanIn, Nonlinearity::Relu).unwrap();
/// let bound = 2f32.sqrt() * (3.0f32 / 27.0).sqrt();
/// assert!(conv.weight.to_vec().iter().all(|w| w.abs() <= bound));
/// ```
pub fn kaiming_uniform_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<()> {
    let bound =
        3f64.sqrt() * kaiming_std("kaiming_uniform_", t.as_dyn().shape(), mode, nonlinearity)?;
    uniform_(t, -bound, bound)
}

/// Kaiming/He normal: standard deviation `gain / √fan` (`kaiming_normal_`).
pub fn kaiming_normal_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<()> {
    let std = kaiming_std("kaiming_normal_", t.as_dyn().shape(), mode, nonlinearity)?;
    normal_(t, 0.0, std)
}

/// A (semi-)orthogonal matrix times `gain` (`torch.nn.init.orthogonal_`): `t` seen as a
/// matrix of `shape[0]` rows by the product of the other dims, with orthonormal rows or
/// columns, whichever are fewer; the Q of a QR decomposition of normal samples, signs
/// fixed so that R's diagonal is positive, as PyTorch does. An error below two dims.
///
/// ```
/// use namedtensor::{nn::init, Tensor};
/// namedtensor::dims! { Out, In, Out2 }
/// let w = Tensor::<f64, (Out, In)>::zeros([3, 5]);
/// init::orthogonal_(&w, 1.0).unwrap();
/// let gram = w.dot(In, &w.rename::<Out, Out2>()); // W Wᵀ, (Out, Out2)
/// let v = gram.to_vec();
/// for i in 0..3 { for j in 0..3 {
///     assert!((v[i * 3 + j] - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
/// } }
/// ```
pub fn orthogonal_<E: Float, S: DimTuple, P: DimTuple>(
    t: &Tensor<E, S, P>,
    gain: f64,
) -> Result<()> {
    const OP: &str = "orthogonal_";
    check_scale(OP, "gain", gain)?;
    let shape = t.as_dyn().shape().to_vec();
    if shape.len() < 2 {
        return Err(invalid(
            OP,
            format!("only tensors of 2 or more dims are supported, not shape {shape:?}"),
        ));
    }
    let rows = shape[0];
    let cols: usize = shape[1..].iter().product();
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    // Orthonormalise the longer side's vectors: columns of a tall (n × m) matrix, n ≥ m.
    let (n, m) = (rows.max(cols), rows.min(cols));
    let a = standard_normal(n * m)?; // column-major: column k is a[k*n..(k+1)*n]
    let q = orthonormal_columns(a, n, m);
    // Element (r, c) of the result: the tall Q's (r, c), or its transpose's when rows < cols.
    let values = (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            let (row, col) = if rows >= cols { (r, c) } else { (c, r) };
            gain * q[col * n + row]
        })
        .collect();
    fill(t, values)
}

/// The Q of `a` (`n × m`, column-major, `n ≥ m`) by modified Gram–Schmidt, each column
/// orthogonalised twice for accuracy: orthonormal columns with R's diagonal positive. A
/// column that vanishes (probability 0 for normal samples) is left at zero.
fn orthonormal_columns(mut a: Vec<f64>, n: usize, m: usize) -> Vec<f64> {
    for k in 0..m {
        for _ in 0..2 {
            for j in 0..k {
                let dot: f64 = (0..n).map(|i| a[j * n + i] * a[k * n + i]).sum();
                for i in 0..n {
                    a[k * n + i] -= dot * a[j * n + i];
                }
            }
        }
        let norm = (0..n)
            .map(|i| a[k * n + i] * a[k * n + i])
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            for i in 0..n {
                a[k * n + i] /= norm;
            }
        }
    }
    a
}
