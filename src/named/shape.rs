//! Shapes: tuples of distinct dimension types, `(Batch, Rows, Cols)`, of rank 0 to
//! [`MAX_RANK`], and [`DimTuple`], the same tuples without the distinctness check.

use super::assert::NoDuplicate;
use super::dim::Dim;
use super::list::{FindDup, HCons, HNil};

/// The largest rank a shape may have.
///
/// ```
/// assert_eq!(namedtensor::named::MAX_RANK, 12);
/// ```
pub const MAX_RANK: usize = 12;

/// A tuple of at most [`MAX_RANK`] dimension types, repeated or not: what the dims of a
/// [`Tensor`](crate::Tensor) type may be written with. It holds for a tuple of generic dims,
/// `(In, Out)`, with no bound, so a struct or function over generic dims can hold and pass
/// tensors without stating anything. Creating a tensor asks for [`Shape`], which adds
/// distinctness. The associated constants describe the dims at run time. (Not to be
/// confused with [`Dims`](super::Dims), the argument of reductions: one dim or a tuple.)
///
/// ```
/// use namedtensor::named::DimTuple;
/// namedtensor::dims! { Batch, Rows, Cols }
/// type Image = (Batch, Rows, Cols);
/// assert_eq!(Image::RANK, 3);
/// assert_eq!(Image::NAMES, ["Batch", "Rows", "Cols"]);
/// assert_eq!(Image::IDS[1], <Rows as namedtensor::Dim>::ID);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tuple of dimensions",
    label = "not a tuple of `dims!` types",
    note = "the dims of a tensor are a tuple of at most 12 dimension types declared with `dims!`, e.g. `(Batch, Rows, Cols)`"
)]
pub trait DimTuple: AsList + 'static {
    /// Number of dimensions.
    const RANK: usize;
    /// The dimensions' names, in order.
    const NAMES: &'static [&'static str];
    /// The dimensions' ids, in order.
    const IDS: &'static [u64];
}

/// A tuple of at most [`MAX_RANK`] distinct dimension types: the dims of a tensor.
///
/// Every way of creating a [`Tensor`](crate::Tensor) (`zeros`, `refine_names`, `load`, …)
/// asks for it, and every named operation's result has it, so a tensor whose dims repeat
/// is rejected where it would be created; methods on an existing tensor ask only for
/// [`DimTuple`]. Generic code that creates a `Tensor<E, (In, Out)>` states
/// `where (In, Out): Shape`, which is checked where `In` and `Out` become concrete.
///
/// ```
/// use namedtensor::named::{DimTuple, Shape};
/// namedtensor::dims! { Batch, Rows }
/// fn rank<S: Shape>() -> usize { S::RANK }
/// assert_eq!(rank::<(Batch, Rows)>(), 2);
/// ```
///
/// ```compile_fail
/// # use namedtensor::named::Shape;
/// # namedtensor::dims! { Batch, Rows }
/// fn check<S: Shape>() {}
/// check::<(Rows, Batch, Rows)>(); // `Rows` appears twice
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor shape",
    label = "not a tuple of distinct `dims!` types",
    note = "a shape is a tuple of at most 12 distinct dimension types declared with `dims!`, e.g. `(Batch, Rows, Cols)`"
)]
pub trait Shape: DimTuple {}

/// The list form of a tuple (see [`ListOf`](super::list::ListOf)), without [`Shape`]'s
/// duplicate check: the algebra needs a shape's list many times per operation, and
/// asking [`Shape`] for it would prove the check again each time.
#[doc(hidden)]
pub trait AsList {
    /// The list.
    type List;
}

/// Converts a list back to the tuple users write; lists longer than [`MAX_RANK`] become
/// [`RankTooLarge`], which is not a [`Shape`].
///
/// ```
/// use namedtensor::named::{list::ListOf, ToTuple};
/// namedtensor::dims! { A, B }
/// let _: core::marker::PhantomData<<ListOf<(A, B)> as ToTuple>::Tuple> = core::marker::PhantomData::<(A, B)>;
/// ```
pub trait ToTuple {
    /// The tuple.
    type Tuple;
}

/// The tuple form of a list: `Tuple<HCons<A, HCons<B, HNil>>>` is `(A, B)`.
///
/// ```
/// use namedtensor::named::{list::ListOf, names, Tuple};
/// namedtensor::dims! { A, B }
/// assert_eq!(names::<Tuple<ListOf<(A, B)>>>(), ["A", "B"]);
/// ```
pub type Tuple<L> = <L as ToTuple>::Tuple;

/// What an operation would produce if its result had more than [`MAX_RANK`] (up to
/// twice as many) dimensions: the first twelve and the rest, each as a tuple. It is not a [`Shape`], so
/// such an operation fails with "`RankTooLarge<(…), (…)>` is not a tensor shape".
///
/// ```compile_fail
/// use namedtensor::named::Broadcast;
/// namedtensor::dims! { A, B, C, D, E, F, G, H, I, J, K, L, M }
/// // 7 + 6 distinct dimensions: rank 13.
/// let _ = <(A, B, C, D, E, F, G) as Broadcast<(H, I, J, K, L, M)>>::LHS;
/// ```
pub struct RankTooLarge<First, Rest>(core::marker::PhantomData<(First, Rest)>);

/// The names of a shape's dimensions.
///
/// ```
/// namedtensor::dims! { Batch, Rows }
/// assert_eq!(namedtensor::named::names::<(Batch, Rows)>(), ["Batch", "Rows"]);
/// ```
pub const fn names<S: Shape>() -> &'static [&'static str] {
    S::NAMES
}

/// The rank of a shape.
///
/// ```
/// namedtensor::dims! { Batch, Rows }
/// assert_eq!(namedtensor::named::rank::<(Batch, Rows)>(), 2);
/// assert_eq!(namedtensor::named::rank::<()>(), 0);
/// ```
pub const fn rank<S: Shape>() -> usize {
    S::RANK
}

/// `HCons<A, HCons<B, … HNil>>` for the given types, optionally ending in another list.
macro_rules! list_of {
    () => { HNil };
    (; $rest:ty) => { $rest };
    ($head:ident $(, $tail:ident)* $(; $rest:ty)?) => { HCons<$head, list_of!($($tail),* $(; $rest)?)> };
}

macro_rules! tuple_shapes {
    ($(($($T:ident),*))*) => {$(
        impl<$($T: Dim),*> DimTuple for ($($T,)*) {
            const RANK: usize = Self::NAMES.len();
            const NAMES: &'static [&'static str] = &[$($T::NAME),*];
            const IDS: &'static [u64] = &[$($T::ID),*];
        }

        impl<$($T: Dim),*> Shape for ($($T,)*)
        where
            list_of!($($T),*): FindDup,
            <list_of!($($T),*) as FindDup>::Out: NoDuplicate<Self>,
        {
        }

        impl<$($T),*> AsList for ($($T,)*) {
            type List = list_of!($($T),*);
        }

        impl<$($T),*> ToTuple for list_of!($($T),*) {
            type Tuple = ($($T,)*);
        }
    )*};
}

tuple_shapes! {
    ()
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

/// Lists of 13 to 24 elements become [`RankTooLarge`]. Each impl has a fixed length and no
/// `where` clause: with an operand type still being inferred, a recursive catch-all would
/// send the trait solver into infinite recursion.
macro_rules! rank_too_large {
    ($(($($R:ident),+))*) => {$(
        impl<A, B, C, D, E, F, G, H, J, K, L, M, $($R),+> ToTuple
            for list_of!(A, B, C, D, E, F, G, H, J, K, L, M; list_of!($($R),+))
        {
            type Tuple = RankTooLarge<(A, B, C, D, E, F, G, H, J, K, L, M), ($($R,)+)>;
        }
    )*};
}

rank_too_large! {
    (N)
    (N, O)
    (N, O, Q)
    (N, O, Q, R)
    (N, O, Q, R, T)
    (N, O, Q, R, T, U)
    (N, O, Q, R, T, U, V)
    (N, O, Q, R, T, U, V, W)
    (N, O, Q, R, T, U, V, W, X)
    (N, O, Q, R, T, U, V, W, X, Y)
    (N, O, Q, R, T, U, V, W, X, Y, Z)
    (N, O, Q, R, T, U, V, W, X, Y, Z, Z2)
}
