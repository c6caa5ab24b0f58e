//! NCCL on CUDA buffers (feature `nccl`): the entry point through which `dist/` runs the data
//! phase of a collective on the device, without naming a kernel or a cudarc type. A
//! [`NcclComm`] is this rank's end of an NCCL communicator on one device; its calls work on
//! whole device buffers (`storage/nccl.rs` hands them over from storages, under their locks),
//! on the device's stream.
//!
//! Element types: NCCL reduces `u8`, `i8`, `i32`, `i64`, `f16`, `bf16`, `f32` and `f64` as
//! themselves. `bool` is reduced as `u8` (0 or 1): `Sum` and `Max` are NCCL's max (any), `Min`
//! its min (all), as the MPI engine does (`dist/wire.rs`). NCCL has no 16-bit integer type:
//! `i16` is reduced as `i32` (a cast on the device before and after; the sum wraps to `i16` as
//! an `i16` sum would). Broadcast and all-gather move every dtype as bytes.
//!
//! # Invariants
//! - Every call is issued to the device's one stream (`device.rs`), where all of the
//!   library's work on the device runs: it runs after the work issued before it and before the
//!   work issued after it. A call returns once it is queued (the emulator: once it is done).
//! - A call works on whole buffers, on this communicator's device: `dist/` passes the
//!   storages of its staged copies (contiguous from element 0, shared with no other tensor),
//!   whose locks `storage/nccl.rs` holds while the call issues.
//! - Ranks pass the same counts (`dist/` has checked the headers), so a call with no elements
//!   is skipped on every rank alike and the ranks' NCCL calls stay paired.
//! - [`Reduction::Mean`] is NCCL's sum followed by one division on the device, not NCCL's
//!   `ncclAvg` (which for floats multiplies each rank's part by 1/n before summing): the sum
//!   is divided once, as the MPI engine divides it. Half types are summed by NCCL in their own
//!   type, one rounding per addition (the MPI engine sums them in `f32`): the two agree where
//!   the sums are exact.
//! - libnccl is looked for before first use; its absence is an error, never cudarc's panic.

use super::Cuda;
use super::device::{self, CudaDevice};
use super::error::panic_message;
use super::rt::nccl as nc;
use super::storage::CudaBuffer;
use crate::backend::Backend;
use crate::backend::device::Device;
use crate::backend::op::BinaryOp;
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Bytes of an NCCL unique id.
pub const ID_BYTES: usize = 128;

/// How [`NcclComm::all_reduce_`] and [`NcclComm::reduce_scatter`] combine the ranks' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The sum (for `bool`: any).
    Sum,
    /// The sum divided by the number of ranks (float dtypes).
    Mean,
    /// The maximum (for `bool`: any).
    Max,
    /// The minimum (for `bool`: all).
    Min,
}

/// The error for a machine without libnccl.
fn missing(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Distributed,
        op,
        "NCCL could not be loaded: libnccl.so is not on the dynamic loader's search path (NCCL \
         installs it as libnccl.so.2, e.g. pip's nvidia-nccl-cu12: link it as libnccl.so into a \
         folder on LD_LIBRARY_PATH). The collectives work without NCCL, over MPI through host \
         memory: use the communicator without with_nccl",
    )
}

/// `Ok` where libnccl can be loaded.
fn check_library(op: &'static str) -> Result<()> {
    if nc::present() {
        Ok(())
    } else {
        Err(missing(op))
    }
}

/// `Ok` where an NCCL communicator can be made on `device` in this process: a CUDA device
/// that exists, and libnccl. What `dist/` checks on every rank before any rank starts to join
/// (a rank that failed while the others join NCCL's rendezvous would leave them waiting).
pub fn check_usable(op: &'static str, device: Device) -> Result<()> {
    let ordinal = cuda_ordinal(op, device)?;
    check_library(op)?;
    device::check(op, ordinal).map(drop)
}

/// The ordinal of a CUDA `device`; an error for another device.
fn cuda_ordinal(op: &'static str, device: Device) -> Result<usize> {
    match device {
        Device::Cuda(ordinal) => Ok(ordinal),
        Device::Cpu => Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "NCCL moves CUDA tensors: it needs a CUDA device, not {device} (CPU tensors go \
                 through MPI on every communicator)"
            ),
        )),
    }
}

/// What the emulator said about its latest failure, for messages.
fn emulator_detail() -> String {
    #[cfg(feature = "cuda-emu")]
    if let Some(m) = nc::last_failure() {
        return format!(": {m} (emulated NCCL)");
    }
    String::new()
}

/// An NCCL failure while doing `what` on `device`.
fn failed(op: &'static str, device: Device, what: &str, e: nc::NcclError) -> Error {
    Error::new(
        ErrorKind::Distributed,
        op,
        format!(
            "NCCL failed while {what} on {device} ({:?}){}",
            e.0,
            emulator_detail()
        ),
    )
}

/// A new NCCL unique id (rank 0 makes it; every rank of the group joins with it).
pub fn unique_id(op: &'static str) -> Result<[u8; ID_BYTES]> {
    check_library(op)?;
    let id = catch_unwind(nc::Id::new)
        .map_err(|p| {
            Error::new(
                ErrorKind::Distributed,
                op,
                format!("NCCL could not be used: {}", panic_message(&*p)),
            )
        })?
        .map_err(|e| {
            Error::new(
                ErrorKind::Distributed,
                op,
                format!(
                    "NCCL could not make a unique id ({:?}){}",
                    e.0,
                    emulator_detail()
                ),
            )
        })?;
    Ok(id.internal().map(|c| c as u8))
}

/// Runs `$body` with `$T` the type NCCL reduces elements of `$dtype` as; `None` for `i16`,
/// which NCCL lacks (the callers widen it to `i32` first).
macro_rules! reduced_as {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Bool | DType::U8 => {
                type $T = u8;
                Some($body)
            }
            DType::I8 => {
                type $T = i8;
                Some($body)
            }
            DType::I32 => {
                type $T = i32;
                Some($body)
            }
            DType::I64 => {
                type $T = i64;
                Some($body)
            }
            DType::F16 => {
                type $T = half::f16;
                Some($body)
            }
            DType::BF16 => {
                type $T = half::bf16;
                Some($body)
            }
            DType::F32 => {
                type $T = f32;
                Some($body)
            }
            DType::F64 => {
                type $T = f64;
                Some($body)
            }
            DType::I16 => None,
        }
    };
}

/// NCCL's reduction for `how` on elements of `dtype`.
fn nccl_op(dtype: DType, how: Reduction) -> nc::ReduceOp {
    match (how, dtype) {
        (Reduction::Sum | Reduction::Max, DType::Bool) => nc::ReduceOp::Max,
        (Reduction::Sum | Reduction::Mean, _) => nc::ReduceOp::Sum,
        (Reduction::Max, _) => nc::ReduceOp::Max,
        (Reduction::Min, _) => nc::ReduceOp::Min,
    }
}

/// This rank's end of an NCCL communicator on one CUDA device. NCCL's handle is not `Send`:
/// the value stays on the thread that made it (the dist runtime's).
pub struct NcclComm {
    comm: nc::Comm,
    device: Arc<CudaDevice>,
    size: usize,
}

impl Drop for NcclComm {
    /// cudarc's `Comm` aborts the communicator when dropped (`ncclCommAbort`), which would cut
    /// short a collective still queued on the stream (`wait` returns once NCCL's call is
    /// issued, not done): the stream is drained first, so nothing of this communicator is in
    /// flight when it goes. A failure to drain is the device's own error, which its next
    /// operation reports; the abort goes ahead.
    fn drop(&mut self) {
        let _ = self.device.synchronize("drop NCCL communicator");
    }
}

impl std::fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NcclComm({}, {} ranks)", self.device.device(), self.size)
    }
}

impl NcclComm {
    /// This rank's end (`rank` of `size`) of the communicator that `id` names, on `device`.
    /// Returns once every rank has joined (`ncclCommInitRank`).
    pub fn new(
        op: &'static str,
        device: Device,
        rank: usize,
        size: usize,
        id: &[u8; ID_BYTES],
    ) -> Result<NcclComm> {
        let ordinal = cuda_ordinal(op, device)?;
        check_library(op)?;
        let dev = device::get(op, ordinal)?;
        // ncclCommInitRank joins on the calling thread's current device.
        dev.bind(op)?;
        let id = nc::Id::uninit(id.map(|b| b as c_char));
        let stream = Arc::clone(dev.stream());
        let comm = catch_unwind(AssertUnwindSafe(|| {
            nc::Comm::from_rank(stream, rank, size, id)
        }))
        .map_err(|p| {
            Error::new(
                ErrorKind::Distributed,
                op,
                format!("NCCL could not be used: {}", panic_message(&*p)),
            )
        })?
        .map_err(|e| {
            failed(
                op,
                device,
                &format!("joining a group of {size} as rank {rank}"),
                e,
            )
        })?;
        Ok(NcclComm {
            comm,
            device: dev,
            size,
        })
    }

    /// The device the communicator's calls run on.
    pub fn device(&self) -> Device {
        self.device.device()
    }

    /// `Ok` where `buf` holds elements of `E` on this communicator's device.
    fn check<E: Element>(&self, op: &'static str, buf: &CudaBuffer) -> Result<()> {
        if buf.device() != self.device() {
            return Err(Error::new(
                ErrorKind::Device,
                op,
                format!(
                    "the NCCL communicator runs on {}, the tensor is on {}",
                    self.device(),
                    buf.device()
                ),
            ));
        }
        debug_assert_eq!(
            buf.dtype(),
            E::DTYPE,
            "a buffer of {} as {}",
            buf.dtype(),
            E::DTYPE
        );
        Ok(())
    }

    fn fail(&self, op: &'static str, what: &str, e: nc::NcclError) -> Error {
        failed(op, self.device(), what, e)
    }

    /// The error for a buffer shorter than its element count (an internal fault).
    fn short(&self, op: &'static str, len: usize, dtype: DType) -> Error {
        Error::new(
            ErrorKind::Device,
            op,
            format!(
                "a buffer on {} is shorter than its {len} elements of {dtype}",
                self.device()
            ),
        )
    }

    /// Refuses a mean of a dtype that is not a float.
    fn check_reduction<E: Element>(op: &'static str, how: Reduction) -> Result<()> {
        if how == Reduction::Mean && !E::DTYPE.is_float() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("a mean needs a float dtype, not {}", E::DTYPE),
            ));
        }
        Ok(())
    }

    /// Divides the first `len` elements of `buf` by the number of ranks, on the device.
    fn divide<E: Element>(&self, op: &'static str, buf: &mut CudaBuffer, len: usize) -> Result<()> {
        let n = CudaBuffer::from_host(op, &self.device, &[E::from_i64(self.size as i64)])?;
        <Cuda as Backend>::binary_::<E, E>(
            op,
            BinaryOp::Div,
            buf,
            &Layout::contiguous(&[len])?,
            &n,
            &Layout::new(&[len], &[0], 0)?,
        )
    }

    /// `ncclAllReduce` in place on the `len` elements of `buf`, reduced as `T`.
    fn all_reduce_as<T: nc::NcclType>(
        &self,
        op: &'static str,
        buf: &mut CudaBuffer,
        len: usize,
        dtype: DType,
        how: Reduction,
    ) -> Result<()> {
        // SAFETY: `buf` holds `len` elements of `dtype`, which `reduced_as!` maps to a type of
        // the same size for which every bit pattern is a value (bool's 0 and 1 as u8).
        let view = unsafe { buf.slice_mut().transmute_mut::<T>(len) };
        let mut view = view.ok_or_else(|| self.short(op, len, dtype))?;
        self.comm
            .all_reduce_in_place(&mut view, &nccl_op(dtype, how))
            .map_err(|e| self.fail(op, &format!("reducing {len} elements of {dtype}"), e))?;
        Ok(())
    }

    /// `ncclReduceScatter` from the `size × part` elements of `src` into the `part` of `dst`.
    fn reduce_scatter_as<T: nc::NcclType>(
        &self,
        op: &'static str,
        (src, dst): (&CudaBuffer, &mut CudaBuffer),
        part: usize,
        dtype: DType,
        how: Reduction,
    ) -> Result<()> {
        // SAFETY: as in `all_reduce_as`, for both buffers.
        let views = unsafe {
            (
                src.slice().transmute::<T>(part * self.size),
                dst.slice_mut().transmute_mut::<T>(part),
            )
        };
        let (Some(send), Some(mut recv)) = views else {
            return Err(self.short(op, part * self.size, dtype));
        };
        self.comm
            .reduce_scatter(&send, &mut recv, &nccl_op(dtype, how))
            .map_err(|e| {
                self.fail(
                    op,
                    &format!("reducing {part} elements of {dtype} a rank"),
                    e,
                )
            })?;
        Ok(())
    }

    /// Every rank's `buf` combined by `how`, into `buf` on every rank.
    pub fn all_reduce_<E: Element>(
        &self,
        op: &'static str,
        buf: &mut CudaBuffer,
        how: Reduction,
    ) -> Result<()> {
        self.check::<E>(op, buf)?;
        NcclComm::check_reduction::<E>(op, how)?;
        let len = buf.len();
        if len == 0 {
            return Ok(());
        }
        self.device.bind(op)?;
        let done = reduced_as!(E::DTYPE, T => self.all_reduce_as::<T>(op, buf, len, E::DTYPE, how));
        if let Some(r) = done {
            r?;
            if how == Reduction::Mean {
                self.divide::<E>(op, buf, len)?;
            }
            return Ok(());
        }
        // i16 (integers have no mean): reduced as i32, stored back wrapped.
        let layout = Layout::contiguous(&[len])?;
        let mut wide = <Cuda as Backend>::cast::<E, i32>(op, buf, &layout)?;
        self.all_reduce_as::<i32>(op, &mut wide, len, DType::I32, how)?;
        <Cuda as Backend>::copy_::<E, i32>(op, buf, &layout, &wide, &layout)
    }

    /// Rank `root`'s `buf`, into `buf` on every rank.
    pub fn broadcast_<E: Element>(
        &self,
        op: &'static str,
        buf: &mut CudaBuffer,
        root: usize,
    ) -> Result<()> {
        self.check::<E>(op, buf)?;
        let bytes = buf.len() * E::DTYPE.size_in_bytes();
        if bytes == 0 {
            return Ok(());
        }
        let root = i32::try_from(root).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("root {root} is beyond NCCL's rank numbers"),
            )
        })?;
        self.device.bind(op)?;
        self.comm
            .broadcast_in_place(&mut buf.slice_mut().slice_mut(0..bytes), root)
            .map_err(|e| self.fail(op, &format!("broadcasting {bytes} bytes"), e))?;
        Ok(())
    }

    /// Every rank's `buf` in rank order, each padded to `count` elements (its own
    /// `buf.len()` at most; `dist/` passes the largest of the ranks'): a new buffer of
    /// `size × count` elements, rank `r`'s from element `r × count`.
    pub fn all_gather<E: Element>(
        &self,
        op: &'static str,
        buf: &CudaBuffer,
        count: usize,
    ) -> Result<CudaBuffer> {
        self.check::<E>(op, buf)?;
        let len = buf.len();
        let total = count.checked_mul(self.size).filter(|_| len <= count);
        let total = total.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!(
                    "{len} elements cannot be sent as {count} to each of {} ranks",
                    self.size
                ),
            )
        })?;
        let mut out = CudaBuffer::alloc(op, &self.device, E::DTYPE, total)?;
        let bytes = count * E::DTYPE.size_in_bytes();
        if bytes == 0 {
            return Ok(out);
        }
        let padded;
        let send = if len < count {
            let mut p = CudaBuffer::zeros(op, &self.device, E::DTYPE, count)?;
            let own = Layout::contiguous(&[len])?;
            <Cuda as Backend>::copy_::<E, E>(op, &mut p, &own, buf, &own)?;
            padded = p;
            &padded
        } else {
            buf
        };
        self.device.bind(op)?;
        self.comm
            .all_gather(
                &send.slice().slice(0..bytes),
                &mut out.slice_mut().slice_mut(0..bytes * self.size),
            )
            .map_err(|e| self.fail(op, &format!("gathering {bytes} bytes a rank"), e))?;
        Ok(out)
    }

    /// This rank's part of every rank's `buf` combined by `how`: `buf` holds `size` equal
    /// parts, and rank `r` gets the `r`-th, as a new buffer.
    pub fn reduce_scatter<E: Element>(
        &self,
        op: &'static str,
        buf: &CudaBuffer,
        how: Reduction,
    ) -> Result<CudaBuffer> {
        self.check::<E>(op, buf)?;
        NcclComm::check_reduction::<E>(op, how)?;
        let len = buf.len();
        if !len.is_multiple_of(self.size) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("{len} elements do not split into {} equal parts", self.size),
            ));
        }
        let part = len / self.size;
        let mut out = CudaBuffer::alloc(op, &self.device, E::DTYPE, part)?;
        if part == 0 {
            return Ok(out);
        }
        self.device.bind(op)?;
        let done = reduced_as!(E::DTYPE, T => self.reduce_scatter_as::<T>(
            op,
            (buf, &mut out),
            part,
            E::DTYPE,
            how,
        ));
        if let Some(r) = done {
            r?;
            if how == Reduction::Mean {
                self.divide::<E>(op, &mut out, part)?;
            }
            return Ok(out);
        }
        // i16: reduced as i32, then cast back (wrapped).
        let wide = <Cuda as Backend>::cast::<E, i32>(op, buf, &Layout::contiguous(&[len])?)?;
        let mut wide_out = CudaBuffer::alloc(op, &self.device, DType::I32, part)?;
        self.reduce_scatter_as::<i32>(op, (&wide, &mut wide_out), part, DType::I32, how)?;
        <Cuda as Backend>::cast::<i32, E>(op, &wide_out, &Layout::contiguous(&[part])?)
    }
}
