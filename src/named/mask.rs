//! Private dimensions: [`MaskTo`] hides a tensor's leading dims, [`MaskDims`] any of its
//! dims, [`Unmask`] shows them again.
//!
//! A tensor type carries its private dims as a third parameter, `Tensor<E, S, P>`: the
//! full tensor's axes are `P` followed by `S`. Code that receives a masked tensor
//! cannot name a private dimension (every operation rejects it with "dimension `Batch`
//! is masked"), while elementwise operations still broadcast over them. Every
//! operation trait takes the private dims as a parameter that defaults to `()`.

use super::assert::{DimInShape, NotMasked};
use super::axes::{Axes, Ids, permutation};
use super::dim::{Dim, Dims};
use super::list::{
    Concat, FirstIn, FirstNotIn, HCons, HNil, Joined, ListOf, Masked, Missing, SplitAfter,
};
use super::reduce::ReduceOverArg;
use super::shape::DimTuple;
use super::shape::{Shape, ToTuple, Tuple};

/// Hides `D` and every dimension left of it (Harvard NamedTensor's `mask_to`). Masking
/// an already masked tensor hides more.
///
/// ```
/// use namedtensor::named::{names, MaskTo};
/// namedtensor::dims! { Batch, Seq, Hidden }
/// type M = <(Batch, Seq, Hidden) as MaskTo<Batch>>::Out;
/// assert_eq!(names::<M>(), ["Seq", "Hidden"]);
/// assert_eq!(names::<<(Batch, Seq, Hidden) as MaskTo<Batch>>::Private>(), ["Batch"]);
/// ```
pub trait MaskTo<D, P = ()>: Shape {
    /// The dims left visible.
    type Out: Shape;
    /// All private dims afterwards: `P`, then the newly hidden ones.
    type Private: Shape;
}

impl<S, D, P> MaskTo<D, P> for S
where
    S: Shape,
    D: MaskToArg<S, P>,
{
    type Out = <D as MaskToArg<S, P>>::Out;
    type Private = <D as MaskToArg<S, P>>::Private;
}

/// [`MaskTo`]'s checks and results, implemented for the dimension `D`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait MaskToArg<S, P> {
    type Out: Shape;
    type Private: Shape;
}

impl<S, D, P> MaskToArg<S, P> for D
where
    S: Shape,
    P: Shape,
    D: Dim,
    HCons<D, HNil>: FirstNotIn<Joined<ListOf<S>, ListOf<P>>> + FirstIn<ListOf<P>>,
    Missing<HCons<D, HNil>, S, P>: DimInShape<S>,
    Masked<HCons<D, HNil>, P>: NotMasked<P>,
    ListOf<S>: SplitAfter<D>,
    <ListOf<S> as SplitAfter<D>>::Rest: ToTuple,
    Tuple<<ListOf<S> as SplitAfter<D>>::Rest>: Shape,
    ListOf<P>: Concat<<ListOf<S> as SplitAfter<D>>::Prefix>,
    <ListOf<P> as Concat<<ListOf<S> as SplitAfter<D>>::Prefix>>::Out: ToTuple,
    Tuple<<ListOf<P> as Concat<<ListOf<S> as SplitAfter<D>>::Prefix>>::Out>: Shape,
{
    type Out = Tuple<<ListOf<S> as SplitAfter<D>>::Rest>;
    type Private = Tuple<<ListOf<P> as Concat<<ListOf<S> as SplitAfter<D>>::Prefix>>::Out>;
}

/// Hides the dims `R` (one dim or a tuple of them, anywhere in the shape): they become
/// private dims, after those already private, in `R`'s order. The tensor is permuted to
/// keep the invariant that private dims come first, so [`Unmask`] afterwards puts them in
/// front.
///
/// ```
/// use namedtensor::named::{names, MaskDims};
/// namedtensor::dims! { Batch, Heads, Seq, HeadDim }
/// type Q = (Batch, Seq, Heads, HeadDim);
/// assert_eq!(names::<<Q as MaskDims<Heads>>::Out>(), ["Batch", "Seq", "HeadDim"]);
/// assert_eq!(names::<<Q as MaskDims<(Heads, Batch)>>::Private>(), ["Heads", "Batch"]);
/// assert_eq!(<Q as MaskDims<(Heads, Batch)>>::PERM, [2, 0, 1, 3]);
/// // With `Batch` already private, its axis stays first.
/// assert_eq!(<(Seq, Heads) as MaskDims<Heads, (Batch,)>>::PERM, [0, 2, 1]);
/// ```
pub trait MaskDims<R, P = ()>: Shape {
    /// The dims left visible, in their order.
    type Out: Shape;
    /// All private dims afterwards: `P`, then `R`.
    type Private: Shape;
    /// The permutation of the full tensor's axes into `Private` then `Out`.
    const PERM: Axes;
}

impl<S, R, P> MaskDims<R, P> for S
where
    S: Shape,
    R: MaskDimsArg<S, P>,
{
    type Out = <R as MaskDimsArg<S, P>>::Out;
    type Private = <R as MaskDimsArg<S, P>>::Private;
    const PERM: Axes = <R as MaskDimsArg<S, P>>::PERM;
}

/// [`MaskDims`]'s checks and results, implemented for the hidden dims `R`, the type a call
/// infers last (see "Compile time" in the [module docs](crate::named)). The checks are
/// reduction's: each dim of `R` is a visible dim of the tensor.
#[doc(hidden)]
pub trait MaskDimsArg<S, P> {
    type Out: Shape;
    type Private: Shape;
    const PERM: Axes;
}

impl<S, R, P> MaskDimsArg<S, P> for R
where
    S: Shape,
    P: Shape,
    R: Dims + ReduceOverArg<S, P>,
    ListOf<P>: Concat<R::List>,
    <ListOf<P> as Concat<R::List>>::Out: ToTuple,
    Tuple<<ListOf<P> as Concat<R::List>>::Out>: Shape,
{
    type Out = <R as ReduceOverArg<S, P>>::Out;
    type Private = Tuple<<ListOf<P> as Concat<R::List>>::Out>;
    const PERM: Axes = permutation(
        Ids::concat(P::IDS, S::IDS).as_slice(),
        Ids::concat(
            Ids::concat(P::IDS, R::IDS).as_slice(),
            <<R as ReduceOverArg<S, P>>::Out as DimTuple>::IDS,
        )
        .as_slice(),
    );
}

/// Makes the private dims `P` visible again, in front of `Self`.
///
/// ```
/// use namedtensor::named::{names, Unmask};
/// namedtensor::dims! { Batch, Seq, Hidden }
/// assert_eq!(names::<<(Hidden,) as Unmask<(Batch, Seq)>>::Out>(), ["Batch", "Seq", "Hidden"]);
/// ```
pub trait Unmask<P>: Shape {
    /// `P` followed by `Self`.
    type Out: Shape;
}

impl<S, P> Unmask<P> for S
where
    S: Shape,
    P: Shape,
    ListOf<P>: Concat<ListOf<S>>,
    <ListOf<P> as Concat<ListOf<S>>>::Out: ToTuple,
    Tuple<<ListOf<P> as Concat<ListOf<S>>>::Out>: Shape,
{
    type Out = Tuple<<ListOf<P> as Concat<ListOf<S>>>::Out>;
}
