//! Pointwise unary operations: float math (`exp`, `log`, `sigmoid`, `gelu`, …) for the float
//! types, and sign/magnitude operations (`neg`, `abs`, `clamp`, `relu`, …) for every numeric
//! type. Each has an in-place form ending in `_`.

#[cfg(feature = "cuda")]
use super::cuda::{Param, map_param, map_param_inplace};
use super::{C, map, map_inplace, map_inplace_vec, map_vec, on_cuda};
use crate::dtype::{Element, Float, Numeric};
use crate::dtype::{Native, NativeFloat};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{DynTensor, or_panic};

macro_rules! unary_ops {
    ($bound:ident, $map:ident, $map_inplace:ident; $(
        $(#[doc = $doc:literal])*
        $name:ident, $name_:ident, $try_name_:ident: |$x:ident| $body:expr;
    )*) => {
        impl<E: $bound> DynTensor<E> {$(
            $(#[doc = $doc])*
            pub fn $name(&self) -> DynTensor<E> {
                or_panic($map::<E, C<E>, C<E>, E>(stringify!($name), self, #[inline(always)] |$x: C<E>| $body))
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
                $map_inplace::<E, C<E>>(stringify!($name_), self, #[inline(always)] |$x: C<E>| $body)?;
                Ok(self)
            }
        )*}
    };
}

// Float math is bound by arithmetic (exp, sigmoid) or by rounding instructions missing from
// baseline x86-64 (floor, round): its loops are compiled for the CPU's vector instructions.
unary_ops! { Float, map_vec, map_inplace_vec;
    /// `e^x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, 1.0], &[2]);
    /// assert_eq!(t.exp().to_vec(), vec![1.0, std::f32::consts::E]);
    /// ```
    exp, exp_, try_exp_: |x| x.exp();
    /// The natural logarithm (NaN for negative values, `-inf` for 0).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1.0f64, std::f64::consts::E], &[2]);
    /// assert_eq!(t.log().to_vec(), vec![0.0, 1.0]);
    /// ```
    log, log_, try_log_: |x| x.ln();
    /// `ln(1 + x)`, accurate for small `x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1e-10f64], &[1]);
    /// assert!((t.log1p().item() - 1e-10).abs() < 1e-20);
    /// ```
    log1p, log1p_, try_log1p_: |x| x.ln_1p();
    /// `e^x - 1`, accurate for small `x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1e-10f64], &[1]);
    /// assert!((t.expm1().item() - 1e-10).abs() < 1e-20);
    /// ```
    expm1, expm1_, try_expm1_: |x| x.exp_m1();
    /// The square root (NaN for negative values).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32, 9.0], &[2]);
    /// assert_eq!(t.sqrt().to_vec(), vec![2.0, 3.0]);
    /// ```
    sqrt, sqrt_, try_sqrt_: |x| x.sqrt();
    /// `1 / sqrt(x)`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32], &[1]);
    /// assert_eq!(t.rsqrt().item(), 0.5);
    /// ```
    rsqrt, rsqrt_, try_rsqrt_: |x| <C<E> as NativeFloat>::c(1.0).ndiv(x.sqrt());
    /// The sine (radians).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32], &[1]);
    /// assert_eq!(t.sin().item(), 0.0);
    /// ```
    sin, sin_, try_sin_: |x| x.sin();
    /// The cosine (radians).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32], &[1]);
    /// assert_eq!(t.cos().item(), 1.0);
    /// ```
    cos, cos_, try_cos_: |x| x.cos();
    /// The tangent (radians).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32], &[1]);
    /// assert_eq!(t.tan().item(), 0.0);
    /// ```
    tan, tan_, try_tan_: |x| x.tan();
    /// The hyperbolic tangent.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, 100.0], &[2]);
    /// assert_eq!(t.tanh().to_vec(), vec![0.0, 1.0]);
    /// ```
    tanh, tanh_, try_tanh_: |x| x.tanh();
    /// The logistic function `1 / (1 + e^-x)`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, -1000.0], &[2]);
    /// assert_eq!(t.sigmoid().to_vec(), vec![0.5, 0.0]);
    /// ```
    sigmoid, sigmoid_, try_sigmoid_: |x| <C<E> as NativeFloat>::c(1.0).ndiv(x.nneg().exp().nadd(NativeFloat::c(1.0)));
    /// GELU in PyTorch's default (exact) form: `x · Φ(x) = x/2 · (1 + erf(x / √2))`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f64, 1.0], &[2]);
    /// let g = t.gelu().to_vec();
    /// assert_eq!(g[0], 0.0);
    /// assert!((g[1] - 0.8413447460685429).abs() < 1e-12);
    /// ```
    gelu, gelu_, try_gelu_: |x| x.nmul(NativeFloat::c(0.5)).nmul(
        x.nmul(NativeFloat::c(std::f64::consts::FRAC_1_SQRT_2)).erf().nadd(NativeFloat::c(1.0)));
    /// GELU in its tanh approximation (PyTorch's `approximate='tanh'`):
    /// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1.0f64], &[1]);
    /// assert!((t.gelu_tanh().item() - 0.8411919906082768).abs() < 1e-12);
    /// ```
    gelu_tanh, gelu_tanh_, try_gelu_tanh_: |x| {
        let cube = x.nmul(x).nmul(x).nmul(NativeFloat::c(0.044715));
        let inner = x.nadd(cube).nmul(NativeFloat::c((2.0 / std::f64::consts::PI).sqrt()));
        x.nmul(NativeFloat::c(0.5)).nmul(inner.tanh().nadd(NativeFloat::c(1.0)))
    };
    /// SiLU (swish): `x · sigmoid(x)`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.0f32, 1000.0], &[2]);
    /// assert_eq!(t.silu().to_vec(), vec![0.0, 1000.0]);
    /// ```
    silu, silu_, try_silu_: |x| x.ndiv(x.nneg().exp().nadd(NativeFloat::c(1.0)));
    /// Rounds toward `-inf`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 1.5], &[2]);
    /// assert_eq!(t.floor().to_vec(), vec![-2.0, 1.0]);
    /// ```
    floor, floor_, try_floor_: |x| x.floor();
    /// Rounds toward `+inf`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 1.5], &[2]);
    /// assert_eq!(t.ceil().to_vec(), vec![-1.0, 2.0]);
    /// ```
    ceil, ceil_, try_ceil_: |x| x.ceil();
    /// Rounds to the nearest integer, ties to even (as PyTorch and NumPy).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.5f32, 1.5, 2.5, -0.7], &[4]);
    /// assert_eq!(t.round().to_vec(), vec![0.0, 2.0, 2.0, -1.0]);
    /// ```
    round, round_, try_round_: |x| x.round();
    /// Rounds toward zero.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 1.5], &[2]);
    /// assert_eq!(t.trunc().to_vec(), vec![-1.0, 1.0]);
    /// ```
    trunc, trunc_, try_trunc_: |x| x.trunc();
    /// `1 / x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32, 0.0], &[2]);
    /// assert_eq!(t.recip().to_vec(), vec![0.25, f32::INFINITY]);
    /// ```
    recip, recip_, try_recip_: |x| <C<E> as NativeFloat>::c(1.0).ndiv(x);
}

unary_ops! { Numeric, map, map_inplace;
    /// `-x` (integers wrap: `-(-128i8) == -128`).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1i32, -2], &[2]);
    /// assert_eq!(t.neg().to_vec(), vec![-1, 2]);
    /// ```
    neg, neg_, try_neg_: |x| x.nneg();
    /// `|x|` (integers wrap: `abs(-128i8) == -128`).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-1.5f32, 2.0], &[2]);
    /// assert_eq!(t.abs().to_vec(), vec![1.5, 2.0]);
    /// ```
    abs, abs_, try_abs_: |x| x.nabs();
    /// `-1`, `0` or `1` by the sign of `x` (`0` for NaN, as PyTorch).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-3i64, 0, 7], &[3]);
    /// assert_eq!(t.sign().to_vec(), vec![-1, 0, 1]);
    /// ```
    sign, sign_, try_sign_: |x| x.nsign();
    /// `x · x`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-3i64, 2], &[2]);
    /// assert_eq!(t.square().to_vec(), vec![9, 4]);
    /// ```
    square, square_, try_square_: |x| x.nmul(x);
    /// `max(x, 0)` (NaN stays NaN).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![-3i32, 2], &[2]);
    /// assert_eq!(t.relu().to_vec(), vec![0, 2]);
    /// ```
    relu, relu_, try_relu_: |x| x.nmax(<C<E> as Element>::ZERO);
}

impl<E: Float> DynTensor<E> {
    /// `x^exponent` for a float exponent (computed in `f32` for `f16`/`bf16`).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4.0f32, 9.0], &[2]);
    /// assert_eq!(t.powf(0.5).to_vec(), vec![2.0, 3.0]);
    /// ```
    pub fn powf(&self, exponent: f64) -> DynTensor<E> {
        on_cuda!(
            [self],
            or_panic(map_param("powf", self, &Param::Powf(exponent)))
        );
        let e = <C<E> as NativeFloat>::c(exponent);
        or_panic(map::<E, C<E>, C<E>, E>("powf", self, move |x: C<E>| {
            x.powf(e)
        }))
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
        on_cuda!([self], {
            self.check_writable("powf_")?;
            map_param_inplace("powf_", self, &Param::Powf(exponent)).map(|()| self)
        });
        let e = <C<E> as NativeFloat>::c(exponent);
        map_inplace::<E, C<E>>("powf_", self, move |x: C<E>| x.powf(e))?;
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
        on_cuda!([self], {
            let p = Param::Clamp(Some(min.cast::<E>()), Some(max.cast::<E>()));
            map_param("clamp", self, &p)
        });
        let (lo, hi) = (min.cast::<C<E>>(), max.cast::<C<E>>());
        map::<E, C<E>, C<E>, E>("clamp", self, move |x: C<E>| x.nmax(lo).nmin(hi))
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
        on_cuda!([self], {
            let p = Param::Clamp(Some(min.cast::<E>()), None);
            map_param("clamp_min", self, &p)
        });
        let lo = min.cast::<C<E>>();
        map::<E, C<E>, C<E>, E>("clamp_min", self, move |x: C<E>| x.nmax(lo))
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
        on_cuda!([self], {
            let p = Param::Clamp(None, Some(max.cast::<E>()));
            map_param("clamp_max", self, &p)
        });
        let hi = max.cast::<C<E>>();
        map::<E, C<E>, C<E>, E>("clamp_max", self, move |x: C<E>| x.nmin(hi))
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
        on_cuda!([self], {
            or_panic(self.check_writable("clamp_min_"));
            let p = Param::Clamp(Some(min.cast::<E>()), None);
            or_panic(map_param_inplace("clamp_min_", self, &p));
            self
        });
        let lo = min.cast::<C<E>>();
        or_panic(map_inplace::<E, C<E>>(
            "clamp_min_",
            self,
            move |x: C<E>| x.nmax(lo),
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
        on_cuda!([self], {
            or_panic(self.check_writable("clamp_max_"));
            let p = Param::Clamp(None, Some(max.cast::<E>()));
            or_panic(map_param_inplace("clamp_max_", self, &p));
            self
        });
        let hi = max.cast::<C<E>>();
        or_panic(map_inplace::<E, C<E>>(
            "clamp_max_",
            self,
            move |x: C<E>| x.nmin(hi),
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
        on_cuda!([self], {
            self.check_writable("clamp_")?;
            let p = Param::Clamp(Some(min.cast::<E>()), Some(max.cast::<E>()));
            map_param_inplace("clamp_", self, &p).map(|()| self)
        });
        let (lo, hi) = (min.cast::<C<E>>(), max.cast::<C<E>>());
        map_inplace::<E, C<E>>("clamp_", self, move |x: C<E>| x.nmax(lo).nmin(hi))?;
        Ok(self)
    }
}
