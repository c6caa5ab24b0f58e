//! The name algebra's results on many shapes, against hand-computed dims and axes.
//!
//! Each plan is also replayed on the operand's names (`permute`, then insert size-1
//! axes), which must give the result's names: the positions are consistent with the
//! types, not just equal to the numbers written here.

use namedtensor::Dim;
use namedtensor::named::id::{Digit, TypeLevelId};
use namedtensor::named::{
    AlignTo, Alignment, Broadcast, BroadcastPositional, Contract, Contraction, DimTuple, HasDim,
    MaskTo, MatMul, MergeDims, PermuteTo, ReduceOver, RemoveDim, Rename, ReplaceDim, SameDims,
    Shape, Stack, Unmask, axis_of, names, rank,
};

namedtensor::dims! { A, B, C, D, E, F, G, H }
namedtensor::dims! { Batch, Seq, Hidden, Out, Heads, Query, Key }

/// The names of a full tensor: private dims, then visible.
fn full<P: Shape, S: Shape>() -> Vec<&'static str> {
    [P::NAMES, S::NAMES].concat()
}

/// Applies an alignment to a list of names; inserted axes are called "1".
fn align(names: &[&'static str], plan: &Alignment) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = plan.perm.iter().map(|&p| names[p as usize]).collect();
    assert_eq!(out.len(), names.len(), "perm must use every axis once");
    for &at in plan.insert.iter() {
        out.insert(at as usize, "1");
    }
    out
}

/// The result names with the axes the operand lacks replaced by "1".
fn expected(result: &[&'static str], operand: &[&'static str]) -> Vec<&'static str> {
    result
        .iter()
        .map(|n| if operand.contains(n) { *n } else { "1" })
        .collect()
}

#[test]
fn ids_match_their_digits_and_differ() {
    fn check<X: Dim>() {
        assert_eq!(<X::Id as TypeLevelId>::VALUE, X::ID, "{}", X::NAME);
        assert_eq!(<X::Id as TypeLevelId>::DIGITS, 16);
        assert_eq!(<X::Lead as Digit>::VALUE, X::ID >> 60);
    }
    check::<A>();
    check::<H>();
    check::<Batch>();
    check::<explicit::Rows>();
    check::<explicit::Zero>();
    assert_eq!(explicit::Rows::ID, 0xdead_beef_0000_0001);
    assert_eq!(explicit::Zero::ID, 0);
    let ids = [
        A::ID,
        B::ID,
        C::ID,
        D::ID,
        E::ID,
        F::ID,
        G::ID,
        H::ID,
        Batch::ID,
        Seq::ID,
        here::A::ID,
        there::A::ID,
    ];
    for (i, x) in ids.iter().enumerate() {
        for y in &ids[i + 1..] {
            assert_ne!(x, y);
        }
    }
    // The same name in two modules: two dimensions, one shape.
    assert_eq!(names::<(A, here::A, there::A)>(), ["A", "A", "A"]);
    assert_eq!(axis_of::<(here::A, there::A), there::A>(), 1);
}

mod explicit {
    namedtensor::dims! { pub Rows = 0xdead_beef_0000_0001, pub Zero = 0 }
}
mod here {
    namedtensor::dims! { pub A }
}
mod there {
    namedtensor::dims! { pub A }
}

#[test]
fn shapes_describe_themselves() {
    assert_eq!(rank::<()>(), 0);
    assert_eq!(<(A, B, C) as DimTuple>::RANK, 3);
    assert_eq!(<(A, B, C) as DimTuple>::IDS, [A::ID, B::ID, C::ID]);
    type Twelve = (A, B, C, D, E, F, G, H, Batch, Seq, Hidden, Out);
    assert_eq!(rank::<Twelve>(), 12);
    assert_eq!(names::<Twelve>()[11], "Out");
}

#[test]
fn one_dimension_by_name() {
    assert_eq!(axis_of::<(A,), A>(), 0);
    assert_eq!(axis_of::<(A, B, C, D), D>(), 3);
    assert_eq!(<(C, B, A) as HasDim<A>>::AXIS, 2);
    // Private dims come first in the full tensor.
    assert_eq!(<(C, D) as HasDim<C, (A, B)>>::AXIS, 2);
    assert_eq!(<(C, D) as HasDim<D, (A,)>>::AXIS, 2);

    assert_eq!(<(A, B, C) as RemoveDim<B>>::AXIS, 1);
    assert_eq!(names::<<(A, B, C) as RemoveDim<A>>::Out>(), ["B", "C"]);
    assert_eq!(names::<<(A, B, C) as RemoveDim<C>>::Out>(), ["A", "B"]);
    assert_eq!(names::<<(A,) as RemoveDim<A>>::Out>(), [] as [&str; 0]);
    assert_eq!(<(C, D) as RemoveDim<D, (A, B)>>::AXIS, 3);
}

#[test]
fn reductions() {
    type S = (A, B, C, D, E);
    assert_eq!(<S as ReduceOver<C>>::AXES, [2]);
    assert_eq!(<S as ReduceOver<(E, A)>>::AXES, [0, 4]);
    assert_eq!(<S as ReduceOver<(D, B, C)>>::AXES, [1, 2, 3]);
    assert_eq!(<S as ReduceOver<(A, B, C, D, E)>>::AXES, [0, 1, 2, 3, 4]);
    assert_eq!(names::<<S as ReduceOver<(E, A)>>::Out>(), ["B", "C", "D"]);
    assert_eq!(
        names::<<S as ReduceOver<(A, B, C, D, E)>>::Out>(),
        [] as [&str; 0]
    );
    assert_eq!(<(C, D) as ReduceOver<(D, C), (A, B)>>::AXES, [2, 3]);
    assert_eq!(names::<<(C, D) as ReduceOver<D, (A, B)>>::Out>(), ["C"]);
}

#[test]
fn permutations() {
    assert_eq!(<(A,) as PermuteTo<(A,)>>::PERM, [0]);
    assert_eq!(<(A, B) as PermuteTo<(B, A)>>::PERM, [1, 0]);
    assert_eq!(
        <(A, B, C, D) as PermuteTo<(D, C, B, A)>>::PERM,
        [3, 2, 1, 0]
    );
    assert_eq!(
        <(A, B, C, D) as PermuteTo<(B, D, A, C)>>::PERM,
        [1, 3, 0, 2]
    );
    assert_eq!(
        <(A, B, C, D, E, F) as PermuteTo<(F, A, E, B, D, C)>>::PERM,
        [5, 0, 4, 1, 3, 2]
    );
    // PERM[i] is where the result's axis i comes from: applying it gives the target.
    let perm = <(A, B, C, D, E, F) as PermuteTo<(F, A, E, B, D, C)>>::PERM;
    let applied: Vec<_> = perm
        .iter()
        .map(|&p| names::<(A, B, C, D, E, F)>()[p as usize])
        .collect();
    assert_eq!(applied, names::<(F, A, E, B, D, C)>());
    // Private dims stay in front.
    assert_eq!(
        <(C, D, E) as PermuteTo<(E, C, D), (A, B)>>::PERM,
        [0, 1, 4, 2, 3]
    );
    assert!(<(A, B) as PermuteTo<(A, B), (C,)>>::PERM.is_identity());
}

#[test]
fn alignments() {
    let plan = <(B, D) as AlignTo<(A, B, C, D)>>::PLAN;
    assert_eq!(plan.perm, [0, 1]);
    assert_eq!(plan.insert, [0, 2]);
    let plan = <(D, B) as AlignTo<(A, B, C, D)>>::PLAN;
    assert_eq!(plan.perm, [1, 0]);
    assert_eq!(align(&["D", "B"], &plan), ["1", "B", "1", "D"]);
    let plan = <(C, A, B) as AlignTo<(A, B, C)>>::PLAN;
    assert_eq!(plan.perm, [1, 2, 0]);
    assert!(plan.insert.is_empty());
    let plan = <() as AlignTo<(A, B)>>::PLAN;
    assert_eq!(plan.insert, [0, 1]);
    // With private dims (A, B): (D,) to (C, D, E).
    let plan = <(D,) as AlignTo<(C, D, E), (A, B)>>::PLAN;
    assert_eq!(align(&["A", "B", "D"], &plan), ["A", "B", "1", "D", "1"]);
}

/// Checks both plans of a binary operation by replaying them.
fn check_binary(
    lhs: &[&'static str],
    rhs: &[&'static str],
    result: &[&'static str],
    l: Alignment,
    r: Alignment,
) {
    assert_eq!(align(lhs, &l), expected(result, lhs), "lhs");
    assert_eq!(align(rhs, &r), expected(result, rhs), "rhs");
}

#[test]
fn broadcasting_by_name() {
    type Out1 = <(A, B) as Broadcast<(B, C)>>::Out;
    assert_eq!(names::<Out1>(), ["A", "B", "C"]);
    let (l, r) = (
        <(A, B) as Broadcast<(B, C)>>::LHS,
        <(A, B) as Broadcast<(B, C)>>::RHS,
    );
    assert_eq!(l.perm, [0, 1]);
    assert_eq!(l.insert, [2]);
    assert_eq!(r.perm, [0, 1]);
    assert_eq!(r.insert, [0]);
    check_binary(&["A", "B"], &["B", "C"], &["A", "B", "C"], l, r);

    // The rhs's own order is kept for the dims it adds.
    type Out2 = <(C, A) as Broadcast<(E, A, D, B)>>::Out;
    assert_eq!(names::<Out2>(), ["C", "A", "E", "D", "B"]);
    check_binary(
        &["C", "A"],
        &["E", "A", "D", "B"],
        names::<Out2>(),
        <(C, A) as Broadcast<(E, A, D, B)>>::LHS,
        <(C, A) as Broadcast<(E, A, D, B)>>::RHS,
    );
    // Same dims in another order: the rhs is only permuted.
    let r = <(A, B, C) as Broadcast<(C, A, B)>>::RHS;
    assert_eq!(r.perm, [1, 2, 0]);
    assert!(r.insert.is_empty());
    // Scalars.
    assert_eq!(names::<<() as Broadcast<(A, B)>>::Out>(), ["A", "B"]);
    assert_eq!(<() as Broadcast<(A, B)>>::LHS.insert, [0, 1]);
}

#[test]
fn broadcasting_with_private_dims() {
    // Both masked the same way: private (A,), visible (B, C) + (C, D).
    type Same = <(B, C) as Broadcast<(C, D), (A,), (A,)>>::Out;
    assert_eq!(names::<Same>(), ["B", "C", "D"]);
    assert_eq!(
        names::<<(B, C) as Broadcast<(C, D), (A,), (A,)>>::Private>(),
        ["A"]
    );
    check_binary(
        &["A", "B", "C"],
        &["A", "C", "D"],
        &["A", "B", "C", "D"],
        <(B, C) as Broadcast<(C, D), (A,), (A,)>>::LHS,
        <(B, C) as Broadcast<(C, D), (A,), (A,)>>::RHS,
    );
    // An unmasked operand is broadcast over the private dims, on either side.
    check_binary(
        &["A", "B", "C"],
        &["C"],
        &["A", "B", "C"],
        <(B, C) as Broadcast<(C,), (A,), ()>>::LHS,
        <(B, C) as Broadcast<(C,), (A,), ()>>::RHS,
    );
    assert_eq!(
        names::<<(D,) as Broadcast<(B, C), (), (A,)>>::Private>(),
        ["A"]
    );
    check_binary(
        &["D"],
        &["A", "B", "C"],
        &["A", "D", "B", "C"],
        <(D,) as Broadcast<(B, C), (), (A,)>>::LHS,
        <(D,) as Broadcast<(B, C), (), (A,)>>::RHS,
    );
}

#[test]
fn strict_and_positional_broadcasting() {
    assert!(<(A, B) as SameDims<(A, B)>>::RHS.is_identity());
    assert_eq!(<(A, B, C) as SameDims<(C, A, B)>>::RHS.perm, [1, 2, 0]);
    check_binary(
        &["A", "B", "C"],
        &["B", "C", "A"],
        &["A", "B", "C"],
        <(A, B, C) as SameDims<(B, C, A)>>::LHS,
        <(A, B, C) as SameDims<(B, C, A)>>::RHS,
    );
    // An unmasked strict operand still gets the private dims inserted.
    assert_eq!(<(B,) as SameDims<(B,), (A,), ()>>::RHS.insert, [0]);

    type P1 = <(A, B, C) as BroadcastPositional<(B, C)>>::Out;
    assert_eq!(names::<P1>(), ["A", "B", "C"]);
    type P2 = <(C,) as BroadcastPositional<(A, B, C)>>::Out;
    assert_eq!(names::<P2>(), ["A", "B", "C"]);
    check_binary(
        &["C"],
        &["A", "B", "C"],
        &["A", "B", "C"],
        <(C,) as BroadcastPositional<(A, B, C)>>::LHS,
        <(C,) as BroadcastPositional<(A, B, C)>>::RHS,
    );
    // With private dims the positional rule applies to the visible dims only.
    check_binary(
        &["H", "B", "C"],
        &["D", "B", "C"],
        &["H", "D", "B", "C"],
        <(B, C) as BroadcastPositional<(D, B, C), (H,), ()>>::LHS,
        <(B, C) as BroadcastPositional<(D, B, C), (H,), ()>>::RHS,
    );
}

/// Checks a contraction plan by replaying it: both operands, aligned, must read
/// `[batch.., lhs_free.., k..]` and `[batch.., k.., rhs_free..]` of the result.
fn check_contraction(
    lhs: &[&'static str],
    rhs: &[&'static str],
    k: &[&'static str],
    result: &[&'static str],
    plan: Contraction,
) {
    let (b, lf, rf) = (plan.batch, plan.lhs_free, plan.rhs_free);
    assert_eq!(plan.contracted, k.len());
    assert_eq!(b + lf + rf, result.len());
    let want_lhs: Vec<_> = result[..b + lf].iter().chain(k).copied().collect();
    let want_rhs: Vec<_> = result[..b]
        .iter()
        .chain(k)
        .chain(&result[b + lf..])
        .copied()
        .collect();
    assert_eq!(align(lhs, &plan.lhs), expected(&want_lhs, lhs), "lhs");
    assert_eq!(align(rhs, &plan.rhs), expected(&want_rhs, rhs), "rhs");
}

#[test]
fn contractions() {
    // Inner product of vectors.
    assert_eq!(rank::<<(A,) as Contract<A, (A,)>>::Out>(), 0);
    check_contraction(
        &["A"],
        &["A"],
        &["A"],
        &[],
        <(A,) as Contract<A, (A,)>>::PLAN,
    );
    // Matrix-vector and matrix-matrix.
    assert_eq!(names::<<(A, B) as Contract<B, (B,)>>::Out>(), ["A"]);
    check_contraction(
        &["A", "B"],
        &["B", "C"],
        &["B"],
        &["A", "C"],
        <(A, B) as Contract<B, (B, C)>>::PLAN,
    );
    // Contracting the first dim: the lhs is permuted, (B, A) -> (A, B).
    let plan = <(B, A) as Contract<B, (B, C)>>::PLAN;
    assert_eq!(plan.lhs.perm, [1, 0]);
    check_contraction(&["B", "A"], &["B", "C"], &["B"], &["A", "C"], plan);
    // Shared uncontracted dims are batch dims, first, in the lhs's order.
    type Scores =
        <(Batch, Heads, Query, Hidden) as Contract<Hidden, (Key, Heads, Batch, Hidden)>>::Out;
    assert_eq!(names::<Scores>(), ["Batch", "Heads", "Query", "Key"]);
    let plan =
        <(Batch, Heads, Query, Hidden) as Contract<Hidden, (Key, Heads, Batch, Hidden)>>::PLAN;
    assert_eq!(
        (plan.batch, plan.lhs_free, plan.contracted, plan.rhs_free),
        (2, 1, 1, 1)
    );
    assert!(plan.lhs.is_identity());
    assert_eq!(plan.rhs.perm, [2, 1, 3, 0]);
    check_contraction(
        &["Batch", "Heads", "Query", "Hidden"],
        &["Key", "Heads", "Batch", "Hidden"],
        &["Hidden"],
        names::<Scores>(),
        plan,
    );
    // Several contracted dims, in the order given.
    type Im = (A, B, C);
    assert_eq!(names::<<Im as Contract<(A, B), Im>>::Out>(), ["C"]);
    let plan = <Im as Contract<(B, A), Im>>::PLAN;
    check_contraction(
        &["A", "B", "C"],
        &["A", "B", "C"],
        &["B", "A"],
        &["C"],
        plan,
    );
    assert_eq!(plan.lhs.perm, [2, 1, 0]);
    // The seed's example: im.dot("height", im2) keeps (width, channels).
    assert_eq!(names::<<Im as Contract<A, Im>>::Out>(), ["B", "C"]);
    // Free dims on both sides, none shared: an outer product.
    assert_eq!(
        names::<<(A, B) as Contract<B, (B, C, D)>>::Out>(),
        ["A", "C", "D"]
    );
    check_contraction(
        &["A", "B"],
        &["C", "B", "D"],
        &["B"],
        &["A", "C", "D"],
        <(A, B) as Contract<B, (C, B, D)>>::PLAN,
    );
}

#[test]
fn contractions_with_private_dims() {
    // (Batch | Seq, Hidden) . (Hidden, Out): the weight is broadcast over Batch.
    type R = <(Seq, Hidden) as Contract<Hidden, (Hidden, Out), (Batch,), ()>>::Out;
    assert_eq!(names::<R>(), ["Seq", "Out"]);
    let plan = <(Seq, Hidden) as Contract<Hidden, (Hidden, Out), (Batch,), ()>>::PLAN;
    assert_eq!(
        (plan.batch, plan.lhs_free, plan.contracted, plan.rhs_free),
        (1, 1, 1, 1)
    );
    check_contraction(
        &["Batch", "Seq", "Hidden"],
        &["Hidden", "Out"],
        &["Hidden"],
        &["Batch", "Seq", "Out"],
        plan,
    );
    // Both masked.
    let plan = <(Seq, Hidden) as Contract<Seq, (Seq,), (Batch,), (Batch,)>>::PLAN;
    check_contraction(
        &["Batch", "Seq", "Hidden"],
        &["Batch", "Seq"],
        &["Seq"],
        &["Batch", "Hidden"],
        plan,
    );
}

#[test]
fn matrix_products() {
    type M = <(A, B) as MatMul<(B, C)>>::Out;
    assert_eq!(names::<M>(), ["A", "C"]);
    assert!(<(A, B) as MatMul<(B, C)>>::LHS.is_identity());
    assert!(<(A, B) as MatMul<(B, C)>>::RHS.is_identity());
    // Batch dims: the union by name, lhs's first.
    type Batched = <(Batch, A, B) as MatMul<(B, C)>>::Out;
    assert_eq!(names::<Batched>(), ["Batch", "A", "C"]);
    // Each operand is aligned to [batch.., M, K] or [batch.., K, N].
    assert!(<(Batch, A, B) as MatMul<(B, C)>>::LHS.is_identity());
    assert_eq!(
        align(&["B", "C"], &<(Batch, A, B) as MatMul<(B, C)>>::RHS),
        ["1", "B", "C"]
    );
    type Union = <(D, A, B) as MatMul<(E, D, B, C)>>::Out;
    assert_eq!(names::<Union>(), ["D", "E", "A", "C"]);
    assert_eq!(
        align(&["D", "A", "B"], &<(D, A, B) as MatMul<(E, D, B, C)>>::LHS),
        ["D", "1", "A", "B"]
    );
    assert_eq!(
        align(
            &["E", "D", "B", "C"],
            &<(D, A, B) as MatMul<(E, D, B, C)>>::RHS
        ),
        ["D", "E", "B", "C"]
    );
    // A masked lhs and an unmasked weight.
    assert_eq!(
        names::<<(A, B) as MatMul<(B, C), (Batch,), ()>>::Private>(),
        ["Batch"]
    );
    assert_eq!(
        align(&["B", "C"], &<(A, B) as MatMul<(B, C), (Batch,), ()>>::RHS),
        ["1", "B", "C"]
    );
}

#[test]
fn renaming_masking_and_reshaping() {
    assert_eq!(
        names::<<(A, B, C) as Rename<B, Hidden>>::Out>(),
        ["A", "Hidden", "C"]
    );
    assert_eq!(<(A, B, C) as Rename<C, Hidden>>::AXIS, 2);
    assert_eq!(names::<<(A, B) as Rename<B, B>>::Out>(), ["A", "B"]);
    assert_eq!(<(C,) as Rename<C, D, (A, B)>>::AXIS, 2);

    type Vis = <(A, B, C, D) as MaskTo<B>>::Out;
    type Priv = <(A, B, C, D) as MaskTo<B>>::Private;
    assert_eq!(
        (names::<Vis>(), names::<Priv>()),
        (&["C", "D"][..], &["A", "B"][..])
    );
    // Masking further appends to the private dims.
    assert_eq!(
        names::<<Vis as MaskTo<C, Priv>>::Private>(),
        ["A", "B", "C"]
    );
    assert_eq!(
        names::<<(D,) as Unmask<(A, B, C)>>::Out>(),
        ["A", "B", "C", "D"]
    );
    assert_eq!(full::<Priv, Vis>(), names::<(A, B, C, D)>());

    type Split = <(A, B, C) as ReplaceDim<B, (D, E, F)>>::Out;
    assert_eq!(names::<Split>(), ["A", "D", "E", "F", "C"]);
    assert_eq!(
        (
            <(A, B, C) as ReplaceDim<B, (D, E, F)>>::AXIS,
            <(A, B, C) as ReplaceDim<B, (D, E, F)>>::COUNT
        ),
        (1, 3)
    );
    // Splitting into a dim of the same name is allowed: the old one is gone.
    assert_eq!(
        names::<<(A, B) as ReplaceDim<A, (A, C)>>::Out>(),
        ["A", "C", "B"]
    );
    // index_select: the index's dims take the dim's place.
    assert_eq!(
        names::<<(A, B, C) as ReplaceDim<C, (Query, Key)>>::Out>(),
        ["A", "B", "Query", "Key"]
    );
    assert_eq!(<(B, C) as ReplaceDim<C, (D,), (A,)>>::AXIS, 2);

    type Merged = <(A, B, C, D) as MergeDims<(B, C), E>>::Out;
    assert_eq!(names::<Merged>(), ["A", "E", "D"]);
    assert_eq!(
        (
            <(A, B, C, D) as MergeDims<(B, C), E>>::START,
            <(A, B, C, D) as MergeDims<(B, C), E>>::END
        ),
        (1, 2)
    );
    assert_eq!(
        (
            <(A, B, C, D) as MergeDims<(A, B, C, D), E>>::START,
            <(A, B, C, D) as MergeDims<(A, B, C, D), E>>::END
        ),
        (0, 3)
    );
    assert_eq!(
        names::<<(A, B, C) as MergeDims<(B, C), B>>::Out>(),
        ["A", "B"]
    );
    assert_eq!(<(C, D) as MergeDims<(C, D), E, (A, B)>>::START, 2);
    // Split then merge round-trips.
    assert_eq!(
        names::<<Split as MergeDims<(D, E, F), B>>::Out>(),
        names::<(A, B, C)>()
    );

    assert_eq!(names::<<(A, B) as Stack<C>>::Out>(), ["C", "A", "B"]);
    assert_eq!(<(B,) as Stack<C, (A,)>>::AXIS, 1);
}
