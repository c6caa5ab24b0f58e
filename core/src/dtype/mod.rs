//! Element types: the [`DType`] tag and the [`Element`] trait implemented by the eleven
//! supported Rust types.
//!
//! | `DType` | Rust type | PyTorch name |
//! |---|---|---|
//! | `F32` (default) | `f32` | `torch.float32` |
//! | `F64` | `f64` | `torch.float64` |
//! | `F16` | `half::f16` | `torch.float16` |
//! | `BF16` | `half::bf16` | `torch.bfloat16` |
//! | `I8`, `U8`, `I16`, `I32`, `I64` | `i8`, `u8`, `i16`, `i32`, `i64` | `torch.int8`, … |
//! | `Bool` | `bool` | `torch.bool` |
//!
//! Casts go through an exact intermediate (every integer type fits `i64`, every float type fits
//! `f64`), so each cast rounds at most once. Float to integer casts truncate toward zero and
//! saturate at the integer type's bounds; NaN becomes 0. Any non-zero value casts to `true`.

#[doc(hidden)]
pub mod autocast;
mod compute;
mod erf;
mod exp;
pub mod promote;

#[doc(hidden)]
pub use compute::cast;
#[doc(hidden)]
pub use compute::{Kernel, Native, NativeFloat};
pub use promote::{
    DivOutput, Promote, Promoted, ScalarDivOutput, ScalarPromote, ScalarPromoted, SumOutput,
    can_cast,
};

use half::{bf16, f16};
use std::fmt::{Debug, Display};

/// The run-time tag of an element type.
///
/// ```
/// use namedtensor::{DType, DynTensor};
/// assert_eq!(DynTensor::<f64>::zeros(&[2]).dtype(), DType::F64);
/// assert_eq!(DType::BF16.name(), "bfloat16");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// `u8`
    U8,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `half::f16`
    F16,
    /// `half::bf16`
    BF16,
    /// `f32`, the default element type.
    F32,
    /// `f64`
    F64,
}

impl DType {
    /// Every dtype, in promotion order (bool first, f64 last).
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// PyTorch's name without the `torch.` prefix.
    ///
    /// ```
    /// assert_eq!(namedtensor::DType::I64.name(), "int64");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(namedtensor::DType::BF16.size_in_bytes(), 2);
    /// ```
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// Whether the dtype is a floating-point type.
    ///
    /// ```
    /// assert!(namedtensor::DType::F16.is_float());
    /// assert!(!namedtensor::DType::I32.is_float());
    /// ```
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Whether the dtype is a 16-bit floating-point type (`f16` or `bf16`).
    ///
    /// ```
    /// assert!(namedtensor::DType::BF16.is_half());
    /// assert!(!namedtensor::DType::F32.is_half());
    /// ```
    pub const fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A type that can be stored in a tensor. Implemented for `f32`, `f64`, `half::f16`,
/// `half::bf16`, `i8`, `u8`, `i16`, `i32`, `i64` and `bool`; sealed.
///
/// ```
/// use namedtensor::Element;
/// assert_eq!(3.7f32.cast::<i32>(), 3);
/// assert_eq!((-3.7f64).cast::<u8>(), 0); // saturates
/// assert_eq!(300i32.cast::<half::f16>(), half::f16::from_f32(300.0));
/// assert!(2i8.cast::<bool>());
/// ```
pub trait Element:
    sealed::Sealed
    + Kernel
    + Copy
    + Send
    + Sync
    + Debug
    + Display
    + PartialEq
    + PartialOrd
    + Default
    + 'static
{
    /// The run-time tag of this type.
    const DTYPE: DType;
    /// The additive identity (`false` for `bool`).
    const ZERO: Self;
    /// The multiplicative identity (`true` for `bool`).
    const ONE: Self;

    /// The value as `f64` (exact for every type but `i64` beyond 2^53).
    fn to_f64(self) -> f64;
    /// The value as `i64`: floats truncate toward zero and saturate; NaN is 0.
    fn to_i64(self) -> i64;
    /// The nearest value of this type to `v` (one rounding; integers truncate and saturate).
    fn from_f64(v: f64) -> Self;
    /// The value of this type for `v` (integers wrap like `as`; floats round once).
    fn from_i64(v: i64) -> Self;

    /// Converts to another element type, rounding at most once.
    ///
    /// ```
    /// use namedtensor::Element;
    /// assert_eq!(1.5f32.cast::<f64>(), 1.5);
    /// assert_eq!(true.cast::<f32>(), 1.0);
    /// assert_eq!(i64::MAX.cast::<i64>(), i64::MAX);
    /// ```
    #[inline]
    fn cast<T: Element>(self) -> T {
        if Self::DTYPE.is_float() {
            T::from_f64(self.to_f64())
        } else {
            T::from_i64(self.to_i64())
        }
    }
}

/// The element types with arithmetic: every element type but `bool`. Sealed.
///
/// Operations such as `neg`, `abs` or `clamp` are defined for these types only. Two tensors of
/// one numeric type combine into that type, so generic code over `E: Numeric` gets
/// `DynTensor<E>` from `&a + &b`.
///
/// ```
/// use namedtensor::{DynTensor, Numeric};
/// fn magnitude<E: Numeric>(t: &DynTensor<E>) -> DynTensor<E> {
///     t.abs()
/// }
/// assert_eq!(magnitude(&DynTensor::from_vec(vec![-2i32, 3], &[2])).to_vec(), vec![2, 3]);
/// ```
pub trait Numeric: Element + Promote<Self, Output = Self> {}

impl Numeric for u8 {}
impl Numeric for i8 {}
impl Numeric for i16 {}
impl Numeric for i32 {}
impl Numeric for i64 {}
impl Numeric for f16 {}
impl Numeric for bf16 {}
impl Numeric for f32 {}
impl Numeric for f64 {}

/// The floating-point element types: `f32`, `f64`, `half::f16`, `half::bf16`.
///
/// Their arithmetic is carried out in `f32` (for `f16`/`bf16`) or in the type itself, and their
/// sums and quotients keep the type, as do their products with their own type and with an
/// `f64` scalar, so generic code over `E: Float` gets `DynTensor<E>` from `sum`, `div`,
/// `&a * &b` and `&a * 2.0`.
///
/// ```
/// use namedtensor::Float;
/// assert_eq!(<half::bf16 as Float>::MANTISSA_DIGITS, 8);
/// ```
pub trait Float:
    Numeric
    + Kernel<Compute: NativeFloat, Sum = Self, Real = Self>
    + Promote<Self, Output = Self>
    + ScalarPromote<f64, Output = Self>
{
    /// Significand precision in bits, including the implicit bit.
    const MANTISSA_DIGITS: u32;
    /// Not a number.
    const NAN: Self;
    /// Positive infinity.
    const INFINITY: Self;
    /// The value as `f32` (rounds for `f64`).
    fn to_f32(self) -> f32;
    /// The nearest value of this type to `v`.
    fn from_f32(v: f32) -> Self;
}

macro_rules! int_element {
    ($t:ty, $d:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_element!(u8, U8);
int_element!(i8, I8);
int_element!(i16, I16);
int_element!(i32, I32);
int_element!(i64, I64);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const ZERO: Self = false;
    const ONE: Self = true;
    #[inline]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}

macro_rules! float_element {
    ($t:ty, $d:ident, $digits:expr, $from_f64:expr, $to_f64:expr, $from_f32:expr, $to_f32:expr,
     $from_i64:expr, $zero:expr, $one:expr, $nan:expr, $inf:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            #[inline]
            fn to_f64(self) -> f64 {
                ($to_f64)(self)
            }
            #[inline]
            fn to_i64(self) -> i64 {
                ($to_f64)(self) as i64
            }
            #[inline]
            fn from_f64(v: f64) -> Self {
                ($from_f64)(v)
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                ($from_i64)(v)
            }
        }
        impl Float for $t {
            const MANTISSA_DIGITS: u32 = $digits;
            const NAN: Self = $nan;
            const INFINITY: Self = $inf;
            #[inline]
            fn to_f32(self) -> f32 {
                ($to_f32)(self)
            }
            #[inline]
            fn from_f32(v: f32) -> Self {
                ($from_f32)(v)
            }
        }
    };
}
/// `v` as `f32`, rounded to odd: truncated toward zero, with the last bit set when inexact.
/// Rounding that result to nearest-even in a format at least two bits narrower (f16, bf16)
/// gives exactly the correctly rounded value of `v`, so f64 → f16/bf16 rounds once. (`half`'s
/// `from_f64` can round twice, which is off by one unit in rare ties.)
fn round_to_odd_f32(v: f64) -> f32 {
    let nearest = v as f32;
    if !v.is_finite() || nearest as f64 == v {
        return nearest;
    }
    // Step the nearest value toward zero if it rounded away (this also maps an overflow to
    // infinity back to f32::MAX); a value that underflowed to zero stays zero.
    let toward_zero = if (nearest as f64).abs() > v.abs() {
        f32::from_bits(nearest.to_bits() - 1)
    } else {
        nearest
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

// `from_i64` rounds once for f32/f64 and f16 (whose range ends long before 2^53); bf16 goes
// through f64 and can round twice only for |v| > 2^53.
float_element!(
    f32,
    F32,
    24,
    |v: f64| v as f32,
    |v: f32| v as f64,
    |v| v,
    |v| v,
    |v: i64| v as f32,
    0.0,
    1.0,
    f32::NAN,
    f32::INFINITY
);
float_element!(
    f64,
    F64,
    53,
    |v| v,
    |v| v,
    |v: f32| v as f64,
    |v: f64| v as f32,
    |v: i64| v as f64,
    0.0,
    1.0,
    f64::NAN,
    f64::INFINITY
);
float_element!(
    f16,
    F16,
    11,
    |v: f64| f16::from_f32(round_to_odd_f32(v)),
    f16::to_f64,
    f16::from_f32,
    f16::to_f32,
    |v: i64| f16::from_f32(round_to_odd_f32(v as f64)),
    f16::ZERO,
    f16::ONE,
    f16::NAN,
    f16::INFINITY
);
float_element!(
    bf16,
    BF16,
    8,
    |v: f64| bf16::from_f32(round_to_odd_f32(v)),
    bf16::to_f64,
    bf16::from_f32,
    bf16::to_f32,
    |v: i64| bf16::from_f32(round_to_odd_f32(v as f64)),
    bf16::ZERO,
    bf16::ONE,
    bf16::NAN,
    bf16::INFINITY
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_round_once_and_saturate() {
        assert_eq!(2.9f64.cast::<i8>(), 2);
        assert_eq!((-2.9f32).cast::<i16>(), -2);
        assert_eq!(1e10f64.cast::<i32>(), i32::MAX);
        assert_eq!(f32::NAN.cast::<i64>(), 0);
        assert_eq!(0.1f64.cast::<f32>(), 0.1f32);
        assert_eq!((1i64 << 40).cast::<f64>(), 1099511627776.0);
        assert_eq!(257i32.cast::<u8>(), 1); // integer to integer wraps like `as`
        assert_eq!(bf16::from_f32(1.5).cast::<f16>(), f16::from_f32(1.5));
        assert!(!0.0f32.cast::<bool>());
        assert!(f32::NAN.cast::<bool>());
        assert_eq!(true.cast::<i64>(), 1);
    }

    #[test]
    fn f64_to_half_types_rounds_once() {
        // 1 + 2^-8 is the tie between bf16's 1 and 1 + 2^-7; a little more must round up.
        let above_tie = 1.0 + 2f64.powi(-8) + 2f64.powi(-30);
        assert_eq!(
            above_tie.cast::<bf16>(),
            bf16::from_f32(1.0 + 2f32.powi(-7))
        );
        let below_tie = 1.0 + 2f64.powi(-8) - 2f64.powi(-30);
        assert_eq!(below_tie.cast::<bf16>(), bf16::ONE);
        // the exact tie rounds to even
        assert_eq!((1.0 + 2f64.powi(-8)).cast::<bf16>(), bf16::ONE);
        // f16: 1 + 2^-11 is the tie between 1 and 1 + 2^-10
        let f16_above = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f16_above.cast::<f16>(), f16::from_f32(1.0 + 2f32.powi(-10)));
        assert_eq!(1e300f64.cast::<bf16>(), bf16::INFINITY);
        assert_eq!((-1e-300f64).cast::<f16>(), f16::from_f32(-0.0));
        assert!(f64::NAN.cast::<bf16>().is_nan());
    }
}
