//! Products by name: `dot` (contraction over named dims, shared dims batched) and `matmul`
//! (PyTorch's rule, with the contracted names checked).

use super::Tensor;
use super::view::view_unless_identity;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::DimTuple;
use crate::named::{Contract, MatMul};
use crate::tensor::or_panic;

type DotOut<E, S, K, S2, P, P2> =
    Tensor<E, <S as Contract<K, S2, P, P2>>::Out, <S as Contract<K, S2, P, P2>>::Private>;
type MatMulOut<E, S, S2, P, P2> =
    Tensor<E, <S as MatMul<S2, P, P2>>::Out, <S as MatMul<S2, P, P2>>::Private>;

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Multiplies with `other` and sums over the dims `K` (one dim or a tuple), which both
    /// must have. Dims both have that are not contracted are batch dims. The result's dims
    /// are the batch dims (in `self`'s order), then `self`'s other dims, then `other`'s.
    /// Computed with one batched matrix product. Panics where [`Tensor::try_dot`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Query, Key, Hidden }
    /// let q = Tensor::<f32, (Batch, Query, Hidden)>::ones([2, 3, 4]);
    /// let k = Tensor::<f32, (Batch, Key, Hidden)>::ones([2, 5, 4]);
    /// let scores = q.dot(Hidden, &k);            // (Batch, Query, Key)
    /// assert_eq!(scores.shape(), &[2, 3, 5]);
    /// assert_eq!(scores.to_vec()[0], 4.0);
    /// ```
    #[track_caller]
    pub fn dot<K, S2: DimTuple, P2: DimTuple>(
        &self,
        dims: K,
        other: &Tensor<E, S2, P2>,
    ) -> DotOut<E, S, K, S2, P, P2>
    where
        S: Contract<K, S2, P, P2>,
    {
        or_panic(self.try_dot(dims, other))
    }

    /// [`Tensor::dot`], or an error naming the dims whose sizes disagree.
    pub fn try_dot<K, S2: DimTuple, P2: DimTuple>(
        &self,
        _dims: K,
        other: &Tensor<E, S2, P2>,
    ) -> Result<DotOut<E, S, K, S2, P, P2>>
    where
        S: Contract<K, S2, P, P2>,
    {
        // A reference to the compile-time plan (no copy of it per call).
        let plan = const { &<S as Contract<K, S2, P, P2>>::PLAN };
        let (b, lf, kc, rf) = (plan.batch, plan.lhs_free, plan.contracted, plan.rhs_free);
        // [batch.., lhs_free.., contracted..] and [batch.., contracted.., rhs_free..]
        let (l_view, r_view) = (
            view_unless_identity(&self.raw, &plan.lhs),
            view_unless_identity(&other.raw, &plan.rhs),
        );
        let (l, r) = (
            l_view.as_ref().unwrap_or(&self.raw),
            r_view.as_ref().unwrap_or(&other.raw),
        );
        let (ls, rs) = (l.shape(), r.shape());
        let mismatch = |what: &str, name: &str, a: usize, c: usize| {
            Error::new(
                ErrorKind::ShapeMismatch,
                "dot",
                format!(
                    "{what} dim `{name}` has size {a} on the left and {c} on the right \
                     (left shape {:?}, right shape {:?})",
                    self.raw.shape(),
                    other.raw.shape()
                ),
            )
        };
        if let Some(i) = (0..b).find(|&i| ls[i] != rs[i] && ls[i] != 1 && rs[i] != 1) {
            // The batch dims lead the result's full list of names (private dims first).
            let private = <<S as Contract<K, S2, P, P2>>::Private as DimTuple>::NAMES;
            let visible = <<S as Contract<K, S2, P, P2>>::Out as DimTuple>::NAMES;
            let name = private.iter().chain(visible).nth(i).copied().unwrap_or("?");
            return Err(mismatch("batch", name, ls[i], rs[i]));
        }
        // The contracted dims' names are the last `kc` of the left operand's aligned order:
        // recover them from the right operand's plan via sizes only; name them by position.
        for i in 0..kc {
            if ls[b + lf + i] != rs[b + i] {
                let name = contracted_name::<S, P>(&plan.lhs, b + lf + i);
                return Err(mismatch("contracted", name, ls[b + lf + i], rs[b + i]));
            }
        }
        if lf == 1 && kc == 1 && rf == 1 {
            // Already [batch.., M, K] @ [batch.., K, N], and the product has the result's axes.
            return Ok(Tensor::wrap(l.try_matmul(r)?));
        }
        let m: usize = ls[b..b + lf].iter().product();
        let k: usize = ls[b + lf..].iter().product();
        let n: usize = rs[b + kc..].iter().product();
        let mut l3: Vec<isize> = ls[..b].iter().map(|&s| s as isize).collect();
        let mut r3: Vec<isize> = rs[..b].iter().map(|&s| s as isize).collect();
        l3.extend([m as isize, k as isize]);
        r3.extend([k as isize, n as isize]);
        let prod = l.try_reshape(&l3)?.try_matmul(&r.try_reshape(&r3)?)?;
        let mut out: Vec<isize> = prod.shape()[..b].iter().map(|&s| s as isize).collect();
        out.extend(ls[b..b + lf].iter().map(|&s| s as isize));
        out.extend(rs[b + kc..b + kc + rf].iter().map(|&s| s as isize));
        Ok(Tensor::wrap(prod.try_reshape(&out)?))
    }

    /// Matrix product with PyTorch's rule — the last dim of `self` is contracted with the
    /// second-to-last of `other` — where the two must have the same name, and batch dims are
    /// matched by name. Panics where [`Tensor::try_matmul`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Rows, Inner, Cols }
    /// let a = Tensor::<f64, (Batch, Rows, Inner)>::ones([2, 3, 4]);
    /// let b = Tensor::<f64, (Inner, Cols)>::ones([4, 5]);
    /// let c = a.matmul(&b);                     // (Batch, Rows, Cols)
    /// assert_eq!(c.shape(), &[2, 3, 5]);
    /// ```
    #[track_caller]
    pub fn matmul<S2: DimTuple, P2: DimTuple>(
        &self,
        other: &Tensor<E, S2, P2>,
    ) -> MatMulOut<E, S, S2, P, P2>
    where
        S: MatMul<S2, P, P2>,
    {
        or_panic(self.try_matmul(other))
    }

    /// [`Tensor::matmul`], or an error when sizes disagree.
    pub fn try_matmul<S2: DimTuple, P2: DimTuple>(
        &self,
        other: &Tensor<E, S2, P2>,
    ) -> Result<MatMulOut<E, S, S2, P, P2>>
    where
        S: MatMul<S2, P, P2>,
    {
        let l_view = view_unless_identity(&self.raw, const { &<S as MatMul<S2, P, P2>>::LHS });
        let r_view = view_unless_identity(&other.raw, const { &<S as MatMul<S2, P, P2>>::RHS });
        let (l, r) = (
            l_view.as_ref().unwrap_or(&self.raw),
            r_view.as_ref().unwrap_or(&other.raw),
        );
        Ok(Tensor::wrap(l.try_matmul(r)?))
    }
}

/// The name of the full tensor's axis that lands at `pos` after `plan` (no insertions
/// precede contracted axes, so `pos` indexes the permutation).
fn contracted_name<S: DimTuple, P: DimTuple>(
    plan: &crate::named::Alignment,
    pos: usize,
) -> &'static str {
    let names: Vec<&'static str> = P::NAMES.iter().chain(S::NAMES).copied().collect();
    let inserted_before = plan.insert.iter().filter(|&&d| (d as usize) < pos).count();
    plan.perm
        .get(pos - inserted_before)
        .and_then(|&src| names.get(src as usize).copied())
        .unwrap_or("?")
}
