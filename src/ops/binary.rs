//! Binary arithmetic with broadcasting and type promotion: `add`, `sub`, `mul`, `div`, `pow`,
//! `maximum`, `minimum`, `remainder`, `fmod`, each with a tensor and a scalar form and their
//! in-place variants.
//!
//! `sub`, `pow`, `remainder` and `fmod` are refused for two `bool` operands (as in PyTorch);
//! `add`/`mul`/`maximum`/`minimum` of `bool`s are `or`/`and`/`or`/`and`. Integer `remainder` and
//! `fmod` by zero are refused (PyTorch raises `ZeroDivisionError`); float ones give NaN.

use super::promote::{Promote, Promoted, ScalarPromote};
use super::{C, any_zero, binary, binary_, binary_scalar, bool_unsupported, check_inplace_cast};
use crate::backend::op::{BinaryOp, CompareOp};
use crate::dtype::cast;
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{DynTensor, or_panic};

/// Which operands an operation refuses.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Defined for every type.
    Any,
    /// Not for a `bool` result type.
    NoBool,
    /// Not for `bool`, and integer divisors must not be zero.
    Divisor,
    /// Not for `bool`, and integer exponents must not be negative (PyTorch: "Integers to
    /// negative integer powers are not allowed").
    Exponent,
}

pub(crate) use super::promote::{DivOutput as Q, ScalarDivOutput as Qs, ScalarPromoted as Sp};

/// Checks `rule` for result type `R`; `breaks` says whether the right-hand operand holds a
/// value the rule refuses for integers (a zero divisor, a negative exponent), and is only
/// called for integer results.
pub(crate) fn check<R: Element>(
    op: &'static str,
    rule: Rule,
    breaks: impl FnOnce() -> Result<bool>,
) -> Result<()> {
    if rule == Rule::Any {
        return Ok(());
    }
    if R::DTYPE == DType::Bool {
        return Err(bool_unsupported(op, op));
    }
    let why = match rule {
        Rule::Divisor => "integer division by zero",
        Rule::Exponent => "integers to negative integer powers are not allowed",
        Rule::Any | Rule::NoBool => return Ok(()),
    };
    if !R::DTYPE.is_float() && breaks()? {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("{why} (result type {})", R::DTYPE),
        ));
    }
    Ok(())
}

/// Whether `t` holds a value that `rule` refuses as an integer right-hand operand.
pub(crate) fn breaks_rule<E: Element>(
    op: &'static str,
    rule: Rule,
    t: &DynTensor<E>,
) -> Result<bool> {
    match rule {
        Rule::Exponent => {
            let negative = super::compare_scalar::<E>(op, CompareOp::Lt, t, 0.0)?;
            super::any_true(op, &negative)
        }
        _ => any_zero(op, t),
    }
}

/// Whether the scalar `v` is a value that `rule` refuses as an integer right-hand operand.
fn scalar_breaks_rule<T: Element>(rule: Rule, v: T) -> bool {
    match rule {
        Rule::Exponent => v.to_f64() < 0.0,
        _ => v.to_f64() == 0.0,
    }
}

pub(crate) fn arith<A: Promote<B>, B: Element>(
    op: &'static str,
    rule: Rule,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    bop: BinaryOp,
) -> Result<DynTensor<Promoted<A, B>>> {
    check::<Promoted<A, B>>(op, rule, || breaks_rule(op, rule, b))?;
    binary::<A, B, Promoted<A, B>>(op, bop, a, b)
}

pub(crate) fn arith_scalar<E: ScalarPromote<S>, S: Element>(
    op: &'static str,
    rule: Rule,
    t: &DynTensor<E>,
    s: S,
    scalar_left: bool,
    bop: BinaryOp,
) -> Result<DynTensor<Sp<E, S>>> {
    let v: C<Sp<E, S>> = cast(s);
    check::<Sp<E, S>>(op, rule, || {
        if scalar_left {
            breaks_rule(op, rule, t)
        } else {
            Ok(scalar_breaks_rule(rule, v))
        }
    })?;
    binary_scalar::<E, Sp<E, S>>(op, bop, t, v, scalar_left)
}

fn arith_inplace<E: Promote<B>, B: Element>(
    op: &'static str,
    rule: Rule,
    dst: &DynTensor<E>,
    src: &DynTensor<B>,
    bop: BinaryOp,
) -> Result<()> {
    check_inplace_cast::<Promoted<E, B>, E>(op)?;
    check::<Promoted<E, B>>(op, rule, || breaks_rule(op, rule, src))?;
    binary_::<E, B, Promoted<E, B>>(op, bop, dst, src)
}

fn arith_scalar_inplace<E: ScalarPromote<S>, S: Element>(
    op: &'static str,
    rule: Rule,
    dst: &DynTensor<E>,
    s: S,
    bop: BinaryOp,
) -> Result<()> {
    check_inplace_cast::<Sp<E, S>, E>(op)?;
    let v: C<Sp<E, S>> = cast(s);
    check::<Sp<E, S>>(op, rule, || Ok(scalar_breaks_rule(rule, v)))?;
    let v = super::scalar_on(v, dst.device())?;
    binary_::<E, C<Sp<E, S>>, Sp<E, S>>(op, bop, dst, &v)
}

macro_rules! binary_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $try_name:ident, $name_s:ident, $try_name_s:ident,
        $name_:ident, $try_name_:ident, $name_s_:ident, $try_name_s_:ident,
        $rule:expr, [$r0:literal, $r1:literal], $bop:ident;
    )*) => {
        impl<E: Element> DynTensor<E> {$(
            $(#[doc = $doc])*
            #[track_caller]
            pub fn $name<B: Element>(&self, other: &DynTensor<B>) -> DynTensor<Promoted<E, B>>
            where
                E: Promote<B>,
            {
                or_panic(self.$try_name(other))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name), "`], or an error when the \
                shapes do not broadcast (`ShapeMismatch`, naming both shapes) or the operands \
                are refused (see the module docs).")]
            ///
            /// ```
            /// use namedtensor::{DynTensor, ErrorKind};
            /// let a = DynTensor::<f32>::ones(&[5, 2, 4, 1]);
            /// let b = DynTensor::<f32>::ones(&[3, 1, 1]);
            #[doc = concat!("let err = a.", stringify!($try_name), "(&b).unwrap_err();")]
            /// assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
            /// assert!(err.to_string().contains("[5, 2, 4, 1]") && err.to_string().contains("[3, 1, 1]"));
            /// ```
            pub fn $try_name<B: Element>(
                &self,
                other: &DynTensor<B>,
            ) -> Result<DynTensor<Promoted<E, B>>>
            where
                E: Promote<B>,
            {
                arith(stringify!($name), $rule, self, other, BinaryOp::$bop)
            }

            #[doc = concat!("[`DynTensor::", stringify!($name), "`] with a scalar on the right; \
                the result type follows [`ScalarPromote`](crate::ScalarPromote) (a float scalar \
                makes an integer tensor `f32`).")]
            ///
            /// ```
            /// use namedtensor::DynTensor;
            /// let t = DynTensor::from_vec(vec![1.0f32, 4.0], &[2]);
            #[doc = concat!("assert_eq!(t.", stringify!($name_s), "(2.0).to_vec(), vec![",
                stringify!($r0), ", ", stringify!($r1), "]);")]
            /// ```
            #[track_caller]
            pub fn $name_s<S: Element>(&self, scalar: S) -> DynTensor<Sp<E, S>>
            where
                E: ScalarPromote<S>,
            {
                or_panic(self.$try_name_s(scalar))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name_s), "`], or an error for refused \
                operands (see the module docs).")]
            ///
            /// ```
            /// use namedtensor::DynTensor;
            /// let t = DynTensor::from_vec(vec![1.0f32, 4.0], &[2]);
            #[doc = concat!("assert_eq!(t.", stringify!($try_name_s), "(2.0).unwrap().to_vec(), vec![",
                stringify!($r0), ", ", stringify!($r1), "]);")]
            /// ```
            pub fn $try_name_s<S: Element>(&self, scalar: S) -> Result<DynTensor<Sp<E, S>>>
            where
                E: ScalarPromote<S>,
            {
                arith_scalar(stringify!($name_s), $rule, self, scalar, false, BinaryOp::$bop)
            }

            #[doc = concat!("[`DynTensor::", stringify!($name), "`] in place: writes the result \
                through this view (`other` is broadcast to its shape) and returns it. Panics \
                where [`DynTensor::", stringify!($try_name_), "`] fails.")]
            ///
            /// ```
            /// use namedtensor::DynTensor;
            /// let t = DynTensor::from_vec(vec![1.0f32, 4.0], &[2]);
            #[doc = concat!("t.", stringify!($name_), "(&DynTensor::from_vec(vec![2.0f32], &[1]));")]
            #[doc = concat!("assert_eq!(t.to_vec(), vec![", stringify!($r0), ", ", stringify!($r1), "]);")]
            /// ```
            #[track_caller]
            pub fn $name_<B: Element>(&self, other: &DynTensor<B>) -> &Self
            where
                E: Promote<B>,
            {
                or_panic(self.$try_name_(other))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name_), "`], or an error when `other` \
                does not broadcast to this shape, this view is expanded, or the promoted result \
                type cannot be stored in `E` (a float result into an integer tensor). On error \
                nothing is written. An `other` sharing this storage is copied first.")]
            ///
            /// ```
            /// use namedtensor::DynTensor;
            /// let t = DynTensor::from_vec(vec![1i32, 4], &[2]);
            #[doc = concat!("assert!(t.", stringify!($try_name_), "(&DynTensor::from_vec(vec![2.0f32], &[1])).is_err());")]
            /// assert_eq!(t.to_vec(), vec![1, 4]);
            /// ```
            pub fn $try_name_<B: Element>(&self, other: &DynTensor<B>) -> Result<&Self>
            where
                E: Promote<B>,
            {
                arith_inplace(stringify!($name_), $rule, self, other, BinaryOp::$bop)?;
                Ok(self)
            }

            #[doc = concat!("[`DynTensor::", stringify!($name_s), "`] in place. Panics where \
                [`DynTensor::", stringify!($try_name_s_), "`] fails.")]
            ///
            /// ```
            /// let t = namedtensor::DynTensor::from_vec(vec![1.0f32, 4.0], &[2]);
            #[doc = concat!("t.", stringify!($name_s_), "(2.0);")]
            #[doc = concat!("assert_eq!(t.to_vec(), vec![", stringify!($r0), ", ", stringify!($r1), "]);")]
            /// ```
            #[track_caller]
            pub fn $name_s_<S: Element>(&self, scalar: S) -> &Self
            where
                E: ScalarPromote<S>,
            {
                or_panic(self.$try_name_s_(scalar))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name_s_), "`], or an error when this \
                view is expanded or the result type cannot be stored in `E`.")]
            ///
            /// ```
            /// let t = namedtensor::DynTensor::from_vec(vec![1i64, 4], &[2]);
            #[doc = concat!("assert!(t.", stringify!($try_name_s_), "(0.5).is_err()); // f32 result")]
            /// ```
            pub fn $try_name_s_<S: Element>(&self, scalar: S) -> Result<&Self>
            where
                E: ScalarPromote<S>,
            {
                arith_scalar_inplace(stringify!($name_s_), $rule, self, scalar, BinaryOp::$bop)?;
                Ok(self)
            }
        )*}
    };
}

binary_ops! {
    /// Elementwise `self + other`, broadcasting both (PyTorch's rules) and promoting mixed
    /// element types (see [`Promote`](crate::Promote)); `or` for two `bool`s.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3, 1]);
    /// let b = DynTensor::from_vec(vec![10i64, 20], &[2]);
    /// let c = a.add(&b); // [3, 2], f32
    /// assert_eq!(c.to_vec(), vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]);
    /// ```
    add, try_add, add_scalar, try_add_scalar, add_, try_add_, add_scalar_, try_add_scalar_,
    Rule::Any, [3.0, 6.0], Add;
    /// Elementwise `self - other`, broadcasting and promoting; refused for two `bool`s.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![5u8, 7], &[2]);
    /// let b = DynTensor::from_vec(vec![1i8, -1], &[2]);
    /// assert_eq!(a.sub(&b).to_vec(), vec![4i16, 8]); // u8·i8 → i16
    /// ```
    sub, try_sub, sub_scalar, try_sub_scalar, sub_, try_sub_, sub_scalar_, try_sub_scalar_,
    Rule::NoBool, [-1.0, 2.0], Sub;
    /// Elementwise `self * other`, broadcasting and promoting; `and` for two `bool`s.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.5f64, 2.0], &[2]);
    /// let b = DynTensor::from_vec(vec![2i16, 3], &[2]);
    /// assert_eq!(a.mul(&b).to_vec(), vec![3.0, 6.0]);
    /// ```
    mul, try_mul, mul_scalar, try_mul_scalar, mul_, try_mul_, mul_scalar_, try_mul_scalar_,
    Rule::Any, [2.0, 8.0], Mul;
    /// Elementwise `self ** other`, broadcasting and promoting. A negative exponent of an
    /// integer result type is an error, as in PyTorch.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![2i32, 3], &[2]);
    /// assert_eq!(a.pow(&DynTensor::from_vec(vec![3i32], &[1])).to_vec(), vec![8, 27]);
    /// assert!(a.try_pow_scalar(-1).is_err());
    /// assert!(a.try_pow(&DynTensor::from_vec(vec![1i32, -2], &[2])).is_err());
    /// assert_eq!(a.pow_scalar(-1.0).to_vec(), vec![0.5f32, 1.0 / 3.0]); // a float exponent
    /// ```
    pow, try_pow, pow_scalar, try_pow_scalar, pow_, try_pow_, pow_scalar_, try_pow_scalar_,
    Rule::Exponent, [1.0, 16.0], Pow;
    /// The elementwise maximum, broadcasting and promoting; NaN if either is NaN.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, 5.0, f32::NAN], &[3]);
    /// let m = a.maximum(&DynTensor::from_vec(vec![3.0f32], &[1])).to_vec();
    /// assert_eq!(&m[..2], &[3.0, 5.0]);
    /// assert!(m[2].is_nan());
    /// ```
    maximum, try_maximum, maximum_scalar, try_maximum_scalar, maximum_, try_maximum_,
    maximum_scalar_, try_maximum_scalar_, Rule::Any, [2.0, 4.0], Maximum;
    /// The elementwise minimum, broadcasting and promoting; NaN if either is NaN.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1i32, 5], &[2]);
    /// assert_eq!(a.minimum(&DynTensor::from_vec(vec![3i32], &[1])).to_vec(), vec![1, 3]);
    /// ```
    minimum, try_minimum, minimum_scalar, try_minimum_scalar, minimum_, try_minimum_,
    minimum_scalar_, try_minimum_scalar_, Rule::Any, [1.0, 2.0], Minimum;
    /// Python's remainder (`torch.remainder`): the result has the sign of the divisor.
    /// Integer division by zero is refused.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![-7i32, 7], &[2]);
    /// assert_eq!(a.remainder(&DynTensor::from_vec(vec![3i32], &[1])).to_vec(), vec![2, 1]);
    /// assert!(a.try_remainder(&DynTensor::from_vec(vec![0i32], &[1])).is_err());
    /// ```
    remainder, try_remainder, remainder_scalar, try_remainder_scalar, remainder_, try_remainder_,
    remainder_scalar_, try_remainder_scalar_, Rule::Divisor, [1.0, 0.0], Remainder;
    /// C's `fmod` (`torch.fmod`): the result has the sign of the dividend. Integer division
    /// by zero is refused.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![-7i32, 7], &[2]);
    /// assert_eq!(a.fmod(&DynTensor::from_vec(vec![3i32], &[1])).to_vec(), vec![-1, 1]);
    /// ```
    fmod, try_fmod, fmod_scalar, try_fmod_scalar, fmod_, try_fmod_, fmod_scalar_,
    try_fmod_scalar_, Rule::Divisor, [1.0, 0.0], Fmod;
}

pub(crate) fn true_div<A: Promote<B>, B: Element>(
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> Result<DynTensor<Q<A, B>>> {
    binary::<A, B, Q<A, B>>("div", BinaryOp::Div, a, b)
}

pub(crate) fn true_div_scalar<E: ScalarPromote<S>, S: Element>(
    t: &DynTensor<E>,
    s: S,
    scalar_left: bool,
) -> Result<DynTensor<Qs<E, S>>> {
    let v: C<Qs<E, S>> = cast(s);
    binary_scalar::<E, Qs<E, S>>("div", BinaryOp::Div, t, v, scalar_left)
}

impl<E: Element> DynTensor<E> {
    /// Elementwise true division `self / other`, broadcasting and promoting; integer (and
    /// `bool`) operands give `f32`, as PyTorch's `/`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1i32, 3], &[2]);
    /// let q = a.div(&DynTensor::from_vec(vec![2i64], &[1]));
    /// assert_eq!(q.to_vec(), vec![0.5f32, 1.5]);
    /// ```
    #[track_caller]
    pub fn div<B: Element>(&self, other: &DynTensor<B>) -> DynTensor<Q<E, B>>
    where
        E: Promote<B>,
    {
        or_panic(self.try_div(other))
    }

    /// [`DynTensor::div`], or an error when the shapes do not broadcast.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert!(DynTensor::<f32>::ones(&[2]).try_div(&DynTensor::<f32>::ones(&[3])).is_err());
    /// ```
    pub fn try_div<B: Element>(&self, other: &DynTensor<B>) -> Result<DynTensor<Q<E, B>>>
    where
        E: Promote<B>,
    {
        true_div(self, other)
    }

    /// [`DynTensor::div`] by a scalar (`f32` for an integer tensor).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1i32, 3], &[2]);
    /// assert_eq!(t.div_scalar(2).to_vec(), vec![0.5f32, 1.5]);
    /// ```
    #[track_caller]
    pub fn div_scalar<S: Element>(&self, scalar: S) -> DynTensor<Qs<E, S>>
    where
        E: ScalarPromote<S>,
    {
        or_panic(true_div_scalar(self, scalar, false))
    }

    /// [`DynTensor::div_scalar`], or an error for refused operands (see the module docs).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1.0f64, 3.0], &[2]);
    /// assert_eq!(t.try_div_scalar(2.0).unwrap().to_vec(), vec![0.5, 1.5]);
    /// ```
    pub fn try_div_scalar<S: Element>(&self, scalar: S) -> Result<DynTensor<Qs<E, S>>>
    where
        E: ScalarPromote<S>,
    {
        true_div_scalar(self, scalar, false)
    }

    /// [`DynTensor::div`] in place (float tensors: an integer tensor cannot hold the `f32`
    /// quotient). Panics where [`DynTensor::try_div_`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 3.0], &[2]);
    /// t.div_(&DynTensor::from_vec(vec![2i32], &[1]));
    /// assert_eq!(t.to_vec(), vec![0.5, 1.5]);
    /// ```
    #[track_caller]
    pub fn div_<B: Element>(&self, other: &DynTensor<B>) -> &Self
    where
        E: Promote<B>,
    {
        or_panic(self.try_div_(other))
    }

    /// [`DynTensor::div_`], or an error when `other` does not broadcast to this shape, this
    /// view is expanded, or `E` is not a float type. On error nothing is written.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1i32, 3], &[2]);
    /// assert!(t.try_div_(&DynTensor::from_vec(vec![2i32], &[1])).is_err());
    /// ```
    pub fn try_div_<B: Element>(&self, other: &DynTensor<B>) -> Result<&Self>
    where
        E: Promote<B>,
    {
        check_inplace_cast::<Q<E, B>, E>("div_")?;
        binary_::<E, B, Q<E, B>>("div_", BinaryOp::Div, self, other)?;
        Ok(self)
    }

    /// [`DynTensor::div_`] by a scalar. Panics where [`DynTensor::try_div_scalar_`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1.0f64, 3.0], &[2]);
    /// t.div_scalar_(2);
    /// assert_eq!(t.to_vec(), vec![0.5, 1.5]);
    /// ```
    #[track_caller]
    pub fn div_scalar_<S: Element>(&self, scalar: S) -> &Self
    where
        E: ScalarPromote<S>,
    {
        or_panic(self.try_div_scalar_(scalar))
    }

    /// [`DynTensor::div_scalar_`], or an error when this view is expanded or `E` is not a
    /// float type.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1i32, 3], &[2]);
    /// assert!(t.try_div_scalar_(2).is_err());
    /// ```
    pub fn try_div_scalar_<S: Element>(&self, scalar: S) -> Result<&Self>
    where
        E: ScalarPromote<S>,
    {
        check_inplace_cast::<Qs<E, S>, E>("div_")?;
        let v: C<Qs<E, S>> = cast(scalar);
        let v = super::scalar_on(v, self.device())?;
        binary_::<E, C<Qs<E, S>>, Qs<E, S>>("div_", BinaryOp::Div, self, &v)?;
        Ok(self)
    }
}
