//! Writes through a view: element `set`, `fill_`, `zero_`, `copy_`.
//!
//! In-place methods take `&self`: the storage is shared by design and guarded by its lock (see
//! [`crate::storage`] for the aliasing rules), so a write through any view is visible through
//! every other view of the same storage. A view in which two indices reach one element
//! (stride 0 after `expand`) cannot be written to.

use super::{DynTensor, or_panic};
use crate::backend::device::same_device;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::with_write_read_buffers;

impl<E: Element> DynTensor<E> {
    /// Fails with [`ErrorKind::OverlappingWrite`] if several indices share one element.
    ///
    /// The rule is the same on every device: a write whose result would depend on the order in
    /// which the elements are visited is refused, whether the overlap comes from `expand`
    /// (stride 0) or from an `as_strided` view whose strides make indices collide.
    pub(crate) fn check_overlap(&self, op: &'static str) -> Result<()> {
        if self.layout.has_internal_overlap() {
            let cause = if self.layout.has_broadcast_dim() {
                "a dim of stride 0, as made by expand"
            } else {
                "strides under which two indices reach one element"
            };
            return Err(Error::new(
                ErrorKind::OverlappingWrite,
                op,
                format!(
                    "cannot write into a tensor in which several indices refer to one element \
                     (shape {:?}, strides {:?}: {cause}); call contiguous() or clone() first",
                    self.shape(),
                    self.stride()
                ),
            ));
        }
        Ok(())
    }

    /// The element at `index` (one entry per dim). Panics where [`DynTensor::try_get`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1, 2, 3, 4], &[2, 2]);
    /// assert_eq!(t.get(&[1, 0]), 3);
    /// ```
    #[track_caller]
    pub fn get(&self, index: &[usize]) -> E {
        or_panic(self.try_get(index))
    }

    /// [`DynTensor::get`], or an error for a wrong number of indices or one out of range.
    pub fn try_get(&self, index: &[usize]) -> Result<E> {
        let pos = self.layout.storage_index(index)?;
        self.storage.read().get("get", pos)
    }

    /// Overwrites the element at `index`; every view of the storage sees it.
    /// Panics where [`DynTensor::try_set`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 2]);
    /// t.t().set(&[1, 0], 5.0);
    /// assert_eq!(t.to_vec(), vec![0.0, 5.0, 0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn set(&self, index: &[usize], value: E) {
        or_panic(self.try_set(index, value))
    }

    /// [`DynTensor::set`], or an error for a wrong number of indices or one out of range.
    pub fn try_set(&self, index: &[usize], value: E) -> Result<()> {
        crate::autograd::check_inplace("set", self, false)?;
        let pos = self.layout.storage_index(index)?;
        // SAFETY: one element is written.
        unsafe { self.storage.write("set") }?.set("set", pos, value)
    }

    /// The value of a one-element tensor (of any rank). Panics where [`DynTensor::try_item`]
    /// fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![3.5f32], &[1, 1]);
    /// assert_eq!(t.item(), 3.5);
    /// ```
    #[track_caller]
    pub fn item(&self) -> E {
        or_panic(self.try_item())
    }

    /// [`DynTensor::item`], or an error unless the tensor has exactly one element.
    pub fn try_item(&self) -> Result<E> {
        if self.numel() != 1 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "item",
                format!(
                    "a tensor with {} elements (shape {:?}) cannot be converted to one value",
                    self.numel(),
                    self.shape()
                ),
            ));
        }
        let pos = self.storage_offset();
        self.storage.read().get("item", pos)
    }

    /// Writes `value` into every element of this view. Panics where [`DynTensor::try_fill_`]
    /// fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<i32>::zeros(&[2, 3]);
    /// t.select(1, 1).fill_(9);
    /// assert_eq!(t.to_vec(), vec![0, 9, 0, 0, 9, 0]);
    /// ```
    #[track_caller]
    pub fn fill_(&self, value: E) -> &Self {
        or_panic(self.try_fill_(value))
    }

    /// [`DynTensor::fill_`], or an error for an expanded (stride-0) view.
    pub fn try_fill_(&self, value: E) -> Result<&Self> {
        let constant = |old: &Self| DynTensor::full_on(old.shape(), value, old.device());
        if crate::autograd::write_in_place("fill_", self, false, constant)? {
            return Ok(self);
        }
        // SAFETY: the fill writes elements only.
        unsafe { self.storage.write("fill_") }?.fill("fill_", &self.layout, value)?;
        Ok(self)
    }

    /// Writes zeros into every element of this view.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[2]);
    /// t.zero_();
    /// assert_eq!(t.to_vec(), vec![0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn zero_(&self) -> &Self {
        self.fill_(E::ZERO)
    }

    /// [`DynTensor::zero_`], or an error for an expanded (stride-0) view.
    pub fn try_zero_(&self) -> Result<&Self> {
        self.try_fill_(E::ZERO)
    }

    /// Copies `src` into this view, broadcasting `src` to this shape and converting its
    /// element type. If `src` shares this storage the result is as if `src` had been copied
    /// first. Panics where [`DynTensor::try_copy_`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<f32>::zeros(&[2, 3]);
    /// t.copy_(&DynTensor::from_vec(vec![1i32, 2, 3], &[3]));
    /// assert_eq!(t.to_vec(), vec![1., 2., 3., 1., 2., 3.]);
    /// ```
    #[track_caller]
    pub fn copy_<F: Element>(&self, src: &DynTensor<F>) -> &Self {
        or_panic(self.try_copy_(src))
    }

    /// [`DynTensor::copy_`], or an error if `src` does not broadcast to this shape, this view
    /// is expanded, or the two tensors are on different devices. On error nothing is written.
    pub fn try_copy_<F: Element>(&self, src: &DynTensor<F>) -> Result<&Self> {
        same_device("copy_", self.device(), src.device())?;
        let recorded =
            crate::autograd::inplace_recorded("copy_", self, crate::autograd::tracks(src))?;
        self.check_overlap("copy_")?;
        let target: Vec<isize> = self.shape().iter().map(|&s| s as isize).collect();
        let src = src.try_expand(&target).map_err(|_| {
            Error::new(
                ErrorKind::ShapeMismatch,
                "copy_",
                format!(
                    "source of shape {:?} cannot be broadcast to the destination's shape {:?}",
                    src.shape(),
                    self.shape()
                ),
            )
        })?;
        if recorded {
            crate::autograd::record_inplace("copy_", self, |_| {
                crate::ops::converted::<F, E>(&src)
            })?;
            return Ok(self);
        }
        // A source on the destination's storage is read completely before anything is
        // written, by copying it to a storage of its own first.
        let same = src.storage.lock_order() == self.storage.lock_order();
        let src = if same { src.deep_copy("copy_")? } else { src };
        // SAFETY: the copy writes elements of the buffer only.
        unsafe {
            with_write_read_buffers("copy_", &self.storage, &src.storage, |dst, s| {
                dst.copy_from("copy_", &self.layout, s, &src.layout)
            })
        }?;
        Ok(self)
    }
}
