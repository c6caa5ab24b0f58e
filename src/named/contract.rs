//! Products that contract dimensions: [`Contract`] (`dot`, by name) and [`MatMul`]
//! (`matmul`, by position with names checked).

use super::assert::{DimInShape, MatmulDims, NoMaskedLeak, NotMasked, PrivateDimsAgree};
use super::axes::{Alignment, Ids, alignment};
use super::broadcast::{JoinedPrivate, Leak, PrivateAgree};
use super::dim::{DimEq, Dims};
use super::list::{
    Concat, Diff, FirstIn, FirstNotIn, HCons, HNil, IsEmpty, Joined, LastTwo, ListOf, Missing,
    Partition, SameList, Union,
};
use super::logic::Bool;
use super::shape::DimTuple;
use super::shape::{Shape, ToTuple, Tuple};

/// Everything a batched matrix product needs to compute a contraction.
///
/// Align the left operand with [`lhs`](Contraction::lhs) to
/// `[batch.., lhs_free.., contracted..]` and the right one with
/// [`rhs`](Contraction::rhs) to `[batch.., contracted.., rhs_free..]` (a right operand
/// without the private dims gets size-1 axes for them); view them as
/// `[batch.., m, k]` and `[batch.., k, n]` (`m`, `k`, `n` the products of the free and
/// contracted sizes), multiply, and view the product as `[batch.., lhs_free..,
/// rhs_free..]`: the result's full dims.
///
/// ```
/// use namedtensor::named::Contract;
/// namedtensor::dims! { Batch, Seq, Hidden, Out }
/// // (Batch, Seq, Hidden) . (Hidden, Out) over Hidden
/// let plan = <(Batch, Seq, Hidden) as Contract<Hidden, (Hidden, Out)>>::PLAN;
/// assert_eq!((plan.batch, plan.lhs_free, plan.contracted, plan.rhs_free), (0, 2, 1, 1));
/// assert!(plan.lhs.is_identity());
/// assert!(plan.rhs.is_identity());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Contraction {
    /// Aligns the left operand to `[batch.., lhs_free.., contracted..]`.
    pub lhs: Alignment,
    /// Aligns the right operand to `[batch.., contracted.., rhs_free..]`.
    pub rhs: Alignment,
    /// Number of batch axes: the private dims, then the shared dims not contracted.
    pub batch: usize,
    /// Number of dims only the left operand has.
    pub lhs_free: usize,
    /// Number of contracted dims.
    pub contracted: usize,
    /// Number of dims only the right operand has.
    pub rhs_free: usize,
}

impl Contraction {
    /// The plan for full operands `p1 ++ s1` and `p2 ++ s2`, private result dims
    /// `private`, contracted dims `k`.
    const fn new(
        p1: &[u64],
        s1: &[u64],
        p2: &[u64],
        s2: &[u64],
        private: &[u64],
        k: &[u64],
    ) -> Contraction {
        let s1k = Ids::filter(s1, k, false);
        let s2k = Ids::filter(s2, k, false);
        let batch = Ids::filter(s1k.as_slice(), s2k.as_slice(), true);
        let lhs_free = Ids::filter(s1k.as_slice(), s2k.as_slice(), false);
        let rhs_free = Ids::filter(s2k.as_slice(), s1k.as_slice(), false);
        let all_batch = Ids::concat(private, batch.as_slice());
        let lhs_dst = Ids::concat(
            Ids::concat(all_batch.as_slice(), lhs_free.as_slice()).as_slice(),
            k,
        );
        let rhs_dst = Ids::concat(
            Ids::concat(all_batch.as_slice(), k).as_slice(),
            rhs_free.as_slice(),
        );
        Contraction {
            lhs: alignment(Ids::concat(p1, s1).as_slice(), lhs_dst.as_slice()),
            rhs: alignment(Ids::concat(p2, s2).as_slice(), rhs_dst.as_slice()),
            batch: all_batch.as_slice().len(),
            lhs_free: lhs_free.as_slice().len(),
            contracted: k.len(),
            rhs_free: rhs_free.as_slice().len(),
        }
    }
}

/// `Self`'s dims without the contracted ones.
type Kept<S, K> = <ListOf<S> as Diff<<K as Dims>::List>>::Out;
/// The batch dims: the left operand's kept dims that the right one also has.
type Batch<S1, S2, K> = <Kept<S1, K> as Partition<Kept<S2, K>>>::In;
/// The left operand's free dims.
type LhsFree<S1, S2, K> = <Kept<S1, K> as Partition<Kept<S2, K>>>::Out;
/// The right operand's free dims: its kept dims that are not batch dims.
type RhsFree<S1, S2, K> = <Kept<S2, K> as Diff<Batch<S1, S2, K>>>::Out;
/// The dims of a contraction's result: batch (shared, not contracted, in the left
/// operand's order), then the left operand's free dims, then the right operand's.
type ContractedDims<S1, S2, K> =
    <Batch<S1, S2, K> as Concat<<LhsFree<S1, S2, K> as Concat<RhsFree<S1, S2, K>>>::Out>>::Out;

/// Contraction by name (`a.dot(Hidden, &b)`): multiplies and sums over the dims `K` (one
/// or a tuple), which both operands must have. Other shared dims are batch dims.
///
/// The result's dims are, in this order: the batch dims (in `Self`'s order), the dims
/// only `Self` has, the dims only `S2` has. [`PLAN`](Contract::PLAN) tells a runtime
/// wrapper how to compute it with one batched matrix product.
///
/// ```
/// use namedtensor::named::{names, Contract};
/// namedtensor::dims! { Height, Width, Chan }
/// type Im = (Height, Width, Chan);
/// assert_eq!(names::<<Im as Contract<Height, Im>>::Out>(), ["Width", "Chan"]);
/// assert_eq!(names::<<Im as Contract<(Height, Width), Im>>::Out>(), ["Chan"]);
/// ```
///
/// Attention scores: `Batch` is shared (batch dim), `Hidden` contracted, each side keeps
/// its own sequence dim:
///
/// ```
/// use namedtensor::named::{names, Contract};
/// namedtensor::dims! { Batch, Query, Key, Hidden }
/// type Q = (Batch, Query, Hidden);
/// type K = (Batch, Key, Hidden);
/// assert_eq!(names::<<Q as Contract<Hidden, K>>::Out>(), ["Batch", "Query", "Key"]);
/// let plan = <Q as Contract<Hidden, K>>::PLAN;
/// assert_eq!((plan.batch, plan.lhs_free, plan.contracted, plan.rhs_free), (1, 1, 1, 1));
/// assert_eq!(plan.rhs.perm, [0, 2, 1]); // (Batch, Hidden, Key)
/// ```
pub trait Contract<K, S2, P1 = (), P2 = ()>: Shape {
    /// Visible dims of the result.
    type Out: Shape;
    /// Private dims of the result.
    type Private: Shape;
    /// How to compute it.
    const PLAN: Contraction;
}

impl<S1, K, S2, P1, P2> Contract<K, S2, P1, P2> for S1
where
    S1: Shape,
    S2: ContractRhs<K, S1, P1, P2>,
{
    type Out = <S2 as ContractRhs<K, S1, P1, P2>>::Out;
    type Private = <S2 as ContractRhs<K, S1, P1, P2>>::Private;
    const PLAN: Contraction = <S2 as ContractRhs<K, S1, P1, P2>>::PLAN;
}

/// [`Contract`]'s checks and results, implemented for the right operand, the type
/// a call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait ContractRhs<K, S1, P1, P2>: Shape {
    type Out: Shape;
    type Private: Shape;
    const PLAN: Contraction;
}

impl<S1, K, S2, P1, P2> ContractRhs<K, S1, P1, P2> for S2
where
    S1: Shape,
    S2: Shape,
    P1: Shape,
    P2: Shape,
    K: Dims,
    K::List:
        FirstNotIn<Joined<ListOf<S1>, ListOf<P1>>> + FirstNotIn<Joined<ListOf<S2>, ListOf<P2>>>,
    K::List: FirstIn<Joined<ListOf<P1>, ListOf<P2>>>,
    Missing<K::List, S1, P1>: DimInShape<S1>,
    Missing<K::List, S2, P2>: DimInShape<S2>,
    <K::List as FirstIn<Joined<ListOf<P1>, ListOf<P2>>>>::Out: NotMasked<JoinedPrivate<P1, P2>>,
    ListOf<P1>: IsEmpty + SameList<ListOf<P2>>,
    ListOf<P2>: IsEmpty,
    JoinedPrivate<P1, P2>: Shape,
    PrivateAgree<P1, P2>: PrivateDimsAgree<P1, P2>,
    ListOf<S1>: Diff<K::List>,
    ListOf<S2>: Diff<K::List>,
    Kept<S1, K>: Partition<Kept<S2, K>>,
    Kept<S2, K>: Diff<Batch<S1, S2, K>>,
    LhsFree<S1, S2, K>: Concat<RhsFree<S1, S2, K>>,
    Batch<S1, S2, K>: Concat<<LhsFree<S1, S2, K> as Concat<RhsFree<S1, S2, K>>>::Out>,
    ContractedDims<S1, S2, K>: ToTuple + FirstIn<ListOf<JoinedPrivate<P1, P2>>>,
    Tuple<ContractedDims<S1, S2, K>>: Shape,
    Leak<ContractedDims<S1, S2, K>, P1, P2>: NoMaskedLeak<JoinedPrivate<P1, P2>>,
{
    type Out = Tuple<ContractedDims<S1, S2, K>>;
    type Private = JoinedPrivate<P1, P2>;
    const PLAN: Contraction = Contraction::new(
        P1::IDS,
        S1::IDS,
        P2::IDS,
        S2::IDS,
        <Self::Private as DimTuple>::IDS,
        K::IDS,
    );
}

/// [`B1`](super::logic::B1) if both operands have rank ≥ 2 and the left's last dim is
/// the right's second-to-last.
type MatmulOk<S1, S2> =
    <<<ListOf<S1> as LastTwo>::Ok as Bool>::And<<ListOf<S2> as LastTwo>::Ok> as Bool>::And<
        <<ListOf<S1> as LastTwo>::Last as DimEq<<ListOf<S2> as LastTwo>::Second>>::Out,
    >;
/// The result of `matmul`: the union of the batch dims, then `M`, then `N` (nothing if
/// the operands do not fit, so that only [`MatmulDims`] reports it).
type MatmulDimsOut<S1, S2> = <MatmulOk<S1, S2> as Bool>::If<
    <<<ListOf<S1> as LastTwo>::Init as Union<<ListOf<S2> as LastTwo>::Init>>::Out as Concat<
        HCons<<ListOf<S1> as LastTwo>::Second, HCons<<ListOf<S2> as LastTwo>::Last, HNil>>,
    >>::Out,
    HNil,
>;

/// Matrix product with names checked: `Self = (.., M, K)` times `S2 = (.., K, N)` gives
/// `(batch.., M, N)`, where the batch dims are the union, by name, of both operands'
/// leading dims (left's first). The contracted dims must have the same name (PyTorch
/// #33006), and a result with a repeated name is rejected (#83902).
///
/// A runtime wrapper aligns both operands ([`LHS`](MatMul::LHS), [`RHS`](MatMul::RHS))
/// and calls the positional `matmul`, which broadcasts the size-1 batch axes.
///
/// ```
/// use namedtensor::named::{names, MatMul};
/// namedtensor::dims! { Batch, Rows, Inner, Cols }
/// type A = (Batch, Rows, Inner);
/// type B = (Inner, Cols);
/// assert_eq!(names::<<A as MatMul<B>>::Out>(), ["Batch", "Rows", "Cols"]);
/// assert!(<A as MatMul<B>>::LHS.is_identity());
/// assert_eq!(<A as MatMul<B>>::RHS.insert, [0]); // (1, Inner, Cols)
/// ```
pub trait MatMul<S2, P1 = (), P2 = ()>: Shape {
    /// Visible dims of the result.
    type Out: Shape;
    /// Private dims of the result.
    type Private: Shape;
    /// Aligns the left operand to `[private.., batch.., M, K]`.
    const LHS: Alignment;
    /// Aligns the right operand to `[private.., batch.., K, N]`.
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> MatMul<S2, P1, P2> for S1
where
    S1: Shape,
    S2: MatMulRhs<S1, P1, P2>,
{
    type Out = <S2 as MatMulRhs<S1, P1, P2>>::Out;
    type Private = <S2 as MatMulRhs<S1, P1, P2>>::Private;
    const LHS: Alignment = <S2 as MatMulRhs<S1, P1, P2>>::LHS;
    const RHS: Alignment = <S2 as MatMulRhs<S1, P1, P2>>::RHS;
}

/// [`MatMul`]'s checks and results, implemented for the right operand, the type
/// a call infers last (see "Compile time" in the [module docs](crate::named)).
#[doc(hidden)]
pub trait MatMulRhs<S1, P1, P2>: Shape {
    type Out: Shape;
    type Private: Shape;
    const LHS: Alignment;
    const RHS: Alignment;
}

impl<S1, S2, P1, P2> MatMulRhs<S1, P1, P2> for S2
where
    S1: Shape,
    S2: Shape,
    P1: Shape,
    P2: Shape,
    ListOf<S1>: LastTwo,
    ListOf<S2>: LastTwo,
    <ListOf<S1> as LastTwo>::Last: DimEq<<ListOf<S2> as LastTwo>::Second>,
    MatmulOk<S1, S2>: MatmulDims<S1, S2>,
    <ListOf<S1> as LastTwo>::Init: Union<<ListOf<S2> as LastTwo>::Init>,
    <<ListOf<S1> as LastTwo>::Init as Union<<ListOf<S2> as LastTwo>::Init>>::Out:
        Concat<HCons<<ListOf<S1> as LastTwo>::Second, HCons<<ListOf<S2> as LastTwo>::Last, HNil>>>,
    ListOf<P1>: IsEmpty + SameList<ListOf<P2>>,
    ListOf<P2>: IsEmpty,
    JoinedPrivate<P1, P2>: Shape,
    PrivateAgree<P1, P2>: PrivateDimsAgree<P1, P2>,
    MatmulDimsOut<S1, S2>: ToTuple + FirstIn<ListOf<JoinedPrivate<P1, P2>>>,
    Tuple<MatmulDimsOut<S1, S2>>: Shape,
    Leak<MatmulDimsOut<S1, S2>, P1, P2>: NoMaskedLeak<JoinedPrivate<P1, P2>>,
{
    type Out = Tuple<MatmulDimsOut<S1, S2>>;
    type Private = JoinedPrivate<P1, P2>;
    const LHS: Alignment = matmul_alignment::<P1, S1, Self::Private, Self::Out>(true);
    const RHS: Alignment = matmul_alignment::<P2, S2, Self::Private, Self::Out>(false);
}

/// Aligns a `matmul` operand with full dims `P ++ S` to the result `R ++ Out`
/// (`Out = [batch.., M, N]`): the left one to `[R.., batch.., M, K]`, the right one to
/// `[R.., batch.., K, N]`, where `K` is the operand's own contracted dim.
const fn matmul_alignment<P: Shape, S: Shape, R: Shape, Out: Shape>(left: bool) -> Alignment {
    let out = Ids::concat(R::IDS, Out::IDS);
    let (prefix, mn) = out.as_slice().split_at(out.as_slice().len() - 2);
    let k = if left {
        S::IDS[S::IDS.len() - 1]
    } else {
        S::IDS[S::IDS.len() - 2]
    };
    let tail = if left { [mn[0], k] } else { [k, mn[1]] };
    alignment(
        Ids::concat(P::IDS, S::IDS).as_slice(),
        Ids::concat(prefix, &tail).as_slice(),
    )
}
