//! Reordering by name: [`AlignTo`] (subset, inserting size-1 dims: `align_to`,
//! `align_as`) and [`PermuteTo`] (exact permutation: `permute`).

use super::assert::{AlignTarget, NotMasked, PermuteComplete, PermuteKnown};
use super::axes::{Alignment, Axes, Ids, alignment, permutation};
use super::list::{AfterPass, FirstIn, FirstNotIn, Joined, ListOf, Masked, Then};
use super::shape::Shape;

/// A tensor with dims `Self` (and private dims `P`) can be aligned to the dims `T`:
/// every dimension of `Self` is in `T`. Dimensions of `T` the tensor lacks are inserted
/// with size 1 (and broadcast); the result is a view.
///
/// `align_as(&other)` is `align_to` with the other tensor's dims as `T`.
///
/// ```
/// use namedtensor::named::AlignTo;
/// namedtensor::dims! { Batch, Channels, Rows, Cols }
/// let plan = <(Channels,) as AlignTo<(Batch, Channels, Rows, Cols)>>::PLAN;
/// assert_eq!(plan.perm, [0]);
/// assert_eq!(plan.insert, [0, 2, 3]); // (1, Channels, 1, 1)
/// ```
pub trait AlignTo<T, P = ()>: Shape {
    /// How to turn the tensor's axes into `P ++ T`'s.
    const PLAN: Alignment;
}

impl<S, T, P> AlignTo<T, P> for S
where
    S: Shape,
    T: AlignToTarget<S, P>,
{
    const PLAN: Alignment = <T as AlignToTarget<S, P>>::PLAN;
}

/// [`AlignTo`]'s checks and results, implemented for the target dims, the type
/// a call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait AlignToTarget<S, P>: Shape {
    const PLAN: Alignment;
}

impl<S, T, P> AlignToTarget<S, P> for T
where
    S: Shape,
    T: Shape,
    P: Shape,
    ListOf<T>: FirstIn<ListOf<P>>,
    Masked<ListOf<T>, P>: NotMasked<P>,
    ListOf<S>: FirstNotIn<ListOf<T>>,
    <ListOf<S> as FirstNotIn<ListOf<T>>>::Out: AlignTarget<S, T>,
{
    const PLAN: Alignment = alignment(
        Ids::concat(P::IDS, S::IDS).as_slice(),
        Ids::concat(P::IDS, T::IDS).as_slice(),
    );
}

/// `T` is a permutation of the dims `Self` (private dims `P` stay in front).
///
/// [`PERM`](PermuteTo::PERM) is the positional permutation of the full tensor, so a
/// runtime wrapper is `self.raw.permute(&<S as PermuteTo<T, P>>::PERM)`.
///
/// ```
/// use namedtensor::named::PermuteTo;
/// namedtensor::dims! { Batch, Height, Width, Channels }
/// type Nhwc = (Batch, Height, Width, Channels);
/// assert_eq!(<Nhwc as PermuteTo<(Batch, Channels, Height, Width)>>::PERM, [0, 3, 1, 2]);
/// // Masked `Batch` stays axis 0.
/// assert_eq!(<(Height, Width) as PermuteTo<(Width, Height), (Batch,)>>::PERM, [0, 2, 1]);
/// ```
pub trait PermuteTo<T, P = ()>: Shape {
    /// For each axis of the result, the axis of the tensor it comes from.
    const PERM: Axes;
}

impl<S, T, P> PermuteTo<T, P> for S
where
    S: Shape,
    T: PermuteToTarget<S, P>,
{
    const PERM: Axes = <T as PermuteToTarget<S, P>>::PERM;
}

/// [`PermuteTo`]'s checks and results, implemented for the target dims `T`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait PermuteToTarget<S, P> {
    const PERM: Axes;
}

impl<S, T, P> PermuteToTarget<S, P> for T
where
    S: Shape,
    T: Shape,
    P: Shape,
    ListOf<T>: FirstIn<ListOf<P>> + FirstNotIn<Joined<ListOf<S>, ListOf<P>>>,
    ListOf<S>: FirstNotIn<ListOf<T>>,
    Masked<ListOf<T>, P>: NotMasked<P>,
    <ListOf<T> as FirstNotIn<Joined<ListOf<S>, ListOf<P>>>>::Out: PermuteKnown<S, T>,
    // A left-out dimension is reported only if every listed one was fine.
    Masked<ListOf<T>, P>: AfterPass<<ListOf<S> as FirstNotIn<ListOf<T>>>::Out>,
    <ListOf<T> as FirstNotIn<Joined<ListOf<S>, ListOf<P>>>>::Out:
        AfterPass<Then<Masked<ListOf<T>, P>, <ListOf<S> as FirstNotIn<ListOf<T>>>::Out>>,
    Then<
        <ListOf<T> as FirstNotIn<Joined<ListOf<S>, ListOf<P>>>>::Out,
        Then<Masked<ListOf<T>, P>, <ListOf<S> as FirstNotIn<ListOf<T>>>::Out>,
    >: PermuteComplete<S, T>,
{
    const PERM: Axes = permutation(
        Ids::concat(P::IDS, S::IDS).as_slice(),
        Ids::concat(P::IDS, T::IDS).as_slice(),
    );
}
