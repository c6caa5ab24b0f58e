//! `std::ops` operators: `+ - * /` between tensors (by reference or by value, broadcasting and
//! promoting, see [`Promote`]) and with `f64` or `i64` scalars on either side (see
//! [`ScalarPromote`]: a float scalar keeps a float tensor's type, so `&half_tensor * 2.0` stays
//! `f16`), and unary `-`. Literals infer these types (`&a + 1.0`, `2 * &a`); scalars of other
//! types go through [`DynTensor::add_scalar`] and the other `_scalar` methods. They panic where the `try_` methods fail
//! (shapes that do not broadcast, `bool - bool`).
//!
//! ```
//! use namedtensor::DynTensor;
//! let a = DynTensor::from_vec(vec![1.0f32, 2.0], &[2]);
//! let b = DynTensor::from_vec(vec![10i64, 20, 30], &[3, 1]);
//! let c = &a + &b;                       // [3, 2], f32
//! assert_eq!(c.shape(), &[3, 2]);
//! let d = 2.0 * &a - 1.0;                // scalars on both sides
//! assert_eq!(d.to_vec(), vec![1.0, 3.0]);
//! let e = -(&a / 2);                     // f32 / integer scalar stays f32
//! assert_eq!(e.to_vec(), vec![-0.5, -1.0]);
//! let i = DynTensor::from_vec(vec![1i32, 2], &[2]);
//! assert_eq!((&i / 2).to_vec(), vec![0.5f32, 1.0]); // integer true division gives f32
//! ```

use super::binary::{Rule, arith_scalar, true_div_scalar};
use super::promote::{
    DivOutput, Promote, Promoted, ScalarDivOutput, ScalarPromote, ScalarPromoted,
};
use crate::backend::op::BinaryOp;
use crate::dtype::{Element, Numeric};
use crate::tensor::{DynTensor, or_panic};
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! tensor_ops {
    ($Trait:ident, $method:ident, $Out:ident) => {
        impl<A: Promote<B>, B: Element> $Trait<&DynTensor<B>> for &DynTensor<A> {
            type Output = DynTensor<$Out<A, B>>;
            #[track_caller]
            fn $method(self, rhs: &DynTensor<B>) -> Self::Output {
                DynTensor::<A>::$method(self, rhs)
            }
        }
        impl<A: Promote<B>, B: Element> $Trait<DynTensor<B>> for &DynTensor<A> {
            type Output = DynTensor<$Out<A, B>>;
            #[track_caller]
            fn $method(self, rhs: DynTensor<B>) -> Self::Output {
                DynTensor::<A>::$method(self, &rhs)
            }
        }
        impl<A: Promote<B>, B: Element> $Trait<&DynTensor<B>> for DynTensor<A> {
            type Output = DynTensor<$Out<A, B>>;
            #[track_caller]
            fn $method(self, rhs: &DynTensor<B>) -> Self::Output {
                DynTensor::<A>::$method(&self, rhs)
            }
        }
        impl<A: Promote<B>, B: Element> $Trait<DynTensor<B>> for DynTensor<A> {
            type Output = DynTensor<$Out<A, B>>;
            #[track_caller]
            fn $method(self, rhs: DynTensor<B>) -> Self::Output {
                DynTensor::<A>::$method(&self, &rhs)
            }
        }
    };
}

tensor_ops!(Add, add, Promoted);
tensor_ops!(Sub, sub, Promoted);
tensor_ops!(Mul, mul, Promoted);
tensor_ops!(Div, div, DivOutput);

/// `scalar op tensor` for the non-commutative operators.
fn rsub<E: ScalarPromote<S>, S: Element>(
    s: S,
    t: &DynTensor<E>,
) -> DynTensor<ScalarPromoted<E, S>> {
    or_panic(arith_scalar("sub", Rule::NoBool, t, s, true, BinaryOp::Sub))
}

fn rdiv<E: ScalarPromote<S>, S: Element>(
    s: S,
    t: &DynTensor<E>,
) -> DynTensor<ScalarDivOutput<E, S>> {
    or_panic(true_div_scalar(t, s, true))
}

macro_rules! scalar_ops {
    ($($s:ty),*) => {$(
        scalar_ops!(@one $s, Add, add, add_scalar, ScalarPromoted, |s, t| t.add_scalar(s));
        scalar_ops!(@one $s, Sub, sub, sub_scalar, ScalarPromoted, |s, t| rsub(s, t));
        scalar_ops!(@one $s, Mul, mul, mul_scalar, ScalarPromoted, |s, t| t.mul_scalar(s));
        scalar_ops!(@one $s, Div, div, div_scalar, ScalarDivOutput, |s, t| rdiv(s, t));
    )*};
    (@one $s:ty, $Trait:ident, $method:ident, $scalar_method:ident, $Out:ident,
     |$sv:ident, $tv:ident| $left:expr) => {
        impl<E: ScalarPromote<$s>> $Trait<$s> for &DynTensor<E> {
            type Output = DynTensor<$Out<E, $s>>;
            #[track_caller]
            fn $method(self, rhs: $s) -> Self::Output {
                self.$scalar_method(rhs)
            }
        }
        impl<E: ScalarPromote<$s>> $Trait<$s> for DynTensor<E> {
            type Output = DynTensor<$Out<E, $s>>;
            #[track_caller]
            fn $method(self, rhs: $s) -> Self::Output {
                self.$scalar_method(rhs)
            }
        }
        impl<E: ScalarPromote<$s>> $Trait<&DynTensor<E>> for $s {
            type Output = DynTensor<$Out<E, $s>>;
            #[track_caller]
            fn $method(self, rhs: &DynTensor<E>) -> Self::Output {
                let ($sv, $tv) = (self, rhs);
                $left
            }
        }
        impl<E: ScalarPromote<$s>> $Trait<DynTensor<E>> for $s {
            type Output = DynTensor<$Out<E, $s>>;
            #[track_caller]
            fn $method(self, rhs: DynTensor<E>) -> Self::Output {
                let ($sv, $tv) = (self, &rhs);
                $left
            }
        }
    };
}

// One float and one integer type only: with a single candidate impl, a literal such as `1.0`
// or `2` infers its type from it (two float impls would leave `(&a + 1.0).method()`
// ambiguous). Scalars of other types go through `add_scalar` and friends.
scalar_ops!(f64, i64);

impl<E: Numeric> Neg for &DynTensor<E> {
    type Output = DynTensor<E>;
    fn neg(self) -> DynTensor<E> {
        DynTensor::<E>::neg(self)
    }
}

impl<E: Numeric> Neg for DynTensor<E> {
    type Output = DynTensor<E>;
    fn neg(self) -> DynTensor<E> {
        DynTensor::<E>::neg(&self)
    }
}
