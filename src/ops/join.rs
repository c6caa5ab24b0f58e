//! Joining tensors: `cat` along an existing dim, `stack` along a new one.
//!
//! All operands have the same element type — the signature says so, so mixing dtypes is a
//! compile error rather than a run-time one:
//!
//! ```compile_fail
//! use namedtensor::DynTensor;
//! let a = DynTensor::<f32>::zeros(&[2]);
//! let b = DynTensor::<f64>::zeros(&[2]);
//! DynTensor::cat(&[&a, &b], 0); // expected `&DynTensor<f32>`, found `&DynTensor<f64>`
//! ```
//!
//! Convert first with [`DynTensor::to_dtype`].

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{checked_numel, normalize_dim, normalize_new_dim};
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// Concatenates `tensors` along `dim`: their shapes must be equal except in `dim`. The
    /// result is a new contiguous tensor. Panics where [`DynTensor::try_cat`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let a = tensor!([[1, 2], [3, 4]]; i32);
    /// let b = tensor!([[5, 6]]; i32);
    /// assert_eq!(DynTensor::cat(&[&a, &b], 0).to_vec(), vec![1, 2, 3, 4, 5, 6]);
    /// assert_eq!(DynTensor::cat(&[&a, &a.t()], 1).shape(), &[2, 4]);
    /// ```
    #[track_caller]
    pub fn cat(tensors: &[&DynTensor<E>], dim: isize) -> DynTensor<E> {
        or_panic(Self::try_cat(tensors, dim))
    }

    /// [`DynTensor::cat`], or an error: [`ErrorKind::InvalidArgument`] for an empty list,
    /// [`ErrorKind::DimOutOfRange`], or [`ErrorKind::ShapeMismatch`] naming the first
    /// tensor whose rank or sizes differ.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let a = DynTensor::<f32>::zeros(&[2, 3]);
    /// let b = DynTensor::<f32>::zeros(&[2, 4]);
    /// let err = DynTensor::try_cat(&[&a, &b], 0).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    /// assert!(DynTensor::try_cat(&[&a, &b], 1).is_ok());
    /// ```
    pub fn try_cat(tensors: &[&DynTensor<E>], dim: isize) -> Result<DynTensor<E>> {
        cat_as("cat", tensors, dim)
    }

    /// Joins tensors of equal shape along a new dim `dim` (in `-(rank+1)..=rank`).
    /// Panics where [`DynTensor::try_stack`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let a = tensor!([1., 2.]);
    /// let b = tensor!([3., 4.]);
    /// assert_eq!(DynTensor::stack(&[&a, &b], 0).to_vec(), vec![1., 2., 3., 4.]);
    /// assert_eq!(DynTensor::stack(&[&a, &b], 1).to_vec(), vec![1., 3., 2., 4.]);
    /// ```
    #[track_caller]
    pub fn stack(tensors: &[&DynTensor<E>], dim: isize) -> DynTensor<E> {
        or_panic(Self::try_stack(tensors, dim))
    }

    /// [`DynTensor::stack`], or an error for an empty list, a dim out of range or shapes
    /// that differ.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::<f32>::zeros(&[2]);
    /// assert!(DynTensor::try_stack(&[&a, &DynTensor::zeros(&[3])], 0).is_err());
    /// ```
    pub fn try_stack(tensors: &[&DynTensor<E>], dim: isize) -> Result<DynTensor<E>> {
        let first = tensors.first().ok_or_else(|| empty_list("stack"))?;
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != first.shape() {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    "stack",
                    format!(
                        "stack expects tensors of equal shape, but tensor 0 has shape {:?} and \
                         tensor {i} has shape {:?}",
                        first.shape(),
                        t.shape()
                    ),
                ));
            }
        }
        let d = normalize_new_dim("stack", dim, first.dim())?;
        let unsqueezed = tensors
            .iter()
            .map(|t| t.try_unsqueeze(d as isize))
            .collect::<Result<Vec<_>>>()?;
        cat_as("stack", &unsqueezed.iter().collect::<Vec<_>>(), d as isize)
    }
}

fn empty_list(op: &'static str) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        op,
        "expects a non-empty list of tensors",
    )
}

fn cat_as<E: Element>(
    op: &'static str,
    tensors: &[&DynTensor<E>],
    dim: isize,
) -> Result<DynTensor<E>> {
    let first = tensors.first().ok_or_else(|| empty_list(op))?;
    let d = normalize_dim(op, dim, first.dim())?;
    let mut out_shape = first.shape().to_vec();
    out_shape[d] = 0;
    for (i, t) in tensors.iter().enumerate() {
        let same_elsewhere = t.dim() == first.dim()
            && (0..t.dim()).all(|e| e == d || t.shape()[e] == first.shape()[e]);
        if !same_elsewhere {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!(
                    "tensors must have the same shape except in dim {d}, but tensor 0 has shape \
                     {:?} and tensor {i} has shape {:?}",
                    first.shape(),
                    t.shape()
                ),
            ));
        }
        out_shape[d] = out_shape[d]
            .checked_add(t.shape()[d])
            .ok_or_else(|| Error::overflow(op, "the concatenated size"))?;
    }
    checked_numel(&out_shape)
        .ok_or_else(|| Error::overflow(op, format!("the result shape {out_shape:?}")))?;
    let parts: Vec<_> = tensors.iter().map(|t| (t.storage(), t.layout())).collect();
    let buf = dispatch::cat(op, &parts, d, &out_shape)?;
    let out = DynTensor::from_contiguous_buffer(buf, &out_shape)?;
    if !tensors.iter().any(|t| crate::autograd::tracks(*t)) {
        return Ok(out);
    }
    Ok(crate::autograd::cat(op, tensors, d, out))
}
