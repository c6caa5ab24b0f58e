//! Conversions between tensors and Rust's own collections: `From` vectors, slices and nested
//! arrays; nested vectors back (`to_vec2`, `to_vec3`, `TryFrom`); iteration along the first dim
//! as PyTorch iterates a tensor.
//!
//! # Invariants
//! - Building a tensor copies the elements into a new contiguous CPU tensor; nothing of the
//!   source is kept.
//! - Reading nested vectors copies the elements in row-major order of the tensor's *shape*,
//!   whatever its strides (views read correctly), and fails instead of guessing when the rank is
//!   not the one asked for.
//! - Iteration yields views (`select(0, i)`): no element is copied, and writes through a view
//!   reach the tensor, as in PyTorch.

use super::{DynTensor, NestedData, or_panic};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::Shape;
use crate::named_tensor::Tensor;

impl<E: Element> From<Vec<E>> for DynTensor<E> {
    /// A 1-dim tensor of the vector's elements (no copy of the vector's buffer is kept).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from(vec![1i64, 2, 3]);
    /// assert_eq!((t.shape(), t.to_vec()), (&[3usize][..], vec![1, 2, 3]));
    /// ```
    fn from(v: Vec<E>) -> Self {
        let n = v.len();
        DynTensor::from_vec(v, &[n])
    }
}

impl<E: Element> From<&[E]> for DynTensor<E> {
    /// A 1-dim tensor of a copy of the slice.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from(&[1.5f32, 2.5][..]);
    /// assert_eq!(t.to_vec(), vec![1.5, 2.5]);
    /// ```
    fn from(s: &[E]) -> Self {
        DynTensor::from(s.to_vec())
    }
}

impl<E: Element, T: NestedData<E>, const N: usize> From<[T; N]> for DynTensor<E> {
    /// A tensor shaped as the nested arrays: `[[E; C]; R]` is `[R, C]`, and so on for any rank.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from([[1, 2, 3], [4, 5, 6]]);
    /// assert_eq!((t.shape(), t.to_vec()), (&[2usize, 3][..], vec![1, 2, 3, 4, 5, 6]));
    /// ```
    fn from(a: [T; N]) -> Self {
        DynTensor::from_nested(a)
    }
}

/// The error for a tensor of `rank` dims read as nested vectors of `want` levels.
fn rank_error(op: &'static str, shape: &[usize], want: usize) -> Error {
    Error::new(
        ErrorKind::ShapeMismatch,
        op,
        format!(
            "a tensor of shape {shape:?} ({} dims) read as {want} levels of nested vectors",
            shape.len()
        ),
    )
}

/// `flat` cut into consecutive rows of `n` (the last dim).
fn rows<E: Clone>(flat: Vec<E>, n: usize) -> Vec<Vec<E>> {
    if n == 0 {
        return Vec::new();
    }
    flat.chunks(n).map(<[E]>::to_vec).collect()
}

impl<E: Element> DynTensor<E> {
    /// The elements of a 2-dim tensor as one vector per row (PyTorch's `tolist()`). Panics
    /// where [`DynTensor::try_to_vec2`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from([[1, 2, 3], [4, 5, 6]]);
    /// assert_eq!(t.t().to_vec2(), vec![vec![1, 4], vec![2, 5], vec![3, 6]]);
    /// assert!(t.reshape(&[6]).try_to_vec2().is_err());
    /// ```
    #[track_caller]
    pub fn to_vec2(&self) -> Vec<Vec<E>> {
        or_panic(self.try_to_vec2())
    }

    /// [`DynTensor::to_vec2`], or an error unless the tensor has 2 dims (or its device fails).
    pub fn try_to_vec2(&self) -> Result<Vec<Vec<E>>> {
        match *self.shape() {
            [r, c] => {
                let mut out = rows(self.try_to_vec()?, c);
                out.resize(r, Vec::new()); // rows of no columns
                Ok(out)
            }
            _ => Err(rank_error("to_vec2", self.shape(), 2)),
        }
    }

    /// The elements of a 3-dim tensor as nested vectors. Panics where
    /// [`DynTensor::try_to_vec3`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i32>::arange(0, 8, 1).view(&[2, 2, 2]);
    /// assert_eq!(t.to_vec3()[1], vec![vec![4, 5], vec![6, 7]]);
    /// ```
    #[track_caller]
    pub fn to_vec3(&self) -> Vec<Vec<Vec<E>>> {
        or_panic(self.try_to_vec3())
    }

    /// [`DynTensor::to_vec3`], or an error unless the tensor has 3 dims (or its device fails).
    pub fn try_to_vec3(&self) -> Result<Vec<Vec<Vec<E>>>> {
        match *self.shape() {
            [a, b, c] => {
                let mut out: Vec<Vec<Vec<E>>> = (0..a)
                    .map(|i| self.select(0, i as isize).try_to_vec2())
                    .collect::<Result<_>>()?;
                for m in &mut out {
                    m.resize(b, Vec::new());
                    debug_assert!(m.iter().all(|row| row.len() == c));
                }
                Ok(out)
            }
            _ => Err(rank_error("to_vec3", self.shape(), 3)),
        }
    }

    /// The views `self[0]`, `self[1]`, … along the first dim, as iterating a PyTorch tensor
    /// gives them. Panics for a 0-dim tensor (where [`DynTensor::try_iter`] fails).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from([[1, 2], [3, 4]]);
    /// let sums: Vec<i64> = t.iter().map(|row| row.sum().item()).collect();
    /// assert_eq!(sums, [3, 7]);
    /// for row in &t {
    ///     row.narrow(0, 0, 1).fill_(0); // a view: writes reach `t`
    /// }
    /// assert_eq!(t.to_vec(), [0, 2, 0, 4]);
    /// ```
    #[track_caller]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = DynTensor<E>> + '_ {
        or_panic(self.try_iter())
    }

    /// [`DynTensor::iter`], or an error for a 0-dim tensor, which has no first dim.
    pub fn try_iter(&self) -> Result<impl ExactSizeIterator<Item = DynTensor<E>> + '_> {
        let Some(&n) = self.shape().first() else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "iter",
                "iteration over a 0-dim tensor (it has no first dim)".to_string(),
            ));
        };
        Ok((0..n).map(move |i| self.select(0, i as isize)))
    }
}

impl<'a, E: Element> IntoIterator for &'a DynTensor<E> {
    type Item = DynTensor<E>;
    type IntoIter = Box<dyn ExactSizeIterator<Item = DynTensor<E>> + 'a>;

    /// [`DynTensor::iter`]: views along the first dim; panics for a 0-dim tensor.
    #[track_caller]
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl<E: Element> TryFrom<&DynTensor<E>> for Vec<E> {
    type Error = Error;

    /// The elements of a 1-dim tensor; an error for any other rank (use
    /// [`DynTensor::to_vec`] to flatten on purpose).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let v: Vec<f64> = Vec::try_from(&DynTensor::from(vec![1.0, 2.0])).unwrap();
    /// assert_eq!(v, [1.0, 2.0]);
    /// assert!(Vec::<f64>::try_from(&DynTensor::<f64>::zeros(&[2, 2])).is_err());
    /// ```
    fn try_from(t: &DynTensor<E>) -> Result<Self> {
        if t.dim() != 1 {
            return Err(rank_error("Vec::try_from", t.shape(), 1));
        }
        t.try_to_vec()
    }
}

impl<E: Element> TryFrom<&DynTensor<E>> for Vec<Vec<E>> {
    type Error = Error;

    /// [`DynTensor::try_to_vec2`].
    fn try_from(t: &DynTensor<E>) -> Result<Self> {
        t.try_to_vec2()
    }
}

impl<E: Element, S: Shape, T: NestedData<E>, const N: usize> TryFrom<[T; N]> for Tensor<E, S> {
    type Error = Error;

    /// A named tensor shaped as the nested arrays; an error naming the dims when the arrays'
    /// nesting depth is not the number of dims of `S`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<i32, (Rows, Cols)>::try_from([[1, 2, 3], [4, 5, 6]]).unwrap();
    /// assert_eq!(t.shape(), &[2, 3]);
    /// assert!(Tensor::<i32, (Rows, Cols)>::try_from([1, 2, 3]).is_err());
    /// ```
    fn try_from(a: [T; N]) -> Result<Self> {
        DynTensor::from(a).try_refine_names()
    }
}
