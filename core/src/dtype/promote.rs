//! Type promotion: the element type of a result whose operands have different element types.
//!
//! The rules are PyTorch's. Types are ordered by category, `bool` < integers < floats; the
//! result has the higher category, and within a category the type that can hold both:
//!
//! - `bool` with anything gives the other type.
//! - Two integer types give the wider one; `u8` with a signed type gives a signed type that
//!   holds every `u8` (`u8·i8 → i16`).
//! - An integer with a float gives the float (`i64·f16 → f16`, `f32·i64 → f32`).
//! - Two floats give the wider one; `f16·bf16 → f32` (neither holds the other).
//!
//! [`Promote`] for two tensors (`a + b`), the full table (row: left operand, column: right):
//!
//! | `Promote` | bool | u8 | i8 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! |---|---|---|---|---|---|---|---|---|---|---|
//! | **bool** | bool | u8 | i8 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | **u8**   | u8 | u8 | i16 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | **i8**   | i8 | i16 | i8 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | **i16**  | i16 | i16 | i16 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | **i32**  | i32 | i32 | i32 | i32 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | **i64**  | i64 | i64 | i64 | i64 | i64 | i64 | f16 | bf16 | f32 | f64 |
//! | **f16**  | f16 | f16 | f16 | f16 | f16 | f16 | f16 | f32 | f32 | f64 |
//! | **bf16** | bf16 | bf16 | bf16 | bf16 | bf16 | bf16 | f32 | bf16 | f32 | f64 |
//! | **f32**  | f32 | f32 | f32 | f32 | f32 | f32 | f32 | f32 | f32 | f64 |
//! | **f64**  | f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 |
//!
//! [`ScalarPromote`] for a tensor and a Rust scalar (`bool`, `i64` or `f64`: `&a + 1.0`,
//! `2 * &a`, `a.mul_scalar(0.5)`): a scalar only
//! raises the category, never the width — a float scalar keeps a float tensor's type and makes
//! an integer or `bool` tensor `f32` (PyTorch's default float type); an integer scalar keeps an
//! integer or float tensor's type and makes a `bool` tensor `i64`; a `bool` scalar keeps the
//! tensor's type.
//!
//! | tensor \ scalar | bool | integer | float |
//! |---|---|---|---|
//! | bool | bool | i64 | f32 |
//! | integer `I` | `I` | `I` | f32 |
//! | float `F` | `F` | `F` | `F` |
//!
//! True division of integers (or `bool`) gives `f32`: the `Real` type of the promoted type.
//! In-place operations compute in the promoted type and store into the destination, which must
//! be able to hold the result's category (no float result into an integer tensor, no integer
//! result into a `bool` tensor), as PyTorch requires.
//!
//! ```
//! use namedtensor::{DType, DynTensor};
//! let a = DynTensor::from_vec(vec![200u8, 100], &[2]);
//! let b = DynTensor::from_vec(vec![-100i8, 27], &[2]);
//! let c = &a + &b;                                   // u8 · i8 → i16, no wrap-around
//! assert_eq!((c.dtype(), c.to_vec()), (DType::I16, vec![100, 127]));
//! assert_eq!((&a / &b).dtype(), DType::F32);         // integer true division
//! assert_eq!((&a * 0.5).dtype(), DType::F32);        // float scalar, integer tensor
//! assert_eq!((&a * 2).dtype(), DType::U8);           // integer scalar keeps the type
//! assert!(a.try_add_(&DynTensor::from_vec(vec![0.5f32], &[1])).is_err()); // f32 into u8
//! ```

use super::{DType, Element, Kernel};
use half::{bf16, f16};

/// The element type of a binary operation's result for operands `Self` and `Rhs`. Implemented
/// for all 100 pairs of element types; see the [module docs](self) for the table.
///
/// ```
/// use namedtensor::{DType, Element, Promote, Promoted};
/// assert_eq!(<Promoted<u8, i8> as Element>::DTYPE, DType::I16);
/// assert_eq!(<Promoted<half::f16, half::bf16> as Element>::DTYPE, DType::F32);
/// assert_eq!(<<f32 as Promote<i64>>::Output as Element>::DTYPE, DType::F32);
/// ```
pub trait Promote<Rhs: Element>: Element {
    /// The result type.
    type Output: Element;
}

/// The promoted type of `A` and `B`.
///
/// ```
/// let x: namedtensor::Promoted<f64, i16> = 1.5f64;
/// assert_eq!(x, 1.5);
/// ```
pub type Promoted<A, B> = <A as Promote<B>>::Output;

/// The result type of a tensor of `E` and a scalar of type `S` (see [`ScalarPromote`]).
///
/// ```
/// let x: namedtensor::ScalarPromoted<i32, f64> = 1.5f32;
/// assert_eq!(x, 1.5);
/// ```
pub type ScalarPromoted<E, S> = <E as ScalarPromote<S>>::Output;

/// The result type of true division of `A` by `B`: the promoted type, or `f32` when that is an
/// integer type or `bool`.
///
/// ```
/// let q: namedtensor::DivOutput<i32, i64> = 0.5f32;
/// let r: namedtensor::DivOutput<half::f16, i64> = half::f16::ONE;
/// assert_eq!((q, r.to_f32()), (0.5, 1.0));
/// ```
pub type DivOutput<A, B> = <Promoted<A, B> as Kernel>::Real;

/// The result type of true division of a tensor of `E` by a scalar of type `S` (or of the
/// scalar by the tensor).
///
/// ```
/// let q: namedtensor::ScalarDivOutput<u8, i64> = 0.5f32;
/// assert_eq!(q, 0.5);
/// ```
pub type ScalarDivOutput<E, S> = <ScalarPromoted<E, S> as Kernel>::Real;

/// The element type of sums, products and cumulative sums of `E`: `i64` for integers and
/// `bool` (as PyTorch), `E` itself for floats.
///
/// ```
/// let s: namedtensor::SumOutput<u8> = 300i64;
/// let f: namedtensor::SumOutput<f32> = 1.5f32;
/// assert_eq!((s, f), (300, 1.5));
/// ```
pub type SumOutput<E> = <E as Kernel>::Sum;

/// The element type of a result of a tensor of `Self` and a Rust scalar of type `S` (`bool`,
/// `i64` or `f64`, which is what literals such as `true`, `2` or `0.5` become); see the
/// [module docs](self). Scalars of other types convert losslessly with `as i64`/`as f64` or
/// `.into()`; the value is converted to the computation's type anyway.
///
/// ```
/// use namedtensor::{DType, Element, ScalarPromote};
/// assert_eq!(<<i32 as ScalarPromote<f64>>::Output as Element>::DTYPE, DType::F32);
/// assert_eq!(<<half::f16 as ScalarPromote<f64>>::Output as Element>::DTYPE, DType::F16);
/// assert_eq!(<<bool as ScalarPromote<i64>>::Output as Element>::DTYPE, DType::I64);
/// ```
pub trait ScalarPromote<S: Element>: Element {
    /// The result type.
    type Output: Element;
}

macro_rules! promote_row {
    ($a:ty; $($b:ty => $o:ty),* $(,)?) => {$(
        impl Promote<$b> for $a {
            type Output = $o;
        }
    )*};
}

promote_row!(bool; bool => bool, u8 => u8, i8 => i8, i16 => i16, i32 => i32, i64 => i64,
    f16 => f16, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(u8; bool => u8, u8 => u8, i8 => i16, i16 => i16, i32 => i32, i64 => i64,
    f16 => f16, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(i8; bool => i8, u8 => i16, i8 => i8, i16 => i16, i32 => i32, i64 => i64,
    f16 => f16, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(i16; bool => i16, u8 => i16, i8 => i16, i16 => i16, i32 => i32, i64 => i64,
    f16 => f16, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(i32; bool => i32, u8 => i32, i8 => i32, i16 => i32, i32 => i32, i64 => i64,
    f16 => f16, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(i64; bool => i64, u8 => i64, i8 => i64, i16 => i64, i32 => i64, i64 => i64,
    f16 => f16, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(f16; bool => f16, u8 => f16, i8 => f16, i16 => f16, i32 => f16, i64 => f16,
    f16 => f16, bf16 => f32, f32 => f32, f64 => f64);
promote_row!(bf16; bool => bf16, u8 => bf16, i8 => bf16, i16 => bf16, i32 => bf16, i64 => bf16,
    f16 => f32, bf16 => bf16, f32 => f32, f64 => f64);
promote_row!(f32; bool => f32, u8 => f32, i8 => f32, i16 => f32, i32 => f32, i64 => f32,
    f16 => f32, bf16 => f32, f32 => f32, f64 => f64);
promote_row!(f64; bool => f64, u8 => f64, i8 => f64, i16 => f64, i32 => f64, i64 => f64,
    f16 => f64, bf16 => f64, f32 => f64, f64 => f64);

macro_rules! scalar_promote {
    ($t:ty: bool => $b:ty, int => $i:ty, float => $f:ty) => {
        impl ScalarPromote<bool> for $t {
            type Output = $b;
        }
        impl ScalarPromote<i64> for $t {
            type Output = $i;
        }
        impl ScalarPromote<f64> for $t {
            type Output = $f;
        }
    };
}

// Scalars are `bool`, `i64` and `f64` only: with one candidate per kind, a literal infers its
// type (`t.add_scalar(1.0).to_vec()` would be ambiguous with several float types).
scalar_promote!(bool: bool => bool, int => i64, float => f32);
scalar_promote!(u8: bool => u8, int => u8, float => f32);
scalar_promote!(i8: bool => i8, int => i8, float => f32);
scalar_promote!(i16: bool => i16, int => i16, float => f32);
scalar_promote!(i32: bool => i32, int => i32, float => f32);
scalar_promote!(i64: bool => i64, int => i64, float => f32);
scalar_promote!(f16: bool => f16, int => f16, float => f16);
scalar_promote!(bf16: bool => bf16, int => bf16, float => bf16);
scalar_promote!(f32: bool => f32, int => f32, float => f32);
scalar_promote!(f64: bool => f64, int => f64, float => f64);

/// Whether a result of type `from` may be stored into a tensor of type `to` by an in-place
/// operation (PyTorch's `can_cast`): not from a float to an integer or `bool`, not from an
/// integer to `bool`.
///
/// ```
/// use namedtensor::{ops::can_cast, DType};
/// assert!(can_cast(DType::F64, DType::F16));
/// assert!(!can_cast(DType::F32, DType::I64));
/// assert!(!can_cast(DType::I32, DType::Bool));
/// ```
pub fn can_cast(from: DType, to: DType) -> bool {
    let rank = |d: DType| {
        if d.is_float() {
            2
        } else if d == DType::Bool {
            0
        } else {
            1
        }
    };
    rank(from) <= rank(to)
}
