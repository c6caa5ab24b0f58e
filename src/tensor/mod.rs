//! [`DynTensor`]: the positional tensor with a run-time rank, PyTorch's tensor model.
//!
//! A `DynTensor<E>` is a [`Storage<E>`] handle plus a [`Layout`]. View operations (indexing,
//! `select`, `narrow`, `transpose`, `permute`, `expand`, `view`, …) return new tensors over
//! the same storage; only `clone`, `contiguous` on a non-contiguous tensor, `reshape` when a
//! view is impossible, and the compute operations allocate.
//!
//! Fallible operations come in two forms: `try_op` returns [`Result`](crate::Result), and `op`
//! panics with the same message. Dims are `isize` and may be negative (counted from the end).

mod cast;
mod collections;
mod create;
mod display;
pub(crate) mod index;
mod inplace;
mod random;
mod slice;
mod view;
mod view_inplace;

pub use create::NestedData;
pub(crate) use index as index_spec;
pub use index::{Idx, NewAxis};

use crate::autograd::Meta;
use crate::backend::device::Device;
use crate::dtype::{DType, Element};
use crate::error::Result;
pub(crate) use crate::error::or_panic;
use crate::layout::Layout;
use crate::storage::{Buffer, HostBuffer, Storage};
use std::sync::Arc;

/// A strided view of a shared storage, with a run-time number of dims.
///
/// `Clone` copies the elements into a new storage (PyTorch's `clone()`); use
/// [`DynTensor::shallow_clone`] for another handle to the same storage.
///
/// ```
/// use namedtensor::DynTensor;
/// let points = DynTensor::from_vec(vec![4.0f32, 1.0, 5.0, 3.0, 2.0, 1.0], &[3, 2]);
/// assert_eq!(points.shape(), &[3, 2]);
/// assert_eq!(points.stride(), &[2, 1]);
/// let second = points.select(0, 1);            // a view: offset 2, stride [1]
/// assert_eq!(second.storage_offset(), 2);
/// second.set(&[0], 10.0);                        // writes through to `points`
/// assert_eq!(points.get(&[1, 0]), 10.0);
/// ```
pub struct DynTensor<E: Element = f32> {
    storage: Storage<E>,
    layout: Layout,
    /// Graph membership: `None` for a tensor that does not require grad (no cost), else
    /// its leaf accumulator or the node of the op that made it (see `autograd`).
    autograd: Option<Arc<Meta>>,
}

impl<E: Element> DynTensor<E> {
    /// A tensor viewing `storage` through `layout`; fails if the layout reaches past the end.
    ///
    /// ```
    /// use namedtensor::{DynTensor, Layout, Storage};
    /// let s = Storage::from_vec(vec![1i32, 2, 3, 4]);
    /// let t = DynTensor::try_from_parts(s, Layout::new(&[2], &[2], 1).unwrap()).unwrap();
    /// assert_eq!(t.to_vec(), vec![2, 4]);
    /// ```
    pub fn try_from_parts(storage: Storage<E>, layout: Layout) -> Result<Self> {
        layout.check_within("from_parts", storage.len())?;
        Ok(DynTensor {
            storage,
            layout,
            autograd: None,
        })
    }

    /// A tensor over a fresh storage holding `data` in row-major order of `layout` (which
    /// must be contiguous from offset 0).
    pub(crate) fn from_contiguous_vec(
        data: impl Into<HostBuffer<E>>,
        sizes: &[usize],
    ) -> Result<Self> {
        let layout = Layout::contiguous(sizes)?;
        let data = data.into();
        debug_assert_eq!(data.len(), layout.numel());
        Ok(DynTensor {
            storage: Storage::from_host_buffer(data),
            layout,
            autograd: None,
        })
    }

    /// A tensor over a fresh storage holding `buffer`, contiguous from offset 0 in `sizes`.
    pub(crate) fn from_contiguous_buffer(buffer: Buffer<E>, sizes: &[usize]) -> Result<Self> {
        let layout = Layout::contiguous(sizes)?;
        debug_assert_eq!(buffer.len(), layout.numel());
        Ok(DynTensor {
            storage: Storage::from_buffer(buffer),
            layout,
            autograd: None,
        })
    }

    /// A copy of the viewed elements in a new contiguous storage on the same device.
    pub(crate) fn deep_copy(&self, op: &'static str) -> Result<Self> {
        let buffer = self.storage.read().gather(op, &self.layout)?;
        let out = DynTensor::from_contiguous_buffer(buffer, self.shape())?;
        Ok(crate::autograd::identity(op, self, out))
    }

    /// A tensor on the same storage with another layout (checked against the storage; an
    /// empty layout reaches no element, so its offset may lie anywhere, as in `check_fits`).
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        debug_assert!(layout.numel() == 0 || layout.required_storage_len() <= self.storage.len());
        DynTensor {
            storage: self.storage.clone(),
            layout,
            autograd: None,
        }
    }

    /// This tensor's graph membership (`None`: it does not require grad).
    pub(crate) fn meta(&self) -> Option<&Arc<Meta>> {
        self.autograd.as_ref()
    }

    /// This tensor with graph membership `meta` instead of its own.
    pub(crate) fn with_meta(mut self, meta: Option<Arc<Meta>>) -> Self {
        self.autograd = meta;
        self
    }

    /// The size of every dim (PyTorch's `shape`/`size()`).
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::<f32>::zeros(&[3, 4]).shape(), &[3, 4]);
    /// ```
    pub fn shape(&self) -> &[usize] {
        self.layout.sizes()
    }

    /// The size of dim `dim`; panics if `dim` is out of range (see [`DynTensor::try_size`]).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[3, 4]);
    /// assert_eq!((t.size(0), t.size(-1)), (3, 4));
    /// ```
    #[track_caller]
    pub fn size(&self, dim: isize) -> usize {
        or_panic(self.try_size(dim))
    }

    /// The size of dim `dim`, or an error if it is out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::zeros(&[3]).try_size(1).is_err());
    /// ```
    pub fn try_size(&self, dim: isize) -> Result<usize> {
        let d = crate::layout::normalize_dim("size", dim, self.dim())?;
        Ok(self.shape()[d])
    }

    /// The stride of every dim, in elements.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[3, 4, 5]).transpose(0, 2);
    /// assert_eq!(t.stride(), &[1, 5, 20]);
    /// ```
    pub fn stride(&self) -> &[usize] {
        self.layout.strides()
    }

    /// The storage index of the first element.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[3, 2]);
    /// assert_eq!(t.select(0, 2).storage_offset(), 4);
    /// ```
    pub fn storage_offset(&self) -> usize {
        self.layout.offset()
    }

    /// The layout (sizes, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The storage this tensor is a view of.
    pub fn storage(&self) -> &Storage<E> {
        &self.storage
    }

    /// Number of dims (PyTorch's `dim()`/`ndim`).
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::<f32>::zeros(&[2, 3]).dim(), 2);
    /// ```
    pub fn dim(&self) -> usize {
        self.layout.rank()
    }

    /// Number of elements.
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::<f32>::zeros(&[2, 3]).numel(), 6);
    /// ```
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The element type's tag.
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::<i64>::zeros(&[1]).dtype(), namedtensor::DType::I64);
    /// ```
    pub fn dtype(&self) -> DType {
        E::DTYPE
    }

    /// The device holding the storage.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// Whether the elements are in row-major order without gaps.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// assert!(t.is_contiguous());
    /// assert!(!t.t().is_contiguous());
    /// ```
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Another handle to the same storage with the same layout (no copy).
    ///
    /// ```
    /// let a = namedtensor::DynTensor::<f32>::zeros(&[2]);
    /// let b = a.shallow_clone();
    /// b.fill_(1.0);
    /// assert_eq!(a.to_vec(), vec![1.0, 1.0]);
    /// ```
    pub fn shallow_clone(&self) -> Self {
        self.with_layout(self.layout.clone())
            .with_meta(self.autograd.clone())
    }

    /// Whether `self` and `other` view the same storage.
    ///
    /// ```
    /// let a = namedtensor::DynTensor::<f32>::zeros(&[2, 2]);
    /// assert!(a.shares_storage(&a.t()));
    /// ```
    pub fn shares_storage(&self, other: &DynTensor<E>) -> bool {
        self.storage.same_storage(&other.storage)
    }

    /// The elements in row-major order of the shape (copied to the host from a device).
    /// Panics where [`DynTensor::try_to_vec`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
    /// assert_eq!(t.t().to_vec(), vec![1, 4, 2, 5, 3, 6]);
    /// ```
    #[track_caller]
    pub fn to_vec(&self) -> Vec<E> {
        or_panic(self.try_to_vec())
    }

    /// [`DynTensor::to_vec`], or an error if the device fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<u8>::ones(&[2]);
    /// assert_eq!(t.try_to_vec().unwrap(), vec![1, 1]);
    /// ```
    pub fn try_to_vec(&self) -> Result<Vec<E>> {
        self.storage.read().gather_to_vec("to_vec", &self.layout)
    }

    /// A copy of this tensor on `device`, contiguous; this tensor itself (another handle to
    /// its storage, no copy) if it is already there, as PyTorch's `to(device)`. Between two
    /// CUDA devices the elements go through the host.
    ///
    /// Fails with [`ErrorKind::Device`](crate::ErrorKind) if the device is unavailable (see
    /// [`Device::check_available`]) or fails.
    ///
    /// ```
    /// use namedtensor::{Device, DynTensor};
    /// let t = DynTensor::<f32>::arange(0.0, 6.0, 1.0).view(&[2, 3]);
    /// if namedtensor::cuda_is_available() {
    ///     let g = t.t().to_device(Device::Cuda(0)).unwrap(); // [3, 2], contiguous on the GPU
    ///     assert_eq!(g.device(), Device::Cuda(0));
    ///     assert_eq!(g.to_device(Device::Cpu).unwrap().to_vec(), t.t().to_vec());
    /// } else {
    ///     assert!(t.to_device(Device::Cuda(0)).is_err());
    /// }
    /// ```
    pub fn to_device(&self, device: Device) -> Result<DynTensor<E>> {
        if device == self.device() {
            return Ok(self.shallow_clone());
        }
        let buffer = self
            .storage
            .read()
            .to_device("to_device", &self.layout, device)?;
        let out = DynTensor::from_contiguous_buffer(buffer, self.shape())?;
        Ok(crate::autograd::identity("to_device", self, out))
    }

    /// Moves this tensor's storage to `device` in place, so that every tensor viewing it
    /// (the layer's own handle, an optimiser's, a view) finds its elements there; see
    /// `Storage::move_to`. What `Module::to_device` does to each parameter.
    pub(crate) fn move_storage_to(&self, op: &'static str, device: Device) -> Result<()> {
        self.storage.move_to(op, device)
    }

    /// [`DynTensor::to_device`] with `Device::Cuda(ordinal)`.
    ///
    /// ```no_run
    /// let g = namedtensor::DynTensor::<f32>::ones(&[3]).cuda(0)?;
    /// assert_eq!(g.device(), namedtensor::Device::Cuda(0));
    /// # Ok::<(), namedtensor::Error>(())
    /// ```
    pub fn cuda(&self, ordinal: usize) -> Result<DynTensor<E>> {
        self.to_device(Device::Cuda(ordinal))
    }

    /// [`DynTensor::to_device`] with `Device::Cpu`.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::ones(&[3]);
    /// assert!(t.cpu().unwrap().shares_storage(&t)); // already there: no copy
    /// ```
    pub fn cpu(&self) -> Result<DynTensor<E>> {
        self.to_device(Device::Cpu)
    }
}

impl<E: Element> Clone for DynTensor<E> {
    /// A copy of the elements in a new contiguous storage on the same device (PyTorch's
    /// `clone()`). Panics if the device fails.
    fn clone(&self) -> Self {
        or_panic(self.deep_copy("clone"))
    }
}
