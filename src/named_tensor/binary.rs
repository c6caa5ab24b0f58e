//! Elementwise arithmetic between named tensors.
//!
//! - By name (the operators and `add`/`sub`/`mul`/`div`): the result's dims are the left
//!   operand's, then the right operand's dims the left lacks, in the right's order; each
//!   operand is aligned to them (a view) and sizes must be equal or 1.
//! - Strict (`add_strict`, …): both must have the same dims, in any order.
//! - Positional (`add_positional`, …): PyTorch's rule, where the names aligned from the right
//!   must match.
//!
//! Private dims broadcast like visible ones but cannot be named. Shape-preserving positional
//! operations (`exp`, `relu`, scalar arithmetic, …) apply through [`Tensor::map`].

use super::Tensor;
use super::view::aligned;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::DimTuple;
use crate::named::{Alignment, Broadcast, BroadcastPositional, SameDims};
use crate::ops::{DivOutput, Promote, Promoted};
use crate::tensor::{DynTensor, or_panic};

/// Runs a positional binary op on both operands lined up with the result, turning a size
/// mismatch into an error that names the dim.
///
/// Zero cost in the common case: an operand whose axes already line up under positional
/// broadcasting is passed as it is (no view is made), and the result's names are only
/// looked at when the sizes disagree.
pub(super) fn aligned_op<A: Element, B: Element, O: Element>(
    op: &'static str,
    lhs: &DynTensor<A>,
    lhs_plan: &Alignment,
    rhs: &DynTensor<B>,
    rhs_plan: &Alignment,
    names: fn() -> Vec<&'static str>,
    f: impl FnOnce(&DynTensor<A>, &DynTensor<B>) -> Result<DynTensor<O>>,
) -> Result<DynTensor<O>> {
    let (l_view, r_view) = (lined_up(lhs, lhs_plan), lined_up(rhs, rhs_plan));
    let (l, r) = (
        l_view.as_ref().unwrap_or(lhs),
        r_view.as_ref().unwrap_or(rhs),
    );
    f(l, r).map_err(|e| match e.kind() {
        ErrorKind::ShapeMismatch => {
            size_mismatch(op, l.shape(), r.shape(), lhs, rhs, &names()).unwrap_or(e)
        }
        _ => e,
    })
}

/// `raw` as a view in the result's axis order, or `None` when positional broadcasting
/// already lines it up.
fn lined_up<E: Element>(raw: &DynTensor<E>, plan: &Alignment) -> Option<DynTensor<E>> {
    (!plan.broadcasts_positionally()).then(|| aligned(raw, plan))
}

/// The error naming the first dim of the result (`names`, right-aligned with the lined-up
/// shapes `l` and `r`) whose sizes differ with neither being 1.
fn size_mismatch<A: Element, B: Element>(
    op: &'static str,
    l: &[usize],
    r: &[usize],
    lhs: &DynTensor<A>,
    rhs: &DynTensor<B>,
    names: &[&'static str],
) -> Option<Error> {
    let size_at = |shape: &[usize], i: usize| {
        (i + shape.len())
            .checked_sub(names.len())
            .map_or(1, |at| shape[at])
    };
    let i = (0..names.len()).find(|&i| {
        let (a, b) = (size_at(l, i), size_at(r, i));
        a != b && a != 1 && b != 1
    })?;
    let (a, b, name) = (size_at(l, i), size_at(r, i), names[i]);
    Some(Error::new(
        ErrorKind::ShapeMismatch,
        op,
        format!(
            "dim `{name}` has size {a} on the left and {b} on the right, and neither is 1 \
             (left shape {:?}, right shape {:?}, result dims {names:?})",
            lhs.shape(),
            rhs.shape()
        ),
    ))
}

pub(super) fn full_names<S: DimTuple, P: DimTuple>() -> Vec<&'static str> {
    P::NAMES.iter().chain(S::NAMES).copied().collect()
}

pub(super) type ByName<O, S, S2, P, P2> =
    Tensor<O, <S as Broadcast<S2, P, P2>>::Out, <S as Broadcast<S2, P, P2>>::Private>;
type Strict<O, S, S2, P, P2> = Tensor<O, S, <S as SameDims<S2, P, P2>>::Private>;
type Positional<O, S, S2, P, P2> = Tensor<
    O,
    <S as BroadcastPositional<S2, P, P2>>::Out,
    <S as BroadcastPositional<S2, P, P2>>::Private,
>;

macro_rules! named_binary {
    ($($Trait:ident $op:ident $try_op:ident $strict:ident $try_strict:ident
        $positional:ident $try_positional:ident $Out:ident;)*) => {$(
        impl<A: Element, S: DimTuple, P: DimTuple> Tensor<A, S, P> {
            #[doc = concat!("`", stringify!($op), "` broadcasting by name (also the operator): the result has `self`'s dims, then the dims of `other` that `self` lacks; sizes must be equal or 1. Panics where `try_", stringify!($op), "` fails.")]
            ///
            #[doc = concat!("A dim that only `other` has makes the result's rank grow. Where both must have the same dims (a residual connection, an update of a parameter), `", stringify!($strict), "` says so, and a mismatch is a compile error naming the dim.")]
            ///
            /// ```
            /// use namedtensor::{dims, Tensor};
            /// dims! { Rows, Cols }
            /// let a = Tensor::<f32, (Rows, Cols)>::ones([2, 3]);
            /// let b = Tensor::<f32, (Cols,)>::ones([3]);
            #[doc = concat!("assert_eq!(a.", stringify!($op), "(&b).shape(), &[2, 3]);")]
            /// ```
            #[track_caller]
            pub fn $op<B: Element, S2: DimTuple, P2: DimTuple>(&self, other: &Tensor<B, S2, P2>) -> ByName<$Out<A, B>, S, S2, P, P2>
            where
                A: Promote<B>,
                S: Broadcast<S2, P, P2>,
            {
                or_panic(self.$try_op(other))
            }

            #[doc = concat!("`", stringify!($op), "` by name, or an error naming the dim whose sizes disagree.")]
            pub fn $try_op<B: Element, S2: DimTuple, P2: DimTuple>(&self, other: &Tensor<B, S2, P2>) -> Result<ByName<$Out<A, B>, S, S2, P, P2>>
            where
                A: Promote<B>,
                S: Broadcast<S2, P, P2>,
            {
                aligned_op(
                    stringify!($op),
                    &self.raw,
                    const { &<S as Broadcast<S2, P, P2>>::LHS },
                    &other.raw,
                    const { &<S as Broadcast<S2, P, P2>>::RHS },
                    full_names::<<S as Broadcast<S2, P, P2>>::Out, <S as Broadcast<S2, P, P2>>::Private>,
                    |l, r| l.$try_op(r),
                )
                .map(Tensor::wrap)
            }

            #[doc = concat!("`", stringify!($op), "` of tensors with the same dims (in any order); the result has `self`'s order. Panics on sizes that disagree.")]
            #[track_caller]
            pub fn $strict<B: Element, S2: DimTuple, P2: DimTuple>(&self, other: &Tensor<B, S2, P2>) -> Strict<$Out<A, B>, S, S2, P, P2>
            where
                A: Promote<B>,
                S: SameDims<S2, P, P2>,
            {
                or_panic(self.$try_strict(other))
            }

            #[doc = concat!("The strict `", stringify!($op), "`, or an error naming the dim whose sizes disagree.")]
            pub fn $try_strict<B: Element, S2: DimTuple, P2: DimTuple>(&self, other: &Tensor<B, S2, P2>) -> Result<Strict<$Out<A, B>, S, S2, P, P2>>
            where
                A: Promote<B>,
                S: SameDims<S2, P, P2>,
            {
                aligned_op(
                    stringify!($op),
                    &self.raw,
                    const { &<S as SameDims<S2, P, P2>>::LHS },
                    &other.raw,
                    const { &<S as SameDims<S2, P, P2>>::RHS },
                    full_names::<S, <S as SameDims<S2, P, P2>>::Private>,
                    |l, r| l.$try_op(r),
                )
                .map(Tensor::wrap)
            }

            #[doc = concat!("`", stringify!($op), "` with PyTorch's positional broadcasting, where the names aligned from the right must match. Panics on sizes that disagree.")]
            #[track_caller]
            pub fn $positional<B: Element, S2: DimTuple, P2: DimTuple>(&self, other: &Tensor<B, S2, P2>) -> Positional<$Out<A, B>, S, S2, P, P2>
            where
                A: Promote<B>,
                S: BroadcastPositional<S2, P, P2>,
            {
                or_panic(self.$try_positional(other))
            }

            #[doc = concat!("The positional `", stringify!($op), "`, or an error naming the dim whose sizes disagree.")]
            pub fn $try_positional<B: Element, S2: DimTuple, P2: DimTuple>(&self, other: &Tensor<B, S2, P2>) -> Result<Positional<$Out<A, B>, S, S2, P, P2>>
            where
                A: Promote<B>,
                S: BroadcastPositional<S2, P, P2>,
            {
                aligned_op(
                    stringify!($op),
                    &self.raw,
                    const { &<S as BroadcastPositional<S2, P, P2>>::LHS },
                    &other.raw,
                    const { &<S as BroadcastPositional<S2, P, P2>>::RHS },
                    full_names::<<S as BroadcastPositional<S2, P, P2>>::Out, <S as BroadcastPositional<S2, P, P2>>::Private>,
                    |l, r| l.$try_op(r),
                )
                .map(Tensor::wrap)
            }
        }

        impl<A, B, S, S2, P, P2> std::ops::$Trait<&Tensor<B, S2, P2>> for &Tensor<A, S, P>
        where
            A: Promote<B>,
            B: Element,
            S: Broadcast<S2, P, P2>,
            S2: DimTuple,
            P: DimTuple,
            P2: DimTuple,
        {
            type Output = ByName<$Out<A, B>, S, S2, P, P2>;
            #[track_caller]
            fn $op(self, rhs: &Tensor<B, S2, P2>) -> Self::Output {
                Tensor::$op(self, rhs)
            }
        }

        impl<A, B, S, S2, P, P2> std::ops::$Trait<Tensor<B, S2, P2>> for Tensor<A, S, P>
        where
            A: Promote<B>,
            B: Element,
            S: Broadcast<S2, P, P2>,
            S2: DimTuple,
            P: DimTuple,
            P2: DimTuple,
        {
            type Output = ByName<$Out<A, B>, S, S2, P, P2>;
            #[track_caller]
            fn $op(self, rhs: Tensor<B, S2, P2>) -> Self::Output {
                Tensor::$op(&self, &rhs)
            }
        }

        impl<A, B, S, S2, P, P2> std::ops::$Trait<&Tensor<B, S2, P2>> for Tensor<A, S, P>
        where
            A: Promote<B>,
            B: Element,
            S: Broadcast<S2, P, P2>,
            S2: DimTuple,
            P: DimTuple,
            P2: DimTuple,
        {
            type Output = ByName<$Out<A, B>, S, S2, P, P2>;
            #[track_caller]
            fn $op(self, rhs: &Tensor<B, S2, P2>) -> Self::Output {
                Tensor::$op(&self, rhs)
            }
        }

        impl<A, B, S, S2, P, P2> std::ops::$Trait<Tensor<B, S2, P2>> for &Tensor<A, S, P>
        where
            A: Promote<B>,
            B: Element,
            S: Broadcast<S2, P, P2>,
            S2: DimTuple,
            P: DimTuple,
            P2: DimTuple,
        {
            type Output = ByName<$Out<A, B>, S, S2, P, P2>;
            #[track_caller]
            fn $op(self, rhs: Tensor<B, S2, P2>) -> Self::Output {
                Tensor::$op(self, &rhs)
            }
        }
    )*};
}

named_binary! {
    Add add try_add add_strict try_add_strict add_positional try_add_positional Promoted;
    Sub sub try_sub sub_strict try_sub_strict sub_positional try_sub_positional Promoted;
    Mul mul try_mul mul_strict try_mul_strict mul_positional try_mul_positional Promoted;
    Div div try_div div_strict try_div_strict div_positional try_div_positional DivOutput;
}

/// Whether `out`, of `input`'s shape, is a view of `input`'s storage that reads its
/// elements from other places (other strides or offset), i.e. a reordering, not a result.
fn moved_view<E: Element, F: Element>(input: &DynTensor<E>, out: &DynTensor<F>) -> bool {
    let same_type = (out as &dyn std::any::Any).downcast_ref::<DynTensor<E>>();
    // Strides of size-1 dims are never used to read, so they may differ freely.
    let used = |t: &DynTensor<E>| -> Vec<usize> {
        t.shape()
            .iter()
            .zip(t.stride())
            .map(|(&n, &s)| if n == 1 { 0 } else { s })
            .collect()
    };
    same_type.is_some_and(|out| {
        out.shares_storage(input)
            && out.numel() > 0
            && (used(out) != used(input) || out.storage_offset() != input.storage_offset())
    })
}

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Applies a positional operation that keeps every element where it is (elementwise
    /// math, a cast, a custom kernel, …) and keeps the names: the escape hatch for what the
    /// named methods (`x.exp()`, `&x * 2.0`, `x.gt_scalar(0.0)`, …) do not cover. The names
    /// are checked only as far as the result allows: a changed shape, or a view of the input
    /// with other strides (a transpose or any reordering of a square tensor), is refused; a
    /// computation that moves elements into a new tensor of the same shape (a copy of a
    /// transpose, a flip) cannot be told apart and would keep the now wrong names, so use the
    /// named views for those. Panics where [`Tensor::try_map`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f32, (Rows,)>::from_vec(vec![1.0, 2.0], [2]);
    /// let u = t.map(|x| x * 3.0 + 1.0);
    /// assert_eq!(u.to_vec(), vec![4.0, 7.0]);
    /// ```
    #[track_caller]
    pub fn map<F: Element>(
        &self,
        f: impl FnOnce(&DynTensor<E>) -> DynTensor<F>,
    ) -> Tensor<F, S, P> {
        or_panic(self.try_map(f))
    }

    /// [`Tensor::map`], or an error if `f` changed the shape or returned a view of the input
    /// that reorders its elements (the names would no longer fit).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<f32, (Rows, Cols)>::ones([2, 3]);
    /// assert!(t.try_map(|x| x.t()).is_err());
    /// let square = Tensor::<f32, (Rows, Cols)>::ones([3, 3]);
    /// assert!(square.try_map(|x| x.t()).is_err()); // same shape, but Rows and Cols swapped
    /// assert!(square.try_map(|x| x.contiguous()).is_ok());
    /// ```
    pub fn try_map<F: Element>(
        &self,
        f: impl FnOnce(&DynTensor<E>) -> DynTensor<F>,
    ) -> Result<Tensor<F, S, P>> {
        let out = f(&self.raw);
        let problem = if out.shape() != self.raw.shape() {
            Some(format!(
                "the operation changed the shape from {:?} to {:?}",
                self.raw.shape(),
                out.shape()
            ))
        } else if moved_view(&self.raw, &out) {
            Some(format!(
                "the operation returned a view of the input with strides {:?} instead of {:?} \
                 (a transpose or other reordering)",
                out.stride(),
                self.raw.stride()
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "map",
                format!(
                    "{problem}, so the names {:?} no longer apply; use the named views \
                     (permute, align_to, rename, ...) to move dims",
                    full_names::<S, P>()
                ),
            ));
        }
        Ok(Tensor::wrap(out))
    }
}
