//! In-place view ops (`unsqueeze_`, `squeeze_`, `squeeze_dim_`, `t_`, `transpose_`,
//! `as_strided_`): PyTorch's methods that change a tensor's sizes and strides without touching
//! its elements. Each takes `&mut self`, so no other handle can observe the change: handles
//! made earlier (views, clones) keep their own shape, as Rust's borrow rules demand. Only the
//! positional tensor has them; a named tensor's dims are part of its type, so the named
//! layer's shape changes return a new tensor.
//!
//! # Invariants
//! - On success `self` becomes exactly the view the out-of-place op returns (same storage,
//!   layout, and, under grad mode, the same recorded view op), so gradients flow as they would
//!   through `*self = self.unsqueeze(d)`.
//! - On error `self` is unchanged.
//! - A leaf that requires grad is refused (with or without grad mode): the handle is the
//!   parameter's, and turning it into a view would detach the user's handle from the leaf
//!   that receives the gradient.

use super::DynTensor;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::or_panic;

impl<E: Element> DynTensor<E> {
    /// Replaces `self` by `view(self)`, the out-of-place form of `op`, unless `self` is a leaf
    /// that requires grad.
    fn view_in_place(
        &mut self,
        op: &'static str,
        view: impl FnOnce(&Self) -> Result<Self>,
    ) -> Result<&mut Self> {
        if self.requires_grad() && self.is_leaf() {
            return Err(Error::new(
                ErrorKind::Autograd,
                op,
                format!(
                    "`{op}` would change the shape of a leaf that requires grad in place; use \
                     the out-of-place form (`{}`), whose result is a view that passes its \
                     gradient to the leaf",
                    op.trim_end_matches('_')
                ),
            ));
        }
        *self = view(self)?;
        Ok(self)
    }

    /// Inserts a dim of size 1 at `dim`, in place (see [`DynTensor::unsqueeze`]).
    /// Panics where [`DynTensor::try_unsqueeze_`] fails.
    ///
    /// ```
    /// let mut t = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// t.unsqueeze_(0).unsqueeze_(-1);
    /// assert_eq!(t.shape(), &[1, 2, 3, 1]);
    /// ```
    #[track_caller]
    pub fn unsqueeze_(&mut self, dim: isize) -> &mut Self {
        or_panic(self.try_unsqueeze_(dim))
    }

    /// [`DynTensor::unsqueeze_`], or an error (`self` unchanged) for a dim out of range or a
    /// leaf that requires grad.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let mut t = DynTensor::<f32>::zeros(&[2]);
    /// assert_eq!(t.try_unsqueeze_(3).unwrap_err().kind(), ErrorKind::DimOutOfRange);
    /// assert_eq!(t.shape(), &[2]);
    /// ```
    pub fn try_unsqueeze_(&mut self, dim: isize) -> Result<&mut Self> {
        self.view_in_place("unsqueeze_", |t| t.try_unsqueeze(dim))
    }

    /// Removes every dim of size 1, in place (see [`DynTensor::squeeze`]).
    /// Panics where [`DynTensor::try_squeeze_`] fails.
    ///
    /// ```
    /// let mut t = namedtensor::DynTensor::<f32>::zeros(&[1, 3, 1]);
    /// t.squeeze_();
    /// assert_eq!(t.shape(), &[3]);
    /// ```
    #[track_caller]
    pub fn squeeze_(&mut self) -> &mut Self {
        or_panic(self.try_squeeze_())
    }

    /// [`DynTensor::squeeze_`], or an error for a leaf that requires grad.
    pub fn try_squeeze_(&mut self) -> Result<&mut Self> {
        self.view_in_place("squeeze_", |t| Ok(t.squeeze()))
    }

    /// Removes dim `dim` if its size is 1, in place (see [`DynTensor::squeeze_dim`]).
    /// Panics where [`DynTensor::try_squeeze_dim_`] fails.
    ///
    /// ```
    /// let mut t = namedtensor::DynTensor::<f32>::zeros(&[1, 3, 1]);
    /// t.squeeze_dim_(-1);
    /// assert_eq!(t.shape(), &[1, 3]);
    /// ```
    #[track_caller]
    pub fn squeeze_dim_(&mut self, dim: isize) -> &mut Self {
        or_panic(self.try_squeeze_dim_(dim))
    }

    /// [`DynTensor::squeeze_dim_`], or an error for a dim out of range or a leaf that
    /// requires grad.
    pub fn try_squeeze_dim_(&mut self, dim: isize) -> Result<&mut Self> {
        self.view_in_place("squeeze_dim_", |t| t.try_squeeze_dim(dim))
    }

    /// Swaps dims `dim0` and `dim1`, in place (see [`DynTensor::transpose`]).
    /// Panics where [`DynTensor::try_transpose_`] fails.
    ///
    /// ```
    /// let mut t = namedtensor::DynTensor::<f32>::zeros(&[2, 3, 4]);
    /// t.transpose_(0, 2);
    /// assert_eq!((t.shape(), t.stride()), (&[4, 3, 2][..], &[1, 4, 12][..]));
    /// ```
    #[track_caller]
    pub fn transpose_(&mut self, dim0: isize, dim1: isize) -> &mut Self {
        or_panic(self.try_transpose_(dim0, dim1))
    }

    /// [`DynTensor::transpose_`], or an error for a dim out of range or a leaf that requires
    /// grad.
    pub fn try_transpose_(&mut self, dim0: isize, dim1: isize) -> Result<&mut Self> {
        self.view_in_place("transpose_", |t| t.try_transpose(dim0, dim1))
    }

    /// Transposes a tensor of at most 2 dims, in place (see [`DynTensor::t`]).
    /// Panics where [`DynTensor::try_t_`] fails.
    ///
    /// ```
    /// let mut t = namedtensor::DynTensor::from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
    /// t.t_();
    /// assert_eq!(t.to_vec(), vec![1, 4, 2, 5, 3, 6]);
    /// ```
    #[track_caller]
    pub fn t_(&mut self) -> &mut Self {
        or_panic(self.try_t_())
    }

    /// [`DynTensor::t_`], or an error for a tensor of rank above 2 or a leaf that requires
    /// grad.
    pub fn try_t_(&mut self) -> Result<&mut Self> {
        self.view_in_place("t_", DynTensor::try_t)
    }

    /// Gives `self` the sizes, strides and storage offset given, in place (see
    /// [`DynTensor::as_strided`]). Panics where [`DynTensor::try_as_strided_`] fails.
    ///
    /// ```
    /// let mut t = namedtensor::DynTensor::from_vec(vec![0, 1, 2, 3, 4, 5], &[6]);
    /// t.as_strided_(&[2, 2], &[2, 1], 1);
    /// assert_eq!(t.to_vec(), vec![1, 2, 3, 4]);
    /// ```
    #[track_caller]
    pub fn as_strided_(&mut self, sizes: &[usize], strides: &[usize], offset: usize) -> &mut Self {
        or_panic(self.try_as_strided_(sizes, strides, offset))
    }

    /// [`DynTensor::as_strided_`], or an error for a view outside the storage or a leaf that
    /// requires grad.
    pub fn try_as_strided_(
        &mut self,
        sizes: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<&mut Self> {
        self.view_in_place("as_strided_", |t| t.try_as_strided(sizes, strides, offset))
    }
}
