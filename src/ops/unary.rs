//! Pointwise unary operations: float math (`exp`, `log`, `sigmoid`, `gelu`, …) for the float
//! types, and sign/magnitude operations (`neg`, `abs`, `clamp`, `relu`, …) for every numeric
//! type. Each has an in-place form ending in `_`.

use super::{C, binary_, binary_scalar, scalar_on, unary, unary_};
use crate::backend::op::{BinaryOp, UnaryOp};
use crate::dtype::NativeFloat;
use crate::dtype::{Element, Float, Numeric};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{DynTensor, or_panic};

macro_rules! unary_ops {
    ($bound:ident; $(
        $(#[doc = $doc:literal])*
        $name:ident, $name_:ident, $try_name_:ident: $uop:ident;
    )*) => {
        impl<E: $bound> DynTensor<E> {$(
            $(#[doc = $doc])*
            pub fn $name(&self) -> DynTensor<E> {
                or_panic(unary(stringify!($name), UnaryOp::$uop, self))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name), "`] in place: overwrites every \
                element of this view and returns it. Panics where [`DynTensor::",
                stringify!($try_name_), "`] fails.")]
            ///
            /// ```
            /// let t = namedtensor::DynTensor::<f32>::ones(&[2, 3]);
            #[doc = concat!("t.narrow(1, 0, 2).", stringify!($name_), "();")]
            #[doc = concat!("assert_eq!(t.get(&[0, 0]), namedtensor::DynTensor::<f32>::ones(&[1]).",
                stringify!($name), "().item());")]
            /// assert_eq!(t.get(&[0, 2]), 1.0); // outside the view
            /// ```
            #[track_caller]
            pub fn $name_(&self) -> &Self {
                or_panic(self.$try_name_())
            }

            #[doc = concat!("[`DynTensor::", stringify!($name_), "`], or an error for an expanded \
                (stride-0) view, which is left unchanged.")]
            ///
            /// ```
            /// let t = namedtensor::DynTensor::<f32>::ones(&[3]).expand(&[2, 3]);
            #[doc = concat!("assert!(t.", stringify!($try_name_), "().is_err());")]
            /// ```
            pub fn $try_name_(&self) -> Result<&Self> {
                unary_(stringify!($name_), UnaryOp::$uop, self)?;
                Ok(self)
            }
        )*}
    };
}

unary_ops! { Float;
    /// `e^x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, 1.0], &[2]);
    /// assert_eq!(t.exp().to_vec(), vec![1.0, std::f32::consts::E]);
    /// ```
    exp, exp_, try_exp_: Exp;
    /// The natural logarithm (NaN for negative values, `-inf` for 0).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1.0f64, std::f64::consts::E], &[2]);
    /// assert_eq!(t.log().to_vec(), vec![0.0, 1.0]);
    /// ```
    log, log_, try_log_: Log;
    /// `ln(1 + x)`, accurate for small `x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1e-10f64], &[1]);
    /// assert!((t.log1p().item() - 1e-10).abs() < 1e-20);
    /// ```
    log1p, log1p_, try_log1p_: Log1p;
    /// `e^x - 1`, accurate for small `x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1e-10f64], &[1]);
    /// assert!((t.expm1().item() - 1e-10).abs() < 1e-20);
    /// ```
    expm1, expm1_, try_expm1_: Expm1;
    /// The square root (NaN for negative values).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32, 9.0], &[2]);
    /// assert_eq!(t.sqrt().to_vec(), vec![2.0, 3.0]);
    /// ```
    sqrt, sqrt_, try_sqrt_: Sqrt;
    /// `1 / sqrt(x)`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32], &[1]);
    /// assert_eq!(t.rsqrt().item(), 0.5);
    /// ```
    rsqrt, rsqrt_, try_rsqrt_: Rsqrt;
    /// The sine (radians).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32], &[1]);
    /// assert_eq!(t.sin().item(), 0.0);
    /// ```
    sin, sin_, try_sin_: Sin;
    /// The cosine (radians).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32], &[1]);
    /// assert_eq!(t.cos().item(), 1.0);
    /// ```
    cos, cos_, try_cos_: Cos;
    /// The tangent (radians).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32], &[1]);
    /// assert_eq!(t.tan().item(), 0.0);
    /// ```
    tan, tan_, try_tan_: Tan;
    /// The hyperbolic tangent.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, 100.0], &[2]);
    /// assert_eq!(t.tanh().to_vec(), vec![0.0, 1.0]);
    /// ```
    tanh, tanh_, try_tanh_: Tanh;
    /// The error function `erf(x) = 2/√π ∫₀ˣ e^(-t²) dt`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f64, 1.0], &[2]);
    /// let e = t.erf().to_vec();
    /// assert_eq!(e[0], 0.0);
    /// assert!((e[1] - 0.842_700_792_949_714_9).abs() < 1e-15);
    /// ```
    erf, erf_, try_erf_: Erf;
    /// The logistic function `1 / (1 + e^-x)`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, -1000.0], &[2]);
    /// assert_eq!(t.sigmoid().to_vec(), vec![0.5, 0.0]);
    /// ```
    sigmoid, sigmoid_, try_sigmoid_: Sigmoid;
    /// GELU in PyTorch's default (exact) form: `x · Φ(x) = x/2 · (1 + erf(x / √2))`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f64, 1.0], &[2]);
    /// let g = t.gelu().to_vec();
    /// assert_eq!(g[0], 0.0);
    /// assert!((g[1] - 0.8413447460685429).abs() < 1e-12);
    /// ```
    gelu, gelu_, try_gelu_: Gelu;
    /// GELU in its tanh approximation (PyTorch's `approximate='tanh'`):
    /// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1.0f64], &[1]);
    /// assert!((t.gelu_tanh().item() - 0.8411919906082768).abs() < 1e-12);
    /// ```
    gelu_tanh, gelu_tanh_, try_gelu_tanh_: GeluTanh;
    /// SiLU (swish): `x · sigmoid(x)`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, 1000.0], &[2]);
    /// assert_eq!(t.silu().to_vec(), vec![0.0, 1000.0]);
    /// ```
    silu, silu_, try_silu_: Silu;
    /// Rounds toward `-inf`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 1.5], &[2]);
    /// assert_eq!(t.floor().to_vec(), vec![-2.0, 1.0]);
    /// ```
    floor, floor_, try_floor_: Floor;
    /// Rounds toward `+inf`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 1.5], &[2]);
    /// assert_eq!(t.ceil().to_vec(), vec![-1.0, 2.0]);
    /// ```
    ceil, ceil_, try_ceil_: Ceil;
    /// Rounds to the nearest integer, ties to even (as PyTorch and NumPy).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.5f32, 1.5, 2.5, -0.7], &[4]);
    /// assert_eq!(t.round().to_vec(), vec![0.0, 2.0, 2.0, -1.0]);
    /// ```
    round, round_, try_round_: Round;
    /// Rounds toward zero.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 1.5], &[2]);
    /// assert_eq!(t.trunc().to_vec(), vec![-1.0, 1.0]);
    /// ```
    trunc, trunc_, try_trunc_: Trunc;
    /// `1 / x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32, 0.0], &[2]);
    /// assert_eq!(t.recip().to_vec(), vec![0.25, f32::INFINITY]);
    /// ```
    recip, recip_, try_recip_: Recip;
}

unary_ops! { Numeric;
    /// `-x` (integers wrap: `-(-128i8) == -128`).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1i32, -2], &[2]);
    /// assert_eq!(t.neg().to_vec(), vec![-1, 2]);
    /// ```
    neg, neg_, try_neg_: Neg;
    /// `|x|` (integers wrap: `abs(-128i8) == -128`).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 2.0], &[2]);
    /// assert_eq!(t.abs().to_vec(), vec![1.5, 2.0]);
    /// ```
    abs, abs_, try_abs_: Abs;
    /// `-1`, `0` or `1` by the sign of `x` (`0` for NaN, as PyTorch).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-3i64, 0, 7], &[3]);
    /// assert_eq!(t.sign().to_vec(), vec![-1, 0, 1]);
    /// ```
    sign, sign_, try_sign_: Sign;
    /// `x · x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-3i64, 2], &[2]);
    /// assert_eq!(t.square().to_vec(), vec![9, 4]);
    /// ```
    square, square_, try_square_: Square;
    /// `max(x, 0)` (NaN stays NaN).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-3i32, 2], &[2]);
    /// assert_eq!(t.relu().to_vec(), vec![0, 2]);
    /// ```
    relu, relu_, try_relu_: Relu;
}

impl<E: Float> DynTensor<E> {
    /// `x^exponent` for a float exponent (computed in `f32` for `f16`/`bf16`).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32, 9.0], &[2]);
    /// assert_eq!(t.powf(0.5).to_vec(), vec![2.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn powf(&self, exponent: f64) -> DynTensor<E> {
        let e = <C<E> as NativeFloat>::c(exponent);
        or_panic(binary_scalar::<E, E>("powf", BinaryOp::Pow, self, e, false))
    }

    /// [`DynTensor::powf`] in place. Panics where [`DynTensor::try_powf_`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![2.0f64, 3.0], &[2]);
    /// t.powf_(2.0);
    /// assert_eq!(t.to_vec(), vec![4.0, 9.0]);
    /// ```
    #[track_caller]
    pub fn powf_(&self, exponent: f64) -> &Self {
        or_panic(self.try_powf_(exponent))
    }

    /// [`DynTensor::powf_`], or an error for an expanded (stride-0) view.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[1]).expand(&[3]);
    /// assert!(t.try_powf_(2.0).is_err());
    /// ```
    pub fn try_powf_(&self, exponent: f64) -> Result<&Self> {
        let e = scalar_on(<C<E> as NativeFloat>::c(exponent), self.device())?;
        binary_::<E, C<E>, E>("powf_", BinaryOp::Pow, self, &e)?;
        Ok(self)
    }
}

/// An error for float bounds on an integer tensor: PyTorch would promote the result to a float
/// tensor, which these methods (returning the tensor's own type) cannot do; truncating the
/// bounds instead would silently change the result.
fn check_bounds<E: Element, S: Element>(op: &'static str) -> Result<()> {
    if S::DTYPE.is_float() && !E::DTYPE.is_float() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "{} bounds on a {} tensor: PyTorch promotes the result to a float tensor; \
                 convert the tensor first (e.g. `.to_dtype::<f32>()`) or pass integer bounds",
                S::DTYPE,
                E::DTYPE
            ),
        ));
    }
    Ok(())
}

impl<E: Numeric> DynTensor<E> {
    /// Limits every element to `[min, max]` (both converted to the tensor's compute type; NaN
    /// stays NaN; if `min > max` every element becomes `max`, as in PyTorch). Panics where
    /// [`DynTensor::try_clamp`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2.0f32, 0.5, 3.0], &[3]);
    /// assert_eq!(t.clamp(0.0, 1.0).to_vec(), vec![0.0, 0.5, 1.0]);
    /// let i = namedtensor::DynTensor::from_vec(vec![-2i64, 5, 9], &[3]);
    /// assert_eq!(i.clamp(0, 6).to_vec(), vec![0, 5, 6]);
    /// ```
    #[track_caller]
    pub fn clamp<S: Element>(&self, min: S, max: S) -> DynTensor<E> {
        or_panic(self.try_clamp(min, max))
    }

    /// [`DynTensor::clamp`], or an error for float bounds on an integer tensor (PyTorch
    /// would return a float tensor; convert the tensor first).
    ///
    /// ```
    /// let i = namedtensor::DynTensor::from_vec(vec![-2i64, 5, 9], &[3]);
    /// assert!(i.try_clamp(0.5, 6.5).is_err());
    /// assert_eq!(i.to_dtype::<f32>().clamp(0.5, 6.5).to_vec(), vec![0.5, 5.0, 6.5]);
    /// ```
    pub fn try_clamp<S: Element>(&self, min: S, max: S) -> Result<DynTensor<E>> {
        check_bounds::<E, S>("clamp")?;
        self.clamped("clamp", Some(min.to_f64()), Some(max.to_f64()), || {
            // The lower bound, then the upper one, in the compute type: one rounding at the end.
            let lo = binary_scalar::<E, C<E>>("clamp", BinaryOp::Maximum, self, min.cast(), false)?;
            binary_scalar::<C<E>, E>("clamp", BinaryOp::Minimum, &lo, max.cast(), false)
        })
    }

    /// `compute()`, recorded with clamp's gradient rule when this tensor requires grad.
    fn clamped(
        &self,
        op: &'static str,
        lo: Option<f64>,
        hi: Option<f64>,
        compute: impl FnOnce() -> Result<DynTensor<E>>,
    ) -> Result<DynTensor<E>> {
        if !crate::autograd::tracks(self) {
            return compute();
        }
        let y = {
            let _off = crate::autograd::GradMode::no_grad();
            compute()?
        };
        Ok(crate::autograd::clamp(op, self, lo, hi, y))
    }

    /// Limits every element to at least `min`. Panics where [`DynTensor::try_clamp_min`]
    /// fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2i32, 3], &[2]);
    /// assert_eq!(t.clamp_min(0).to_vec(), vec![0, 3]);
    /// ```
    #[track_caller]
    pub fn clamp_min<S: Element>(&self, min: S) -> DynTensor<E> {
        or_panic(self.try_clamp_min(min))
    }

    /// [`DynTensor::clamp_min`], or an error for a float bound on an integer tensor.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2i32, 3], &[2]);
    /// assert!(t.try_clamp_min(0.5).is_err());
    /// ```
    pub fn try_clamp_min<S: Element>(&self, min: S) -> Result<DynTensor<E>> {
        check_bounds::<E, S>("clamp_min")?;
        self.clamped("clamp_min", Some(min.to_f64()), None, || {
            binary_scalar::<E, E>("clamp_min", BinaryOp::Maximum, self, min.cast(), false)
        })
    }

    /// Limits every element to at most `max`. Panics where [`DynTensor::try_clamp_max`]
    /// fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2i32, 3], &[2]);
    /// assert_eq!(t.clamp_max(0).to_vec(), vec![-2, 0]);
    /// ```
    #[track_caller]
    pub fn clamp_max<S: Element>(&self, max: S) -> DynTensor<E> {
        or_panic(self.try_clamp_max(max))
    }

    /// [`DynTensor::clamp_max`], or an error for a float bound on an integer tensor.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2i32, 3], &[2]);
    /// assert!(t.try_clamp_max(2.5).is_err());
    /// ```
    pub fn try_clamp_max<S: Element>(&self, max: S) -> Result<DynTensor<E>> {
        check_bounds::<E, S>("clamp_max")?;
        self.clamped("clamp_max", None, Some(max.to_f64()), || {
            binary_scalar::<E, E>("clamp_max", BinaryOp::Minimum, self, max.cast(), false)
        })
    }

    /// [`DynTensor::clamp`] in place. Panics where [`DynTensor::try_clamp_`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2.0f32, 0.5, 3.0], &[3]);
    /// t.clamp_(0.0, 1.0);
    /// assert_eq!(t.to_vec(), vec![0.0, 0.5, 1.0]);
    /// ```
    #[track_caller]
    pub fn clamp_<S: Element>(&self, min: S, max: S) -> &Self {
        or_panic(self.try_clamp_(min, max))
    }

    /// [`DynTensor::clamp_min`] in place. Panics for an expanded (stride-0) view or a float bound on an integer tensor.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2i32, 3], &[2]);
    /// t.clamp_min_(0);
    /// assert_eq!(t.to_vec(), vec![0, 3]);
    /// ```
    #[track_caller]
    pub fn clamp_min_<S: Element>(&self, min: S) -> &Self {
        or_panic(check_bounds::<E, S>("clamp_min_"));
        let lo = or_panic(scalar_on(min.cast::<C<E>>(), self.device()));
        or_panic(binary_::<E, C<E>, E>(
            "clamp_min_",
            BinaryOp::Maximum,
            self,
            &lo,
        ));
        self
    }

    /// [`DynTensor::clamp_max`] in place. Panics for an expanded (stride-0) view or a float bound on an integer tensor.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-2i32, 3], &[2]);
    /// t.clamp_max_(0);
    /// assert_eq!(t.to_vec(), vec![-2, 0]);
    /// ```
    #[track_caller]
    pub fn clamp_max_<S: Element>(&self, max: S) -> &Self {
        or_panic(check_bounds::<E, S>("clamp_max_"));
        let hi = or_panic(scalar_on(max.cast::<C<E>>(), self.device()));
        or_panic(binary_::<E, C<E>, E>(
            "clamp_max_",
            BinaryOp::Minimum,
            self,
            &hi,
        ));
        self
    }

    /// [`DynTensor::clamp_`], or an error for an expanded (stride-0) view or for float bounds
    /// on an integer tensor; nothing is written then.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[1]).expand(&[3]);
    /// assert!(t.try_clamp_(0.0, 0.5).is_err());
    /// let i = namedtensor::DynTensor::from_vec(vec![1i32, 7], &[2]);
    /// assert!(i.try_clamp_(0.5, 6.5).is_err());
    /// assert_eq!(i.to_vec(), vec![1, 7]);
    /// ```
    pub fn try_clamp_<S: Element>(&self, min: S, max: S) -> Result<&Self> {
        check_bounds::<E, S>("clamp_")?;
        if crate::autograd::write_in_place("clamp_", self, false, |old| old.try_clamp(min, max))? {
            return Ok(self);
        }
        let clamped = self.try_clamp(min, max)?;
        self.try_copy_(&clamped)?;
        Ok(self)
    }
}
