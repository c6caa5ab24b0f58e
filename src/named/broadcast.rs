//! Elementwise binary operations: which dims the result has and how each operand is
//! aligned to it. Three rules: by name ([`Broadcast`], the default for `+ - * /`),
//! strict ([`SameDims`]) and PyTorch's positional rule ([`BroadcastPositional`]).
//!
//! Private dims: the operands must have the same private dims, or one of them none (it
//! is then broadcast over the other's private dims). A visible dimension of one operand
//! may not be a private dimension of the other.

use super::assert::{NoMaskedLeak, Pass, PositionalMatch, PrivateDimsAgree, SameDimSet};
use super::axes::{Alignment, Ids, alignment};
use super::list::{
    AfterPass, FirstIn, FirstNotIn, HNil, IsEmpty, ListOf, ReverseOnto, Reversed, SameList, Then,
    Union, ZipFromRight,
};
use super::logic::Bool;
use super::shape::{Shape, ToTuple, Tuple};

/// The private dims of a binary operation's result: `P1`, or `P2` if `P1` is empty.
pub(crate) type JoinedPrivate<P1, P2> = <<ListOf<P1> as IsEmpty>::Out as Bool>::If<P2, P1>;

/// [`B1`](super::logic::B1) if the private dims `P1` and `P2` can be combined.
pub(crate) type PrivateAgree<P1, P2> = <<<ListOf<P1> as IsEmpty>::Out as Bool>::Or<
    <ListOf<P2> as IsEmpty>::Out,
> as Bool>::Or<<ListOf<P1> as SameList<ListOf<P2>>>::Out>;

/// The first visible dim of the result list `Out` that is private, if the private dims
/// agree at all (otherwise that error is the one to report).
pub(crate) type Leak<Out, P1, P2> =
    <PrivateAgree<P1, P2> as Bool>::If<<Out as FirstIn<ListOf<JoinedPrivate<P1, P2>>>>::Out, Pass>;

/// By-name broadcasting: the result has `Self`'s dims, then those of `S2` that `Self`
/// lacks, in `S2`'s order (Harvard NamedTensor, xarray). Sizes must be equal or 1,
/// checked at run time.
///
/// [`LHS`](Broadcast::LHS) and [`RHS`](Broadcast::RHS) align each operand to the result;
/// after them the positional broadcasting kernel does the rest.
///
/// ```
/// use namedtensor::named::{names, Broadcast};
/// namedtensor::dims! { Height, Width, Chan }
/// type Img = (Height, Width, Chan);
/// type Mask = (Width, Height);
/// assert_eq!(names::<<Img as Broadcast<Mask>>::Out>(), ["Height", "Width", "Chan"]);
/// assert!(<Img as Broadcast<Mask>>::LHS.is_identity());
/// let rhs = <Img as Broadcast<Mask>>::RHS;
/// assert_eq!(rhs.perm, [1, 0]); // (Height, Width)
/// assert_eq!(rhs.insert, [2]); // (Height, Width, 1)
/// ```
///
/// A wrong name makes the rank grow rather than fail (`(Batch, Hidden) + (Batch,
/// Hidden2)` has rank 3); [`SameDims`] is the form that refuses.
pub trait Broadcast<S2, P1 = (), P2 = ()>: Shape {
    /// Visible dims of the result.
    type Out: Shape;
    /// Private dims of the result.
    type Private: Shape;
    /// Aligns the left operand to the result.
    const LHS: Alignment;
    /// Aligns the right operand to the result.
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> Broadcast<S2, P1, P2> for S1
where
    S1: Shape,
    S2: BroadcastRhs<S1, P1, P2>,
{
    type Out = <S2 as BroadcastRhs<S1, P1, P2>>::Out;
    type Private = <S2 as BroadcastRhs<S1, P1, P2>>::Private;
    const LHS: Alignment = <S2 as BroadcastRhs<S1, P1, P2>>::LHS;
    const RHS: Alignment = <S2 as BroadcastRhs<S1, P1, P2>>::RHS;
}

/// [`Broadcast`]'s checks and results, implemented for the right operand, the type
/// a call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait BroadcastRhs<S1, P1, P2>: Shape {
    type Out: Shape;
    type Private: Shape;
    const LHS: Alignment;
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> BroadcastRhs<S1, P1, P2> for S2
where
    S1: Shape,
    S2: Shape,
    P1: Shape,
    P2: Shape,
    ListOf<P1>: IsEmpty + SameList<ListOf<P2>>,
    ListOf<P2>: IsEmpty,
    JoinedPrivate<P1, P2>: Shape,
    PrivateAgree<P1, P2>: PrivateDimsAgree<P1, P2>,
    ListOf<S1>: Union<ListOf<S2>>,
    <ListOf<S1> as Union<ListOf<S2>>>::Out: ToTuple + FirstIn<ListOf<JoinedPrivate<P1, P2>>>,
    Tuple<<ListOf<S1> as Union<ListOf<S2>>>::Out>: Shape,
    Leak<<ListOf<S1> as Union<ListOf<S2>>>::Out, P1, P2>: NoMaskedLeak<JoinedPrivate<P1, P2>>,
{
    type Out = Tuple<<ListOf<S1> as Union<ListOf<S2>>>::Out>;
    type Private = JoinedPrivate<P1, P2>;
    const LHS: Alignment = alignment(
        Ids::concat(P1::IDS, S1::IDS).as_slice(),
        result_ids::<Self::Private, Self::Out>().as_slice(),
    );
    const RHS: Alignment = alignment(
        Ids::concat(P2::IDS, S2::IDS).as_slice(),
        result_ids::<Self::Private, Self::Out>().as_slice(),
    );
}

const fn result_ids<P: Shape, S: Shape>() -> Ids {
    Ids::concat(P::IDS, S::IDS)
}

/// The strict elementwise form: `S2` must have exactly `Self`'s dims, in any order. The
/// result has `Self`'s order; [`RHS`](SameDims::RHS) permutes the right operand.
///
/// ```
/// use namedtensor::named::SameDims;
/// namedtensor::dims! { Rows, Cols }
/// assert_eq!(<(Rows, Cols) as SameDims<(Cols, Rows)>>::RHS.perm, [1, 0]);
/// assert!(<(Rows, Cols) as SameDims<(Rows, Cols)>>::RHS.is_identity());
/// ```
pub trait SameDims<S2, P1 = (), P2 = ()>: Shape {
    /// Private dims of the result.
    type Private: Shape;
    /// Aligns the left operand to the result (only private dims may be inserted).
    const LHS: Alignment;
    /// Aligns the right operand to the result.
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> SameDims<S2, P1, P2> for S1
where
    S1: Shape,
    S2: SameDimsRhs<S1, P1, P2>,
{
    type Private = <S2 as SameDimsRhs<S1, P1, P2>>::Private;
    const LHS: Alignment = <S2 as SameDimsRhs<S1, P1, P2>>::LHS;
    const RHS: Alignment = <S2 as SameDimsRhs<S1, P1, P2>>::RHS;
}

/// [`SameDims`]'s checks and results, implemented for the right operand, the type
/// a call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait SameDimsRhs<S1, P1, P2>: Shape {
    type Private: Shape;
    const LHS: Alignment;
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> SameDimsRhs<S1, P1, P2> for S2
where
    S1: Shape,
    S2: Shape,
    P1: Shape,
    P2: Shape,
    ListOf<P1>: IsEmpty + SameList<ListOf<P2>>,
    ListOf<P2>: IsEmpty,
    JoinedPrivate<P1, P2>: Shape,
    PrivateAgree<P1, P2>: PrivateDimsAgree<P1, P2>,
    ListOf<S2>: FirstNotIn<ListOf<S1>>,
    ListOf<S1>: FirstNotIn<ListOf<S2>>,
    <ListOf<S2> as FirstNotIn<ListOf<S1>>>::Out:
        SameDimSet<S1, S2> + AfterPass<<ListOf<S1> as FirstNotIn<ListOf<S2>>>::Out>,
    Then<<ListOf<S2> as FirstNotIn<ListOf<S1>>>::Out, <ListOf<S1> as FirstNotIn<ListOf<S2>>>::Out>:
        SameDimSet<S1, S2>,
{
    type Private = JoinedPrivate<P1, P2>;
    const LHS: Alignment = alignment(
        Ids::concat(P1::IDS, S1::IDS).as_slice(),
        result_ids::<Self::Private, S1>().as_slice(),
    );
    const RHS: Alignment = alignment(
        Ids::concat(P2::IDS, S2::IDS).as_slice(),
        result_ids::<Self::Private, S1>().as_slice(),
    );
}

/// The zipped, right-aligned dims of `S1` and `S2`, still reversed.
type ZippedFromRight<S1, S2> = <Reversed<ListOf<S1>> as ZipFromRight<Reversed<ListOf<S2>>>>::Out;

/// PyTorch's named-tensor rule: dims are aligned from the right and must have equal
/// names position by position; the longer operand's leading dims are kept.
///
/// ```
/// use namedtensor::named::{names, BroadcastPositional};
/// namedtensor::dims! { Batch, Rows, Cols }
/// type Out = <(Batch, Rows, Cols) as BroadcastPositional<(Rows, Cols)>>::Out;
/// assert_eq!(names::<Out>(), ["Batch", "Rows", "Cols"]);
/// assert_eq!(<(Batch, Rows, Cols) as BroadcastPositional<(Rows, Cols)>>::RHS.insert, [0]);
/// ```
pub trait BroadcastPositional<S2, P1 = (), P2 = ()>: Shape {
    /// Visible dims of the result.
    type Out: Shape;
    /// Private dims of the result.
    type Private: Shape;
    /// Aligns the left operand to the result.
    const LHS: Alignment;
    /// Aligns the right operand to the result.
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> BroadcastPositional<S2, P1, P2> for S1
where
    S1: Shape,
    S2: BroadcastPositionalRhs<S1, P1, P2>,
{
    type Out = <S2 as BroadcastPositionalRhs<S1, P1, P2>>::Out;
    type Private = <S2 as BroadcastPositionalRhs<S1, P1, P2>>::Private;
    const LHS: Alignment = <S2 as BroadcastPositionalRhs<S1, P1, P2>>::LHS;
    const RHS: Alignment = <S2 as BroadcastPositionalRhs<S1, P1, P2>>::RHS;
}

/// [`BroadcastPositional`]'s checks and results, implemented for the right operand, the type
/// a call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait BroadcastPositionalRhs<S1, P1, P2>: Shape {
    type Out: Shape;
    type Private: Shape;
    const LHS: Alignment;
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> BroadcastPositionalRhs<S1, P1, P2> for S2
where
    S1: Shape,
    S2: Shape,
    P1: Shape,
    P2: Shape,
    ListOf<P1>: IsEmpty + SameList<ListOf<P2>>,
    ListOf<P2>: IsEmpty,
    JoinedPrivate<P1, P2>: Shape,
    PrivateAgree<P1, P2>: PrivateDimsAgree<P1, P2>,
    ListOf<S1>: ReverseOnto<HNil>,
    ListOf<S2>: ReverseOnto<HNil>,
    Reversed<ListOf<S1>>: ZipFromRight<Reversed<ListOf<S2>>>,
    <Reversed<ListOf<S1>> as ZipFromRight<Reversed<ListOf<S2>>>>::Mismatch: PositionalMatch<S1, S2>,
    ZippedFromRight<S1, S2>: ReverseOnto<HNil>,
    Reversed<ZippedFromRight<S1, S2>>: ToTuple + FirstIn<ListOf<JoinedPrivate<P1, P2>>>,
    Tuple<Reversed<ZippedFromRight<S1, S2>>>: Shape,
    Leak<Reversed<ZippedFromRight<S1, S2>>, P1, P2>: NoMaskedLeak<JoinedPrivate<P1, P2>>,
{
    type Out = Tuple<Reversed<ZippedFromRight<S1, S2>>>;
    type Private = JoinedPrivate<P1, P2>;
    const LHS: Alignment = alignment(
        Ids::concat(P1::IDS, S1::IDS).as_slice(),
        result_ids::<Self::Private, Self::Out>().as_slice(),
    );
    const RHS: Alignment = alignment(
        Ids::concat(P2::IDS, S2::IDS).as_slice(),
        result_ids::<Self::Private, Self::Out>().as_slice(),
    );
}
