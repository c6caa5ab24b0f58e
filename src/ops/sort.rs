//! `sort`, `argsort`, `topk`: the entries along a dim in order, and where they came from.
//!
//! The order is PyTorch's with `stable=True`: equal entries keep their input order (in both
//! directions), `-0.0` equals `0.0`, and NaN sorts above every number, so NaNs come last
//! ascending and first descending, and `topk` of the largest picks NaNs first. The values are
//! differentiable: each entry's gradient goes back to where it came from.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{normalize_dim, normalize_dim_0d};
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// The entries sorted along `dim` (ascending, or descending), and for each its index along
    /// `dim` in `self`: PyTorch's `sort(dim, descending, stable=True)`. Panics where
    /// [`DynTensor::try_sort`] fails.
    ///
    /// ```
    /// use namedtensor::tensor;
    /// let t = tensor!([[2.0, f32::NAN, 1.0, 2.0], [0.5, -1.0, 3.0, 0.0]]; f32);
    /// let (values, indices) = t.sort(1, false);
    /// assert_eq!(values.narrow(0, 1, 1).to_vec(), vec![-1.0, 0.0, 0.5, 3.0]);
    /// assert_eq!(indices.to_vec(), vec![2, 0, 3, 1, 1, 3, 0, 2]); // equal 2.0s keep their order
    /// assert!(values.to_vec()[3].is_nan()); // NaN last
    /// let (_, indices) = t.sort(-1, true);
    /// assert_eq!(indices.to_vec(), vec![1, 0, 3, 2, 2, 0, 3, 1]); // NaN first
    /// ```
    #[track_caller]
    pub fn sort(&self, dim: isize, descending: bool) -> (DynTensor<E>, DynTensor<i64>) {
        or_panic(self.try_sort(dim, descending))
    }

    /// [`DynTensor::sort`], or an error for a dim out of range.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i32>::zeros(&[2, 3]);
    /// assert!(t.try_sort(2, false).is_err());
    /// ```
    pub fn try_sort(&self, dim: isize, descending: bool) -> Result<(DynTensor<E>, DynTensor<i64>)> {
        let (values, indices, d) = sorted("sort", self, dim, descending)?;
        Ok((record("sort", self, d, &indices, values), indices))
    }

    /// The indices that sort `self` along `dim`: [`DynTensor::sort`]'s second result
    /// (PyTorch's `argsort(dim, descending, stable=True)`). Panics where
    /// [`DynTensor::try_argsort`] fails.
    ///
    /// ```
    /// let t = namedtensor::tensor!([30, 10, 20, 10]; i64);
    /// assert_eq!(t.argsort(0, false).to_vec(), vec![1, 3, 2, 0]);
    /// assert_eq!(t.argsort(0, true).to_vec(), vec![0, 2, 1, 3]);
    /// ```
    #[track_caller]
    pub fn argsort(&self, dim: isize, descending: bool) -> DynTensor<i64> {
        or_panic(self.try_argsort(dim, descending))
    }

    /// [`DynTensor::argsort`], or an error as for [`DynTensor::try_sort`].
    pub fn try_argsort(&self, dim: isize, descending: bool) -> Result<DynTensor<i64>> {
        Ok(sorted("argsort", self, dim, descending)?.1)
    }

    /// The `k` largest entries along `dim` (the `k` smallest when `largest` is false), in
    /// order from the most extreme, and their indices: PyTorch's `topk(k, dim, largest,
    /// sorted=True)`. Ties keep their input order; NaN counts as the largest. Panics where
    /// [`DynTensor::try_topk`] fails.
    ///
    /// ```
    /// let t = namedtensor::tensor!([[1.0, 5.0, 3.0], [4.0, 4.0, 0.0]]; f64);
    /// let (values, indices) = t.topk(2, 1, true);
    /// assert_eq!(values.to_vec(), vec![5.0, 3.0, 4.0, 4.0]);
    /// assert_eq!(indices.to_vec(), vec![1, 2, 0, 1]);
    /// assert_eq!(t.topk(1, 0, false).1.to_vec(), vec![0, 1, 1]);
    /// ```
    #[track_caller]
    pub fn topk(&self, k: usize, dim: isize, largest: bool) -> (DynTensor<E>, DynTensor<i64>) {
        or_panic(self.try_topk(k, dim, largest))
    }

    /// [`DynTensor::topk`], or an error for a dim out of range or `k` above its size.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// let err = t.try_topk(4, 1, true).unwrap_err();
    /// assert!(err.to_string().contains("k = 4"), "{err}");
    /// ```
    pub fn try_topk(
        &self,
        k: usize,
        dim: isize,
        largest: bool,
    ) -> Result<(DynTensor<E>, DynTensor<i64>)> {
        const OP: &str = "topk";
        let d = sort_dim(OP, dim, self.dim())?;
        let n = self.shape().get(d).copied().unwrap_or(1);
        if k > n {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                OP,
                format!(
                    "k = {k} is more than the {n} entries along dim {d} (sizes {:?})",
                    self.shape()
                ),
            ));
        }
        let (values, indices, d) = sorted(OP, self, dim, largest)?;
        if k == n {
            return Ok((record(OP, self, d, &indices, values), indices));
        }
        // The first k along `d` (of a 0-d tensor, k = 0: none, as a 1-d tensor).
        let (values, indices) = if self.dim() == 0 {
            (values.try_reshape(&[1])?, indices.try_reshape(&[1])?)
        } else {
            (values, indices)
        };
        let values = values.try_narrow(d as isize, 0, k)?.try_contiguous()?;
        let indices = indices.try_narrow(d as isize, 0, k)?.try_contiguous()?;
        if self.dim() == 0 {
            return Ok((values, indices)); // nothing to differentiate
        }
        Ok((record(OP, self, d, &indices, values), indices))
    }
}

/// `t` sorted along `dim`, untracked: values, indices, and the dim as an axis. A 0-d tensor
/// is one entry (dim 0 or -1), as in PyTorch.
fn sorted<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    dim: isize,
    descending: bool,
) -> Result<(DynTensor<E>, DynTensor<i64>, usize)> {
    if t.dim() == 0 {
        sort_dim(op, dim, 0)?;
        let (v, i, _) = sorted(op, &t.detach().try_reshape(&[1])?, 0, descending)?;
        return Ok((v.try_reshape(&[])?, i.try_reshape(&[])?, 0));
    }
    let d = normalize_dim(op, dim, t.dim())?;
    let (values, indices) = dispatch::sort(op, t.storage(), t.layout(), d, descending)?;
    Ok((
        DynTensor::from_contiguous_buffer(values, t.shape())?,
        DynTensor::from_contiguous_buffer(indices, t.shape())?,
        d,
    ))
}

/// `dim` as an axis of a tensor of rank `rank`, a 0-d tensor being one entry along dim 0
/// (or -1), as in PyTorch.
fn sort_dim(op: &'static str, dim: isize, rank: usize) -> Result<usize> {
    if rank == 0 {
        normalize_dim_0d(op, dim)
    } else {
        normalize_dim(op, dim, rank)
    }
}

/// `values` (read from `x` at `indices` along `d`) with their gradient recorded under `op`.
fn record<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    d: usize,
    indices: &DynTensor<i64>,
    values: DynTensor<E>,
) -> DynTensor<E> {
    if !crate::autograd::tracks(x) {
        return values;
    }
    if x.dim() == 0 {
        // One entry: the value is the input, its gradient the output's.
        return crate::autograd::identity(op, x, values);
    }
    crate::autograd::gather(op, x, d, indices, values)
}
