//! Type-level dimension ids: a 64-bit id written as sixteen hexadecimal digit types,
//! most significant first, `I<X7, I<X0, … I<X2, IEnd>…>>`.
//!
//! `dims!` writes these types; nothing else needs to. They make the equality of two
//! dimension types decidable by the trait solver ([`IdEq`]), which is what lets the
//! algebra compute unions, differences and duplicate checks without negative reasoning.
//! Comparison stops at the first differing digit, and since ids are well-mixed hashes
//! that is almost always the first one.
//!
//! ```
//! use namedtensor::named::id::{IEnd, TypeLevelId, I, X1, XF};
//! type Small = I<X1, I<XF, IEnd>>;
//! assert_eq!(<Small as TypeLevelId>::VALUE, 0x1f);
//! ```

use super::logic::{B0, B1, Bool};
use core::marker::PhantomData;

/// One digit of an id followed by the remaining digits.
///
/// ```
/// use namedtensor::named::id::{IEnd, TypeLevelId, I, XA};
/// assert_eq!(<I<XA, IEnd> as TypeLevelId>::VALUE, 10);
/// ```
pub struct I<Digit, Rest>(PhantomData<(Digit, Rest)>);

/// The end of an id's digits.
///
/// ```
/// use namedtensor::named::id::{IEnd, TypeLevelId};
/// assert_eq!(<IEnd as TypeLevelId>::DIGITS, 0);
/// ```
pub struct IEnd;

/// A hexadecimal digit type, `X0` to `XF`. `IsN` is [`B1`] exactly for the digit `N`.
///
/// ```
/// use namedtensor::named::id::{Digit, XC};
/// assert_eq!(<XC as Digit>::VALUE, 12);
/// ```
pub trait Digit {
    /// The digit's value.
    const VALUE: u64;
    #[doc(hidden)]
    type Is0: Bool;
    #[doc(hidden)]
    type Is1: Bool;
    #[doc(hidden)]
    type Is2: Bool;
    #[doc(hidden)]
    type Is3: Bool;
    #[doc(hidden)]
    type Is4: Bool;
    #[doc(hidden)]
    type Is5: Bool;
    #[doc(hidden)]
    type Is6: Bool;
    #[doc(hidden)]
    type Is7: Bool;
    #[doc(hidden)]
    type Is8: Bool;
    #[doc(hidden)]
    type Is9: Bool;
    #[doc(hidden)]
    type IsA: Bool;
    #[doc(hidden)]
    type IsB: Bool;
    #[doc(hidden)]
    type IsC: Bool;
    #[doc(hidden)]
    type IsD: Bool;
    #[doc(hidden)]
    type IsE: Bool;
    #[doc(hidden)]
    type IsF: Bool;
}

/// Equality of two digits: one impl per left digit, each reading the right digit's
/// `IsN` flag, so deciding it is a single lookup.
///
/// ```
/// use namedtensor::named::id::{DigitEq, X3, X4};
/// use namedtensor::named::logic::Bool;
/// assert!(!<<X3 as DigitEq<X4>>::Out as Bool>::VALUE);
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot tell whether two dimensions are equal: one of them is a generic type parameter; state the bound that needs it (see the notes)",
    label = "dimension equality unknown here",
    note = "creating a tensor whose dims are generic parameters needs its shape as a bound, e.g. `where (In, Out): Shape` on the function or impl that creates a `Tensor<E, (In, Out)>` (it checks that they differ once they are known)",
    note = "a named operation on a generic shape needs its trait as a bound on the whole shape, e.g. `where S: ReduceOver<D>` for `x.sum::<D>()`: see \"Generic code\" in the docs of `namedtensor::named`"
)]
pub trait DigitEq<Other> {
    /// [`B1`] if the digits are equal.
    type Out: Bool;
}

/// Declares the digit types and writes their equality table: for the digit at position
/// `k`, `IsK` is `B1` and every other flag `B0`.
macro_rules! digits {
    ($(($d:ident, $is:ident, $v:literal)),* $(,)?) => {
        $(
            #[doc = concat!("The hexadecimal digit ", stringify!($v), " of a type-level id.")]
            ///
            /// ```
            /// use namedtensor::named::id::Digit;
            #[doc = concat!("assert_eq!(<namedtensor::named::id::", stringify!($d), " as Digit>::VALUE, ", stringify!($v), ");")]
            /// ```
            pub struct $d;
            impl<Other: Digit> DigitEq<Other> for $d {
                type Out = Other::$is;
            }
        )*
        digits!(@table [] [$(($d, $is, $v))*]);
    };
    (@table [$(($bd:ident, $bis:ident, $bv:literal))*] []) => {};
    (@table [$(($bd:ident, $bis:ident, $bv:literal))*]
            [($d:ident, $is:ident, $v:literal) $(($ad:ident, $ais:ident, $av:literal))*]) => {
        impl Digit for $d {
            const VALUE: u64 = $v;
            $(type $bis = B0;)*
            type $is = B1;
            $(type $ais = B0;)*
        }
        digits!(@table [$(($bd, $bis, $bv))* ($d, $is, $v)] [$(($ad, $ais, $av))*]);
    };
}

digits! {
    (X0, Is0, 0), (X1, Is1, 1), (X2, Is2, 2), (X3, Is3, 3),
    (X4, Is4, 4), (X5, Is5, 5), (X6, Is6, 6), (X7, Is7, 7),
    (X8, Is8, 8), (X9, Is9, 9), (XA, IsA, 10), (XB, IsB, 11),
    (XC, IsC, 12), (XD, IsD, 13), (XE, IsE, 14), (XF, IsF, 15),
}

/// A type-level id: [`IEnd`] or [`I`]`<Digit, Rest>`.
///
/// ```
/// use namedtensor::named::{id::TypeLevelId, Dim};
/// namedtensor::dims! { Batch }
/// assert_eq!(<<Batch as Dim>::Id as TypeLevelId>::VALUE, Batch::ID);
/// ```
pub trait TypeLevelId {
    /// Number of digits.
    const DIGITS: u32;
    /// The id as a number.
    const VALUE: u64;
}

impl TypeLevelId for IEnd {
    const DIGITS: u32 = 0;
    const VALUE: u64 = 0;
}

impl<D: Digit, R: TypeLevelId> TypeLevelId for I<D, R> {
    const DIGITS: u32 = R::DIGITS + 1;
    const VALUE: u64 = (D::VALUE << (4 * R::DIGITS)) | R::VALUE;
}

/// Equality of two type-level ids; short-circuits after the first differing digit.
///
/// Only concrete ids can be compared. Generic code that needs to compare a dimension
/// type parameter must say so with the operation's own trait as a bound (for example
/// `where S: ReduceOver<D>`), which moves the comparison to the caller.
///
/// ```
/// use namedtensor::named::id::{IEnd, IdEq, I, X1, X2};
/// use namedtensor::named::logic::Bool;
/// assert!(<<I<X1, IEnd> as IdEq<I<X1, IEnd>>>::Out as Bool>::VALUE);
/// assert!(!<<I<X1, IEnd> as IdEq<I<X2, IEnd>>>::Out as Bool>::VALUE);
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot tell whether two dimensions are equal: one of them is a generic type parameter; state the bound that needs it (see the notes)",
    label = "dimension equality unknown here",
    note = "creating a tensor whose dims are generic parameters needs its shape as a bound, e.g. `where (In, Out): Shape` on the function or impl that creates a `Tensor<E, (In, Out)>` (it checks that they differ once they are known)",
    note = "a named operation on a generic shape needs its trait as a bound on the whole shape, e.g. `where S: ReduceOver<D>` for `x.sum::<D>()`: see \"Generic code\" in the docs of `namedtensor::named`"
)]
pub trait IdEq<Other> {
    /// [`B1`] if the ids are equal.
    type Out: Bool;
}

impl IdEq<IEnd> for IEnd {
    type Out = B1;
}

impl<D1, R1, D2, R2> IdEq<I<D2, R2>> for I<D1, R1>
where
    D1: DigitEq<D2>,
    <D1 as DigitEq<D2>>::Out: IdEqRest<R1, R2>,
{
    type Out = <<D1 as DigitEq<D2>>::Out as IdEqRest<R1, R2>>::Out;
}

/// Continues [`IdEq`] after one digit: [`B0`] stops, [`B1`] compares the rest.
#[doc(hidden)]
pub trait IdEqRest<R1, R2> {
    type Out: Bool;
}

impl<R1, R2> IdEqRest<R1, R2> for B0 {
    type Out = B0;
}

impl<R1: IdEq<R2>, R2> IdEqRest<R1, R2> for B1 {
    type Out = <R1 as IdEq<R2>>::Out;
}
