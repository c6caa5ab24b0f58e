//! Dimension types: the [`Dim`] trait that `dims!` implements, their equality
//! ([`DimEq`]) and [`Dims`], "one dimension or a tuple of them", the argument of
//! operations that accept either (`sum(Rows)` or `sum((Rows, Cols))`).

use super::assert::DistinctIds;
use super::id::{Digit, DigitEq, IdEq, TypeLevelId};
use super::list::{HCons, HNil};
use super::logic::{B0, B1, Bool};
use super::shape::DimTuple;
use super::shape::{AsList, Shape};
use core::fmt::Debug;

/// A named dimension: a zero-sized marker type declared with [`dims!`](crate::dims).
///
/// Do not implement it by hand: `dims!` gives every declaration an [`ID`](Dim::ID) that
/// differs from all others with overwhelming probability, and the matching
/// type-level digits [`Id`](Dim::Id).
///
/// ```
/// use namedtensor::Dim;
/// namedtensor::dims! { Batch }
/// assert_eq!(Batch::NAME, "Batch");
/// let _value: Batch = Batch; // a unit struct: usable as a value marker
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a dimension type",
    label = "not declared with `dims!`",
    note = "declare dimension types with `namedtensor::dims! {{ Batch, Rows, Cols }}`"
)]
pub trait Dim: 'static + Copy + Default + Debug + Send + Sync {
    /// The name as declared: `"Batch"`.
    const NAME: &'static str;
    /// The 64-bit id, hashed from the declaration site or given as `Name = 0x…`.
    const ID: u64;
    /// [`ID`](Dim::ID) as sixteen hexadecimal digit types (see [`id`](super::id)).
    type Id: TypeLevelId;
    /// The first digit of [`Id`](Dim::Id). Comparing it first settles fifteen in sixteen
    /// comparisons of different dimensions with one lookup.
    type Lead: Digit;
}

/// Equality of dimension types by id, [`B1`](super::logic::B1) or [`B0`].
///
/// It has a safety net: two *different* types with the same id (two explicit
/// `Name = 0x…` that agree, or an astronomically unlikely hash collision) are a compile
/// error, never a silent mix-up.
///
/// ```
/// use namedtensor::named::{logic::Bool, DimEq};
/// namedtensor::dims! { Rows, Cols }
/// assert!(<<Rows as DimEq<Rows>>::Out as Bool>::VALUE);
/// assert!(!<<Rows as DimEq<Cols>>::Out as Bool>::VALUE);
/// ```
pub trait DimEq<Other> {
    /// [`B1`](super::logic::B1) if `Self` and `Other` are the same dimension.
    type Out: Bool;
}

impl<A: Dim, B: Dim> DimEq<B> for A
where
    A::Lead: DigitEq<B::Lead>,
    <A::Lead as DigitEq<B::Lead>>::Out: DimEqRest<A, B>,
{
    type Out = <<A::Lead as DigitEq<B::Lead>>::Out as DimEqRest<A, B>>::Out;
}

/// Continues [`DimEq`] after the first digit: [`B0`] stops, [`B1`] compares whole ids.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "cannot tell whether `{A}` and `{B}` are the same dimension: one of them is a generic type parameter; state the bound that needs it (see the notes)",
    label = "dimension equality unknown here",
    note = "creating a tensor whose dims are generic parameters needs its shape as a bound, e.g. `where (In, Out): Shape` on the function or impl that creates a `Tensor<E, (In, Out)>` (it checks that they differ once they are known)",
    note = "a named operation on a generic shape needs its trait as a bound on the whole shape, e.g. `where S: ReduceOver<D>` for `x.sum::<D>()`: see \"Generic code\" in the docs of `namedtensor::named`"
)]
pub trait DimEqRest<A, B> {
    type Out: Bool;
}

impl<A, B> DimEqRest<A, B> for B0 {
    type Out = B0;
}

impl<A: Dim, B: Dim> DimEqRest<A, B> for B1
where
    A::Id: IdEq<B::Id>,
    <A::Id as IdEq<B::Id>>::Out: DistinctIds<A, B>,
{
    type Out = <<A::Id as IdEq<B::Id>>::Out as DistinctIds<A, B>>::Same;
}

/// The absent dimension, produced by list operations that look past the end of a list
/// (the second-to-last dimension of a vector). It equals no dimension.
///
/// ```
/// use namedtensor::named::{logic::Bool, DimEq, NoDim};
/// namedtensor::dims! { Rows }
/// assert!(!<<NoDim as DimEq<Rows>>::Out as Bool>::VALUE);
/// ```
pub struct NoDim;

impl<B> DimEq<B> for NoDim {
    type Out = B0;
}

impl<A: Dim> DimEq<NoDim> for A {
    type Out = B0;
}

/// One dimension or a tuple of distinct dimensions: what reductions, contractions and
/// merges accept, so both `sum(Rows)` and `sum((Rows, Cols))` read naturally.
///
/// ```
/// use namedtensor::named::{Dim, Dims};
/// namedtensor::dims! { Rows, Cols }
/// assert_eq!(<Rows as Dims>::IDS, [Rows::ID]);
/// assert_eq!(<(Rows, Cols) as Dims>::NAMES, ["Rows", "Cols"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither a dimension nor a tuple of dimensions",
    label = "expected a `dims!` type or a tuple of distinct ones",
    note = "write one dimension, `Rows`, or a tuple of distinct dimensions, `(Rows, Cols)`"
)]
pub trait Dims {
    /// The dimensions as a list (see [`list`](super::list)).
    type List;
    /// Their ids, in the order written.
    const IDS: &'static [u64];
    /// Their names, in the order written.
    const NAMES: &'static [&'static str];
}

#[diagnostic::do_not_recommend]
impl<D: Dim> Dims for D {
    type List = HCons<D, HNil>;
    const IDS: &'static [u64] = &[D::ID];
    const NAMES: &'static [&'static str] = &[D::NAME];
}

macro_rules! tuple_dims {
    ($(($($T:ident),+))*) => {$(
        impl<$($T: Dim),+> Dims for ($($T,)+)
        where
            Self: Shape,
        {
            type List = <Self as AsList>::List;
            const IDS: &'static [u64] = <Self as DimTuple>::IDS;
            const NAMES: &'static [&'static str] = <Self as DimTuple>::NAMES;
        }
    )*};
}

tuple_dims! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
    (A, B, C, D, E, F, G, H, J)
    (A, B, C, D, E, F, G, H, J, K)
    (A, B, C, D, E, F, G, H, J, K, L)
    (A, B, C, D, E, F, G, H, J, K, L, M)
}

/// Declares dimension types.
///
/// Each name becomes a public-or-not unit struct (`Copy`, `Default`, `Debug`, `Eq`,
/// `Ord`, `Hash`) implementing [`Dim`]. Doc comments, attributes and visibility are kept.
///
/// ```
/// namedtensor::dims! {
///     /// Images in a batch.
///     pub Batch,
///     pub(crate) Rows,
///     Cols = 0xc015,
/// }
/// use namedtensor::Dim;
/// assert_eq!((Batch::NAME, Cols::ID), ("Batch", 0xc015));
/// ```
///
/// The id of a name without `= id` is a hash of its package, version, crate, file
/// (relative to the package root), line, column and name: the same on every machine,
/// and different for the same name declared in two places, so `a::Rows` and `b::Rows`
/// are two dimensions. Two different types that end up with the same id are rejected
/// wherever they meet (see [`DimEq`]). A macro that expands `dims!` for several modules
/// from one place should give explicit ids.
///
/// Bad input is an error at the offending token: a name given twice, something that is
/// not an identifier, an id that is not an unsigned 64-bit integer literal.
///
/// ```compile_fail
/// namedtensor::dims! { Rows, Rows }
/// ```
#[macro_export]
macro_rules! dims {
    ($($decls:tt)*) => {
        $crate::named::__dims! { $crate ; $($decls)* }
    };
}
