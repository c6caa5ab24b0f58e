//! NCCL for the collectives on CUDA tensors (feature `nccl`): [`Communicator::with_nccl`], and
//! the data phase of each collective when NCCL runs it. This file deals in tensors; NCCL is
//! reached through `storage/nccl.rs` (a storage's lock and its CUDA buffer) and the CUDA
//! backend's entry point (`backend/cuda/nccl.rs`), so no kernel or cudarc type is named here.
//!
//! # Invariants
//! - A communicator made by `with_nccl` has the ranks of the one it was made from, in the same
//!   order, its own MPI communicator (a duplicate: the header exchange and the CPU tensors'
//!   collectives) and one NCCL communicator on the device asked for (each rank its own
//!   device), both held by the MPI thread under one id and dropped together.
//! - The engine of a call follows from the communicator and the tensor's device alone: NCCL
//!   for a CUDA tensor of a communicator made with NCCL, MPI for everything else. A CUDA tensor
//!   on another device than the communicator's NCCL one is an error on every rank (no silent
//!   detour through host memory). The header check makes every rank's kind of device the
//!   same, so all ranks choose the same engine.
//! - The header exchange stays on MPI and comes first: ranks that disagree get an error
//!   before any NCCL call, never a hang.
//! - NCCL works on a staged copy: when the call starts, the caller's thread copies the tensor
//!   (through its view) into a new contiguous storage on the device, which only the call
//!   holds; the MPI thread issues NCCL's call on it once the headers agree; `wait` writes the
//!   result through the caller's view (`copy_`) or builds the new tensor from it. The tensor is
//!   therefore read when the call starts and written in `wait`, as with MPI, and a call that
//!   fails before its data phase changes no tensor.
//! - No host thread waits for the device: NCCL's call, the write-back and later work are
//!   ordered by the device's stream. An NCCL failure the device reports later (a peer gone)
//!   surfaces from a later operation on the device.
//!
//! # Limits (not yet handled; none can be seen without a GPU)
//! - A rank whose data phase fails after the headers agreed (a device allocation for
//!   `all_gather`'s or `reduce_scatter`'s output, or `i16`'s widening, out of memory; an
//!   error returned by NCCL's call) returns its error, but the other ranks' NCCL kernels wait
//!   for it on their devices, and their next synchronisation hangs. The fix is to make those
//!   allocations before the exchange, so that a failure is marked in the header.
//! - `with_nccl` checks what it can before NCCL's rendezvous (libnccl present, the device),
//!   but a rank that fails inside `ncclCommInitRank` leaves the others in it.

use super::collective::{header, split_sizes};
use super::header::{self, Header, Op, WORDS};
use super::runtime::{self, Group};
use super::{CollectiveTensor, CommHandle, Communicator, Pending, ReduceOp, wire};
use crate::backend::cuda::nccl::{self as engine, ID_BYTES, NcclComm, Reduction};
use crate::backend::device::Device;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, normalize_dim};
use crate::storage::{Storage, nccl as on_storage};
use crate::tensor::DynTensor;
use std::sync::Arc;

/// The backend's name for `op`.
fn reduction(op: ReduceOp) -> Reduction {
    match op {
        ReduceOp::Sum => Reduction::Sum,
        ReduceOp::Mean => Reduction::Mean,
        ReduceOp::Max => Reduction::Max,
        ReduceOp::Min => Reduction::Min,
    }
}

/// Checks that a tensor on `tensor` may go to the NCCL communicator on `nccl`.
fn check_device(op: &'static str, nccl: Device, tensor: Device) -> Result<()> {
    if tensor == nccl {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Device,
        op,
        format!(
            "this communicator's NCCL runs on {nccl} and the tensor is on {tensor}: move the \
             tensor to {nccl}, or use a communicator made with NCCL on {tensor}, or one without \
             NCCL (its collectives go through host memory)"
        ),
    ))
}

/// A copy of `t`'s elements (read through its view, in the order of its dims) in a new
/// contiguous storage on its device that nothing else holds, outside autograd.
fn staged<E: Element>(op: &'static str, t: &DynTensor<E>) -> Result<DynTensor<E>> {
    t.detach().deep_copy(op)
}

/// The NCCL communicator of a group whose communicator was made with NCCL.
fn nccl<'a>(g: &Group<'a>, op: &'static str) -> Result<&'a NcclComm> {
    g.nccl.ok_or_else(|| {
        Error::new(
            ErrorKind::Distributed,
            op,
            "the MPI thread holds no NCCL communicator for this communicator",
        )
    })
}

/// `storage` seen in `shape`, row-major from element `offset`.
fn part_of<E: Element>(
    storage: Storage<E>,
    shape: &[usize],
    offset: usize,
) -> Result<DynTensor<E>> {
    let strides = Layout::contiguous(shape)?.strides().to_vec();
    DynTensor::try_from_parts(storage, Layout::new(shape, &strides, offset)?)
}

impl Communicator {
    /// A communicator of the same ranks (same rank and size) whose collectives on CUDA tensors
    /// of `device` run on NCCL, GPU to GPU, instead of through host memory. A collective call:
    /// every rank of the group makes it, each with its own device (typically `cuda:r` for the
    /// rank's GPU on its machine). Rank 0 makes NCCL's unique id, MPI takes it to the others,
    /// and every rank joins on its device.
    ///
    /// On the new communicator, a collective on a CUDA tensor runs on NCCL (the tensor must be
    /// on `device`; another CUDA device is an error); on a CPU tensor it runs over MPI as on
    /// any communicator. The header check before every call stays on MPI: all ranks must use
    /// the same kind of device in a call. [`split`](Communicator::split) of it gives
    /// communicators without NCCL.
    ///
    /// ```no_run
    /// use namedtensor::dist::{self, ReduceOp};
    /// use namedtensor::{Device, DynTensor};
    /// # fn main() -> namedtensor::Result<()> {
    /// let world = dist::init()?;
    /// let gpu = Device::Cuda(0); // this rank's GPU
    /// let nccl = world.with_nccl(gpu)?;
    /// let grads = DynTensor::<f32>::ones(&[1 << 20]).to_device(gpu)?;
    /// nccl.all_reduce_(&grads, ReduceOp::Mean)?; // NCCL, on the device's stream
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// On every rank, when any rank fails: a device that is not CUDA or does not exist,
    /// NCCL that cannot be loaded ([`ErrorKind::Distributed`], saying that the MPI engine
    /// works without it), or NCCL failing to set the group up. Each rank whose own part failed
    /// gets its own error, the others one naming those ranks.
    pub fn with_nccl(&self, device: Device) -> Result<Communicator> {
        let name = Op::WithNccl.name();
        let own_error = engine::check_usable(name, device).err();
        let mut mine = Header::bare(Op::WithNccl);
        mine.device = Some(device);
        mine.failed = own_error.is_some();
        let (id, me, size) = (self.inner.id, self.inner.rank, self.inner.size);
        let rx = self.inner.rt.submit(name, move |st| -> Result<usize> {
            use mpi::traits::{Communicator as _, CommunicatorCollectives as _, Root as _};
            let parent = st.comm(id);
            let all = header::exchange(parent, &mine, size);
            header::agree(&mine, &all, me)?;
            // Rank 0's unique id, or a mark that it has none, reaches every rank.
            let made_id = (me == 0).then(|| engine::unique_id(name));
            let mut message = [0u8; 1 + ID_BYTES];
            if let Some(Ok(bytes)) = &made_id {
                message[0] = 1;
                message[1..].copy_from_slice(bytes);
            }
            parent.process_at_rank(0).broadcast_into(&mut message[..]);
            if message[0] != 1 {
                return Err(match made_id {
                    Some(Err(e)) => e,
                    _ => Error::new(
                        ErrorKind::Distributed,
                        name,
                        "rank 0 could not make NCCL's unique id (its own error says why); no \
                         communicator was made",
                    ),
                });
            }
            let mut unique = [0u8; ID_BYTES];
            unique.copy_from_slice(&message[1..]);
            let dup = parent.duplicate();
            let made = NcclComm::new(name, device, me, size, &unique);
            // Every rank learns which ranks joined, so that all succeed or all fail.
            let mut joined = vec![0u8; size];
            parent.all_gather_into(&[u8::from(made.is_ok())][..], &mut joined[..]);
            let made = made?;
            let failed: Vec<String> = (0..size)
                .filter(|&r| joined[r] == 0)
                .map(|r| r.to_string())
                .collect();
            if !failed.is_empty() {
                return Err(Error::new(
                    ErrorKind::Distributed,
                    name,
                    format!(
                        "NCCL could not be set up on rank(s) {} (their own errors say why); no \
                         communicator was made",
                        failed.join(", ")
                    ),
                ));
            }
            let new = st.insert(dup);
            st.insert_nccl(new, made);
            Ok(new)
        })?;
        let new = match rx.recv() {
            Ok(Ok(new)) => new,
            Ok(Err(e)) => return Err(own_error.unwrap_or(e)),
            Err(_) => return Err(runtime::thread_gone(name)),
        };
        Ok(Communicator {
            inner: Arc::new(CommHandle {
                rt: self.inner.rt.clone(),
                id: new,
                rank: me,
                size,
                nccl: Some(device),
            }),
        })
    }

    /// The device this communicator's NCCL runs on; `None` for a communicator made without
    /// [`with_nccl`](Communicator::with_nccl).
    pub fn nccl_device(&self) -> Option<Device> {
        self.inner.nccl
    }

    /// Whether a collective on a tensor of `device` goes to NCCL (where it is an error unless
    /// `device` is NCCL's own).
    pub(super) fn goes_to_nccl(&self, device: Device) -> bool {
        self.inner.nccl.is_some() && device != Device::Cpu
    }

    /// `Ok` where `t` is on this communicator's NCCL device.
    fn on_nccl_device<E: Element>(&self, op: &'static str, t: &DynTensor<E>) -> Result<()> {
        match self.inner.nccl {
            Some(nccl) => check_device(op, nccl, t.device()),
            None => Err(Error::new(
                ErrorKind::Distributed,
                op,
                "this communicator was made without NCCL",
            )),
        }
    }

    /// [`Communicator::all_reduce_start`] on NCCL.
    pub(super) fn nccl_all_reduce_start<E: Element>(
        &self,
        t: &DynTensor<E>,
        op: ReduceOp,
    ) -> Result<Pending<()>> {
        let name = Op::AllReduce.name();
        let t = t.shallow_clone();
        let local = self.on_nccl_device(name, &t).and_then(|()| {
            wire::wire_op::<E>(op, name)?;
            staged(name, &t)
        });
        let mine = header(Op::AllReduce, &t, op as u64, None);
        self.start_local(
            mine,
            local,
            move |g, _, staged| {
                on_storage::all_reduce_(nccl(g, name)?, name, staged.storage(), reduction(op))?;
                Ok(staged)
            },
            move |staged| t.try_copy_(&staged).map(drop),
        )
    }

    /// [`Communicator::broadcast_start`] on NCCL.
    pub(super) fn nccl_broadcast_start<E: Element>(
        &self,
        t: &DynTensor<E>,
        root: usize,
    ) -> Result<Pending<()>> {
        let name = Op::Broadcast.name();
        let t = t.shallow_clone();
        let (me, size) = (self.rank(), self.size());
        let local = if root >= size {
            Err(Error::new(
                ErrorKind::InvalidArgument,
                name,
                format!("root {root} is not a rank of a group of {size}"),
            ))
        } else {
            self.on_nccl_device(name, &t)
                .and_then(|()| staged(name, &t))
        };
        let mine = header(Op::Broadcast, &t, root as u64, None);
        self.start_local(
            mine,
            local,
            move |g, _, staged| {
                on_storage::broadcast_(nccl(g, name)?, name, staged.storage(), root)?;
                Ok(staged)
            },
            move |staged| {
                if me == root {
                    return Ok(());
                }
                t.try_copy_(&staged).map(drop)
            },
        )
    }

    /// [`Communicator::all_gather_start`] on NCCL: every rank sends as many elements as the
    /// largest part (NCCL's all-gather takes one count), and the parts are joined on the
    /// device.
    pub(super) fn nccl_all_gather_start<T: CollectiveTensor>(
        &self,
        t: &T,
        dim: isize,
    ) -> Result<Pending<T>> {
        let name = Op::AllGather.name();
        let t = t.raw().shallow_clone();
        let axis = normalize_dim(name, dim, t.dim());
        let local = axis
            .clone()
            .and_then(|_| self.on_nccl_device(name, &t))
            .and_then(|()| staged(name, &t));
        let mine = header(Op::AllGather, &t, 0, axis.as_ref().ok().copied());
        self.start_local(
            mine,
            local,
            move |g, all: &[[u64; WORDS]], staged| {
                let count = all.iter().map(|w| w[5] as usize).max().unwrap_or(0);
                let sizes: Vec<usize> = all.iter().map(|w| w[6] as usize).collect();
                let out = on_storage::all_gather(nccl(g, name)?, name, staged.storage(), count)?;
                Ok((out, count, sizes))
            },
            move |(out, count, sizes)| {
                let axis = axis?;
                let mut parts = Vec::with_capacity(sizes.len());
                for (r, along) in sizes.iter().enumerate() {
                    let mut shape = t.shape().to_vec();
                    shape[axis] = *along;
                    parts.push(part_of(out.clone(), &shape, r * count)?);
                }
                let refs: Vec<&DynTensor<T::Elem>> = parts.iter().collect();
                Ok(T::from_raw(DynTensor::try_cat(&refs, axis as isize)?))
            },
        )
    }

    /// [`Communicator::reduce_scatter_start`] on NCCL: NCCL's reduce-scatter where the parts
    /// are even; else an all-reduce of the whole, of which each rank keeps its part (as the
    /// MPI engine does).
    pub(super) fn nccl_reduce_scatter_start<T: CollectiveTensor>(
        &self,
        t: &T,
        dim: isize,
        op: ReduceOp,
    ) -> Result<Pending<T>> {
        let name = Op::ReduceScatter.name();
        let t = t.raw().shallow_clone();
        let (me, size) = (self.rank(), self.size());
        let axis = normalize_dim(name, dim, t.dim());
        // The dim moved to the front, so that each rank's part is one run of elements.
        let local = axis.clone().and_then(|a| {
            self.on_nccl_device(name, &t)?;
            wire::wire_op::<T::Elem>(op, name)?;
            staged(name, &t.detach().try_transpose(0, a as isize)?)
        });
        let rows = axis.as_ref().map_or(0, |&a| t.shape()[a]);
        let inner = t.numel().checked_div(rows).unwrap_or(0);
        let sizes = split_sizes(rows, size);
        let start = sizes[..me].iter().sum::<usize>() * inner;
        let even = sizes.iter().all(|&s| s == sizes[0]);
        let mine = header(Op::ReduceScatter, &t, op as u64, None);
        self.start_local(
            mine,
            local,
            move |g, _, front: DynTensor<T::Elem>| {
                let comm = nccl(g, name)?;
                let how = reduction(op);
                if even {
                    let part = on_storage::reduce_scatter(comm, name, front.storage(), how)?;
                    Ok((part, 0))
                } else {
                    on_storage::all_reduce_(comm, name, front.storage(), how)?;
                    Ok((front.storage().clone(), start))
                }
            },
            move |(out, offset)| {
                let axis = axis?;
                let mut shape = t.shape().to_vec();
                shape.swap(0, axis);
                shape[0] = sizes[me];
                let mut part = part_of(out, &shape, offset)?;
                if part.storage().len() != part.numel() {
                    // A part of the whole: its own storage, not a view that keeps the whole.
                    part = staged(name, &part)?;
                }
                Ok(T::from_raw(
                    part.try_transpose(0, axis as isize)?.try_contiguous()?,
                ))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_goes_to_nccl_only_on_its_device() {
        check_device("all_reduce_", Device::Cuda(1), Device::Cuda(1)).unwrap();
        let e = check_device("all_reduce_", Device::Cuda(0), Device::Cuda(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device);
        assert!(
            e.to_string().starts_with(
                "all_reduce_: this communicator's NCCL runs on cuda:0 and the tensor is on cuda:1"
            ),
            "{e}"
        );
    }

    #[test]
    fn reductions_keep_their_meaning() {
        for (op, r) in [
            (ReduceOp::Sum, Reduction::Sum),
            (ReduceOp::Mean, Reduction::Mean),
            (ReduceOp::Max, Reduction::Max),
            (ReduceOp::Min, Reduction::Min),
        ] {
            assert_eq!(reduction(op), r);
        }
    }
}
