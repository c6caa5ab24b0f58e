//! The pointwise and reduction operations of the backend seam, as tokens.
//!
//! Each operation is one variant of an enum here, written once with three things: the name its
//! CUDA kernel is instantiated under (`nt_op_<name>` in `cuda/kernels/*.cu`), the element types
//! it is defined for, and its scalar function on the CPU's compute types. The CPU backend
//! monomorphises its loops on that scalar function ([`UnaryOp::with_float`] and friends hand
//! it to a [`UnaryLoop`] as a closure, one closure type per operation, so every loop is
//! compiled for one operation with no branch or indirect call inside); the CUDA backend picks
//! the kernel by [`UnaryOp::name`]. Both key on the same variant: there is no lookup by an
//! operation's public name, and renaming a public method cannot unplug a kernel.
//!
//! Adding a pointwise operation is one line in a list below (plus its CUDA kernel line).
//!
//! Invariants:
//! - every scalar function is the operation's definition on the compute type (`f32` for
//!   `f16`/`bf16`): a backend computes in that type and rounds once on store;
//! - integer arithmetic wraps; float `maximum`/`minimum` propagate NaN;
//! - an operation is only run on element types its domain allows (callers check
//!   [`UnaryOp::is_float_only`] and the ops layer's rules first).

use crate::dtype::{DType, Element};
use crate::dtype::{Native, NativeFloat};

/// A loop that applies a unary scalar function on the compute type `T`.
pub trait UnaryLoop<T> {
    /// What the loop returns.
    type Output;
    /// Runs the loop with `f`, the operation's scalar function.
    fn run(self, f: impl Fn(T) -> T + Sync + Send + Copy) -> Self::Output;
}

/// A loop that applies a binary scalar function on the compute type `T`, with result `U`
/// (`T` for arithmetic, `bool` for comparisons).
pub trait BinaryLoop<T, U> {
    /// What the loop returns.
    type Output;
    /// Runs the loop with `f`, the operation's scalar function.
    fn run(self, f: impl Fn(T, T) -> U + Sync + Send + Copy) -> Self::Output;
}

macro_rules! op_list {
    (@name $v:ident $name:literal) => { $name };
    (@float float) => { true };
    (@float numeric) => { false };
    (@float any) => { false };
    // The scalar function on an integer or bool compute type: float-only operations have none.
    (@numeric float, $l:ident, |$($x:ident),*| $body:expr) => { None };
    (@numeric $d:ident, $l:ident, |$($x:ident),*| $body:expr) => {
        Some($l.run(#[inline(always)] move |$($x),*| $body))
    };
}

macro_rules! unary_ops {
    ($($(#[doc = $doc:literal])* $v:ident $name:literal $domain:ident |$x:ident| $body:expr;)*) => {
        /// A unary pointwise operation with a result of its operand's type.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UnaryOp { $($(#[doc = $doc])* $v,)* }

        impl UnaryOp {
            /// Every operation.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$v,)*];

            /// The operation's name, as its kernel is spelled (`nt_op_<name>`).
            pub fn name(self) -> &'static str {
                match self { $(UnaryOp::$v => $name,)* }
            }

            /// Whether the operation is defined for float types only.
            pub fn is_float_only(self) -> bool {
                match self { $(UnaryOp::$v => op_list!(@float $domain),)* }
            }

            /// Runs `l` with the operation's scalar function on the float compute type `T`.
            #[inline(always)]
            pub fn with_float<T: NativeFloat, L: UnaryLoop<T>>(self, l: L) -> L::Output {
                match self { $(UnaryOp::$v => l.run(#[inline(always)] move |$x: T| $body),)* }
            }

            /// Runs `l` with the operation's scalar function on the integer or bool compute
            /// type `T`; `None` for a float-only operation.
            #[inline(always)]
            pub fn with_numeric<T: Native, L: UnaryLoop<T>>(self, l: L) -> Option<L::Output> {
                match self { $(UnaryOp::$v => op_list!(@numeric $domain, l, |$x| {
                    let $x: T = $x;
                    $body
                }),)* }
            }
        }
    };
}

unary_ops! {
    /// `-x` (integers wrap).
    Neg "neg" numeric |x| x.nneg();
    /// `|x|` (integers wrap at the minimum).
    Abs "abs" numeric |x| x.nabs();
    /// -1, 0 or 1 (0 for NaN).
    Sign "sign" numeric |x| x.nsign();
    /// `x * x` (integers wrap).
    Square "square" numeric |x| x.nmul(x);
    /// `max(x, 0)`; NaN stays NaN.
    Relu "relu" numeric |x| x.nmax(T::ZERO);
    /// `e^x`.
    Exp "exp" float |x| x.exp();
    /// Natural logarithm.
    Log "log" float |x| x.ln();
    /// `ln(1 + x)`.
    Log1p "log1p" float |x| x.ln_1p();
    /// `e^x - 1`.
    Expm1 "expm1" float |x| x.exp_m1();
    /// Square root.
    Sqrt "sqrt" float |x| x.sqrt();
    /// `1 / sqrt(x)`.
    Rsqrt "rsqrt" float |x| T::c(1.0).ndiv(x.sqrt());
    /// Sine.
    Sin "sin" float |x| x.sin();
    /// Cosine.
    Cos "cos" float |x| x.cos();
    /// Tangent.
    Tan "tan" float |x| x.tan();
    /// Hyperbolic tangent.
    Tanh "tanh" float |x| x.tanh();
    /// The error function.
    Erf "erf" float |x| x.erf();
    /// `1 / (1 + e^-x)`.
    Sigmoid "sigmoid" float |x| T::c(1.0).ndiv(x.nneg().exp().nadd(T::c(1.0)));
    /// `x/2 (1 + erf(x / √2))`.
    Gelu "gelu" float |x| x
        .nmul(T::c(0.5))
        .nmul(x.nmul(T::c(std::f64::consts::FRAC_1_SQRT_2)).erf().nadd(T::c(1.0)));
    /// GELU's derivative `Φ(x) + x φ(x)` (normal CDF and density): its gradient in one pass.
    /// (`erf(x/√2)` and `e^(-x²/2)` from one call: `erf`'s upper range computes that `exp`.)
    GeluGrad "gelu_grad" float |x| {
        let (erf, gauss) = x.nmul(T::c(std::f64::consts::FRAC_1_SQRT_2)).erf_gauss();
        let cdf = erf.nadd(T::c(1.0)).nmul(T::c(0.5));
        let pdf = gauss.nmul(T::c(0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2));
        cdf.nadd(x.nmul(pdf))
    };
    /// `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    GeluTanh "gelu_tanh" float |x| {
        let cube = x.nmul(x).nmul(x).nmul(T::c(0.044715));
        let inner = x.nadd(cube).nmul(T::c((2.0 / std::f64::consts::PI).sqrt()));
        x.nmul(T::c(0.5)).nmul(inner.tanh().nadd(T::c(1.0)))
    };
    /// `x · sigmoid(x)`.
    Silu "silu" float |x| x.ndiv(x.nneg().exp().nadd(T::c(1.0)));
    /// Round down.
    Floor "floor" float |x| x.floor();
    /// Round up.
    Ceil "ceil" float |x| x.ceil();
    /// Round to nearest, halves to even (PyTorch's `round`).
    Round "round" float |x| x.round();
    /// Round toward zero.
    Trunc "trunc" float |x| x.trunc();
    /// `1 / x`.
    Recip "recip" float |x| T::c(1.0).ndiv(x);
}

macro_rules! binary_ops {
    ($enum:ident -> $out:ident, $doc_enum:literal;
     $($(#[doc = $doc:literal])* $v:ident $name:literal $domain:ident |$x:ident, $y:ident| $body:expr;)*) => {
        #[doc = $doc_enum]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $enum { $($(#[doc = $doc])* $v,)* }

        impl $enum {
            /// Every operation.
            pub const ALL: &'static [$enum] = &[$($enum::$v,)*];

            /// The operation's name, as its kernel is spelled (`nt_op_<name>`).
            pub fn name(self) -> &'static str {
                match self { $($enum::$v => $name,)* }
            }

            /// Runs `l` with the operation's scalar function on the compute type `T`.
            #[inline(always)]
            pub fn with<T: Native, L: BinaryLoop<T, binary_ops!(@out $out)>>(
                self,
                l: L,
            ) -> L::Output {
                match self { $($enum::$v => l.run(#[inline(always)] move |$x: T, $y: T| $body),)* }
            }
        }
    };
    (@out same) => { T };
    (@out bool) => { bool };
}

binary_ops! {
    BinaryOp -> same, "A binary pointwise operation with a result of its operands' (promoted) type.";
    /// `a + b` (integers wrap; `or` for bool).
    Add "add" any |x, y| x.nadd(y);
    /// `a - b` (integers wrap).
    Sub "sub" numeric |x, y| x.nsub(y);
    /// `a * b` (integers wrap; `and` for bool).
    Mul "mul" any |x, y| x.nmul(y);
    /// `a / b` (true division: callers promote integers to a float type first).
    Div "div" numeric |x, y| x.ndiv(y);
    /// `a ^ b`; integer powers with negative exponents follow PyTorch.
    Pow "pow" numeric |x, y| x.npow(y);
    /// The larger operand; NaN propagates (`or` for bool).
    Maximum "maximum" any |x, y| x.nmax(y);
    /// The smaller operand; NaN propagates (`and` for bool).
    Minimum "minimum" any |x, y| x.nmin(y);
    /// Python's remainder: the sign of the divisor.
    Remainder "remainder" numeric |x, y| x.nrem(y);
    /// C's `fmod`: the sign of the dividend.
    Fmod "fmod" numeric |x, y| x.nfmod(y);
    /// ReLU's gradient from the incoming gradient `a` and ReLU's output `b`: 0 where
    /// `b ≤ 0` (even for an infinite or NaN `a`), else `a` (a NaN `b` passes it), as PyTorch's
    /// `threshold_backward`.
    ReluGrad "relu_grad" numeric |x, y| if y <= T::ZERO { T::ZERO } else { x };
}

binary_ops! {
    CompareOp -> bool, "A binary pointwise operation with a `bool` result.";
    /// `a == b`.
    Eq "eq" any |x, y| x == y;
    /// `a != b` (true for NaN).
    Ne "ne" any |x, y| x != y;
    /// `a < b`.
    Lt "lt" any |x, y| x < y;
    /// `a <= b`.
    Le "le" any |x, y| x <= y;
    /// `a > b`.
    Gt "gt" any |x, y| x > y;
    /// `a >= b`.
    Ge "ge" any |x, y| x >= y;
    /// Both are non-zero.
    LogicalAnd "logical_and" any |x, y| !x.is_zero() & !y.is_zero();
    /// Either is non-zero.
    LogicalOr "logical_or" any |x, y| !x.is_zero() | !y.is_zero();
    /// Exactly one is non-zero.
    LogicalXor "logical_xor" any |x, y| !x.is_zero() ^ !y.is_zero();
}

/// A reduction over some dims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (integers and bool sum to `i64`).
    Sum,
    /// Product (integers and bool multiply to `i64`).
    Prod,
    /// Arithmetic mean, in the compute type (NaN for no element).
    Mean,
    /// Maximum; NaN propagates.
    Max,
    /// Minimum; NaN propagates.
    Min,
    /// Index (`i64`) of the first maximum (of the first NaN if any), along one dim (the CUDA
    /// kernel behind `Backend::arg_reduce`).
    ArgMax,
    /// Index (`i64`) of the first minimum (of the first NaN if any), along one dim.
    ArgMin,
    /// Whether any element is non-zero.
    Any,
    /// Whether every element is non-zero.
    All,
}

impl ReduceOp {
    /// Every operation.
    pub const ALL: &'static [ReduceOp] = &[
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::Any,
        ReduceOp::All,
    ];

    /// The operation's name, as its kernel is spelled (`nt_red_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
        }
    }

    /// The element type of the result for an input of `dtype`.
    pub fn out_dtype(self, dtype: DType) -> DType {
        match self {
            ReduceOp::Sum | ReduceOp::Prod if !dtype.is_float() => DType::I64,
            ReduceOp::ArgMax | ReduceOp::ArgMin => DType::I64,
            _ => dtype,
        }
    }

    /// Whether an empty dim has a value (sum 0, prod 1, mean NaN) rather than being an error.
    pub fn allows_empty(self) -> bool {
        matches!(self, ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Mean)
    }
}

/// A pointwise test with a `bool` result: whether the value is …
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TestOp {
    /// The value is NaN (`isnan`).
    Nan,
    /// The value is `±inf` (`isinf`).
    Inf,
    /// The value is neither infinite nor NaN (`isfinite`).
    Finite,
    /// The value is zero (`logical_not`).
    Zero,
}

impl TestOp {
    /// The test on one value of compute type `T`.
    #[inline(always)]
    pub fn eval<T: Native>(self, x: T) -> bool {
        match self {
            TestOp::Nan => x.is_nan(),
            TestOp::Inf => !x.is_finite() && !x.is_nan(),
            TestOp::Finite => x.is_finite(),
            TestOp::Zero => x.is_zero(),
        }
    }
}

/// The value a test gives for every element of a type that has no NaN or infinity, if it is
/// constant there.
pub fn constant_test<E: Element>(op: TestOp) -> Option<bool> {
    if E::DTYPE.is_float() {
        return None;
    }
    match op {
        TestOp::Nan | TestOp::Inf => Some(false),
        TestOp::Finite => Some(true),
        TestOp::Zero => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Apply<T>(T);
    impl<T: Copy> UnaryLoop<T> for Apply<T> {
        type Output = T;
        fn run(self, f: impl Fn(T) -> T + Sync + Send + Copy) -> T {
            f(self.0)
        }
    }
    impl<T: Copy, U> BinaryLoop<T, U> for Apply<(T, T)> {
        type Output = U;
        fn run(self, f: impl Fn(T, T) -> U + Sync + Send + Copy) -> U {
            f(self.0.0, self.0.1)
        }
    }

    #[test]
    fn names_are_distinct_kernel_identifiers() {
        let mut names: Vec<&str> = UnaryOp::ALL.iter().map(|u| u.name()).collect();
        names.extend(BinaryOp::ALL.iter().map(|b| b.name()));
        names.extend(CompareOp::ALL.iter().map(|c| c.name()));
        names.extend(ReduceOp::ALL.iter().map(|r| r.name()));
        for n in &names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            );
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a kernel name is used twice");
    }

    #[test]
    fn scalar_functions_match_their_definitions() {
        let f = |u: UnaryOp, x: f64| u.with_float(Apply(x));
        assert_eq!(f(UnaryOp::Exp, 0.0), 1.0);
        assert_eq!(f(UnaryOp::Rsqrt, 4.0), 0.5);
        assert_eq!(f(UnaryOp::Sigmoid, 0.0), 0.5);
        assert_eq!(f(UnaryOp::Relu, -2.0), 0.0);
        assert_eq!(f(UnaryOp::Round, 2.5), 2.0);
        assert!((f(UnaryOp::Gelu, 1.0) - 0.841_344_746_068_542_9).abs() < 1e-15);
        assert!((f(UnaryOp::GeluTanh, 1.0) - 0.841_191_990_607_477_9).abs() < 1e-12);
        // Φ(1) + φ(1) = 0.841344746068543 + 0.241970724519143
        assert!((f(UnaryOp::GeluGrad, 1.0) - 1.083_315_470_587_686).abs() < 1e-14);
        assert!(
            (f(UnaryOp::GeluGrad, -2.0) - (0.022_750_131_948_179 - 2.0 * 0.053_990_966_513_188))
                .abs()
                < 1e-14
        );
        // f32 against the f64 definition across both of erf's ranges and past the clamp of
        // its upper range (|x| > 4√2).
        let g32 = |x: f32| UnaryOp::GeluGrad.with_float(Apply(x));
        let mut worst = 0.0f64;
        for i in 0..=24_000 {
            let x = -12.0 + i as f32 * 1e-3;
            worst = worst.max((g32(x) as f64 - f(UnaryOp::GeluGrad, x as f64)).abs());
        }
        assert!(worst < 2.5e-7, "gelu_grad f32: absolute error {worst:e}");
        println!("gelu_grad f32: largest absolute error {worst:e}");
        assert!(g32(f32::NAN).is_nan());
        assert_eq!(UnaryOp::Neg.with_numeric(Apply(i8::MIN)), Some(i8::MIN));
        assert_eq!(UnaryOp::Exp.with_numeric(Apply(1i32)), None);
        for &u in UnaryOp::ALL {
            assert_eq!(
                u.is_float_only(),
                u.with_numeric(Apply(1i64)).is_none(),
                "{u:?}"
            );
        }
        assert_eq!(BinaryOp::Remainder.with(Apply((-7i32, 3))), 2);
        assert_eq!(BinaryOp::Fmod.with(Apply((-7i32, 3))), -1);
        assert!(BinaryOp::Add.with(Apply((true, false))));
        assert!(CompareOp::Ne.with(Apply((f32::NAN, f32::NAN))));
        assert!(CompareOp::LogicalXor.with(Apply((0.0f64, f64::NAN))));
        assert!(TestOp::Inf.eval(f32::NEG_INFINITY) && !TestOp::Inf.eval(f32::NAN));
    }
}

/// The scalars of one Adam or AdamW step at step `t` (`Backend::adam_`), as PyTorch's update
/// rule uses them, per element in this order:
/// `p ·= decay`; `g += l2 · p` (only where `l2 ≠ 0`); `m += (g − m) · (1 − β₁)`;
/// `v = v · β₂ + g · g · (1 − β₂)`; with `amsgrad` `vmax = max(vmax, v)` and `s = vmax`,
/// else `s = v`; `p += m · (−step_size) / (sqrt(s) / correction2_sqrt + eps)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamStep {
    /// AdamW's `1 − lr · weight_decay` (1 without decoupled decay; a product by 1 is exact).
    pub decay: f64,
    /// Adam's L2 penalty, `weight_decay` (0 without).
    pub l2: f64,
    /// The first moment's decay rate β₁.
    pub beta1: f64,
    /// The second moment's decay rate β₂.
    pub beta2: f64,
    /// `lr / (1 − β₁ᵗ)`.
    pub step_size: f64,
    /// `sqrt(1 − β₂ᵗ)`.
    pub correction2_sqrt: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// AMSGrad: divide by the running maximum of `v`, a third state buffer.
    pub amsgrad: bool,
}

/// [`AdamStep`]'s scalars in a compute type `T`: each rounded once, as the op-by-op update
/// rounded the same `f64` scalars to `T`, so that the two agree bit for bit in `f32` and
/// `f64`.
#[derive(Debug, Clone, Copy)]
pub struct AdamScalars<T> {
    decay: T,
    l2: T,
    one_minus_beta1: T,
    beta2: T,
    one_minus_beta2: T,
    correction2_sqrt: T,
    eps: T,
    neg_step_size: T,
}

impl AdamStep {
    /// The scalars in the compute type `T`.
    ///
    /// ```
    /// use namedtensor_core::backend::op::AdamStep;
    /// let s = AdamStep { decay: 1.0, l2: 0.0, beta1: 0.9, beta2: 0.999, step_size: 1e-3 / 0.1,
    ///     correction2_sqrt: 0.001f64.sqrt(), eps: 1e-8, amsgrad: false };
    /// // The first step moves a parameter by lr · sign(g) (up to eps).
    /// let (p, m, v, _) = s.scalars::<f64>().update::<false, false>(1.0, 0.5, 0.0, 0.0, 0.0);
    /// assert!((p - (1.0 - 1e-3)).abs() < 1e-9 && (m - 0.05).abs() < 1e-15);
    /// assert!((v - 0.00025).abs() < 1e-15);
    /// ```
    pub fn scalars<T: NativeFloat>(&self) -> AdamScalars<T> {
        AdamScalars {
            decay: T::c(self.decay),
            l2: T::c(self.l2),
            one_minus_beta1: T::c(1.0 - self.beta1),
            beta2: T::c(self.beta2),
            one_minus_beta2: T::c(1.0 - self.beta2),
            correction2_sqrt: T::c(self.correction2_sqrt),
            eps: T::c(self.eps),
            neg_step_size: T::c(-self.step_size),
        }
    }
}

impl<T: NativeFloat> AdamScalars<T> {
    /// One element's update: `(p, m, v, vmax)` after the step from `(p, g, m, v, vmax)`.
    /// `L2`: apply the L2 penalty (`l2 ≠ 0`); `AMS`: AMSGrad (else `vmax` is passed
    /// through). Both are constants so that a loop over this has no branch.
    #[inline(always)]
    pub fn update<const L2: bool, const AMS: bool>(
        &self,
        p: T,
        g: T,
        m: T,
        v: T,
        vmax: T,
    ) -> (T, T, T, T) {
        let p = p.nmul(self.decay);
        let g = if L2 { g.nadd(p.nmul(self.l2)) } else { g };
        let m = m.nadd(g.nsub(m).nmul(self.one_minus_beta1));
        let v = v
            .nmul(self.beta2)
            .nadd(g.nmul(g).nmul(self.one_minus_beta2));
        let vmax = if AMS { vmax.nmax(v) } else { vmax };
        let s = if AMS { vmax } else { v };
        let denom = s.sqrt().ndiv(self.correction2_sqrt).nadd(self.eps);
        let p = p.nadd(m.nmul(self.neg_step_size).ndiv(denom));
        (p, m, v, vmax)
    }
}
