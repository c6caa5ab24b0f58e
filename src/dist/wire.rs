//! Elements as MPI sends them: each dtype in a wire type MPI can reduce.
//!
//! # Invariants
//! - `f16` and `bf16` travel as `f32` (MPI has no half types): sums and means are computed in
//!   `f32` across the ranks and rounded to the half type once, at the end, so a sum is exact
//!   wherever the `f32` sum is, and is never a sum of raw bits.
//! - `bool` travels as `u8` (0 or 1): `Sum` and `Max` are "any", `Min` is "all".
//! - Every other dtype travels as itself; integer sums wrap as MPI's do. A vector already of
//!   its wire type (`u8`, `f32`, `f64`) is sent as it is, not copied, and a contiguous host
//!   tensor of such a dtype is reduced from its own storage ([`all_reduce_in_place`]).
//! - A buffer of more than `i32::MAX` elements is broadcast in chunks (MPI counts are
//!   `int`). An all-reduce goes in pieces of 4 MiB, on every path and every rank alike
//!   ([`piece`]), so ranks that read their tensors differently still make the same calls.

use super::ReduceOp;
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::storage::HostBuffer;
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator as _, CommunicatorCollectives as _, Root as _};

/// Elements per MPI call: the largest count an `int` holds, rounded down to 2^30.
const CHUNK: usize = 1 << 30;

/// The bytes an all-reduce hands MPI per call.
const PIECE_BYTES: usize = 4 << 20;

/// The elements of `W` an all-reduce hands MPI per call, whichever path a rank takes (from
/// the storage or from a wire buffer): the calls' counts follow from the wire type and the
/// element count alone, which the header makes equal on every rank, so the ranks' calls
/// always match.
fn piece<W>() -> usize {
    (PIECE_BYTES / std::mem::size_of::<W>().max(1)).max(1)
}

/// A buffer of elements in their wire type.
pub(super) enum WireBuf {
    U8(Vec<u8>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the buffer's vector, whatever its wire type, and wraps a
/// vector result back into the same variant.
macro_rules! each_wire {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            WireBuf::U8($v) => WireBuf::U8($body),
            WireBuf::I8($v) => WireBuf::I8($body),
            WireBuf::I16($v) => WireBuf::I16($body),
            WireBuf::I32($v) => WireBuf::I32($body),
            WireBuf::I64($v) => WireBuf::I64($body),
            WireBuf::F32($v) => WireBuf::F32($body),
            WireBuf::F64($v) => WireBuf::F64($body),
        }
    };
}

fn cast_all<S: Element, T: Element>(v: &[S]) -> Vec<T> {
    v.iter().map(|x| x.cast::<T>()).collect()
}

/// `v` as a `Vec<T>`: the vector itself when `S` is `T` (a safe downcast, no copy), else
/// each element cast.
fn convert<S: Element, T: Element>(v: Vec<S>) -> Vec<T> {
    if S::DTYPE != T::DTYPE {
        return cast_all(&v);
    }
    let any: Box<dyn std::any::Any> = Box::new(v);
    match any.downcast::<Vec<T>>() {
        Ok(t) => *t,
        Err(_) => unreachable!("one dtype is one Rust type"),
    }
}

impl WireBuf {
    /// `data` in `E`'s wire type: the vector itself where `E` is its own wire type, else a
    /// converted copy.
    pub(super) fn from_elements<E: Element>(data: Vec<E>) -> WireBuf {
        match E::DTYPE {
            DType::Bool | DType::U8 => WireBuf::U8(convert(data)),
            DType::I8 => WireBuf::I8(convert(data)),
            DType::I16 => WireBuf::I16(convert(data)),
            DType::I32 => WireBuf::I32(convert(data)),
            DType::I64 => WireBuf::I64(convert(data)),
            DType::F16 | DType::BF16 | DType::F32 => WireBuf::F32(convert(data)),
            DType::F64 => WireBuf::F64(convert(data)),
        }
    }

    /// `n` zeros in `E`'s wire type.
    pub(super) fn zeros<E: Element>(n: usize) -> WireBuf {
        match E::DTYPE {
            DType::Bool | DType::U8 => WireBuf::U8(vec![0; n]),
            DType::I8 => WireBuf::I8(vec![0; n]),
            DType::I16 => WireBuf::I16(vec![0; n]),
            DType::I32 => WireBuf::I32(vec![0; n]),
            DType::I64 => WireBuf::I64(vec![0; n]),
            DType::F16 | DType::BF16 | DType::F32 => WireBuf::F32(vec![0.0; n]),
            DType::F64 => WireBuf::F64(vec![0.0; n]),
        }
    }

    /// The elements as `E` (each rounded once; the vector itself where it already is `E`).
    pub(super) fn into_elements<E: Element>(self) -> Vec<E> {
        match self {
            WireBuf::U8(v) => convert(v),
            WireBuf::I8(v) => convert(v),
            WireBuf::I16(v) => convert(v),
            WireBuf::I32(v) => convert(v),
            WireBuf::I64(v) => convert(v),
            WireBuf::F32(v) => convert(v),
            WireBuf::F64(v) => convert(v),
        }
    }

    /// Divides every element by `n` (the mean after a sum; float wire types only).
    pub(super) fn divide(&mut self, n: usize) {
        match self {
            WireBuf::F32(v) => v.iter_mut().for_each(|x| *x /= n as f32),
            WireBuf::F64(v) => v.iter_mut().for_each(|x| *x /= n as f64),
            _ => unreachable!("a mean is refused for integer dtypes before the exchange"),
        }
    }
}

/// The MPI operation a reduction runs on the wire (MPI's own handles cannot leave the MPI
/// thread, so calls carry this).
#[derive(Clone, Copy, Debug)]
pub(super) enum WireOp {
    Sum,
    Max,
    Min,
}

impl WireOp {
    fn system(self) -> SystemOperation {
        match self {
            WireOp::Sum => SystemOperation::sum(),
            WireOp::Max => SystemOperation::max(),
            WireOp::Min => SystemOperation::min(),
        }
    }
}

/// The wire operation for `op` on `E`, or why there is none.
pub(super) fn wire_op<E: Element>(op: ReduceOp, name: &'static str) -> Result<WireOp> {
    let float = matches!(E::DTYPE, DType::F16 | DType::BF16 | DType::F32 | DType::F64);
    Ok(match (op, E::DTYPE) {
        (ReduceOp::Mean, _) if !float => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                name,
                format!(
                    "ReduceOp::Mean needs a float dtype, not {}; sum, then divide as you need",
                    E::DTYPE
                ),
            ));
        }
        (ReduceOp::Sum | ReduceOp::Max, DType::Bool) => WireOp::Max,
        (ReduceOp::Sum | ReduceOp::Mean, _) => WireOp::Sum,
        (ReduceOp::Max, _) => WireOp::Max,
        (ReduceOp::Min, _) => WireOp::Min,
    })
}

fn all_reduce_vec<W: Equivalence + Copy + Default>(
    comm: &SimpleCommunicator,
    v: Vec<W>,
    op: SystemOperation,
) -> Vec<W> {
    let mut out = vec![W::default(); v.len()];
    let piece = piece::<W>();
    for (src, dst) in v.chunks(piece).zip(out.chunks_mut(piece)) {
        comm.all_reduce_into(src, dst, op);
    }
    out
}

/// Whether `dtype`'s elements are already of their wire type (all but `bool`, `f16` and
/// `bf16`): MPI can then reduce them where they lie ([`all_reduce_in_place`]).
pub(super) fn is_own_wire_type(dtype: DType) -> bool {
    !matches!(dtype, DType::Bool | DType::F16 | DType::BF16)
}

/// `v[range]` reduced by `op` across the ranks, written into itself (returned).
///
/// MPI reads the range where it lies and writes the result into a pooled buffer, a
/// [`piece`] per call, so each piece's reduction runs in the cache (one call over a
/// large buffer streams it through memory several times: BENCHMARKS.md, session 17). Where
/// the range is the whole storage the buffers then trade places, so no element is copied;
/// otherwise the result is copied into the range.
fn reduce_range<'v, W: Equivalence + Copy + 'static, E: 'static>(
    comm: &SimpleCommunicator,
    v: &'v mut HostBuffer<E>,
    range: std::ops::Range<usize>,
    op: WireOp,
) -> &'v mut [W] {
    use mpi::raw::AsRaw;
    let any: &mut dyn std::any::Any = v;
    let Some(v) = any.downcast_mut::<HostBuffer<W>>() else {
        unreachable!("the caller checked that the element is its own wire type")
    };
    let n = range.len();
    let piece = piece::<W>();
    let mut out = crate::storage::take_buffer::<W>(n);
    let (datatype, sysop) = (W::equivalent_datatype(), op.system());
    for (k, src) in v[range.clone()].chunks(piece).enumerate() {
        // SAFETY: `out` has room for `n` elements and `src` is the range's piece `k`, so MPI
        // writes `src.len()` (at most `piece`, which fits an `int`) elements inside that room
        // and reads none of them; `src` is initialised memory that MPI only reads, and
        // neither buffer is touched by anything else while the call runs (the caller holds
        // the storage's write lock, `out` is this function's).
        let rc = unsafe {
            mpi::ffi::MPI_Allreduce(
                src.as_ptr().cast(),
                out.as_mut_ptr().add(k * piece).cast(),
                src.len() as std::os::raw::c_int,
                datatype.as_raw(),
                sysop.as_raw(),
                comm.as_raw(),
            )
        };
        if rc != mpi::ffi::MPI_SUCCESS as std::os::raw::c_int {
            // MPI's default handler aborts before this; under another handler a failed
            // collective leaves the ranks out of step, and no rank can go on.
            eprintln!("namedtensor: MPI_Allreduce failed with error code {rc}; aborting");
            std::process::abort();
        }
    }
    // SAFETY: the calls above returned MPI_SUCCESS, so each wrote its piece: every one of
    // the `n` elements is initialised.
    unsafe { out.set_len(n) };
    if range == (0..v.len()) {
        std::mem::swap(v, &mut out);
        crate::storage::give_buffer(out);
        &mut v[..]
    } else {
        let s = &mut v[range];
        s.copy_from_slice(&out);
        crate::storage::give_buffer(out);
        s
    }
}

/// [`all_reduce`] of `v[range]` into itself, for an element type of its own wire type
/// ([`is_own_wire_type`]); a mean divides by `mean_of` ranks after the sum.
pub(super) fn all_reduce_in_place<E: Element>(
    comm: &SimpleCommunicator,
    v: &mut HostBuffer<E>,
    range: std::ops::Range<usize>,
    op: WireOp,
    mean_of: Option<usize>,
) {
    match E::DTYPE {
        DType::U8 => {
            reduce_range::<u8, E>(comm, v, range, op);
        }
        DType::I8 => {
            reduce_range::<i8, E>(comm, v, range, op);
        }
        DType::I16 => {
            reduce_range::<i16, E>(comm, v, range, op);
        }
        DType::I32 => {
            reduce_range::<i32, E>(comm, v, range, op);
        }
        DType::I64 => {
            reduce_range::<i64, E>(comm, v, range, op);
        }
        DType::F32 => {
            let s = reduce_range::<f32, E>(comm, v, range, op);
            if let Some(n) = mean_of {
                s.iter_mut().for_each(|x| *x /= n as f32);
            }
        }
        DType::F64 => {
            let s = reduce_range::<f64, E>(comm, v, range, op);
            if let Some(n) = mean_of {
                s.iter_mut().for_each(|x| *x /= n as f64);
            }
        }
        DType::Bool | DType::F16 | DType::BF16 => {
            unreachable!("the caller checked that the element is its own wire type")
        }
    }
}

/// Every rank's `buf` reduced by `op`, on every rank.
pub(super) fn all_reduce(comm: &SimpleCommunicator, buf: WireBuf, op: WireOp) -> WireBuf {
    each_wire!(buf, v => all_reduce_vec(comm, v, op.system()))
}

fn broadcast_vec<W: Equivalence>(comm: &SimpleCommunicator, mut v: Vec<W>, root: usize) -> Vec<W> {
    let root = comm.process_at_rank(root as i32);
    for part in v.chunks_mut(CHUNK) {
        root.broadcast_into(part);
    }
    v
}

/// Rank `root`'s `buf` on every rank (the others pass a buffer of the same length).
pub(super) fn broadcast(comm: &SimpleCommunicator, buf: WireBuf, root: usize) -> WireBuf {
    each_wire!(buf, v => broadcast_vec(comm, v, root))
}

/// Checks that `counts` fit MPI's `int` counts and displacements.
pub(super) fn counts_fit(op: &'static str, counts: &[usize]) -> Result<()> {
    let total: u128 = counts.iter().map(|&c| c as u128).sum();
    if total > i32::MAX as u128 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "{total} elements in all exceed MPI's count limit of {} for one call; split the \
                 tensor and call once per part",
                i32::MAX
            ),
        ));
    }
    Ok(())
}

fn all_gather_vec<W: Equivalence + Copy + Default>(
    comm: &SimpleCommunicator,
    v: Vec<W>,
    counts: &[usize],
) -> Vec<W> {
    use mpi::datatype::PartitionMut;
    let total: usize = counts.iter().sum();
    let mut out = vec![W::default(); total];
    let c: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
    let displs: Vec<i32> = c
        .iter()
        .scan(0i32, |acc, &n| {
            let d = *acc;
            *acc += n;
            Some(d)
        })
        .collect();
    let mut part = PartitionMut::new(&mut out[..], &c[..], &displs[..]);
    comm.all_gather_varcount_into(&v[..], &mut part);
    out
}

/// Every rank's `buf` (rank `r` sending `counts[r]` elements), concatenated in rank order.
/// The counts must fit [`counts_fit`].
pub(super) fn all_gather(comm: &SimpleCommunicator, buf: WireBuf, counts: &[usize]) -> WireBuf {
    each_wire!(buf, v => all_gather_vec(comm, v, counts))
}

fn reduce_scatter_vec<W: Equivalence + Copy + Default>(
    comm: &SimpleCommunicator,
    v: Vec<W>,
    counts: &[usize],
    op: SystemOperation,
) -> Vec<W> {
    let me = comm.rank() as usize;
    let start: usize = counts[..me].iter().sum();
    if counts.iter().all(|&c| c == counts[0]) {
        let mut out = vec![W::default(); counts[0]];
        comm.reduce_scatter_block_into(&v[..], &mut out[..], op);
        out
    } else {
        // MPI_Reduce_scatter with uneven counts has no safe binding: reduce everything and
        // keep this rank's part (twice the traffic of the even case).
        let mut all = all_reduce_vec(comm, v, op);
        all.truncate(start + counts[me]);
        all.drain(..start);
        all
    }
}

/// `buf` reduced across ranks by `op`, rank `r` keeping the `counts[r]` elements after those
/// of the ranks before it. The counts must fit [`counts_fit`].
pub(super) fn reduce_scatter(
    comm: &SimpleCommunicator,
    buf: WireBuf,
    counts: &[usize],
    op: WireOp,
) -> WireBuf {
    each_wire!(buf, v => reduce_scatter_vec(comm, v, counts, op.system()))
}
