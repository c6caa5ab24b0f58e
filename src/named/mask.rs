//! Private dimensions: [`MaskTo`] hides a tensor's leading dims, [`Unmask`] shows them
//! again.
//!
//! A tensor type carries its private dims as a third parameter, `Tensor<E, S, P>`: the
//! full tensor's axes are `P` followed by `S`. Code that receives a masked tensor
//! cannot name a private dimension (every operation rejects it with "dimension `Batch`
//! is masked"), while elementwise operations still broadcast over them. Every
//! operation trait takes the private dims as a parameter that defaults to `()`.

use super::assert::{DimInShape, NotMasked};
use super::dim::Dim;
use super::list::{
    Concat, FirstIn, FirstNotIn, HCons, HNil, Joined, ListOf, Masked, Missing, SplitAfter,
};
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
