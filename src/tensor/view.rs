//! View operations: new tensors over the same storage, no element copied.

use super::{DynTensor, or_panic};
use crate::autograd::ViewGrad;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, normalize_dim};

impl<E: Element> DynTensor<E> {
    /// Removes dim `dim`, keeping entry `index` (negative counts from the end). A view.
    /// Panics where [`DynTensor::try_select`] fails.
    ///
    /// ```
    /// let points = namedtensor::DynTensor::from_vec(vec![4., 1., 5., 3., 2., 1.], &[3, 2]);
    /// let p = points.select(0, 1);
    /// assert_eq!((p.shape(), p.stride(), p.storage_offset()), (&[2][..], &[1][..], 2));
    /// ```
    #[track_caller]
    pub fn select(&self, dim: isize, index: isize) -> Self {
        or_panic(self.try_select(dim, index))
    }

    /// [`DynTensor::select`], or an error for a dim or index out of range.
    pub fn try_select(&self, dim: isize, index: isize) -> Result<Self> {
        self.view_op("select", self.layout.select(dim, index)?, || {
            self.embedded(|l| l.select(dim, index))
        })
    }

    /// Keeps `length` entries of dim `dim` from `start` on. A view.
    /// Panics where [`DynTensor::try_narrow`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::arange(0.0, 12.0, 1.0).view(&[4, 3]);
    /// assert_eq!(t.narrow(0, 1, 2).to_vec(), vec![3., 4., 5., 6., 7., 8.]);
    /// ```
    #[track_caller]
    pub fn narrow(&self, dim: isize, start: isize, length: usize) -> Self {
        or_panic(self.try_narrow(dim, start, length))
    }

    /// [`DynTensor::narrow`], or an error when the range does not fit the dim.
    pub fn try_narrow(&self, dim: isize, start: isize, length: usize) -> Result<Self> {
        self.view_op("narrow", self.layout.narrow(dim, start, length)?, || {
            self.embedded(|l| l.narrow(dim, start, length))
        })
    }

    /// Python-style slice `start..end` with `step` along `dim`; absent bounds mean the ends and
    /// out-of-range bounds are clamped. A view. Panics where [`DynTensor::try_slice`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i64>::arange(0, 10, 1);
    /// assert_eq!(t.slice(0, Some(1), None, 3).to_vec(), vec![1, 4, 7]);
    /// assert_eq!(t.slice(0, Some(-3), Some(100), 1).to_vec(), vec![7, 8, 9]);
    /// ```
    #[track_caller]
    pub fn slice(&self, dim: isize, start: Option<isize>, end: Option<isize>, step: usize) -> Self {
        or_panic(self.try_slice(dim, start, end, step))
    }

    /// [`DynTensor::slice`], or an error for a bad dim or a zero step.
    pub fn try_slice(
        &self,
        dim: isize,
        start: Option<isize>,
        end: Option<isize>,
        step: usize,
    ) -> Result<Self> {
        self.view_op("slice", self.layout.slice(dim, start, end, step)?, || {
            self.embedded(|l| l.slice(dim, start, end, step))
        })
    }

    /// Swaps dims `dim0` and `dim1`. A view. Panics where [`DynTensor::try_transpose`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[3, 4, 5]).transpose(0, 2);
    /// assert_eq!((t.shape(), t.stride()), (&[5, 4, 3][..], &[1, 5, 20][..]));
    /// ```
    #[track_caller]
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Self {
        or_panic(self.try_transpose(dim0, dim1))
    }

    /// [`DynTensor::transpose`], or an error for a dim out of range.
    pub fn try_transpose(&self, dim0: isize, dim1: isize) -> Result<Self> {
        let layout = self.layout.transpose(dim0, dim1)?;
        self.view_op("transpose", layout, || {
            let mut perm: Vec<usize> = (0..self.dim()).collect();
            let d0 = normalize_dim("transpose", dim0, self.dim())?;
            let d1 = normalize_dim("transpose", dim1, self.dim())?;
            perm.swap(d0, d1);
            Ok(ViewGrad::Permute(perm))
        })
    }

    /// Transposes a matrix; 0-d and 1-d tensors are returned as they are. A view. Panics for
    /// rank > 2 (see [`DynTensor::try_t`]).
    ///
    /// ```
    /// let p = namedtensor::DynTensor::from_vec(vec![4., 1., 5., 3., 2., 1.], &[3, 2]);
    /// let pt = p.t();
    /// assert_eq!((pt.shape(), pt.stride()), (&[2, 3][..], &[1, 2][..]));
    /// assert!(pt.shares_storage(&p) && !pt.is_contiguous());
    /// ```
    #[track_caller]
    pub fn t(&self) -> Self {
        or_panic(self.try_t())
    }

    /// [`DynTensor::t`], or an error for a tensor of rank > 2.
    pub fn try_t(&self) -> Result<Self> {
        match self.dim() {
            0 | 1 => Ok(self.shallow_clone()),
            2 => self.try_transpose(0, 1),
            r => Err(Error::new(
                ErrorKind::InvalidArgument,
                "t",
                format!(
                    "t() expects a tensor of at most 2 dims, got rank {r} (shape {:?}); use \
                     transpose(dim0, dim1)",
                    self.shape()
                ),
            )),
        }
    }

    /// Reorders the dims: dim `i` of the result is dim `order[i]`. A view.
    /// Panics where [`DynTensor::try_permute`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3, 4]).permute(&[2, 0, 1]);
    /// assert_eq!(t.shape(), &[4, 2, 3]);
    /// ```
    #[track_caller]
    pub fn permute(&self, order: &[isize]) -> Self {
        or_panic(self.try_permute(order))
    }

    /// [`DynTensor::permute`], or an error if `order` is not a permutation of the dims.
    pub fn try_permute(&self, order: &[isize]) -> Result<Self> {
        self.view_op("permute", self.layout.permute(order)?, || {
            let perm = order
                .iter()
                .map(|&d| normalize_dim("permute", d, self.dim()))
                .collect::<Result<Vec<usize>>>()?;
            Ok(ViewGrad::Permute(perm))
        })
    }

    /// Broadcasts to `sizes` (size-1 dims grow with stride 0, new dims may be added on the
    /// left, `-1` keeps a size). A view; writing into it is refused.
    /// Panics where [`DynTensor::try_expand`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1, 2, 3], &[3, 1]).expand(&[2, 3, 4]);
    /// assert_eq!((t.shape(), t.stride()), (&[2, 3, 4][..], &[0, 1, 0][..]));
    /// ```
    #[track_caller]
    pub fn expand(&self, sizes: &[isize]) -> Self {
        or_panic(self.try_expand(sizes))
    }

    /// [`DynTensor::expand`], or an error if a dim of size other than 1 would change.
    pub fn try_expand(&self, sizes: &[isize]) -> Result<Self> {
        self.view_op("expand", self.layout.expand(sizes)?, || {
            Ok(ViewGrad::Expand)
        })
    }

    /// Expands to the shape of `other`. Panics where [`DynTensor::try_expand_as`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let row = DynTensor::from_vec(vec![1., 2.], &[2]);
    /// assert_eq!(row.expand_as(&DynTensor::<f32>::zeros(&[3, 2])).shape(), &[3, 2]);
    /// ```
    #[track_caller]
    pub fn expand_as<F: Element>(&self, other: &DynTensor<F>) -> Self {
        or_panic(self.try_expand_as(other))
    }

    /// [`DynTensor::expand_as`], or an error if the shapes do not broadcast.
    pub fn try_expand_as<F: Element>(&self, other: &DynTensor<F>) -> Result<Self> {
        let sizes: Vec<isize> = other.shape().iter().map(|&s| s as isize).collect();
        self.try_expand(&sizes)
    }

    /// Removes every dim of size 1. A view.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[1, 3, 1]);
    /// assert_eq!(t.squeeze().shape(), &[3]);
    /// ```
    #[track_caller]
    pub fn squeeze(&self) -> Self {
        or_panic(self.view_op("squeeze", self.layout.squeeze(), || Ok(ViewGrad::Reshape)))
    }

    /// Removes dim `dim` if its size is 1. A view.
    /// Panics where [`DynTensor::try_squeeze_dim`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[1, 3]);
    /// assert_eq!(t.squeeze_dim(0).shape(), &[3]);
    /// ```
    #[track_caller]
    pub fn squeeze_dim(&self, dim: isize) -> Self {
        or_panic(self.try_squeeze_dim(dim))
    }

    /// [`DynTensor::squeeze_dim`], or an error for a dim out of range.
    pub fn try_squeeze_dim(&self, dim: isize) -> Result<Self> {
        self.view_op("squeeze", self.layout.squeeze_dim(dim)?, || {
            Ok(ViewGrad::Reshape)
        })
    }

    /// Inserts a dim of size 1 at `dim` (in `-(rank+1)..=rank`). A view.
    /// Panics where [`DynTensor::try_unsqueeze`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// assert_eq!(t.unsqueeze(1).shape(), &[2, 1, 3]);
    /// ```
    #[track_caller]
    pub fn unsqueeze(&self, dim: isize) -> Self {
        or_panic(self.try_unsqueeze(dim))
    }

    /// [`DynTensor::unsqueeze`], or an error for a dim out of range.
    pub fn try_unsqueeze(&self, dim: isize) -> Result<Self> {
        self.view_op("unsqueeze", self.layout.unsqueeze(dim)?, || {
            Ok(ViewGrad::Reshape)
        })
    }

    /// The same elements with another shape (one entry may be `-1`), without copying.
    /// Panics where [`DynTensor::try_view`] fails — in particular when the strides do not
    /// allow it; [`DynTensor::reshape`] copies in that case.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 6]);
    /// assert_eq!(t.view(&[3, -1]).shape(), &[3, 4]);
    /// ```
    #[track_caller]
    pub fn view(&self, shape: &[isize]) -> Self {
        or_panic(self.try_view(shape))
    }

    /// [`DynTensor::view`], or an error: [`ErrorKind::ElementCount`] for another element count,
    /// [`ErrorKind::NotViewable`] when a copy would be needed (the message suggests `reshape`).
    ///
    /// ```
    /// let x = namedtensor::DynTensor::<f32>::zeros(&[3, 2]);
    /// let err = x.t().try_view(&[1, -1]).unwrap_err();
    /// assert!(err.to_string().contains("reshape"));
    /// ```
    pub fn try_view(&self, shape: &[isize]) -> Result<Self> {
        self.view_op("view", self.layout.view(shape)?, || Ok(ViewGrad::Reshape))
    }

    /// The same elements with another shape: a view when the strides allow it, otherwise a
    /// contiguous copy. Panics where [`DynTensor::try_reshape`] fails.
    ///
    /// ```
    /// let x = namedtensor::DynTensor::from_vec(vec![1, 2, 3, 4, 5, 6], &[3, 2]);
    /// let r = x.t().reshape(&[1, -1]);
    /// assert_eq!(r.to_vec(), vec![1, 3, 5, 2, 4, 6]);
    /// assert!(!r.shares_storage(&x));
    /// assert!(x.reshape(&[6]).shares_storage(&x));
    /// ```
    #[track_caller]
    pub fn reshape(&self, shape: &[isize]) -> Self {
        or_panic(self.try_reshape(shape))
    }

    /// [`DynTensor::reshape`], or an error when the element count differs.
    pub fn try_reshape(&self, shape: &[isize]) -> Result<Self> {
        match self.layout.view(shape) {
            Ok(layout) => self.view_op("reshape", layout, || Ok(ViewGrad::Reshape)),
            Err(e) if e.kind() == ErrorKind::NotViewable => self
                .try_contiguous()?
                .try_view(shape)
                .map_err(|e| Error::new(e.kind(), "reshape", e.message())),
            Err(e) => Err(Error::new(e.kind(), "reshape", e.message())),
        }
    }

    /// Merges dims `start..=end` into one: a view when possible, otherwise a copy.
    /// Panics where [`DynTensor::try_flatten`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3, 4]);
    /// assert_eq!(t.flatten(1, -1).shape(), &[2, 12]);
    /// assert_eq!(t.flatten(0, -1).shape(), &[24]);
    /// ```
    #[track_caller]
    pub fn flatten(&self, start: isize, end: isize) -> Self {
        or_panic(self.try_flatten(start, end))
    }

    /// [`DynTensor::flatten`], or an error for a bad dim range.
    pub fn try_flatten(&self, start: isize, end: isize) -> Result<Self> {
        match self.layout.flatten(start, end)? {
            Some(layout) => self.view_op("flatten", layout, || Ok(ViewGrad::Reshape)),
            None => {
                let c = self.try_contiguous()?;
                let layout = c
                    .layout
                    .flatten(start, end)?
                    .expect("contiguous layouts flatten");
                c.view_op("flatten", layout, || Ok(ViewGrad::Reshape))
            }
        }
    }

    /// A view with explicit sizes, strides and storage offset, checked against the storage's
    /// length. Panics where [`DynTensor::try_as_strided`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i32>::arange(0, 9, 1);
    /// let windows = t.as_strided(&[3, 3], &[2, 1], 1); // overlapping rows
    /// assert_eq!(windows.to_vec(), vec![1, 2, 3, 3, 4, 5, 5, 6, 7]);
    /// ```
    #[track_caller]
    pub fn as_strided(&self, sizes: &[usize], strides: &[usize], offset: usize) -> Self {
        or_panic(self.try_as_strided(sizes, strides, offset))
    }

    /// [`DynTensor::as_strided`], or [`ErrorKind::OutOfStorage`] when the view would reach
    /// past the end of the storage.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i32>::arange(0, 9, 1);
    /// assert!(t.try_as_strided(&[3, 3], &[3, 1], 1).is_err());
    /// ```
    pub fn try_as_strided(
        &self,
        sizes: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<Self> {
        let layout = Layout::new(sizes, strides, offset)?;
        layout.check_within("as_strided", self.storage.len())?;
        let base = self.storage_offset();
        self.view_op("as_strided", layout, || {
            let inside =
                offset >= base && layout_reach(sizes, strides, offset - base) <= self.numel();
            if !self.is_contiguous() || !inside {
                return Err(Error::new(
                    ErrorKind::Autograd,
                    "as_strided",
                    "the gradient of as_strided is supported on a contiguous input, for a view \
                     within the input's own elements; call contiguous() first",
                ));
            }
            Ok(ViewGrad::Embed(Layout::new(sizes, strides, offset - base)?))
        })
    }

    /// This tensor if it is contiguous (same storage, no copy), otherwise a contiguous copy.
    ///
    /// ```
    /// let p = namedtensor::DynTensor::from_vec(vec![4., 1., 5., 3., 2., 1.], &[3, 2]);
    /// let c = p.t().contiguous();
    /// assert_eq!(c.stride(), &[3, 1]);
    /// assert_eq!(c.storage().to_vec(), vec![4., 5., 2., 1., 3., 1.]);
    /// assert!(p.contiguous().shares_storage(&p));
    /// ```
    #[track_caller]
    pub fn contiguous(&self) -> Self {
        or_panic(self.try_contiguous())
    }

    /// [`DynTensor::contiguous`] as a `Result` (fails only for an unreachable device).
    pub fn try_contiguous(&self) -> Result<Self> {
        if self.is_contiguous() {
            return Ok(self.shallow_clone());
        }
        self.deep_copy("contiguous")
    }
}

impl<E: Element> DynTensor<E> {
    /// This tensor's storage seen through `layout`, a view made by op `op`: recorded with the
    /// gradient rule `how` gives when this tensor requires grad (and grad mode is on).
    pub(crate) fn view_op(
        &self,
        op: &'static str,
        layout: Layout,
        how: impl FnOnce() -> Result<ViewGrad>,
    ) -> Result<Self> {
        let out = self.with_layout(layout);
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        crate::autograd::view(op, self, out, how()?)
    }

    /// The gradient rule of a view that selects elements: `f` applied to a contiguous
    /// layout of this tensor's shape.
    pub(crate) fn embedded(&self, f: impl FnOnce(&Layout) -> Result<Layout>) -> Result<ViewGrad> {
        Ok(ViewGrad::Embed(f(&Layout::contiguous(self.shape())?)?))
    }
}

/// One past the last storage index that sizes `sizes` and strides `strides` reach from
/// `offset` (0 for an empty view); the sizes were checked to fit a storage, so nothing
/// overflows.
fn layout_reach(sizes: &[usize], strides: &[usize], offset: usize) -> usize {
    if sizes.contains(&0) {
        return 0;
    }
    offset
        + 1
        + sizes
            .iter()
            .zip(strides)
            .map(|(&s, &st)| (s - 1) * st)
            .sum::<usize>()
}
