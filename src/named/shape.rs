//! Shapes: tuples of distinct dimension types, `(Batch, Rows, Cols)`, of rank 0 to
//! [`MAX_RANK`].

use super::assert::NoDuplicate;
use super::dim::Dim;
use super::list::{FindDup, HCons, HNil};

/// The largest rank a shape may have.
///
/// ```
/// assert_eq!(namedtensor::named::MAX_RANK, 12);
/// ```
pub const MAX_RANK: usize = 12;

/// A tuple of at most [`MAX_RANK`] distinct dimension types: the dims of a tensor.
///
/// Distinctness is part of the trait, so a type with a repeated dimension is rejected
/// wherever it is written. The associated constants describe the shape at run time.
///
/// ```
/// use namedtensor::named::Shape;
/// namedtensor::dims! { Batch, Rows, Cols }
/// type Image = (Batch, Rows, Cols);
/// assert_eq!(Image::RANK, 3);
/// assert_eq!(Image::NAMES, ["Batch", "Rows", "Cols"]);
/// assert_eq!(Image::IDS[1], <Rows as namedtensor::Dim>::ID);
/// ```
///
/// ```compile_fail
/// # use namedtensor::named::Shape;
/// # namedtensor::dims! { Batch, Rows }
/// let _ = <(Rows, Batch, Rows) as Shape>::RANK; // `Rows` appears twice
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor shape",
    label = "not a tuple of distinct `dims!` types",
    note = "a shape is a tuple of at most 12 distinct dimension types declared with `dims!`, e.g. `(Batch, Rows, Cols)`"
)]
pub trait Shape: AsList + 'static {
    /// Number of dimensions.
    const RANK: usize;
    /// The dimensions' names, in order.
    const NAMES: &'static [&'static str];
    /// The dimensions' ids, in order.
    const IDS: &'static [u64];
}

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
        impl<$($T: Dim),*> Shape for ($($T,)*)
        where
            list_of!($($T),*): FindDup,
            <list_of!($($T),*) as FindDup>::Out: NoDuplicate<Self>,
        {
            const RANK: usize = Self::NAMES.len();
            const NAMES: &'static [&'static str] = &[$($T::NAME),*];
            const IDS: &'static [u64] = &[$($T::ID),*];
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
