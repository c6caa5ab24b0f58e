//! Naming one dimension ([`HasDim`]), removing one ([`RemoveDim`]) and reducing over one
//! or several ([`ReduceOver`]).

use super::assert::{DimInShape, NotMasked};
use super::axes::{Axes, position, positions_in};
use super::dim::{Dim, Dims};
use super::list::{
    Diff, FirstIn, FirstNotIn, HCons, HNil, Joined, ListOf, Masked, Missing, Remove,
};
use super::shape::{Shape, ToTuple, Tuple};

/// `D` is a visible dimension of a tensor with dims `Self` and private dims `P`.
///
/// For every operation that names one dimension and keeps the shape: `size`,
/// `softmax`, `argmax` with `keepdim`, `narrow` without renaming, `cat`, `cumsum`.
/// A runtime wrapper passes [`AXIS`](HasDim::AXIS) to the positional operation:
/// `self.raw.softmax(<S as HasDim<D, P>>::AXIS)`.
///
/// ```
/// use namedtensor::named::HasDim;
/// namedtensor::dims! { Batch, Rows, Cols }
/// assert_eq!(<(Batch, Rows, Cols) as HasDim<Cols>>::AXIS, 2);
/// // With `Batch` masked, `Cols` is still axis 2 of the full tensor.
/// assert_eq!(<(Rows, Cols) as HasDim<Cols, (Batch,)>>::AXIS, 2);
/// ```
pub trait HasDim<D, P = ()>: Shape {
    /// Position of `D` in the full tensor (private dims first).
    const AXIS: isize;
}

impl<S, D, P> HasDim<D, P> for S
where
    S: Shape,
    D: HasDimArg<S, P>,
{
    const AXIS: isize = <D as HasDimArg<S, P>>::AXIS;
}

/// [`HasDim`]'s checks and results, implemented for the dimension `D`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait HasDimArg<S, P> {
    const AXIS: isize;
}

impl<S, D, P> HasDimArg<S, P> for D
where
    S: Shape,
    P: Shape,
    D: Dim,
    HCons<D, HNil>: FirstNotIn<Joined<ListOf<S>, ListOf<P>>> + FirstIn<ListOf<P>>,
    Missing<HCons<D, HNil>, S, P>: DimInShape<S>,
    Masked<HCons<D, HNil>, P>: NotMasked<P>,
{
    const AXIS: isize = P::RANK as isize + position(S::IDS, D::ID);
}

/// The position of `D` in the shape `S`.
///
/// ```
/// use namedtensor::named::axis_of;
/// namedtensor::dims! { Batch, Rows, Cols }
/// assert_eq!(axis_of::<(Batch, Rows, Cols), Rows>(), 1);
/// ```
pub const fn axis_of<S: HasDim<D>, D>() -> isize {
    S::AXIS
}

/// Removes the visible dimension `D`: `select`/`get` (pick one index), `unbind`,
/// `squeeze`, `argmax` without `keepdim`.
///
/// The result's dims are `Out`; a runtime wrapper calls
/// `self.raw.select(<S as RemoveDim<D, P>>::AXIS, index)`.
///
/// ```
/// use namedtensor::named::{names, RemoveDim};
/// namedtensor::dims! { Batch, Rows, Cols }
/// type S = (Batch, Rows, Cols);
/// assert_eq!(<S as RemoveDim<Batch>>::AXIS, 0);
/// assert_eq!(names::<<S as RemoveDim<Batch>>::Out>(), ["Rows", "Cols"]);
/// ```
pub trait RemoveDim<D, P = ()>: Shape {
    /// The dims without `D`.
    type Out: Shape;
    /// Position of `D` in the full tensor.
    const AXIS: isize;
}

impl<S, D, P> RemoveDim<D, P> for S
where
    S: Shape,
    D: RemoveDimArg<S, P>,
{
    type Out = <D as RemoveDimArg<S, P>>::Out;
    const AXIS: isize = <D as RemoveDimArg<S, P>>::AXIS;
}

/// [`RemoveDim`]'s checks and results, implemented for the dimension `D`, the type a call infers
/// last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait RemoveDimArg<S, P> {
    type Out: Shape;
    const AXIS: isize;
}

impl<S, D, P> RemoveDimArg<S, P> for D
where
    S: Shape,
    P: Shape,
    D: Dim,
    HCons<D, HNil>: FirstNotIn<Joined<ListOf<S>, ListOf<P>>> + FirstIn<ListOf<P>>,
    Missing<HCons<D, HNil>, S, P>: DimInShape<S>,
    Masked<HCons<D, HNil>, P>: NotMasked<P>,
    ListOf<S>: Remove<D>,
    <ListOf<S> as Remove<D>>::Out: ToTuple,
    Tuple<<ListOf<S> as Remove<D>>::Out>: Shape,
{
    type Out = Tuple<<ListOf<S> as Remove<D>>::Out>;
    const AXIS: isize = P::RANK as isize + position(S::IDS, D::ID);
}

/// Reduces over `R`, one dimension or a tuple of them: `sum`, `mean`, `max`, `norm`, …
///
/// `Out` drops the reduced dims; the `keepdim` form keeps the shape `Self` (the reduced
/// dims get size 1 and keep their names). [`AXES`](ReduceOver::AXES) are ascending, so a
/// runtime wrapper is `self.raw.sum_dims(&<S as ReduceOver<R, P>>::AXES, keepdim)`.
///
/// ```
/// use namedtensor::named::{names, ReduceOver};
/// namedtensor::dims! { Batch, Channels, Rows, Cols }
/// type Image = (Batch, Channels, Rows, Cols);
/// assert_eq!(<Image as ReduceOver<Channels>>::AXES, [1]);
/// assert_eq!(<Image as ReduceOver<(Cols, Batch)>>::AXES, [0, 3]);
/// assert_eq!(names::<<Image as ReduceOver<(Cols, Batch)>>::Out>(), ["Channels", "Rows"]);
/// ```
///
/// Generic code states the operation as a bound on the whole shape:
///
/// ```
/// use namedtensor::named::{DimTuple, ReduceOver};
/// namedtensor::dims! { Batch, Seq, Hidden }
/// fn pooled_names<S: ReduceOver<Seq>>() -> &'static [&'static str] {
///     <S as ReduceOver<Seq>>::Out::NAMES
/// }
/// assert_eq!(pooled_names::<(Batch, Seq, Hidden)>(), ["Batch", "Hidden"]);
/// ```
pub trait ReduceOver<R, P = ()>: Shape {
    /// The dims without those of `R`.
    type Out: Shape;
    /// Positions of `R`'s dims in the full tensor, ascending.
    const AXES: Axes;
}

impl<S, R, P> ReduceOver<R, P> for S
where
    S: Shape,
    R: ReduceOverArg<S, P>,
{
    type Out = <R as ReduceOverArg<S, P>>::Out;
    const AXES: Axes = <R as ReduceOverArg<S, P>>::AXES;
}

/// [`ReduceOver`]'s checks and results, implemented for the reduced dims `R`, the type a
/// call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait ReduceOverArg<S, P> {
    type Out: Shape;
    const AXES: Axes;
}

impl<S, R, P> ReduceOverArg<S, P> for R
where
    S: Shape,
    P: Shape,
    R: Dims,
    R::List: FirstNotIn<Joined<ListOf<S>, ListOf<P>>> + FirstIn<ListOf<P>>,
    Missing<R::List, S, P>: DimInShape<S>,
    Masked<R::List, P>: NotMasked<P>,
    ListOf<S>: Diff<R::List>,
    <ListOf<S> as Diff<R::List>>::Out: ToTuple,
    Tuple<<ListOf<S> as Diff<R::List>>::Out>: Shape,
{
    type Out = Tuple<<ListOf<S> as Diff<R::List>>::Out>;
    const AXES: Axes = positions_in(S::IDS, R::IDS, P::RANK);
}
