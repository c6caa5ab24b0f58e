//! Shape-preserving math on named tensors without a closure: `x.relu()`, `x.exp()`,
//! `&x * 2.0`, `-x`. Each is the positional op of the same name with the names kept (the
//! shape cannot change, so nothing is checked); [`Tensor::map`] remains for anything else.

use super::Tensor;
use crate::dtype::{Element, Float, Numeric};
use crate::named::DimTuple;
use crate::ops::{ScalarDivOutput, ScalarPromote, ScalarPromoted};
use std::ops::{Add, Div, Mul, Neg, Not, Sub};

macro_rules! named_unary {
    ($bound:ident; $($name:ident $name_:ident),* $(,)?) => {
        impl<E: $bound, S: DimTuple, P: DimTuple> Tensor<E, S, P> {$(
            #[doc = concat!("[`DynTensor::", stringify!($name), "`](crate::DynTensor::",
                stringify!($name), ") elementwise; names unchanged.")]
            pub fn $name(&self) -> Self {
                Tensor::wrap(crate::DynTensor::$name(&self.raw))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name_), "`](crate::DynTensor::",
                stringify!($name_), "): overwrites every element of this view in place and \
                returns it. Inside a graph the write is recorded and differentiated like the \
                out-of-place form (see [`autograd`](crate::autograd#in-place-writes)).")]
            #[track_caller]
            pub fn $name_(&self) -> &Self {
                crate::DynTensor::$name_(&self.raw);
                self
            }
        )*}
    };
}

named_unary! { Float;
    exp exp_, log log_, log1p log1p_, expm1 expm1_, sqrt sqrt_, rsqrt rsqrt_, sin sin_,
    cos cos_, tan tan_, tanh tanh_, erf erf_, sigmoid sigmoid_, gelu gelu_,
    gelu_tanh gelu_tanh_, silu silu_, floor floor_, ceil ceil_, round round_, trunc trunc_,
    recip recip_,
}

named_unary! { Numeric; neg neg_, abs abs_, sign sign_, square square_, relu relu_ }

impl<E: Float, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Every element raised to `exponent`; names unchanged.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f64, (Rows,)>::from_vec(vec![4.0, 9.0], [2]);
    /// assert_eq!(t.powf(0.5).to_vec(), vec![2.0, 3.0]);
    /// assert_eq!(t.relu().names(), ["Rows"]);
    /// ```
    pub fn powf(&self, exponent: f64) -> Self {
        Tensor::wrap(self.raw.powf(exponent))
    }
}

impl<E: Numeric, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Every element limited to `[min, max]` (see [`DynTensor::clamp`](crate::DynTensor::clamp));
    /// names unchanged.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f32, (Rows,)>::from_vec(vec![-2.0, 0.5, 3.0], [3]);
    /// assert_eq!(t.clamp(-1.0, 1.0).to_vec(), vec![-1.0, 0.5, 1.0]);
    /// ```
    pub fn clamp<V: Element>(&self, min: V, max: V) -> Self {
        Tensor::wrap(self.raw.clamp(min, max))
    }
}

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Elementwise logical not → `bool` (zero and `false` become `true`), names unchanged, as
    /// [`DynTensor::logical_not`](crate::DynTensor::logical_not); `!t` for a `bool` tensor.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq }
    /// let counts = Tensor::<i32, (Batch, Seq)>::from_vec(vec![0, 3, 1, 0], [2, 2]);
    /// let empty = counts.logical_not();
    /// assert_eq!(empty.names(), ["Batch", "Seq"]);
    /// assert_eq!(empty.to_vec(), vec![true, false, false, true]);
    /// let padding = Tensor::<bool, (Batch, Seq)>::from_vec(vec![false, false, false, true], [2, 2]);
    /// assert_eq!((!&padding).to_vec(), vec![true, true, true, false]);
    /// assert_eq!((!padding).names(), ["Batch", "Seq"]);
    /// ```
    pub fn logical_not(&self) -> Tensor<bool, S, P> {
        Tensor::wrap(self.raw.logical_not())
    }

    /// Whether `other` (of the same dims) has the same sizes and elements; see
    /// [`DynTensor::equal`](crate::DynTensor::equal).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let a = Tensor::<i64, (Rows, Cols)>::zeros([2, 3]);
    /// assert!(a.equal(&Tensor::zeros([2, 3])));
    /// assert!(!a.equal(&Tensor::zeros([3, 2])));
    /// ```
    pub fn equal(&self, other: &Tensor<E, S, P>) -> bool
    where
        E: crate::ops::Promote<E>,
    {
        self.raw.equal(&other.raw)
    }
}

/// `tensor op scalar` and `scalar op tensor` for one scalar type (as for `DynTensor`: one
/// float and one integer type, so that literals infer).
macro_rules! named_scalar_ops {
    ($($s:ty),*) => {$(
        named_scalar_ops!(@one $s, Add, add, ScalarPromoted);
        named_scalar_ops!(@one $s, Sub, sub, ScalarPromoted);
        named_scalar_ops!(@one $s, Mul, mul, ScalarPromoted);
        named_scalar_ops!(@one $s, Div, div, ScalarDivOutput);
    )*};
    (@one $s:ty, $Trait:ident, $method:ident, $Out:ident) => {
        impl<E: ScalarPromote<$s>, S: DimTuple, P: DimTuple> $Trait<$s> for &Tensor<E, S, P> {
            type Output = Tensor<$Out<E, $s>, S, P>;
            #[track_caller]
            fn $method(self, rhs: $s) -> Self::Output {
                Tensor::wrap($Trait::$method(&self.raw, rhs))
            }
        }
        impl<E: ScalarPromote<$s>, S: DimTuple, P: DimTuple> $Trait<$s> for Tensor<E, S, P> {
            type Output = Tensor<$Out<E, $s>, S, P>;
            #[track_caller]
            fn $method(self, rhs: $s) -> Self::Output {
                Tensor::wrap($Trait::$method(&self.raw, rhs))
            }
        }
        impl<E: ScalarPromote<$s>, S: DimTuple, P: DimTuple> $Trait<&Tensor<E, S, P>> for $s {
            type Output = Tensor<$Out<E, $s>, S, P>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<E, S, P>) -> Self::Output {
                Tensor::wrap($Trait::$method(self, &rhs.raw))
            }
        }
        impl<E: ScalarPromote<$s>, S: DimTuple, P: DimTuple> $Trait<Tensor<E, S, P>> for $s {
            type Output = Tensor<$Out<E, $s>, S, P>;
            #[track_caller]
            fn $method(self, rhs: Tensor<E, S, P>) -> Self::Output {
                Tensor::wrap($Trait::$method(self, &rhs.raw))
            }
        }
    };
}

named_scalar_ops!(f64, i64);

impl<E: Numeric, S: DimTuple, P: DimTuple> Neg for &Tensor<E, S, P> {
    type Output = Tensor<E, S, P>;
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f32, (Rows,)>::from_vec(vec![1.0, -2.0], [2]);
    /// assert_eq!((-&t).to_vec(), vec![-1.0, 2.0]);
    /// assert_eq!((1.0 - &t * 2.0).to_vec(), vec![-1.0, 5.0]);
    /// ```
    fn neg(self) -> Tensor<E, S, P> {
        Tensor::wrap(-&self.raw)
    }
}

impl<E: Numeric, S: DimTuple, P: DimTuple> Neg for Tensor<E, S, P> {
    type Output = Tensor<E, S, P>;
    fn neg(self) -> Tensor<E, S, P> {
        Tensor::wrap(-&self.raw)
    }
}

/// `!t`: [`Tensor::logical_not`] of a `bool` tensor.
impl<S: DimTuple, P: DimTuple> Not for &Tensor<bool, S, P> {
    type Output = Tensor<bool, S, P>;

    fn not(self) -> Tensor<bool, S, P> {
        self.logical_not()
    }
}

/// `!t`: [`Tensor::logical_not`] of a `bool` tensor.
impl<S: DimTuple, P: DimTuple> Not for Tensor<bool, S, P> {
    type Output = Tensor<bool, S, P>;

    fn not(self) -> Tensor<bool, S, P> {
        self.logical_not()
    }
}
