//! Changing which dimensions a tensor has: [`ReplaceDim`] (`split`, `index_select`),
//! [`MergeDims`] (`merge`) and [`Stack`] (`stack`).

use super::assert::{DimInShape, MergeAdjacent, NotAlreadyPresent, NotMasked, Pass};
use super::axes::position;
use super::dim::{Dim, Dims};
use super::list::{
    AfterPass, Contains, Diff, FindDup, FirstIn, FirstNotIn, HCons, HNil, IsPass, Joined, ListOf,
    Masked, Missing, Remove, ReplaceRun, Splice, Then,
};
use super::logic::{B1, Bool};
use super::shape::{Shape, ToTuple, Tuple};

/// Replaces the visible dimension `D` in place by the dims `With`.
///
/// - `split::<D, (A, B)>(sizes)`: one dimension becomes several; a runtime wrapper
///   views axis [`AXIS`](ReplaceDim::AXIS) as the given sizes.
/// - `index_select(D, &index)`: the index tensor's dims take `D`'s place; a runtime
///   wrapper selects along `AXIS` with the flattened index and views the result's axis
///   `AXIS` as the index's shape ([`COUNT`](ReplaceDim::COUNT) axes).
///
/// `With`'s dims must not already be among the tensor's other dims.
///
/// ```
/// use namedtensor::named::{names, ReplaceDim};
/// namedtensor::dims! { Height, Width, Chan, Rows, Q, Lookups }
/// type Img = (Height, Width, Chan);
/// assert_eq!(names::<<Img as ReplaceDim<Height, (Rows, Q)>>::Out>(), ["Rows", "Q", "Width", "Chan"]);
/// assert_eq!(<Img as ReplaceDim<Width, (Lookups,)>>::AXIS, 1);
/// assert_eq!(<Img as ReplaceDim<Height, (Rows, Q)>>::COUNT, 2);
/// ```
pub trait ReplaceDim<D, With, P = ()>: Shape {
    /// The dims with `With` in place of `D`.
    type Out: Shape;
    /// Position of `D` in the full tensor (and of `With`'s first dim in the result).
    const AXIS: isize;
    /// Number of dims in `With`.
    const COUNT: usize;
}

/// The first of `With`'s dims among `S`'s dims other than `D`, or [`Pass`].
type SpliceClash<S, D, With> = <ListOf<With> as FirstIn<<ListOf<S> as Remove<D>>::Out>>::Out;
/// The dims with `With` in place of `D`, or `S`'s own if `With` clashes with them or
/// repeats a dim (so that only the assertion reports it).
type Spliced<S, D, With> = <<<SpliceClash<S, D, With> as IsPass>::Out as Bool>::And<
    <<ListOf<With> as FindDup>::Out as IsPass>::Out,
> as Bool>::If<<ListOf<S> as Splice<D, ListOf<With>>>::Out, ListOf<S>>;

impl<S, D, With, P> ReplaceDim<D, With, P> for S
where
    S: Shape,
    With: ReplaceDimArg<S, D, P>,
{
    type Out = <With as ReplaceDimArg<S, D, P>>::Out;
    const AXIS: isize = <With as ReplaceDimArg<S, D, P>>::AXIS;
    const COUNT: usize = <With as ReplaceDimArg<S, D, P>>::COUNT;
}

/// [`ReplaceDim`]'s checks and results, implemented for the new dims `With`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait ReplaceDimArg<S, D, P> {
    type Out: Shape;
    const AXIS: isize;
    const COUNT: usize;
}

impl<S, D, With, P> ReplaceDimArg<S, D, P> for With
where
    S: Shape,
    P: Shape,
    D: Dim,
    With: Shape,
    HCons<D, HNil>: FirstNotIn<Joined<ListOf<S>, ListOf<P>>>,
    HCons<D, ListOf<With>>: FirstIn<ListOf<P>>,
    Missing<HCons<D, HNil>, S, P>: DimInShape<S>,
    Masked<HCons<D, ListOf<With>>, P>: NotMasked<P>,
    ListOf<S>: Remove<D> + Splice<D, ListOf<With>>,
    ListOf<With>: FirstIn<<ListOf<S> as Remove<D>>::Out> + FindDup,
    SpliceClash<S, D, With>: IsPass,
    <ListOf<With> as FindDup>::Out: IsPass,
    Missing<HCons<D, HNil>, S, P>: AfterPass<SpliceClash<S, D, With>>,
    Then<Missing<HCons<D, HNil>, S, P>, SpliceClash<S, D, With>>: NotAlreadyPresent<S>,
    Spliced<S, D, With>: ToTuple,
    Tuple<Spliced<S, D, With>>: Shape,
{
    type Out = Tuple<Spliced<S, D, With>>;
    const AXIS: isize = P::RANK as isize + position(S::IDS, D::ID);
    const COUNT: usize = With::RANK;
}

/// Merges the dims `Src`, adjacent and in this order, into the single dimension `New`
/// (Harvard NamedTensor's `stack(bh=("b", "h"))`, PyTorch's `flatten(dims, name)`).
///
/// A runtime wrapper is `self.raw.flatten(START, END)` (a view when the strides allow,
/// a copy otherwise).
///
/// ```
/// use namedtensor::named::{names, MergeDims};
/// namedtensor::dims! { Batch, Height, Width, Chan, Pixels }
/// type Img = (Batch, Height, Width, Chan);
/// type M = <Img as MergeDims<(Height, Width), Pixels>>::Out;
/// assert_eq!(names::<M>(), ["Batch", "Pixels", "Chan"]);
/// assert_eq!(<Img as MergeDims<(Height, Width), Pixels>>::START, 1);
/// assert_eq!(<Img as MergeDims<(Height, Width), Pixels>>::END, 2);
/// ```
pub trait MergeDims<Src, New, P = ()>: Shape {
    /// The dims with `New` in place of `Src`.
    type Out: Shape;
    /// Position of `Src`'s first dim in the full tensor.
    const START: isize;
    /// Position of `Src`'s last dim in the full tensor (inclusive).
    const END: isize;
}

/// [`B1`] if the run `Src` occurs in `S`.
type RunFound<S, Src, New> = <ListOf<S> as ReplaceRun<<Src as Dims>::List, New>>::Found;
/// [`B1`] if every dim of `Src` is a visible dim of `S` (so adjacency is worth checking).
type AllVisible<S, Src, P> = <<Missing<<Src as Dims>::List, S, P> as IsPass>::Out as Bool>::And<
    <Masked<<Src as Dims>::List, P> as IsPass>::Out,
>;
/// `New` if it is among the dims not merged, else [`Pass`].
type MergeClash<S, Src, New> =
    <<<ListOf<S> as Diff<<Src as Dims>::List>>::Out as Contains<New>>::Out as Bool>::If<New, Pass>;
/// The dims after merging, or `S`'s own if the merge is rejected (so that only the
/// assertion reports it).
type Merged<S, Src, New> = <<RunFound<S, Src, New> as Bool>::And<
    <MergeClash<S, Src, New> as IsPass>::Out,
> as Bool>::If<<ListOf<S> as ReplaceRun<<Src as Dims>::List, New>>::Out, ListOf<S>>;

impl<S, Src, New, P> MergeDims<Src, New, P> for S
where
    S: Shape,
    New: MergeDimsArg<S, Src, P>,
{
    type Out = <New as MergeDimsArg<S, Src, P>>::Out;
    const START: isize = <New as MergeDimsArg<S, Src, P>>::START;
    const END: isize = <New as MergeDimsArg<S, Src, P>>::END;
}

/// [`MergeDims`]'s checks and results, implemented for the new dimension `New`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait MergeDimsArg<S, Src, P> {
    type Out: Shape;
    const START: isize;
    const END: isize;
}

impl<S, Src, New, P> MergeDimsArg<S, Src, P> for New
where
    S: Shape,
    P: Shape,
    Src: Dims,
    New: Dim,
    Src::List: FirstNotIn<Joined<ListOf<S>, ListOf<P>>>,
    HCons<New, Src::List>: FirstIn<ListOf<P>>,
    Src::List: FirstIn<ListOf<P>>,
    Missing<Src::List, S, P>: DimInShape<S> + IsPass,
    Masked<HCons<New, Src::List>, P>: NotMasked<P>,
    Masked<Src::List, P>: IsPass,
    ListOf<S>: ReplaceRun<Src::List, New> + Diff<Src::List>,
    <ListOf<S> as Diff<Src::List>>::Out: Contains<New>,
    <AllVisible<S, Src, P> as Bool>::If<RunFound<S, Src, New>, B1>: MergeAdjacent<Src, S>,
    <RunFound<S, Src, New> as Bool>::If<MergeClash<S, Src, New>, Pass>: NotAlreadyPresent<S>,
    MergeClash<S, Src, New>: IsPass,
    Merged<S, Src, New>: ToTuple,
    Tuple<Merged<S, Src, New>>: Shape,
{
    type Out = Tuple<Merged<S, Src, New>>;
    const START: isize = P::RANK as isize + position(S::IDS, Src::IDS[0]);
    const END: isize = <New as MergeDimsArg<S, Src, P>>::START + Src::IDS.len() as isize - 1;
}

/// Stacks tensors with dims `Self` along a new leading dimension `New` (after the
/// private dims). A runtime wrapper is `DynTensor::stack(&parts, AXIS)`.
///
/// ```
/// use namedtensor::named::{names, Stack};
/// namedtensor::dims! { Rows, Cols, Frames }
/// assert_eq!(names::<<(Rows, Cols) as Stack<Frames>>::Out>(), ["Frames", "Rows", "Cols"]);
/// assert_eq!(<(Rows, Cols) as Stack<Frames>>::AXIS, 0);
/// ```
pub trait Stack<New, P = ()>: Shape {
    /// `New` followed by `Self`.
    type Out: Shape;
    /// Position of `New` in the full result.
    const AXIS: isize;
}

impl<S, New, P> Stack<New, P> for S
where
    S: Shape,
    New: StackArg<S, P>,
{
    type Out = <New as StackArg<S, P>>::Out;
    const AXIS: isize = <New as StackArg<S, P>>::AXIS;
}

/// [`Stack`]'s checks and results, implemented for the new dimension `New`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait StackArg<S, P> {
    type Out: Shape;
    const AXIS: isize;
}

impl<S, New, P> StackArg<S, P> for New
where
    S: Shape,
    P: Shape,
    New: Dim,
    HCons<New, HNil>: FirstIn<ListOf<P>> + FirstIn<ListOf<S>>,
    Masked<HCons<New, HNil>, P>: NotMasked<P>,
    <HCons<New, HNil> as FirstIn<ListOf<S>>>::Out: NotAlreadyPresent<S>,
    ListOf<S>: Contains<New>,
    <<ListOf<S> as Contains<New>>::Out as Bool>::If<ListOf<S>, HCons<New, ListOf<S>>>: ToTuple,
    Tuple<<<ListOf<S> as Contains<New>>::Out as Bool>::If<ListOf<S>, HCons<New, ListOf<S>>>>: Shape,
{
    type Out =
        Tuple<<<ListOf<S> as Contains<New>>::Out as Bool>::If<ListOf<S>, HCons<New, ListOf<S>>>>;
    const AXIS: isize = P::RANK as isize;
}
