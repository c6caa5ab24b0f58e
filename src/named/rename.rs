//! Renaming a dimension: [`Rename`].

use super::assert::Pass;
use super::assert::{DimInShape, NotAlreadyPresent, NotMasked};
use super::axes::position;
use super::dim::Dim;
use super::list::{
    AfterPass, Contains, FirstIn, FirstNotIn, HCons, HNil, Joined, ListOf, Masked, Missing, Remove,
    Replace, Then,
};
use super::logic::Bool;
use super::shape::{Shape, ToTuple, Tuple};

/// Renames the visible dimension `Old` to `New` in place; `New` must not be another
/// dimension of the tensor. The data is untouched, so a runtime wrapper only changes the
/// type. [`AXIS`](Rename::AXIS) is where `Old` is, for `narrow` with a new name (a
/// narrowed dimension should not broadcast against the original).
///
/// ```
/// use namedtensor::named::{names, Rename};
/// namedtensor::dims! { Batch, Height, Crop }
/// type Out = <(Batch, Height) as Rename<Height, Crop>>::Out;
/// assert_eq!(names::<Out>(), ["Batch", "Crop"]);
/// assert_eq!(<(Batch, Height) as Rename<Height, Crop>>::AXIS, 1);
/// ```
pub trait Rename<Old, New, P = ()>: Shape {
    /// The dims with `New` in place of `Old`.
    type Out: Shape;
    /// Position of `Old` in the full tensor.
    const AXIS: isize;
}

/// [`B1`](super::logic::B1) if `New` is among the dims other than `Old`.
type Clash<S, Old, New> = <<ListOf<S> as Remove<Old>>::Out as Contains<New>>::Out;

impl<S, Old, New, P> Rename<Old, New, P> for S
where
    S: Shape,
    New: RenameArg<S, Old, P>,
{
    type Out = <New as RenameArg<S, Old, P>>::Out;
    const AXIS: isize = <New as RenameArg<S, Old, P>>::AXIS;
}

/// [`Rename`]'s checks and results, implemented for the new name `New`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait RenameArg<S, Old, P> {
    type Out: Shape;
    const AXIS: isize;
}

impl<S, Old, New, P> RenameArg<S, Old, P> for New
where
    S: Shape,
    P: Shape,
    Old: Dim,
    New: Dim,
    HCons<Old, HNil>: FirstNotIn<Joined<ListOf<S>, ListOf<P>>>,
    HCons<Old, HCons<New, HNil>>: FirstIn<ListOf<P>>,
    Missing<HCons<Old, HNil>, S, P>: DimInShape<S>,
    Masked<HCons<Old, HCons<New, HNil>>, P>: NotMasked<P>,
    ListOf<S>: Remove<Old> + Replace<Old, New>,
    <ListOf<S> as Remove<Old>>::Out: Contains<New>,
    Missing<HCons<Old, HNil>, S, P>: AfterPass<<Clash<S, Old, New> as Bool>::If<New, Pass>>,
    Then<Missing<HCons<Old, HNil>, S, P>, <Clash<S, Old, New> as Bool>::If<New, Pass>>:
        NotAlreadyPresent<S>,
    <Clash<S, Old, New> as Bool>::If<ListOf<S>, <ListOf<S> as Replace<Old, New>>::Out>: ToTuple,
    Tuple<<Clash<S, Old, New> as Bool>::If<ListOf<S>, <ListOf<S> as Replace<Old, New>>::Out>>:
        Shape,
{
    type Out =
        Tuple<<Clash<S, Old, New> as Bool>::If<ListOf<S>, <ListOf<S> as Replace<Old, New>>::Out>>;
    const AXIS: isize = P::RANK as isize + position(S::IDS, Old::ID);
}
