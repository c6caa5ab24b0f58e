//! The operations every backend provides on its [`Buffer`], dispatched to that device's
//! kernels. Callers hold the storage's lock and have checked indices and layouts against it.

// `op` names the operation in device errors, which only a device backend raises.
#![cfg_attr(not(feature = "cuda"), allow(unused_variables))]

use super::Buffer;
use crate::backend::device::Device;
#[cfg(feature = "cuda")]
use crate::backend::device::mixed_devices;
use crate::dtype::Element;
use crate::error::Result;
use crate::layout::Layout;

#[cfg(feature = "cuda")]
use crate::backend::cuda::{self, CudaBuffer};

impl<E: Element> Buffer<E> {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Buffer::Cpu(v) => v.len(),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.len(),
        }
    }

    /// The device holding the elements.
    pub(crate) fn device(&self) -> Device {
        match self {
            Buffer::Cpu(_) => Device::Cpu,
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.device(),
        }
    }

    /// The element at storage position `index` (< len).
    pub(crate) fn get(&self, op: &'static str, index: usize) -> Result<E> {
        match self {
            Buffer::Cpu(v) => Ok(v[index]),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Ok(b.read::<E>(op, index, 1)?[0]),
        }
    }

    /// Overwrites the element at storage position `index` (< len).
    pub(crate) fn set(&mut self, op: &'static str, index: usize, value: E) -> Result<()> {
        match self {
            Buffer::Cpu(v) => v[index] = value,
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.write(op, index, &[value])?,
        }
        Ok(())
    }

    /// All elements in storage order, on the host.
    pub(crate) fn to_vec(&self, op: &'static str) -> Result<Vec<E>> {
        match self {
            Buffer::Cpu(v) => Ok(v.clone()),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.read(op, 0, b.len()),
        }
    }

    /// The elements of `layout` in row-major order, on the host.
    pub(crate) fn gather_to_vec(&self, op: &'static str, layout: &Layout) -> Result<Vec<E>> {
        match self {
            Buffer::Cpu(v) => Ok(crate::backend::cpu::gather_to_vec(v, layout)),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => cuda::copy::gather_to_host(op, b, layout),
        }
    }

    /// The elements of `layout` in a new contiguous buffer on the same device.
    pub(crate) fn gather(&self, op: &'static str, layout: &Layout) -> Result<Buffer<E>> {
        match self {
            Buffer::Cpu(v) => Ok(Buffer::Cpu(crate::backend::cpu::gather_to_vec(v, layout))),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Ok(Buffer::Cuda(cuda::copy::cast(op, b, layout, E::DTYPE)?)),
        }
    }

    /// The elements of `layout` converted to `F`, in a new contiguous buffer on the same device.
    pub(crate) fn cast<F: Element>(&self, op: &'static str, layout: &Layout) -> Result<Buffer<F>> {
        match self {
            Buffer::Cpu(v) => Ok(Buffer::Cpu(crate::backend::cpu::map_to_vec(
                v,
                layout,
                |x: E| x.cast::<F>(),
            ))),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Ok(Buffer::Cuda(cuda::copy::cast(op, b, layout, F::DTYPE)?)),
        }
    }

    /// Writes `value` at every element of `layout` (which has no two indices on one element).
    pub(crate) fn fill(&mut self, op: &'static str, layout: &Layout, value: E) -> Result<()> {
        match self {
            Buffer::Cpu(v) => crate::backend::cpu::fill_strided(v, layout, value),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => cuda::copy::fill(op, b, layout, value)?,
        }
        Ok(())
    }

    /// Copies the elements of `src_layout` over `src` into `dst_layout` over `self` (same
    /// sizes), converting to `E`. `src` is another storage's buffer on the same device.
    pub(crate) fn copy_from<F: Element>(
        &mut self,
        op: &'static str,
        dst_layout: &Layout,
        src: &Buffer<F>,
        src_layout: &Layout,
    ) -> Result<()> {
        match (self, src) {
            (Buffer::Cpu(d), Buffer::Cpu(s)) => {
                crate::backend::cpu::copy_cast(d, dst_layout, s, src_layout);
                Ok(())
            }
            #[cfg(feature = "cuda")]
            (Buffer::Cuda(d), Buffer::Cuda(s)) => {
                cuda::copy::copy(op, d, dst_layout, s, src_layout)
            }
            #[cfg(feature = "cuda")]
            (d, s) => Err(mixed_devices(op, d.device(), s.device())),
        }
    }

    /// The buffer's elements moved to `device`: the elements of `layout`, contiguous.
    pub(crate) fn to_device(
        &self,
        op: &'static str,
        layout: &Layout,
        device: Device,
    ) -> Result<Buffer<E>> {
        match device {
            Device::Cpu => Ok(Buffer::Cpu(self.gather_to_vec(op, layout)?)),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => {
                let dev = cuda::device::get(op, ordinal)?;
                let on_device = match self {
                    // A contiguous CPU view is uploaded as it is; others are gathered first.
                    Buffer::Cpu(v) if layout.is_contiguous() => {
                        let start = layout.offset();
                        CudaBuffer::from_host(op, &dev, &v[start..start + layout.numel()])?
                    }
                    Buffer::Cpu(_) => {
                        CudaBuffer::from_host(op, &dev, &self.gather_to_vec(op, layout)?)?
                    }
                    // Between CUDA devices through the host.
                    Buffer::Cuda(_) => {
                        CudaBuffer::from_host(op, &dev, &self.gather_to_vec(op, layout)?)?
                    }
                };
                Ok(Buffer::Cuda(on_device))
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(crate::backend::device::no_cuda_feature(op)),
        }
    }

    /// A buffer of `len` copies of `value` on `device`.
    pub(crate) fn full(
        op: &'static str,
        len: usize,
        value: E,
        device: Device,
    ) -> Result<Buffer<E>> {
        match device {
            Device::Cpu => Ok(Buffer::Cpu(crate::backend::cpu::full(len, value))),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => {
                let dev = cuda::device::get(op, ordinal)?;
                let zero_bits = crate::backend::cuda::is_all_zero_bits(value);
                let mut b = if zero_bits {
                    CudaBuffer::zeros(op, &dev, E::DTYPE, len)?
                } else {
                    CudaBuffer::alloc(op, &dev, E::DTYPE, len)?
                };
                if !zero_bits {
                    cuda::copy::fill(op, &mut b, &Layout::contiguous(&[len])?, value)?;
                }
                Ok(Buffer::Cuda(b))
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(crate::backend::device::no_cuda_feature(op)),
        }
    }
}
