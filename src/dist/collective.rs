//! The collectives on tensors: what each rank sends, and what it writes or returns.
//!
//! Each call reads its tensor on the caller's thread (any device, any view), hands the
//! elements to the MPI thread with its header, and completes on the caller's thread in
//! [`Pending::wait`](super::Pending::wait): an in-place call writes through the caller's view
//! with `copy_`, the others build a new tensor on the input's device. On a communicator made
//! with NCCL (feature `nccl`), a call on a CUDA tensor goes to `nccl.rs` instead: the same
//! header exchange, then NCCL on a device copy of the tensor.

use super::header::{Header, Op, WORDS};
use super::runtime::Group;
use super::wire::{self, WireBuf};
use super::{Communicator, Pending, ReduceOp};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::normalize_dim;
use crate::named::{DimTuple, HasDim};
use crate::named_tensor::Tensor;
use crate::storage::HostBuffer;
use crate::tensor::DynTensor;

mod sealed {
    pub trait Sealed {}
    impl<E: crate::Element> Sealed for crate::DynTensor<E> {}
    impl<E: crate::Element, S: crate::DimTuple, P: crate::DimTuple> Sealed for crate::Tensor<E, S, P> {}
}

/// A tensor the collectives take: a [`DynTensor`] or a named [`Tensor`], whose result keeps
/// its kind (and its names).
pub trait CollectiveTensor: Sized + sealed::Sealed {
    /// The element type.
    type Elem: Element;
    #[doc(hidden)]
    fn raw(&self) -> &DynTensor<Self::Elem>;
    #[doc(hidden)]
    fn from_raw(raw: DynTensor<Self::Elem>) -> Self;
}

impl<E: Element> CollectiveTensor for DynTensor<E> {
    type Elem = E;
    fn raw(&self) -> &DynTensor<E> {
        self
    }
    fn from_raw(raw: DynTensor<E>) -> Self {
        raw
    }
}

impl<E: Element, S: DimTuple, P: DimTuple> CollectiveTensor for Tensor<E, S, P> {
    type Elem = E;
    fn raw(&self) -> &DynTensor<E> {
        self.as_dyn()
    }
    fn from_raw(raw: DynTensor<E>) -> Self {
        Tensor::wrap(raw)
    }
}

/// The dim a collective works along: an integer for a [`DynTensor`] (negative counts from the
/// end), a dim's name for a named [`Tensor`] that has it.
pub trait CollectiveDim<T> {
    #[doc(hidden)]
    fn axis(&self) -> isize;
}

macro_rules! integer_dims {
    ($($t:ty)*) => {$(
        impl<E: Element> CollectiveDim<DynTensor<E>> for $t {
            fn axis(&self) -> isize {
                isize::try_from(*self).unwrap_or(isize::MAX)
            }
        }
    )*};
}
integer_dims! { i32 i64 isize usize }

impl<E: Element, S: DimTuple, P: DimTuple, D> CollectiveDim<Tensor<E, S, P>> for D
where
    S: HasDim<D, P>,
{
    fn axis(&self) -> isize {
        <S as HasDim<D, P>>::AXIS
    }
}

/// A tensor header for `op` on `t` along `axis`.
pub(super) fn header<E: Element>(
    op: Op,
    t: &DynTensor<E>,
    arg: u64,
    axis: Option<usize>,
) -> Header {
    Header {
        op,
        dtype: Some(E::DTYPE),
        arg,
        failed: false,
        shape: t.shape().to_vec(),
        axis,
        device: Some(t.device()),
    }
}

/// Writes `v` (in `t`'s shape) into `t`, through its view, on its device.
fn write_back<E: Element>(t: &DynTensor<E>, v: Vec<E>) -> Result<()> {
    let src = DynTensor::try_from_vec(v, t.shape())?.to_device(t.device())?;
    t.try_copy_(&src)?;
    Ok(())
}

/// The host vector of a buffer found on the CPU before the call (a storage stays on the
/// device it was made on).
fn host<E: Element>(b: &mut crate::storage::Buffer<E>) -> &mut HostBuffer<E> {
    match b {
        crate::storage::Buffer::Cpu(v) => v,
        #[cfg(feature = "cuda")]
        crate::storage::Buffer::Cuda(_) => unreachable!("a storage stays on its device"),
    }
}

/// [`host`], read-only.
fn host_ref<E: Element>(b: &crate::storage::Buffer<E>) -> &[E] {
    match b {
        crate::storage::Buffer::Cpu(v) => v,
        #[cfg(feature = "cuda")]
        crate::storage::Buffer::Cuda(_) => unreachable!("a storage stays on its device"),
    }
}

/// The sizes `tensor_split` gives `parts` parts of `n`: the first `n % parts` one larger.
pub(super) fn split_sizes(n: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|r| n / parts + usize::from(r < n % parts))
        .collect()
}

impl Communicator {
    /// Replaces `t` on every rank by the elementwise `op` of every rank's `t` (same shape and
    /// dtype on all ranks). `torch.distributed.all_reduce`.
    ///
    /// # Errors
    /// Ranks that disagree on the shape, dtype or `op` (all get the error; no tensor changes);
    /// [`ReduceOp::Mean`] on a non-float dtype; a write `t` refuses (a borrowed storage, a
    /// leaf that requires grad).
    pub fn all_reduce_<T: CollectiveTensor>(&self, t: &T, op: ReduceOp) -> Result<()> {
        // The caller waits at once, so nothing it does can come between the read and the
        // write: MPI may work in the tensor's own storage where it can.
        match self.all_reduce_in_storage_start(t.raw(), op) {
            Some(pending) => pending?.wait(),
            None => self.all_reduce_start(t, op)?.wait(),
        }
    }

    /// [`Communicator::all_reduce_start`] within `t`'s own storage, or `None` where `t` is not
    /// a contiguous host tensor of a dtype that is its own wire type: MPI then reads and writes
    /// the elements on the MPI thread, under the storage's write lock, with no copy where `t`
    /// is its whole storage and one otherwise, instead of three. The tensor is read and written when the MPI thread gets to
    /// the call, not when it starts, so only callers that wait at once or own `t` use it.
    /// A rank whose write is refused when its turn comes (a slice of the storage borrowed
    /// meanwhile) still takes part, from a copy, and returns the error with `t` unchanged.
    pub(super) fn all_reduce_in_storage_start<E: Element>(
        &self,
        t: &DynTensor<E>,
        op: ReduceOp,
    ) -> Option<Result<Pending<()>>> {
        if t.device() != crate::Device::Cpu
            || !t.is_contiguous()
            || !wire::is_own_wire_type(E::DTYPE)
        {
            return None;
        }
        let name = Op::AllReduce.name();
        let local = wire::wire_op::<E>(op, name).and_then(|sysop| {
            crate::autograd::check_inplace(name, t, false)?;
            Ok(sysop)
        });
        let mean_of = (op == ReduceOp::Mean).then_some(self.size());
        let mine = header(Op::AllReduce, t, op as u64, None);
        // The MPI thread gets the storage and the range, not the tensor (runtime.rs).
        let (storage, off, n) = (t.storage().clone(), t.storage_offset(), t.numel());
        Some(self.start_local(
            mine,
            local,
            move |g, _, sysop| {
                // SAFETY: the all-reduce writes the elements in `off..off + n`, or, when that is
                // all of them, swaps in a buffer of the same length (`wire::reduce_range`).
                match unsafe { storage.write(name) } {
                    Ok(mut guard) => {
                        wire::all_reduce_in_place(
                            g.mpi,
                            host(&mut guard),
                            off..off + n,
                            sysop,
                            mean_of,
                        );
                        Ok(())
                    }
                    Err(refused) => {
                        // The others' results need this rank's elements all the same.
                        let mut copy =
                            HostBuffer::from(host_ref(&storage.read())[off..off + n].to_vec());
                        wire::all_reduce_in_place(g.mpi, &mut copy, 0..n, sysop, mean_of);
                        Err(refused)
                    }
                }
            },
            Ok,
        ))
    }

    /// The all-reduce of a tensor of `shape` on `device` that this rank could not make (its
    /// error `e`): the header goes out marked failed, so every rank's call returns an error
    /// and this rank's `wait` returns `e`.
    pub(super) fn all_reduce_failed_start<E: Element>(
        &self,
        shape: &[usize],
        device: crate::Device,
        op: ReduceOp,
        e: Error,
    ) -> Result<Pending<()>> {
        let mine = Header {
            op: Op::AllReduce,
            dtype: Some(E::DTYPE),
            arg: op as u64,
            failed: true,
            shape: shape.to_vec(),
            axis: None,
            device: Some(device),
        };
        self.start_local(mine, Err::<(), _>(e), |_, _, ()| Ok(()), Ok)
    }

    /// [`Communicator::all_reduce_`], returning at once; `t` is written in
    /// [`Pending::wait`].
    pub fn all_reduce_start<T: CollectiveTensor>(
        &self,
        t: &T,
        op: ReduceOp,
    ) -> Result<Pending<()>> {
        #[cfg(feature = "nccl")]
        if self.goes_to_nccl(t.raw().device()) {
            return self.nccl_all_reduce_start(t.raw(), op);
        }
        let name = Op::AllReduce.name();
        let t = t.raw().shallow_clone();
        let local = wire::wire_op::<T::Elem>(op, name).and_then(|sysop| {
            let data = t.try_to_vec()?;
            Ok((WireBuf::from_elements(data), sysop))
        });
        let size = self.size();
        let mine = header(Op::AllReduce, &t, op as u64, None);
        self.start_local(
            mine,
            local,
            move |g, _, (buf, sysop)| {
                let mut out = wire::all_reduce(g.mpi, buf, sysop);
                if op == ReduceOp::Mean {
                    out.divide(size);
                }
                Ok(out)
            },
            move |out| write_back(&t, out.into_elements::<T::Elem>()),
        )
    }

    /// Replaces `t` on every rank by rank `root`'s `t` (same shape and dtype on all ranks).
    /// `torch.distributed.broadcast`.
    ///
    /// # Errors
    /// Ranks that disagree on the shape, dtype or root; a root outside the group.
    pub fn broadcast_<T: CollectiveTensor>(&self, t: &T, root: usize) -> Result<()> {
        self.broadcast_start(t, root)?.wait()
    }

    /// [`Communicator::broadcast_`], returning at once; `t` is written in [`Pending::wait`].
    pub fn broadcast_start<T: CollectiveTensor>(&self, t: &T, root: usize) -> Result<Pending<()>> {
        #[cfg(feature = "nccl")]
        if self.goes_to_nccl(t.raw().device()) {
            return self.nccl_broadcast_start(t.raw(), root);
        }
        let name = Op::Broadcast.name();
        let t = t.raw().shallow_clone();
        let (me, size) = (self.rank(), self.size());
        let local = if root >= size {
            Err(Error::new(
                crate::ErrorKind::InvalidArgument,
                name,
                format!("root {root} is not a rank of a group of {size}"),
            ))
        } else if me == root {
            t.try_to_vec().map(WireBuf::from_elements)
        } else {
            Ok(WireBuf::zeros::<T::Elem>(t.numel()))
        };
        let mine = header(Op::Broadcast, &t, root as u64, None);
        self.start_local(
            mine,
            local,
            move |g, _, buf| Ok(wire::broadcast(g.mpi, buf, root)),
            move |out| {
                if me == root {
                    return Ok(());
                }
                write_back(&t, out.into_elements::<T::Elem>())
            },
        )
    }

    /// Every rank's `t` concatenated along `dim` in rank order, on every rank: the sizes
    /// along `dim` may differ between ranks, the other sizes and the dtype may not. A named
    /// tensor keeps its dims. `torch.distributed.all_gather_into_tensor` (along dim 0 there).
    ///
    /// ```no_run
    /// use namedtensor::{dims, DynTensor, Tensor};
    /// dims! { Batch, Classes }
    /// # fn main() -> namedtensor::Result<()> {
    /// let world = namedtensor::dist::init()?;
    /// let logits = Tensor::<f32, (Batch, Classes)>::zeros([world.rank() + 1, 10]);
    /// let all = world.all_gather(&logits, Batch)?; // Batch: 1 + 2 + … + size
    /// let ids = DynTensor::<i64>::zeros(&[3, world.rank()]);
    /// let every = world.all_gather(&ids, -1)?;    // along the last dim
    /// # Ok(()) }
    /// ```
    pub fn all_gather<T: CollectiveTensor>(&self, t: &T, dim: impl CollectiveDim<T>) -> Result<T> {
        self.all_gather_start(t, dim)?.wait()
    }

    /// [`Communicator::all_gather`], returning at once; [`Pending::wait`] gives the result.
    pub fn all_gather_start<T: CollectiveTensor>(
        &self,
        t: &T,
        dim: impl CollectiveDim<T>,
    ) -> Result<Pending<T>> {
        #[cfg(feature = "nccl")]
        if self.goes_to_nccl(t.raw().device()) {
            return self.nccl_all_gather_start(t, dim.axis());
        }
        let name = Op::AllGather.name();
        let t = t.raw().shallow_clone();
        let axis = normalize_dim(name, dim.axis(), t.dim());
        let local = axis
            .clone()
            .and_then(|_| t.try_to_vec().map(WireBuf::from_elements));
        let mine = header(Op::AllGather, &t, 0, axis.as_ref().ok().copied());
        let size = self.size();
        self.start_local(
            mine,
            local,
            move |g, all, buf| {
                let counts: Vec<usize> = all.iter().map(|w| w[5] as usize).collect();
                let sizes: Vec<usize> = all.iter().map(|w| w[6] as usize).collect();
                wire::counts_fit(name, &counts)?;
                Ok((wire::all_gather(g.mpi, buf, &counts), counts, sizes))
            },
            move |(out, counts, sizes)| {
                let axis = axis?;
                let v = out.into_elements::<T::Elem>();
                let mut parts = Vec::with_capacity(size);
                let mut start = 0;
                for (count, along) in counts.iter().zip(&sizes) {
                    let mut shape = t.shape().to_vec();
                    shape[axis] = *along;
                    parts.push(DynTensor::try_from_vec(
                        v[start..start + count].to_vec(),
                        &shape,
                    )?);
                    start += count;
                }
                let refs: Vec<&DynTensor<T::Elem>> = parts.iter().collect();
                let cat = DynTensor::try_cat(&refs, axis as isize)?;
                Ok(T::from_raw(cat.to_device(t.device())?))
            },
        )
    }

    /// This rank's part along `dim` of the elementwise `op` of every rank's `t` (same shape
    /// and dtype on all ranks): rank `r` gets the `r`-th of `tensor_split`'s parts (sizes
    /// `n / size`, the first `n % size` ranks one more). A named tensor keeps its dims.
    /// `torch.distributed.reduce_scatter_tensor` (along dim 0, even parts there). Uneven parts
    /// reduce the whole tensor and keep the part (twice the traffic of even ones).
    pub fn reduce_scatter<T: CollectiveTensor>(
        &self,
        t: &T,
        dim: impl CollectiveDim<T>,
        op: ReduceOp,
    ) -> Result<T> {
        self.reduce_scatter_start(t, dim, op)?.wait()
    }

    /// [`Communicator::reduce_scatter`], returning at once; [`Pending::wait`] gives the
    /// result.
    pub fn reduce_scatter_start<T: CollectiveTensor>(
        &self,
        t: &T,
        dim: impl CollectiveDim<T>,
        op: ReduceOp,
    ) -> Result<Pending<T>> {
        #[cfg(feature = "nccl")]
        if self.goes_to_nccl(t.raw().device()) {
            return self.nccl_reduce_scatter_start(t, dim.axis(), op);
        }
        let name = Op::ReduceScatter.name();
        let t = t.raw().shallow_clone();
        let (me, size) = (self.rank(), self.size());
        let axis = normalize_dim(name, dim.axis(), t.dim());
        // The dim moved to the front, so that each rank's part is one run of elements.
        let local = axis.clone().and_then(|a| {
            let sysop = wire::wire_op::<T::Elem>(op, name)?;
            let front = t.try_transpose(0, a as isize)?.try_contiguous()?;
            Ok((WireBuf::from_elements(front.try_to_vec()?), sysop))
        });
        let rows = axis.as_ref().map_or(0, |&a| t.shape()[a]);
        let inner = t.numel().checked_div(rows).unwrap_or(0);
        let sizes = split_sizes(rows, size);
        let counts: Vec<usize> = sizes.iter().map(|s| s * inner).collect();
        let mine = header(Op::ReduceScatter, &t, op as u64, None);
        self.start_local(
            mine,
            local,
            move |g, _, (buf, sysop)| {
                wire::counts_fit(name, &counts)?;
                let mut out = wire::reduce_scatter(g.mpi, buf, &counts, sysop);
                if op == ReduceOp::Mean {
                    out.divide(size);
                }
                Ok(out)
            },
            move |out| {
                let axis = axis?;
                let mut shape = t.shape().to_vec();
                shape.swap(0, axis);
                shape[0] = sizes[me];
                let part = DynTensor::try_from_vec(out.into_elements::<T::Elem>(), &shape)?
                    .try_transpose(0, axis as isize)?
                    .try_contiguous()?;
                Ok(T::from_raw(part.to_device(t.device())?))
            },
        )
    }

    /// Starts a call whose local part is `local`: a rank whose local part failed still sends
    /// its header (marked failed), so every rank stops, and its `wait` returns its own error.
    pub(super) fn start_local<L: Send + 'static, R: Send + 'static, T>(
        &self,
        mut mine: Header,
        local: Result<L>,
        data: impl FnOnce(&Group<'_>, &[[u64; WORDS]], L) -> Result<R> + Send + 'static,
        finish: impl FnOnce(R) -> Result<T> + Send + 'static,
    ) -> Result<Pending<T>> {
        let (input, own_error) = match local {
            Ok(l) => (Some(l), None),
            Err(e) => (None, Some(e)),
        };
        mine.failed = own_error.is_some();
        let mut pending = self.start(
            mine,
            move |g, all| {
                let input = input.expect("the headers agree only when no rank's part failed");
                data(g, all, input)
            },
            move |r| finish(r?),
        )?;
        pending.own_error = own_error;
        Ok(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::split_sizes;

    #[test]
    fn parts_follow_tensor_split() {
        assert_eq!(split_sizes(10, 3), [4, 3, 3]);
        assert_eq!(split_sizes(2, 3), [1, 1, 0]);
        assert_eq!(split_sizes(6, 2), [3, 3]);
        assert_eq!(split_sizes(0, 2), [0, 0]);
    }
}
