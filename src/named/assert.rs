//! Assertion traits: the only places where the name algebra can fail.
//!
//! Each operation computes a *witness* — [`Pass`], or the dimension (or flag) that
//! breaks a rule — and requires the witness to implement one of these traits. Only the
//! success witness implements them, so a mistake surfaces as exactly one unsatisfied
//! obligation whose `#[diagnostic::on_unimplemented]` message names the dimensions in
//! the user's own terms:
//!
//! ```text
//! error[E0277]: dimension `Channels` is not in tensor of dims `(Batch, Rows, Cols)`
//! ```
//!
//! The traits are public because they appear in the operations' `where` clauses; there
//! is never a reason to implement or name them.

use super::logic::{B0, B1, Bool};

/// The witness of a rule that holds.
///
/// ```
/// use namedtensor::named::{assert::DimInShape, Pass};
/// fn holds<W: DimInShape<()>>() {}
/// holds::<Pass>();
/// ```
pub struct Pass;

/// Named a dimension the tensor does not have. `Self` is the missing dimension.
///
/// ```compile_fail
/// use namedtensor::named::ReduceOver;
/// namedtensor::dims! { Batch, Channels, Rows }
/// let _ = <(Batch, Rows) as ReduceOver<Channels>>::AXES;
/// ```
#[diagnostic::on_unimplemented(
    message = "dimension `{Self}` is not in tensor of dims `{S}`",
    label = "`{Self}` is not a dimension of this tensor"
)]
pub trait DimInShape<S> {}
#[diagnostic::do_not_recommend]
impl<S> DimInShape<S> for Pass {}

/// Named a dimension that `mask_to` made private. `Self` is that dimension, `P` the
/// private dimensions.
///
/// ```compile_fail
/// use namedtensor::named::ReduceOver;
/// namedtensor::dims! { Batch, Rows }
/// // Visible `(Rows,)`, private `(Batch,)`.
/// let _ = <(Rows,) as ReduceOver<Batch, (Batch,)>>::AXES;
/// ```
#[diagnostic::on_unimplemented(
    message = "dimension `{Self}` is masked: it is one of the private dims `{P}`",
    label = "a masked dimension cannot be named here",
    note = "`mask_to` hides a tensor's leading dims from the code that receives it; `unmask()` restores them"
)]
pub trait NotMasked<P> {}
#[diagnostic::do_not_recommend]
impl<P> NotMasked<P> for Pass {}

/// An operand of a binary operation has, as a visible dimension, one that is private
/// in the other operand. `Self` is that dimension, `P` the private dimensions.
///
/// ```compile_fail
/// use namedtensor::named::Broadcast;
/// namedtensor::dims! { Batch, Rows }
/// // lhs: visible (Rows,), private (Batch,); rhs: visible (Batch,), unmasked.
/// let _ = <(Rows,) as Broadcast<(Batch,), (Batch,), ()>>::LHS;
/// ```
#[diagnostic::on_unimplemented(
    message = "dimension `{Self}` is masked in one operand but visible in the other",
    label = "private dims `{P}` cannot meet a visible dimension of the same name",
    note = "`unmask()` the masked operand first, or `mask_to` the other one the same way"
)]
pub trait NoMaskedLeak<P> {}
#[diagnostic::do_not_recommend]
impl<P> NoMaskedLeak<P> for Pass {}

/// A shape lists a dimension twice. `Self` is that dimension.
///
/// ```compile_fail
/// use namedtensor::named::Shape;
/// namedtensor::dims! { Rows, Cols }
/// fn check<S: Shape>() {}
/// check::<(Rows, Cols, Rows)>();
/// ```
#[diagnostic::on_unimplemented(
    message = "dimension `{Self}` appears more than once in `{S}`",
    label = "duplicate dimension `{Self}`",
    note = "the dims of a tensor must be distinct; `rename` one of them"
)]
pub trait NoDuplicate<S> {}
#[diagnostic::do_not_recommend]
impl<S> NoDuplicate<S> for Pass {}

/// A new dimension (from `rename`, `split`, `merge`, `stack`, `index_select`) is already
/// a dimension of the tensor. `Self` is that dimension.
///
/// ```compile_fail
/// use namedtensor::named::Rename;
/// namedtensor::dims! { Channels, Rows, Cols }
/// let _ = <(Channels, Rows, Cols) as Rename<Channels, Rows>>::AXIS;
/// ```
#[diagnostic::on_unimplemented(
    message = "dimension `{Self}` is already in tensor of dims `{S}`",
    label = "the result would have `{Self}` twice",
    note = "the dims of a tensor must be distinct; choose another name or `rename` the existing `{Self}` first"
)]
pub trait NotAlreadyPresent<S> {}
#[diagnostic::do_not_recommend]
impl<S> NotAlreadyPresent<S> for Pass {}

/// `align_to` would have to drop a dimension. `Self` is that dimension.
///
/// ```compile_fail
/// use namedtensor::named::AlignTo;
/// namedtensor::dims! { Batch, Channels, Heads }
/// let _ = <(Channels, Heads) as AlignTo<(Batch, Channels)>>::PLAN;
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot align `{S}` to `{T}`: dimension `{Self}` is not in the target",
    label = "aligning can only add dimensions",
    note = "reduce, `select` or `rename` `{Self}` first, or add it to the target"
)]
pub trait AlignTarget<S, T> {}
#[diagnostic::do_not_recommend]
impl<S, T> AlignTarget<S, T> for Pass {}

/// `permute` was given a dimension the tensor lacks. `Self` is that dimension.
///
/// ```compile_fail
/// use namedtensor::named::PermuteTo;
/// namedtensor::dims! { Batch, Rows, Cols }
/// let _ = <(Batch, Rows) as PermuteTo<(Rows, Cols)>>::PERM;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{T}` is not a permutation of `{S}`: `{Self}` is not a dimension of the tensor",
    label = "not a permutation"
)]
pub trait PermuteKnown<S, T> {}
#[diagnostic::do_not_recommend]
impl<S, T> PermuteKnown<S, T> for Pass {}

/// `permute` left out a dimension of the tensor. `Self` is that dimension.
///
/// ```compile_fail
/// use namedtensor::named::PermuteTo;
/// namedtensor::dims! { Batch, Rows, Cols }
/// let _ = <(Batch, Rows, Cols) as PermuteTo<(Rows, Batch)>>::PERM;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{T}` is not a permutation of `{S}`: `{Self}` is missing",
    label = "not a permutation",
    note = "a permutation lists every dimension of the tensor exactly once"
)]
pub trait PermuteComplete<S, T> {}
#[diagnostic::do_not_recommend]
impl<S, T> PermuteComplete<S, T> for Pass {}

/// The strict elementwise form needs both operands to have the same dimensions (in any
/// order). `Self` is a dimension only one of them has.
///
/// ```compile_fail
/// use namedtensor::named::SameDims;
/// namedtensor::dims! { Rows, Cols, Channels }
/// let _ = <(Rows, Cols) as SameDims<(Cols, Channels)>>::RHS;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{L}` and `{R}` do not have the same dims: `{Self}` is only in one of them",
    label = "the strict form does not broadcast",
    note = "use the broadcasting form, or `align_to` first"
)]
pub trait SameDimSet<L, R> {}
#[diagnostic::do_not_recommend]
impl<L, R> SameDimSet<L, R> for Pass {}

/// PyTorch's positional rule: aligned from the right, the names must agree. `Self` is
/// the first pair `(lhs dim, rhs dim)` that does not.
///
/// ```compile_fail
/// use namedtensor::named::BroadcastPositional;
/// namedtensor::dims! { Batch, Rows, Cols }
/// let _ = <(Batch, Rows, Cols) as BroadcastPositional<(Cols, Rows)>>::RHS;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{L}` and `{R}` do not match from the right: the dims `{Self}` meet at the same position",
    label = "positional broadcasting needs equal names at equal positions from the right",
    note = "`align_to` or `permute` first, or use the by-name broadcasting form"
)]
pub trait PositionalMatch<L, R> {}
#[diagnostic::do_not_recommend]
impl<L, R> PositionalMatch<L, R> for Pass {}

/// `merge` needs its dimensions adjacent and in the order given.
/// `Self` is [`B0`] when they are not.
///
/// ```compile_fail
/// use namedtensor::named::MergeDims;
/// namedtensor::dims! { Batch, Rows, Channels, Cols, Pixels }
/// let _ = <(Batch, Rows, Channels, Cols) as MergeDims<(Rows, Cols), Pixels>>::START;
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot merge `{Src}`: they are not adjacent and in this order in `{S}`",
    label = "`merge` needs adjacent dims",
    note = "`permute` so that `{Src}` are next to each other first"
)]
pub trait MergeAdjacent<Src, S> {}
#[diagnostic::do_not_recommend]
impl<Src, S> MergeAdjacent<Src, S> for B1 {}

/// `matmul` multiplies `(.., M, K)` by `(.., K, N)`: the last dimension of the left
/// operand must be the second-to-last of the right one. `Self` is [`B0`] when not.
///
/// ```compile_fail
/// use namedtensor::named::MatMul;
/// namedtensor::dims! { I, J, K }
/// let _ = <(I, K) as MatMul<(J, K)>>::LHS;
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot `matmul` `{L}` by `{R}`: the last dim of the left must be the second-to-last dim of the right",
    label = "the contracted dims do not line up",
    note = "`matmul` multiplies (.., M, K) by (.., K, N); `dot` contracts dims at any position"
)]
pub trait MatmulDims<L, R> {}
#[diagnostic::do_not_recommend]
impl<L, R> MatmulDims<L, R> for B1 {}

/// Two operands masked with different private dimensions. `Self` is [`B0`] then.
///
/// ```compile_fail
/// use namedtensor::named::Broadcast;
/// namedtensor::dims! { Batch, Heads, Rows }
/// let _ = <(Rows,) as Broadcast<(Rows,), (Batch,), (Heads,)>>::LHS;
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot combine tensors masked with different private dims `{P1}` and `{P2}`",
    label = "private dims differ",
    note = "operands must have the same private dims, or one of them none"
)]
pub trait PrivateDimsAgree<P1, P2> {}
#[diagnostic::do_not_recommend]
impl<P1, P2> PrivateDimsAgree<P1, P2> for B1 {}

/// Two different dimension types with the same id: `Self` is [`B1`] (equal ids) for
/// types `A` and `B` that are not the same. Only explicit ids (`Name = 0x…`) can
/// realistically collide. [`Same`](DistinctIds::Same) is the equality that
/// [`DimEq`](super::DimEq) reports; for a collision there is none, so no further error
/// (such as a duplicate dimension) follows from it.
///
/// ```compile_fail
/// use namedtensor::named::Shape;
/// namedtensor::dims! { Rows = 0x42 }
/// namedtensor::dims! { Cols = 0x42 }
/// fn check<S: Shape>() {}
/// check::<(Rows, Cols)>();
/// ```
#[diagnostic::on_unimplemented(
    message = "dimension types `{A}` and `{B}` have the same id",
    label = "dimension id collision",
    note = "give one of them another explicit id in `dims!`"
)]
pub trait DistinctIds<A, B> {
    /// [`B1`] if `A` and `B` are the same dimension.
    type Same: Bool;
}
#[diagnostic::do_not_recommend]
impl<A, B> DistinctIds<A, B> for B0 {
    type Same = B0;
}
#[diagnostic::do_not_recommend]
impl<A> DistinctIds<A, A> for B1 {
    type Same = B1;
}
