//! The device allocation behind a CUDA [`Storage`](crate::Storage).
//!
//! A [`CudaBuffer`] is untyped device memory (`CudaSlice<u8>`) plus the element type and count:
//! the library's element trait does not require cudarc's `DeviceRepr`, and kernels take plain
//! pointers anyway. Host copies go through byte views of the host data, which is sound because
//! every element type is plain data without padding; `bool` is read back through `u8` so that
//! no byte other than 0 or 1 ever becomes a `bool`.

use super::device::CudaDevice;
use super::error::driver;
use super::rt::CudaSlice;
use crate::backend::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use std::sync::Arc;

/// Elements of one dtype in device memory.
pub struct CudaBuffer {
    data: CudaSlice<u8>,
    len: usize,
    dtype: DType,
    device: Arc<CudaDevice>,
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaBuffer {{ device: {}, dtype: {}, len: {} }}",
            self.device.device(),
            self.dtype,
            self.len
        )
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        // cudarc frees the memory on the device's stream without making the context current,
        // and a tensor may be dropped on a thread that never used this device (or last used
        // another one): make it current first. On failure the free reports to the context.
        let _ = self.device.bind("drop");
    }
}

fn bytes_of<E: Element>(data: &[E]) -> &[u8] {
    // SAFETY: every `Element` type is plain data without padding, so the slice's bytes are
    // initialised; the view borrows `data`.
    unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) }
}

impl CudaBuffer {
    /// Room for `len` elements of `dtype`, uninitialised (every byte pattern is a valid element
    /// once read back, see the module docs); the caller's kernel writes all of them.
    pub fn alloc(
        op: &'static str,
        device: &Arc<CudaDevice>,
        dtype: DType,
        len: usize,
    ) -> Result<CudaBuffer> {
        let bytes = len
            .checked_mul(dtype.size_in_bytes())
            .ok_or_else(|| Error::overflow(op, format!("{len} elements of {dtype}")))?;
        // Zero bytes is not a valid allocation size; an empty buffer holds one spare byte.
        // SAFETY: the memory is only read after a kernel or copy wrote it (or as raw bytes).
        let data = unsafe { device.stream().alloc::<u8>(bytes.max(1)) }.map_err(|e| {
            driver(
                op,
                device.device(),
                &format!("allocating {bytes} bytes for {len} elements of {dtype}"),
                e,
            )
        })?;
        Ok(CudaBuffer {
            data,
            len,
            dtype,
            device: Arc::clone(device),
        })
    }

    /// `len` elements of `dtype`, all bits zero (0, +0.0 or `false`).
    pub fn zeros(
        op: &'static str,
        device: &Arc<CudaDevice>,
        dtype: DType,
        len: usize,
    ) -> Result<CudaBuffer> {
        let mut buf = CudaBuffer::alloc(op, device, dtype, len)?;
        device
            .stream()
            .memset_zeros(&mut buf.data)
            .map_err(|e| driver(op, device.device(), "zeroing memory", e))?;
        Ok(buf)
    }

    /// A copy of `data` on `device`.
    pub fn from_host<E: Element>(
        op: &'static str,
        device: &Arc<CudaDevice>,
        data: &[E],
    ) -> Result<CudaBuffer> {
        let mut buf = CudaBuffer::alloc(op, device, E::DTYPE, data.len())?;
        buf.write(op, 0, data)?;
        Ok(buf)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device holding the memory.
    pub fn cuda_device(&self) -> &Arc<CudaDevice> {
        &self.device
    }

    /// `Device::Cuda(ordinal)`.
    pub fn device(&self) -> Device {
        self.device.device()
    }

    /// The memory, for kernel arguments.
    pub fn slice(&self) -> &CudaSlice<u8> {
        &self.data
    }

    /// The memory, for kernel arguments that are written.
    pub fn slice_mut(&mut self) -> &mut CudaSlice<u8> {
        &mut self.data
    }

    fn byte_range<E: Element>(&self, start: usize, len: usize) -> std::ops::Range<usize> {
        debug_assert_eq!(
            E::DTYPE,
            self.dtype,
            "buffer of {} read as {}",
            self.dtype,
            E::DTYPE
        );
        assert!(
            start + len <= self.len,
            "elements {start}..{} of a buffer of {}",
            start + len,
            self.len
        );
        let size = std::mem::size_of::<E>();
        start * size..(start + len) * size
    }

    /// Elements `start..start + len`, copied to the host (waits for pending work).
    pub fn read<E: Element>(&self, op: &'static str, start: usize, len: usize) -> Result<Vec<E>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let range = self.byte_range::<E>(start, len);
        let stream = self.device.stream();
        let what = format!("copying {len} elements to the host");
        let view = self.data.slice(range);
        let out = if E::DTYPE == DType::Bool {
            let mut bytes = vec![0u8; len];
            stream
                .memcpy_dtoh(&view, bytes.as_mut_slice())
                .map_err(|e| driver(op, self.device(), &what, e))?;
            self.device.synchronize(op)?;
            bytes
                .into_iter()
                .map(|b| E::from_i64((b != 0) as i64))
                .collect()
        } else {
            let mut out = vec![E::ZERO; len];
            // SAFETY: `E` is not bool, so any bytes form a valid `E` (integers and floats);
            // the view covers exactly `out`'s memory and ends before `out` is used again.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    out.as_mut_ptr() as *mut u8,
                    std::mem::size_of_val(out.as_slice()),
                )
            };
            stream
                .memcpy_dtoh(&view, bytes)
                .map_err(|e| driver(op, self.device(), &what, e))?;
            self.device.synchronize(op)?;
            out
        };
        Ok(out)
    }

    /// Overwrites elements `start..start + data.len()` with `data`, in stream order (`data`
    /// may be reused as soon as this returns).
    pub fn write<E: Element>(&mut self, op: &'static str, start: usize, data: &[E]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let range = self.byte_range::<E>(start, data.len());
        let device = Arc::clone(&self.device);
        let mut view = self.data.slice_mut(range);
        // No synchronisation: from pageable host memory (all of ours) the driver has copied
        // `data` into its staging memory when the call returns ("API synchronization
        // behavior" in NVIDIA's driver API reference), so the caller may drop or reuse it.
        device
            .stream()
            .memcpy_htod(bytes_of(data), &mut view)
            .map_err(|e| {
                driver(
                    op,
                    device.device(),
                    &format!("copying {} elements to the device", data.len()),
                    e,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn host_byte_views_cover_the_elements() {
        assert_eq!(bytes_of(&[1u8, 2]), &[1, 2]);
        assert_eq!(bytes_of(&[1.0f32]), &1.0f32.to_le_bytes());
        assert_eq!(bytes_of(&[f16::ONE, f16::ZERO]), &[0x00, 0x3c, 0, 0]);
        assert_eq!(bytes_of(&[true, false]), &[1, 0]);
        assert!(bytes_of::<i64>(&[]).is_empty());
    }
}
