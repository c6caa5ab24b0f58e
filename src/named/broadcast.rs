//! Elementwise binary operations: which dims the result has and how each operand is
//! aligned to it. Three rules: by name ([`Broadcast`], the default for `+ - * /`),
//! strict ([`SameDims`]) and PyTorch's positional rule ([`BroadcastPositional`]).
//!
//! Private dims: the operands must have the same private dims, or one of them none (it
//! is then broadcast over the other's private dims). A visible dimension of one operand
//! may not be a private dimension of the other.

use super::align::AlignTo;
use super::assert::{NoMaskedLeak, Pass, PositionalMatch, PrivateDimsAgree, SameDimSet};
use super::axes::{Alignment, Ids, alignment};
use super::list::{
    AfterPass, FirstIn, FirstNotIn, HCons, HNil, IsEmpty, ListOf, ReverseOnto, Reversed, SameList,
    Then, Union, ZipFromRight,
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
    ListOf<S1>: ByNameDims<ListOf<S2>>,
    <ListOf<S1> as ByNameDims<ListOf<S2>>>::Out: ToTuple + FirstIn<ListOf<JoinedPrivate<P1, P2>>>,
    Tuple<<ListOf<S1> as ByNameDims<ListOf<S2>>>::Out>: Shape,
    Leak<<ListOf<S1> as ByNameDims<ListOf<S2>>>::Out, P1, P2>: NoMaskedLeak<JoinedPrivate<P1, P2>>,
{
    type Out = Tuple<<ListOf<S1> as ByNameDims<ListOf<S2>>>::Out>;
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

/// The message generic code sees when it calls elementwise arithmetic without its bound.
/// The algebra is total on concrete lists, so these traits, implemented for both list
/// constructors, are unmet only for the list of a generic shape, the left operand's (by
/// name) or the right's (strict): there the error names the bound to add, not the list
/// algebra (see `list_trait!` in [`list`](super::list) for the other operations).
macro_rules! elementwise_operand {
    ($(#[$attr:meta])* pub trait $name:ident<L> { $($body:tt)* }) => {
        $(#[$attr])*
        #[doc(hidden)]
        #[diagnostic::on_unimplemented(
            message = "elementwise math between tensors of generic dims needs a bound: `X: Elementwise` where both tensors have the dims `X`",
            label = "the dims of a generic shape are not known here",
            note = "`X: Elementwise` allows `+ - * /`, their strict forms (`add_strict`, …), comparisons and `where_` between two `Tensor<E, X>` and keeps the dims `X`; operands with other dims need `S: Broadcast<S2>` (by name) or `S: SameDims<S2>` (strict): see \"Generic code\" in the docs of `namedtensor::named`",
            note = "the bound rustc suggests below is the library's internal list algebra: state `Elementwise` (or `Broadcast`, `SameDims`) instead"
        )]
        pub trait $name<L> { $($body)* }
    };
}

elementwise_operand! {
    /// The by-name result list, `Self` then what `L` adds ([`Union`]), dispatched on
    /// `Self`'s constructor.
    pub trait ByNameDims<L> {
        type Out;
    }
}

impl<L> ByNameDims<L> for HNil
where
    HNil: Union<L>,
{
    type Out = <HNil as Union<L>>::Out;
}

impl<H, T, L> ByNameDims<L> for HCons<H, T>
where
    HCons<H, T>: Union<L>,
{
    type Out = <HCons<H, T> as Union<L>>::Out;
}

elementwise_operand! {
    /// The first dim of `Self` missing from `L` and the first of `L` missing from `Self`
    /// (each [`Pass`] if none), dispatched on `Self`'s constructor.
    pub trait StrictDims<L> {
        type Missing;
        type Extra;
    }
}

impl<L> StrictDims<L> for HNil
where
    HNil: FirstNotIn<L>,
    L: FirstNotIn<HNil>,
{
    type Missing = <HNil as FirstNotIn<L>>::Out;
    type Extra = <L as FirstNotIn<HNil>>::Out;
}

impl<H, T, L> StrictDims<L> for HCons<H, T>
where
    HCons<H, T>: FirstNotIn<L>,
    L: FirstNotIn<HCons<H, T>>,
{
    type Missing = <HCons<H, T> as FirstNotIn<L>>::Out;
    type Extra = <L as FirstNotIn<HCons<H, T>>>::Out;
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
    ListOf<S2>: StrictDims<ListOf<S1>>,
    <ListOf<S2> as StrictDims<ListOf<S1>>>::Missing:
        SameDimSet<S1, S2> + AfterPass<<ListOf<S2> as StrictDims<ListOf<S1>>>::Extra>,
    Then<
        <ListOf<S2> as StrictDims<ListOf<S1>>>::Missing,
        <ListOf<S2> as StrictDims<ListOf<S1>>>::Extra,
    >: SameDimSet<S1, S2>,
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

/// Elementwise math between two tensors of the same dims `Self` (and private dims `P`),
/// which keeps those dims: the one bound generic code states for `&a * &b`, `a + &b`,
/// `add_strict`, comparisons and `where_` where both operands are a `Tensor<E, X, P>` with
/// a generic `X`. Every concrete shape has it.
///
/// It stands for [`Broadcast<X, P, P, Out = X, Private = P>`](Broadcast),
/// [`SameDims<X, P, P, Private = P>`](SameDims) and [`AlignTo<X>`](AlignTo) (for a
/// condition of dims `X`): rustc cannot see that a generic `X` broadcast with itself is
/// `X`, so the bound states it once.
///
/// ```
/// use namedtensor::named::{Contract, Dim, Elementwise};
/// use namedtensor::nn::Linear;
/// use namedtensor::Tensor;
/// namedtensor::dims! { Batch, Model, Hidden }
///
/// /// `value(x) * sigmoid(gate(x))`, generic over the input's dims.
/// fn gated<In: Dim, Out: Dim, S, X>(
///     value: &Linear<In, Out>,
///     gate: &Linear<In, Out>,
///     x: &Tensor<f32, S>,
/// ) -> Tensor<f32, X>
/// where
///     S: Contract<In, (Out, In), Out = X, Private = ()>,
///     X: Elementwise,
/// {
///     value.forward(x) * gate.forward(x).sigmoid()
/// }
///
/// let (value, gate) = (Linear::<Model, Hidden>::new(4, 3), Linear::new(4, 3));
/// let x = Tensor::<f32, (Batch, Model)>::ones([2, 4]);
/// let y: Tensor<f32, (Batch, Hidden)> = gated(&value, &gate, &x);
/// assert_eq!(y.shape(), &[2, 3]);
/// ```
pub trait Elementwise<P: Shape = ()>:
    Sized
    + Broadcast<Self, P, P, Out = Self, Private = P>
    + SameDims<Self, P, P, Private = P>
    + AlignTo<Self>
{
}

impl<S, P: Shape> Elementwise<P> for S where
    S: Broadcast<S, P, P, Out = S, Private = P> + SameDims<S, P, P, Private = P> + AlignTo<S>
{
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
