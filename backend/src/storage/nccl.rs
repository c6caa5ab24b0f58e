//! The storage side of NCCL (feature `nccl`): each call takes its storage's lock as every
//! operation does (exclusive for a storage NCCL writes, shared for one it only reads) and
//! hands the CUDA buffer to the backend's communicator (`backend/cuda/nccl.rs`), which issues
//! NCCL's call on the device's stream while the lock is held. `dist/` calls these on its
//! staged copies of tensors.

use super::{Buffer, Storage};
use crate::backend::cuda::nccl::{NcclComm, Reduction};
use crate::backend::device::Device;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};

/// The error for a storage NCCL cannot work on.
fn not_on_device(op: &'static str, comm: &NcclComm, device: Device) -> Error {
    Error::new(
        ErrorKind::Device,
        op,
        format!(
            "the NCCL communicator runs on {}, the tensor is on {device}",
            comm.device()
        ),
    )
}

/// Every rank's `data` combined by `how`, into `data` on every rank.
#[doc(hidden)]
pub fn all_reduce_<E: Element>(
    comm: &NcclComm,
    op: &'static str,
    data: &Storage<E>,
    how: Reduction,
) -> Result<()> {
    // SAFETY: NCCL writes the buffer's elements in place.
    match &mut *unsafe { data.write(op) }? {
        Buffer::Cuda(b) => comm.all_reduce_::<E>(op, b, how),
        other => Err(not_on_device(op, comm, other.device())),
    }
}

/// Rank `root`'s `data`, into `data` on every rank.
#[doc(hidden)]
pub fn broadcast_<E: Element>(
    comm: &NcclComm,
    op: &'static str,
    data: &Storage<E>,
    root: usize,
) -> Result<()> {
    // SAFETY: NCCL writes the buffer's elements in place.
    match &mut *unsafe { data.write(op) }? {
        Buffer::Cuda(b) => comm.broadcast_::<E>(op, b, root),
        other => Err(not_on_device(op, comm, other.device())),
    }
}

/// Every rank's `data`, each padded to `count` elements, in rank order: a new storage of
/// `size × count` elements (see [`NcclComm::all_gather`]).
#[doc(hidden)]
pub fn all_gather<E: Element>(
    comm: &NcclComm,
    op: &'static str,
    data: &Storage<E>,
    count: usize,
) -> Result<Storage<E>> {
    let out = match &*data.read() {
        Buffer::Cuda(b) => comm.all_gather::<E>(op, b, count)?,
        other => return Err(not_on_device(op, comm, other.device())),
    };
    Ok(Storage::from_buffer(Buffer::Cuda(out)))
}

/// This rank's part of every rank's `data` (`size` equal parts) combined by `how`, as a new
/// storage.
#[doc(hidden)]
pub fn reduce_scatter<E: Element>(
    comm: &NcclComm,
    op: &'static str,
    data: &Storage<E>,
    how: Reduction,
) -> Result<Storage<E>> {
    let out = match &*data.read() {
        Buffer::Cuda(b) => comm.reduce_scatter::<E>(op, b, how)?,
        other => return Err(not_on_device(op, comm, other.device())),
    };
    Ok(Storage::from_buffer(Buffer::Cuda(out)))
}
