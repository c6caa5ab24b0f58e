//! The list algebra behind every named operation.
//!
//! Shapes are written as tuples; inside, they are frunk's [`HCons`]/[`HNil`] lists
//! ([`ListOf`] converts). Every operation here is *total*: it yields a type for every
//! input, and problems are reported as a *witness* type — [`Pass`], or the first
//! dimension that breaks a rule — which an assertion trait from
//! [`assert`](super::assert) then accepts or rejects with a readable message. Equality
//! of dimensions is [`DimEq`] (by type-level id).
//!
//! ```
//! use namedtensor::named::list::{Diff, ListOf, Union};
//! use namedtensor::named::{names, Tuple};
//! namedtensor::dims! { A, B, C, D }
//! type U = Tuple<<ListOf<(A, B)> as Union<ListOf<(C, B, D)>>>::Out>;
//! assert_eq!(names::<U>(), ["A", "B", "C", "D"]);
//! type E = Tuple<<ListOf<(A, B, C)> as Diff<ListOf<(B,)>>>::Out>;
//! assert_eq!(names::<E>(), ["A", "C"]);
//! ```

use super::assert::Pass;
use super::dim::{Dim, DimEq, NoDim};
use super::logic::{B0, B1, Bool};
use super::shape::AsList;

/// Declares a trait of the list algebra, with the error that generic code sees when it calls
/// a named operation without stating that operation's bound. The algebra is total on the
/// lists of concrete shapes (each trait is implemented for every list of dimension types),
/// so one of these traits is unimplemented only for the list of a generic shape, whose
/// elements the compiler cannot know: exactly when the bound is missing.
macro_rules! list_trait {
    ($(#[$attr:meta])* pub trait $name:ident $(<$($param:ident),+>)? { $($body:tt)* }) => {
        $(#[$attr])*
        #[diagnostic::on_unimplemented(
            message = "a named operation on a generic shape needs its bound: add it to the `where` clause, e.g. `S: ReduceOver<D>` for `x.sum::<D>()`",
            label = "the dims of a generic shape are not known here",
            note = "every named operation has a trait to state in generic code, whose `Out` is the result's dims: `HasDim<D>` (size, softmax, narrow, cumsum, cat), `ReduceOver<R>` (sum, mean, var, …), `RemoveDim<D>` (select, unbind, max along a dim), `Contract<K, S2>` (dot), `MatMul<S2>` (matmul), `Elementwise` (arithmetic on two tensors of the same dims), `Broadcast<S2>` (arithmetic by name), `AlignTo<T>`, `PermuteTo<T>`, `Rename<Old, New>`, `ReplaceDim<D, With>` (split), `MergeDims<Src, New>` (merge), `MaskDims<R>`: see \"Generic code\" in the docs of `namedtensor::named`",
            note = "the bound rustc suggests below is the library's internal list algebra: state the operation's trait instead"
        )]
        pub trait $name $(<$($param),+>)? { $($body)* }
    };
}

pub use frunk::hlist::{HCons, HNil};

/// The list form of a shape: `ListOf<(A, B)>` is `HCons<A, HCons<B, HNil>>`.
///
/// ```
/// use namedtensor::named::list::{HCons, HNil, ListOf};
/// namedtensor::dims! { A, B }
/// let _: core::marker::PhantomData<ListOf<(A, B)>> = core::marker::PhantomData::<HCons<A, HCons<B, HNil>>>;
/// ```
pub type ListOf<S> = <S as AsList>::List;

/// Two lists seen as one set, for membership tests: `Joined<S, P>` contains what `S`
/// or `P` contains. Used to look a name up among a tensor's visible and private dims.
///
/// ```
/// use namedtensor::named::list::{Contains, Joined, ListOf};
/// use namedtensor::named::logic::Bool;
/// namedtensor::dims! { A, B }
/// assert!(<<Joined<ListOf<(A,)>, ListOf<(B,)>> as Contains<B>>::Out as Bool>::VALUE);
/// ```
pub struct Joined<L1, L2>(core::marker::PhantomData<(L1, L2)>);

list_trait! {
    /// Is `D` in the list? [`B1`] or [`B0`].
    ///
    /// ```
    /// use namedtensor::named::list::{Contains, ListOf};
    /// use namedtensor::named::logic::Bool;
    /// namedtensor::dims! { A, B, C }
    /// assert!(<<ListOf<(A, B)> as Contains<B>>::Out as Bool>::VALUE);
    /// assert!(!<<ListOf<(A, B)> as Contains<C>>::Out as Bool>::VALUE);
    /// ```
    pub trait Contains<D> {
        /// [`B1`] if `D` is an element.
        type Out: Bool;
    }
}

impl<D> Contains<D> for HNil {
    type Out = B0;
}

impl<H: DimEq<D>, T: Contains<D>, D> Contains<D> for HCons<H, T> {
    type Out = <<H as DimEq<D>>::Out as Bool>::Or<<T as Contains<D>>::Out>;
}

impl<L1: Contains<D>, L2: Contains<D>, D> Contains<D> for Joined<L1, L2> {
    type Out = <<L1 as Contains<D>>::Out as Bool>::Or<<L2 as Contains<D>>::Out>;
}

list_trait! {
    /// The list without (the first occurrence of) `D`; unchanged if `D` is absent.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Remove};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// assert_eq!(names::<Tuple<<ListOf<(A, B, C)> as Remove<B>>::Out>>(), ["A", "C"]);
    /// ```
    pub trait Remove<D> {
        /// The remaining list.
        type Out;
    }
}

impl<D> Remove<D> for HNil {
    type Out = HNil;
}

impl<H: DimEq<D>, T: Remove<D>, D> Remove<D> for HCons<H, T> {
    type Out = <<H as DimEq<D>>::Out as Bool>::If<T, HCons<H, <T as Remove<D>>::Out>>;
}

list_trait! {
    /// The list with `Old` replaced by `New` in place (renaming).
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Replace};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C, Z }
    /// assert_eq!(names::<Tuple<<ListOf<(A, B, C)> as Replace<B, Z>>::Out>>(), ["A", "Z", "C"]);
    /// ```
    pub trait Replace<Old, New> {
        /// The renamed list.
        type Out;
    }
}

impl<Old, New> Replace<Old, New> for HNil {
    type Out = HNil;
}

impl<H: DimEq<Old>, T: Replace<Old, New>, Old, New> Replace<Old, New> for HCons<H, T> {
    type Out = <<H as DimEq<Old>>::Out as Bool>::If<
        HCons<New, T>,
        HCons<H, <T as Replace<Old, New>>::Out>,
    >;
}

list_trait! {
    /// The list with `D` replaced in place by the elements of the list `With` (splitting a
    /// dimension, or `index_select` splicing in the index's dimensions).
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Splice};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C, X, Y }
    /// type Out = <ListOf<(A, B, C)> as Splice<B, ListOf<(X, Y)>>>::Out;
    /// assert_eq!(names::<Tuple<Out>>(), ["A", "X", "Y", "C"]);
    /// ```
    pub trait Splice<D, With> {
        /// The list with `With` in place of `D`.
        type Out;
    }
}

impl<D, With> Splice<D, With> for HNil {
    type Out = HNil;
}

impl<H: DimEq<D>, T: Splice<D, With>, D, With: Concat<T>> Splice<D, With> for HCons<H, T> {
    type Out = <<H as DimEq<D>>::Out as Bool>::If<
        <With as Concat<T>>::Out,
        HCons<H, <T as Splice<D, With>>::Out>,
    >;
}

list_trait! {
    /// `Self` followed by `L`.
    ///
    /// ```
    /// use namedtensor::named::list::{Concat, ListOf};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// assert_eq!(names::<Tuple<<ListOf<(A,)> as Concat<ListOf<(B, C)>>>::Out>>(), ["A", "B", "C"]);
    /// ```
    pub trait Concat<L> {
        /// The concatenation.
        type Out;
    }
}

impl<L> Concat<L> for HNil {
    type Out = L;
}

impl<H, T: Concat<L>, L> Concat<L> for HCons<H, T> {
    type Out = HCons<H, <T as Concat<L>>::Out>;
}

list_trait! {
    /// The elements of `Self` that are not in `L`, in `Self`'s order.
    ///
    /// ```
    /// use namedtensor::named::list::{Diff, ListOf};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// assert_eq!(names::<Tuple<<ListOf<(A, B, C)> as Diff<ListOf<(C, A)>>>::Out>>(), ["B"]);
    /// ```
    pub trait Diff<L> {
        /// `Self \ L`.
        type Out;
    }
}

impl<L> Diff<L> for HNil {
    type Out = HNil;
}

impl<H, T: Diff<L>, L: Contains<H>> Diff<L> for HCons<H, T> {
    type Out =
        <<L as Contains<H>>::Out as Bool>::If<<T as Diff<L>>::Out, HCons<H, <T as Diff<L>>::Out>>;
}

list_trait! {
    /// Splits the list by membership in `L`, keeping the order: `In` has the elements that
    /// are in `L`, `Out` the others.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Partition};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C, D }
    /// type L = ListOf<(A, B, C, D)>;
    /// assert_eq!(names::<Tuple<<L as Partition<ListOf<(D, B)>>>::In>>(), ["B", "D"]);
    /// assert_eq!(names::<Tuple<<L as Partition<ListOf<(D, B)>>>::Out>>(), ["A", "C"]);
    /// ```
    pub trait Partition<L> {
        /// The elements in `L`.
        type In;
        /// The elements not in `L`.
        type Out;
    }
}

impl<L> Partition<L> for HNil {
    type In = HNil;
    type Out = HNil;
}

impl<H, T: Partition<L>, L: Contains<H>> Partition<L> for HCons<H, T> {
    type In = <<L as Contains<H>>::Out as Bool>::If<
        HCons<H, <T as Partition<L>>::In>,
        <T as Partition<L>>::In,
    >;
    type Out = <<L as Contains<H>>::Out as Bool>::If<
        <T as Partition<L>>::Out,
        HCons<H, <T as Partition<L>>::Out>,
    >;
}

list_trait! {
    /// `Self` followed by the elements of `L` it lacks: the by-name broadcasting order.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Union};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// assert_eq!(names::<Tuple<<ListOf<(B, A)> as Union<ListOf<(C, A)>>>::Out>>(), ["B", "A", "C"]);
    /// ```
    pub trait Union<L> {
        /// `Self ++ (L \ Self)`.
        type Out;
    }
}

impl<S, L> Union<L> for S
where
    L: Diff<S>,
    S: Concat<<L as Diff<S>>::Out>,
{
    type Out = <S as Concat<<L as Diff<S>>::Out>>::Out;
}

list_trait! {
    /// The first element of `Self` that is not in `L` (a set, which may be [`Joined`]),
    /// or [`Pass`].
    ///
    /// ```
    /// use namedtensor::named::list::{FirstNotIn, ListOf};
    /// namedtensor::dims! { A, B, C }
    /// let _: core::marker::PhantomData<<ListOf<(A, B, C)> as FirstNotIn<ListOf<(A,)>>>::Out> =
    ///     core::marker::PhantomData::<B>;
    /// ```
    pub trait FirstNotIn<L> {
        /// The witness.
        type Out;
    }
}

impl<L> FirstNotIn<L> for HNil {
    type Out = Pass;
}

impl<H, T: FirstNotIn<L>, L: Contains<H>> FirstNotIn<L> for HCons<H, T> {
    type Out = <<L as Contains<H>>::Out as Bool>::If<<T as FirstNotIn<L>>::Out, H>;
}

list_trait! {
    /// The first element of `Self` that *is* in `L`, or [`Pass`] (used to find a private
    /// dimension where none may appear).
    ///
    /// ```
    /// use namedtensor::named::list::{FirstIn, ListOf};
    /// use namedtensor::named::Pass;
    /// namedtensor::dims! { A, B, C }
    /// let _: core::marker::PhantomData<<ListOf<(A, B)> as FirstIn<ListOf<(C,)>>>::Out> =
    ///     core::marker::PhantomData::<Pass>;
    /// ```
    pub trait FirstIn<L> {
        /// The witness.
        type Out;
    }
}

impl<L> FirstIn<L> for HNil {
    type Out = Pass;
}

impl<H, T: FirstIn<L>, L: Contains<H>> FirstIn<L> for HCons<H, T> {
    type Out = <<L as Contains<H>>::Out as Bool>::If<H, <T as FirstIn<L>>::Out>;
}

list_trait! {
    /// The first element that occurs again later in the list, or [`Pass`].
    ///
    /// ```
    /// use namedtensor::named::list::{FindDup, HCons, HNil};
    /// namedtensor::dims! { A, B }
    /// type L = HCons<A, HCons<B, HCons<A, HNil>>>;
    /// let _: core::marker::PhantomData<<L as FindDup>::Out> = core::marker::PhantomData::<A>;
    /// ```
    pub trait FindDup {
        /// The witness.
        type Out;
    }
}

impl FindDup for HNil {
    type Out = Pass;
}

impl<H, T: Contains<H> + FindDup> FindDup for HCons<H, T> {
    type Out = <<T as Contains<H>>::Out as Bool>::If<H, <T as FindDup>::Out>;
}

list_trait! {
    /// Splits the list after `D`: `Prefix` is everything up to and including `D`, `Rest`
    /// what follows (masking with `mask_to`).
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, SplitAfter};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// type L = ListOf<(A, B, C)>;
    /// assert_eq!(names::<Tuple<<L as SplitAfter<B>>::Prefix>>(), ["A", "B"]);
    /// assert_eq!(names::<Tuple<<L as SplitAfter<B>>::Rest>>(), ["C"]);
    /// ```
    pub trait SplitAfter<D> {
        /// Up to and including `D`.
        type Prefix;
        /// After `D`.
        type Rest;
    }
}

impl<D> SplitAfter<D> for HNil {
    type Prefix = HNil;
    type Rest = HNil;
}

impl<H: DimEq<D>, T: SplitAfter<D>, D> SplitAfter<D> for HCons<H, T> {
    type Prefix =
        <<H as DimEq<D>>::Out as Bool>::If<HCons<H, HNil>, HCons<H, <T as SplitAfter<D>>::Prefix>>;
    type Rest = <<H as DimEq<D>>::Out as Bool>::If<T, <T as SplitAfter<D>>::Rest>;
}

list_trait! {
    /// Does the list start with the elements of `Run`? `Rest` is what follows them.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, StripPrefix};
    /// use namedtensor::named::logic::Bool;
    /// namedtensor::dims! { A, B, C }
    /// assert!(<<ListOf<(A, B, C)> as StripPrefix<ListOf<(A, B)>>>::Found as Bool>::VALUE);
    /// assert!(!<<ListOf<(A, B, C)> as StripPrefix<ListOf<(B,)>>>::Found as Bool>::VALUE);
    /// ```
    pub trait StripPrefix<Run> {
        /// [`B1`] if `Run` is a prefix.
        type Found: Bool;
        /// The list after the prefix (meaningful only if found).
        type Rest;
    }
}

impl<L> StripPrefix<HNil> for L {
    type Found = B1;
    type Rest = L;
}

impl<R, Rs> StripPrefix<HCons<R, Rs>> for HNil {
    type Found = B0;
    type Rest = HNil;
}

impl<H: DimEq<R>, T: StripPrefix<Rs>, R, Rs> StripPrefix<HCons<R, Rs>> for HCons<H, T> {
    type Found = <<H as DimEq<R>>::Out as Bool>::And<<T as StripPrefix<Rs>>::Found>;
    type Rest = <T as StripPrefix<Rs>>::Rest;
}

list_trait! {
    /// Replaces the first run of consecutive elements equal to `Run` by the single element
    /// `New` (merging adjacent dimensions). `Found` tells whether the run occurs.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, ReplaceRun};
    /// use namedtensor::named::logic::Bool;
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C, D, N }
    /// type L = ListOf<(A, B, C, D)>;
    /// assert_eq!(names::<Tuple<<L as ReplaceRun<ListOf<(B, C)>, N>>::Out>>(), ["A", "N", "D"]);
    /// assert!(!<<L as ReplaceRun<ListOf<(B, D)>, N>>::Found as Bool>::VALUE);
    /// ```
    pub trait ReplaceRun<Run, New> {
        /// [`B1`] if the run occurs.
        type Found: Bool;
        /// The list with the run replaced (unchanged if not found).
        type Out;
    }
}

impl<Run, New> ReplaceRun<Run, New> for HNil {
    type Found = B0;
    type Out = HNil;
}

impl<H, T, Run, New> ReplaceRun<Run, New> for HCons<H, T>
where
    HCons<H, T>: StripPrefix<Run>,
    T: ReplaceRun<Run, New>,
{
    type Found =
        <<HCons<H, T> as StripPrefix<Run>>::Found as Bool>::Or<<T as ReplaceRun<Run, New>>::Found>;
    type Out = <<HCons<H, T> as StripPrefix<Run>>::Found as Bool>::If<
        HCons<New, <HCons<H, T> as StripPrefix<Run>>::Rest>,
        HCons<H, <T as ReplaceRun<Run, New>>::Out>,
    >;
}

list_trait! {
    /// The first element and the rest of a list; for [`HNil`], [`NoDim`] and `HNil`.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Uncons};
    /// use namedtensor::named::logic::Bool;
    /// namedtensor::dims! { A, B }
    /// let _: core::marker::PhantomData<<ListOf<(A, B)> as Uncons>::Head> = core::marker::PhantomData::<A>;
    /// assert!(!<<ListOf<()> as Uncons>::NonEmpty as Bool>::VALUE);
    /// ```
    pub trait Uncons {
        /// The first element.
        type Head;
        /// The other elements.
        type Tail;
        /// [`B1`] unless the list is empty.
        type NonEmpty: Bool;
    }
}

impl Uncons for HNil {
    type Head = NoDim;
    type Tail = HNil;
    type NonEmpty = B0;
}

impl<H, T> Uncons for HCons<H, T> {
    type Head = H;
    type Tail = T;
    type NonEmpty = B1;
}

list_trait! {
    /// The list split before its last two elements: `Init`, `Second` (second-to-last) and
    /// `Last`. `Ok` is [`B0`] for lists shorter than two, whose missing elements are
    /// [`NoDim`].
    ///
    /// ```
    /// use namedtensor::named::list::{LastTwo, ListOf};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// type L = ListOf<(A, B, C)>;
    /// assert_eq!(names::<Tuple<<L as LastTwo>::Init>>(), ["A"]);
    /// let _: core::marker::PhantomData<(<L as LastTwo>::Second, <L as LastTwo>::Last)> =
    ///     core::marker::PhantomData::<(B, C)>;
    /// ```
    pub trait LastTwo {
        /// All but the last two.
        type Init;
        /// The second-to-last element.
        type Second;
        /// The last element.
        type Last;
        /// [`B1`] if the list has at least two elements.
        type Ok: Bool;
    }
}

/// The reversed list without its first two elements (the last two of the list).
type ReversedInit<L> = <<Reversed<L> as Uncons>::Tail as Uncons>::Tail;

// Computed on the reversed list, so that every impl involved dispatches on the outermost
// constructor only (see `ToTuple`).
impl<L> LastTwo for L
where
    L: ReverseOnto<HNil>,
    Reversed<L>: Uncons,
    <Reversed<L> as Uncons>::Tail: Uncons,
    ReversedInit<L>: ReverseOnto<HNil>,
{
    type Init = Reversed<ReversedInit<L>>;
    type Second = <<Reversed<L> as Uncons>::Tail as Uncons>::Head;
    type Last = <Reversed<L> as Uncons>::Head;
    type Ok = <<Reversed<L> as Uncons>::Tail as Uncons>::NonEmpty;
}

list_trait! {
    /// The list reversed and put in front of `Acc`; [`Reversed`] is the plain reversal.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, Reversed};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// assert_eq!(names::<Tuple<Reversed<ListOf<(A, B, C)>>>>(), ["C", "B", "A"]);
    /// ```
    pub trait ReverseOnto<Acc> {
        /// `reverse(Self) ++ Acc`.
        type Out;
    }
}

impl<Acc> ReverseOnto<Acc> for HNil {
    type Out = Acc;
}

impl<H, T: ReverseOnto<HCons<H, Acc>>, Acc> ReverseOnto<Acc> for HCons<H, T> {
    type Out = <T as ReverseOnto<HCons<H, Acc>>>::Out;
}

/// The list reversed.
///
/// ```
/// use namedtensor::named::list::{ListOf, Reversed};
/// use namedtensor::named::{names, Tuple};
/// namedtensor::dims! { A, B }
/// assert_eq!(names::<Tuple<Reversed<ListOf<(A, B)>>>>(), ["B", "A"]);
/// ```
pub type Reversed<L> = <L as ReverseOnto<HNil>>::Out;

list_trait! {
    /// PyTorch's positional rule on two *reversed* lists: elements at the same position
    /// must be equal; the longer list's extra elements are kept. `Mismatch` is [`Pass`] or
    /// the first offending pair `(lhs, rhs)`.
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, ZipFromRight, Reversed};
    /// use namedtensor::named::{names, Tuple};
    /// namedtensor::dims! { A, B, C }
    /// type Zip = <Reversed<ListOf<(A, B, C)>> as ZipFromRight<Reversed<ListOf<(B, C)>>>>::Out;
    /// assert_eq!(names::<Tuple<Reversed<Zip>>>(), ["A", "B", "C"]);
    /// ```
    pub trait ZipFromRight<L> {
        /// The merged (reversed) list.
        type Out;
        /// [`Pass`] or `(lhs, rhs)`.
        type Mismatch;
    }
}

impl<L> ZipFromRight<L> for HNil {
    type Out = L;
    type Mismatch = Pass;
}

impl<H, T> ZipFromRight<HNil> for HCons<H, T> {
    type Out = HCons<H, T>;
    type Mismatch = Pass;
}

impl<H1: DimEq<H2>, T1: ZipFromRight<T2>, H2, T2> ZipFromRight<HCons<H2, T2>> for HCons<H1, T1> {
    type Out = HCons<H1, <T1 as ZipFromRight<T2>>::Out>;
    type Mismatch =
        <<H1 as DimEq<H2>>::Out as Bool>::If<<T1 as ZipFromRight<T2>>::Mismatch, (H1, H2)>;
}

list_trait! {
    /// Is the list empty?
    ///
    /// ```
    /// use namedtensor::named::list::{IsEmpty, ListOf};
    /// use namedtensor::named::logic::Bool;
    /// assert!(<<ListOf<()> as IsEmpty>::Out as Bool>::VALUE);
    /// ```
    pub trait IsEmpty {
        /// [`B1`] for [`HNil`].
        type Out: Bool;
    }
}

impl IsEmpty for HNil {
    type Out = B1;
}

impl<H, T> IsEmpty for HCons<H, T> {
    type Out = B0;
}

list_trait! {
    /// Are the two lists equal, element by element?
    ///
    /// ```
    /// use namedtensor::named::list::{ListOf, SameList};
    /// use namedtensor::named::logic::Bool;
    /// namedtensor::dims! { A, B }
    /// assert!(<<ListOf<(A, B)> as SameList<ListOf<(A, B)>>>::Out as Bool>::VALUE);
    /// assert!(!<<ListOf<(A, B)> as SameList<ListOf<(B, A)>>>::Out as Bool>::VALUE);
    /// ```
    pub trait SameList<L> {
        /// [`B1`] if equal.
        type Out: Bool;
    }
}

impl SameList<HNil> for HNil {
    type Out = B1;
}

impl<H, T> SameList<HCons<H, T>> for HNil {
    type Out = B0;
}

impl<H, T> SameList<HNil> for HCons<H, T> {
    type Out = B0;
}

impl<H1: DimEq<H2>, T1: SameList<T2>, H2, T2> SameList<HCons<H2, T2>> for HCons<H1, T1> {
    type Out = <<H1 as DimEq<H2>>::Out as Bool>::And<<T1 as SameList<T2>>::Out>;
}

list_trait! {
    /// Is a witness [`Pass`]? [`B1`] for `Pass`, [`B0`] for a dimension.
    ///
    /// ```
    /// use namedtensor::named::list::IsPass;
    /// use namedtensor::named::{logic::Bool, Pass};
    /// namedtensor::dims! { A }
    /// assert!(<<Pass as IsPass>::Out as Bool>::VALUE && !<<A as IsPass>::Out as Bool>::VALUE);
    /// ```
    pub trait IsPass {
        /// The answer.
        type Out: Bool;
    }
}

impl IsPass for Pass {
    type Out = B1;
}

impl<D: Dim> IsPass for D {
    type Out = B0;
}

list_trait! {
    /// The witness `W` if `Self` is [`Pass`], otherwise `Pass`: checks a rule only when an
    /// earlier rule held, so one mistake gives one error.
    ///
    /// ```
    /// use namedtensor::named::list::AfterPass;
    /// use namedtensor::named::Pass;
    /// namedtensor::dims! { A, B }
    /// let _: core::marker::PhantomData<<Pass as AfterPass<B>>::Out> = core::marker::PhantomData::<B>;
    /// let _: core::marker::PhantomData<<A as AfterPass<B>>::Out> = core::marker::PhantomData::<Pass>;
    /// ```
    pub trait AfterPass<W> {
        /// The gated witness.
        type Out;
    }
}

impl<W> AfterPass<W> for Pass {
    type Out = W;
}

impl<D: Dim, W> AfterPass<W> for D {
    type Out = Pass;
}

/// The first of the dims `R` that is neither a visible (`S`) nor a private (`P`)
/// dimension of a tensor, or [`Pass`].
pub(crate) type Missing<R, S, P> = <R as FirstNotIn<Joined<ListOf<S>, ListOf<P>>>>::Out;

/// The first of the dims `R` that is private (in `P`), or [`Pass`].
pub(crate) type Masked<R, P> = <R as FirstIn<ListOf<P>>>::Out;

/// The witness `W2` if `W1` is [`Pass`], else `Pass` (see [`AfterPass`]).
pub(crate) type Then<W1, W2> = <W1 as AfterPass<W2>>::Out;
