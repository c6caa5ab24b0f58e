//! The emulated NCCL (features `cuda-emu` and `nccl`): the items of cudarc's `nccl` module that
//! the backend uses (`backend/cuda/nccl.rs`), for ranks that are processes of one machine,
//! each with its own emulated `cuda:0`. With it the host code around NCCL (the unique id made
//! on rank 0 and sent over MPI, one communicator per rank, the calls on the device's stream,
//! the element types and counts they pass) runs in CI without a GPU or libnccl. What it cannot
//! show: anything of NCCL itself (its transports, its reduction order and rounding, its
//! behaviour when a peer dies), and speed.
//!
//! A communicator is a folder named by its unique id, under `/dev/shm` where that exists (else
//! the temporary folder). Each call posts this rank's part there as one file named by the
//! call's number and the rank, then reads every other rank's file of that call. Nothing else
//! connects the ranks: MPI stays with the dist runtime's thread (it runs `MPI_THREAD_FUNNELED`).
//!
//! # Invariants
//! - A call runs when it is issued, on the issuing thread, under the stream's lock
//!   (`CudaStream::run_now`): after all work issued to the stream before it and before any
//!   work issued after it, which is where a real NCCL kernel runs in stream order. It returns
//!   once every rank's part has arrived and this rank's result is in its device memory.
//! - A file is complete or absent: it is written under another name and renamed.
//! - Every file starts with the call's description (kind, element size, count, root or
//!   reduction): a rank that finds another description in a peer's file fails with
//!   `ncclInvalidUsage` rather than read the wrong number of bytes.
//! - Every rank combines the parts in rank order, so all ranks get the same bits.
//! - A rank that starts call `k` has read every rank's file of call `k - 1`, which each rank
//!   posted after finishing call `k - 2`; so it deletes its own file of call `k - 2`. A dropped
//!   communicator deletes its file of the call before its last, then leaves a `done` mark; the
//!   rank that finds every rank's mark deletes the folder.
//! - A part that has not arrived within the timeout (`NAMEDTENSOR_NCCL_EMU_TIMEOUT_S` seconds,
//!   300 by default) fails the call with `ncclTimeout`, never a hang.

use super::memory::{CudaView, CudaViewMut};
use super::stream::CudaStream;
use cudarc::nccl::result::{NcclError, NcclStatus};
use cudarc::nccl::sys::ncclResult_t;
use half::{bf16, f16};
use std::cell::Cell;
use std::ffi::c_char;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// The first bytes of an emulated unique id (a real NCCL id is refused).
const MAGIC: &[u8; 8] = b"ntemnccl";
/// The id bytes that name the communicator's folder: process, time and a counter.
const NAMED: std::ops::Range<usize> = 8..36;
/// Words of a file's description of its call.
const DESCRIPTION: usize = 5;
/// The description's first word: this format.
const FORMAT: u64 = 0x6e74_6e63_636c_0001;

/// The message of the latest failure of an emulated NCCL call in this process.
pub fn last_failure() -> Option<String> {
    LAST_FAILURE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

static LAST_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// `code`, with what went wrong kept for [`last_failure`].
fn fail(code: ncclResult_t, message: String) -> NcclError {
    *LAST_FAILURE.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
    NcclError(code)
}

/// The emulated `ncclUniqueId`: 128 bytes, as NCCL's.
#[derive(Debug, Clone, Copy)]
pub struct Id {
    internal: [c_char; 128],
}

impl Id {
    /// A new id, different from every other of this machine (process, time, counter).
    pub fn new() -> Result<Id, NcclError> {
        static MADE: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut bytes = [0u8; 128];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        bytes[12..28].copy_from_slice(&nanos.to_le_bytes());
        bytes[28..36].copy_from_slice(&MADE.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        Ok(Id {
            internal: bytes.map(|b| b as c_char),
        })
    }

    /// The id whose bytes another rank made (as cudarc's).
    pub fn uninit(internal: [c_char; 128]) -> Id {
        Id { internal }
    }

    /// The id's bytes, to send to the other ranks.
    pub fn internal(&self) -> &[c_char; 128] {
        &self.internal
    }

    fn bytes(&self) -> [u8; 128] {
        self.internal.map(|c| c as u8)
    }
}

/// The reductions the backend uses (cudarc's enum also has `Prod` and `Avg`).
pub enum ReduceOp {
    Sum,
    Max,
    Min,
}

impl ReduceOp {
    fn word(&self) -> u64 {
        match self {
            ReduceOp::Sum => 1,
            ReduceOp::Max => 2,
            ReduceOp::Min => 3,
        }
    }
}

/// An element type NCCL reduces: plain numbers, read from and written to native-endian bytes.
pub trait NcclType: Copy {
    /// Bytes per element.
    const SIZE: usize;
    /// The element in `bytes` (exactly `SIZE` of them).
    fn read(bytes: &[u8]) -> Self;
    /// Appends the element's bytes to `out`.
    fn write(self, out: &mut Vec<u8>);
    /// `self` and `other` combined by `op` (integer sums wrap; half sums round once per
    /// addition, as arithmetic in the type does).
    fn combine(self, other: Self, op: &ReduceOp) -> Self;
}

fn larger<T: PartialOrd>(a: T, b: T) -> T {
    if b > a { b } else { a }
}

fn smaller<T: PartialOrd>(a: T, b: T) -> T {
    if b < a { b } else { a }
}

macro_rules! nccl_types {
    ($($t:ty => $add:expr;)*) => {$(
        impl NcclType for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_ne_bytes(bytes.try_into().expect("SIZE bytes"))
            }
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn combine(self, other: Self, op: &ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => ($add)(self, other),
                    ReduceOp::Max => larger(self, other),
                    ReduceOp::Min => smaller(self, other),
                }
            }
        }
    )*};
}

nccl_types! {
    u8 => u8::wrapping_add;
    i8 => i8::wrapping_add;
    i32 => i32::wrapping_add;
    i64 => i64::wrapping_add;
    u32 => u32::wrapping_add;
    u64 => u64::wrapping_add;
    f32 => |a: f32, b: f32| a + b;
    f64 => |a: f64, b: f64| a + b;
    f16 => |a: f16, b: f16| f16::from_f32(a.to_f32() + b.to_f32());
    bf16 => |a: bf16, b: bf16| bf16::from_f32(a.to_f32() + b.to_f32());
}

/// What a call is, as every rank's file describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Init = 1,
    AllReduce,
    Broadcast,
    AllGather,
    ReduceScatter,
}

/// One call's description: its kind, element size, count and argument (root or reduction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Call {
    kind: Kind,
    size: usize,
    count: usize,
    arg: u64,
}

impl Call {
    fn words(&self) -> [u64; DESCRIPTION] {
        [
            FORMAT,
            self.kind as u64,
            self.size as u64,
            self.count as u64,
            self.arg,
        ]
    }
}

/// `len` elements of `T` at device address `ptr`, as bytes.
///
/// # Safety
/// `ptr` must be a live emulated allocation of at least `len` elements of `T`, which no work
/// writes meanwhile (the caller holds the stream's lock, with nothing queued).
unsafe fn read_device<T: NcclType>(ptr: u64, len: usize) -> Vec<u8> {
    // SAFETY: the caller's contract; the bytes are plain data.
    unsafe { std::slice::from_raw_parts(ptr as *const u8, len * T::SIZE) }.to_vec()
}

/// Writes `bytes` at device address `ptr`.
///
/// # Safety
/// `ptr` must be a live emulated allocation of at least `bytes.len()` bytes, which no other
/// work reads or writes meanwhile (as for [`read_device`]).
unsafe fn write_device(ptr: u64, bytes: &[u8]) {
    // SAFETY: the caller's contract; `bytes` is host memory of its own, not the allocation.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr as *mut u8, bytes.len()) };
}

/// The folder where the emulated communicators live.
fn base_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// How long a call waits for the other ranks' parts.
fn timeout() -> Duration {
    std::env::var("NAMEDTENSOR_NCCL_EMU_TIMEOUT_S")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(300), Duration::from_secs_f64)
}

/// An emulated NCCL communicator: this rank's end of one group.
#[derive(Debug)]
pub struct Comm {
    stream: Arc<CudaStream>,
    rank: usize,
    world_size: usize,
    dir: PathBuf,
    /// The number of the next call (0 was the rendezvous of `from_rank`).
    next: Cell<u64>,
    /// A call failed: every later one fails ([`Comm::exchange`]).
    broken: Cell<bool>,
    timeout: Duration,
}

impl Comm {
    /// This rank's end of the group of `world_size` ranks that `id` names, on `stream`'s
    /// device; returns once every rank has joined (as `ncclCommInitRank` does).
    pub fn from_rank(
        stream: Arc<CudaStream>,
        rank: usize,
        world_size: usize,
        id: Id,
    ) -> Result<Comm, NcclError> {
        Comm::join(stream, rank, world_size, id, timeout())
    }

    fn join(
        stream: Arc<CudaStream>,
        rank: usize,
        world_size: usize,
        id: Id,
        timeout: Duration,
    ) -> Result<Comm, NcclError> {
        let bytes = id.bytes();
        if &bytes[..8] != MAGIC {
            return Err(fail(
                ncclResult_t::ncclInvalidArgument,
                "the unique id was not made by the emulated NCCL".into(),
            ));
        }
        if rank >= world_size {
            return Err(fail(
                ncclResult_t::ncclInvalidArgument,
                format!("rank {rank} of a group of {world_size}"),
            ));
        }
        let name: String = bytes[NAMED].iter().map(|b| format!("{b:02x}")).collect();
        let dir = base_dir().join(format!("namedtensor-nccl-emu-{name}"));
        std::fs::create_dir_all(&dir).map_err(|e| {
            fail(
                ncclResult_t::ncclSystemError,
                format!("creating {}: {e}", dir.display()),
            )
        })?;
        let comm = Comm {
            stream,
            rank,
            world_size,
            dir,
            next: Cell::new(0),
            broken: Cell::new(false),
            timeout,
        };
        let init = Call {
            kind: Kind::Init,
            size: 0,
            count: world_size,
            arg: 0,
        };
        comm.exchange(init, Vec::new())?;
        Ok(comm)
    }

    /// Runs `f` in stream order (see the invariants); a failed stream is
    /// `ncclUnhandledCudaError`, as a real NCCL call on a faulted context reports.
    fn in_order(
        &self,
        f: impl FnOnce() -> Result<NcclStatus, NcclError>,
    ) -> Result<NcclStatus, NcclError> {
        self.stream.run_now(f).unwrap_or_else(|e| {
            Err(fail(
                ncclResult_t::ncclUnhandledCudaError,
                format!("the emulated stream had failed before the call ({:?})", e.0),
            ))
        })
    }

    fn file(&self, call: u64, rank: usize) -> PathBuf {
        self.dir.join(format!("{call}.{rank}"))
    }

    /// Writes `bytes` as `path`, complete or not at all.
    fn post(&self, path: &Path, bytes: &[u8]) -> Result<(), NcclError> {
        let part = path.with_extension(format!("{}.part", self.rank));
        std::fs::write(&part, bytes)
            .and_then(|()| std::fs::rename(&part, path))
            .map_err(|e| {
                fail(
                    ncclResult_t::ncclSystemError,
                    format!("writing {}: {e}", path.display()),
                )
            })
    }

    /// Rank `rank`'s file `path`, once it is there (`ncclTimeout` after the timeout).
    fn fetch(&self, path: &Path, rank: usize) -> Result<Vec<u8>, NcclError> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(50);
        loop {
            match std::fs::read(path) {
                Ok(bytes) => return Ok(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(fail(
                        ncclResult_t::ncclSystemError,
                        format!("reading {}: {e}", path.display()),
                    ));
                }
            }
            if start.elapsed() > self.timeout {
                return Err(fail(
                    ncclResult_t::ncclTimeout,
                    format!(
                        "rank {rank}'s part of call {} did not arrive within {:?} (rank {} of \
                         {} waits in {})",
                        self.next.get(),
                        self.timeout,
                        self.rank,
                        self.world_size,
                        self.dir.display()
                    ),
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// Posts this rank's `data` for `call` and returns every rank's, in rank order. After a
    /// failed call every later one fails too (real NCCL's communicator is unusable after an
    /// error): the ranks' call numbers no longer line up, and a later call could otherwise
    /// read another call's files.
    fn exchange(&self, call: Call, data: Vec<u8>) -> Result<Vec<Vec<u8>>, NcclError> {
        if self.broken.get() {
            return Err(fail(
                ncclResult_t::ncclInvalidUsage,
                format!(
                    "an earlier call of this communicator failed on rank {} of {}; make a new                      communicator",
                    self.rank, self.world_size
                ),
            ));
        }
        let done = self.exchange_once(call, data);
        self.broken.set(done.is_err());
        done
    }

    fn exchange_once(&self, call: Call, data: Vec<u8>) -> Result<Vec<Vec<u8>>, NcclError> {
        let k = self.next.get();
        if let Some(old) = k.checked_sub(2) {
            let _ = std::fs::remove_file(self.file(old, self.rank));
        }
        let mut file = Vec::with_capacity(DESCRIPTION * 8 + data.len());
        for w in call.words() {
            file.extend_from_slice(&w.to_ne_bytes());
        }
        file.extend_from_slice(&data);
        self.post(&self.file(k, self.rank), &file)?;
        let mut all = Vec::with_capacity(self.world_size);
        for r in 0..self.world_size {
            if r == self.rank {
                all.push(data.clone());
                continue;
            }
            let bytes = self.fetch(&self.file(k, r), r)?;
            let theirs: Vec<u64> = bytes
                .chunks_exact(8)
                .take(DESCRIPTION)
                .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
                .collect();
            if theirs != call.words() {
                return Err(fail(
                    ncclResult_t::ncclInvalidUsage,
                    format!(
                        "call {k}: rank {r} issued another call (words {theirs:?}) than rank {} \
                         ({call:?})",
                        self.rank
                    ),
                ));
            }
            all.push(bytes[DESCRIPTION * 8..].to_vec());
        }
        self.next.set(k + 1);
        Ok(all)
    }

    /// Elements `range` of every rank's part combined by `op`, in rank order, as bytes.
    fn combine<T: NcclType>(
        parts: &[Vec<u8>],
        range: std::ops::Range<usize>,
        op: &ReduceOp,
    ) -> Result<Vec<u8>, NcclError> {
        let bytes = range.start * T::SIZE..range.end * T::SIZE;
        if parts.iter().any(|p| p.len() < bytes.end) {
            return Err(fail(
                ncclResult_t::ncclInternalError,
                "a part is shorter than its description says".into(),
            ));
        }
        let mut acc: Vec<T> = parts[0][bytes.clone()]
            .chunks_exact(T::SIZE)
            .map(T::read)
            .collect();
        for part in &parts[1..] {
            for (a, b) in acc
                .iter_mut()
                .zip(part[bytes.clone()].chunks_exact(T::SIZE))
            {
                *a = a.combine(T::read(b), op);
            }
        }
        let mut out = Vec::with_capacity(bytes.len());
        for a in acc {
            a.write(&mut out);
        }
        Ok(out)
    }

    /// Every rank's `buff` combined by `op`, into `buff` (`ncclAllReduce` in place).
    pub fn all_reduce_in_place<T: NcclType>(
        &self,
        buff: &mut CudaViewMut<'_, T>,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let (ptr, len) = (buff.ptr, buff.len);
        self.in_order(|| {
            // SAFETY: `buff` borrows `len` elements of a live allocation; the stream is drained
            // and locked (`in_order`), so no work touches them meanwhile.
            let mine = unsafe { read_device::<T>(ptr, len) };
            let call = Call {
                kind: Kind::AllReduce,
                size: T::SIZE,
                count: len,
                arg: reduce_op.word(),
            };
            let parts = self.exchange(call, mine)?;
            let out = Comm::combine::<T>(&parts, 0..len, reduce_op)?;
            // SAFETY: as above; `out` holds exactly `len` elements.
            unsafe { write_device(ptr, &out) };
            Ok(NcclStatus::Success)
        })
    }

    /// Rank `root`'s `recvbuff` into every rank's (`ncclBroadcast` in place).
    pub fn broadcast_in_place<T: NcclType>(
        &self,
        recvbuff: &mut CudaViewMut<'_, T>,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let (ptr, len) = (recvbuff.ptr, recvbuff.len);
        let Some(root) = usize::try_from(root).ok().filter(|&r| r < self.world_size) else {
            return Err(fail(
                ncclResult_t::ncclInvalidArgument,
                format!("root {root} in a group of {}", self.world_size),
            ));
        };
        self.in_order(|| {
            let mine = if self.rank == root {
                // SAFETY: as in `all_reduce_in_place`.
                unsafe { read_device::<T>(ptr, len) }
            } else {
                Vec::new()
            };
            let call = Call {
                kind: Kind::Broadcast,
                size: T::SIZE,
                count: len,
                arg: root as u64,
            };
            let parts = self.exchange(call, mine)?;
            if self.rank != root {
                let theirs = &parts[root];
                if theirs.len() != len * T::SIZE {
                    return Err(fail(
                        ncclResult_t::ncclInternalError,
                        format!("the root's part has {} bytes", theirs.len()),
                    ));
                }
                // SAFETY: as in `all_reduce_in_place`; `theirs` is `len` elements.
                unsafe { write_device(ptr, theirs) };
            }
            Ok(NcclStatus::Success)
        })
    }

    /// Every rank's `sendbuff` concatenated in rank order, into `recvbuff`, which holds
    /// `world_size` times as many elements (`ncclAllGather`).
    pub fn all_gather<T: NcclType>(
        &self,
        sendbuff: &CudaView<'_, T>,
        recvbuff: &mut CudaViewMut<'_, T>,
    ) -> Result<NcclStatus, NcclError> {
        let (src, count) = (sendbuff.ptr, sendbuff.len);
        let (dst, room) = (recvbuff.ptr, recvbuff.len);
        if count.checked_mul(self.world_size) != Some(room) {
            return Err(fail(
                ncclResult_t::ncclInvalidArgument,
                format!(
                    "all_gather of {count} elements a rank into {room} (a group of {})",
                    self.world_size
                ),
            ));
        }
        self.in_order(|| {
            // SAFETY: as in `all_reduce_in_place`, for the send view.
            let mine = unsafe { read_device::<T>(src, count) };
            let call = Call {
                kind: Kind::AllGather,
                size: T::SIZE,
                count,
                arg: 0,
            };
            let out = self.exchange(call, mine)?.concat();
            if out.len() != room * T::SIZE {
                return Err(fail(
                    ncclResult_t::ncclInternalError,
                    format!("the parts have {} bytes in all", out.len()),
                ));
            }
            // SAFETY: as above, for the receive view of `room` elements.
            unsafe { write_device(dst, &out) };
            Ok(NcclStatus::Success)
        })
    }

    /// This rank's part (the `rank`-th run of `recvbuff.len` elements) of every rank's
    /// `sendbuff` combined by `op`, into `recvbuff` (`ncclReduceScatter`).
    pub fn reduce_scatter<T: NcclType>(
        &self,
        sendbuff: &CudaView<'_, T>,
        recvbuff: &mut CudaViewMut<'_, T>,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let (src, total) = (sendbuff.ptr, sendbuff.len);
        let (dst, count) = (recvbuff.ptr, recvbuff.len);
        if count.checked_mul(self.world_size).is_none_or(|n| n > total) {
            return Err(fail(
                ncclResult_t::ncclInvalidArgument,
                format!(
                    "reduce_scatter of {count} elements a rank from {total} (a group of {})",
                    self.world_size
                ),
            ));
        }
        self.in_order(|| {
            // SAFETY: as in `all_reduce_in_place`, for the send view.
            let mine = unsafe { read_device::<T>(src, count * self.world_size) };
            let call = Call {
                kind: Kind::ReduceScatter,
                size: T::SIZE,
                count,
                arg: reduce_op.word(),
            };
            let parts = self.exchange(call, mine)?;
            let start = self.rank * count;
            let out = Comm::combine::<T>(&parts, start..start + count, reduce_op)?;
            // SAFETY: as above, for the receive view of `count` elements.
            unsafe { write_device(dst, &out) };
            Ok(NcclStatus::Success)
        })
    }
}

impl Drop for Comm {
    /// Deletes this rank's file of the call before the last (every rank has read it) and
    /// leaves its `done` mark; the rank that finds every mark deletes the folder. Nothing
    /// reads the folder after a rank's mark, so a folder with every mark has no reader left.
    fn drop(&mut self) {
        if self.next.get() == 0 {
            // The rendezvous failed (`from_rank` returns the error): take this rank's file
            // back, and the folder if no other rank is in it.
            let _ = std::fs::remove_file(self.file(0, self.rank));
            let _ = std::fs::remove_dir(&self.dir);
            return;
        }
        if let Some(old) = self.next.get().checked_sub(2) {
            let _ = std::fs::remove_file(self.file(old, self.rank));
        }
        let mark = |r: usize| self.dir.join(format!("done.{r}"));
        if self.post(&mark(self.rank), &[]).is_err() {
            return;
        }
        if (0..self.world_size).all(|r| mark(r).exists()) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::CudaContext;
    use super::*;

    /// `n` ranks as threads, each with its own emulated device, running `f(rank, comm)`.
    fn ranks<R: Send + 'static>(
        n: usize,
        f: impl Fn(usize, &Comm, &Arc<CudaStream>) -> R + Send + Sync + 'static,
    ) -> Vec<R> {
        let id = Id::new().unwrap();
        let f = Arc::new(f);
        let threads: Vec<_> = (0..n)
            .map(|r| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    let stream = CudaContext::new_private().default_stream();
                    let comm = Comm::from_rank(Arc::clone(&stream), r, n, id).unwrap();
                    f(r, &comm, &stream)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    }

    fn upload<T: NcclType>(stream: &Arc<CudaStream>, v: &[T]) -> super::super::CudaSlice<u8> {
        let mut bytes = Vec::new();
        for x in v {
            x.write(&mut bytes);
        }
        // SAFETY: written in full below.
        let mut slice = unsafe { stream.alloc::<u8>(bytes.len()) }.unwrap();
        stream
            .memcpy_htod(&bytes, &mut slice.slice_mut(..))
            .unwrap();
        slice
    }

    fn download<T: NcclType>(stream: &Arc<CudaStream>, s: &super::super::CudaSlice<u8>) -> Vec<T> {
        let mut bytes = vec![0u8; s.len];
        stream.memcpy_dtoh(&s.slice(..), &mut bytes).unwrap();
        bytes.chunks_exact(T::SIZE).map(T::read).collect()
    }

    #[test]
    fn every_call_matches_its_definition_across_three_ranks() {
        let out = ranks(3, |r, comm, stream| {
            let mine: Vec<i32> = (0..6).map(|i| (r * 10 + i) as i32).collect();
            let mut s = upload(stream, &mine);
            // SAFETY: the slice holds six i32.
            let mut v = unsafe { s.transmute_mut::<i32>(6) }.unwrap();
            comm.all_reduce_in_place(&mut v, &ReduceOp::Sum).unwrap();
            let sum = download::<i32>(stream, &s);
            // SAFETY: as above.
            let mut v = unsafe { s.transmute_mut::<i32>(6) }.unwrap();
            comm.all_reduce_in_place(&mut v, &ReduceOp::Min).unwrap();
            let min = download::<i32>(stream, &s);

            let mut b = upload(stream, &[r as u8 + 1; 4]);
            comm.broadcast_in_place(&mut b.slice_mut(..), 2).unwrap();
            let bcast = download::<u8>(stream, &b);

            let send = upload(stream, &[f16::from_f32(r as f32 + 0.5); 2]);
            let mut recv = upload(stream, &[f16::ZERO; 6]);
            // SAFETY: two and six f16.
            let (sv, mut rv) = unsafe {
                (
                    send.transmute::<f16>(2).unwrap(),
                    recv.transmute_mut::<f16>(6).unwrap(),
                )
            };
            comm.all_gather(&sv, &mut rv).unwrap();
            let gathered = download::<f16>(stream, &recv);

            let send = upload(stream, &mine);
            let mut recv = upload(stream, &[0i32; 2]);
            // SAFETY: six and two i32.
            let (sv, mut rv) = unsafe {
                (
                    send.transmute::<i32>(6).unwrap(),
                    recv.transmute_mut::<i32>(2).unwrap(),
                )
            };
            comm.reduce_scatter(&sv, &mut rv, &ReduceOp::Max).unwrap();
            let part = download::<i32>(stream, &recv);
            (sum, min, bcast, gathered, part)
        });
        for (r, (sum, min, bcast, gathered, part)) in out.into_iter().enumerate() {
            let want: Vec<i32> = (0..6).map(|i| 30 + 3 * i).collect();
            assert_eq!(sum, want);
            assert_eq!(min, want, "the min of the sums, equal on every rank");
            assert_eq!(bcast, vec![3u8; 4]);
            let halves: Vec<f32> = gathered.iter().map(|h| h.to_f32()).collect();
            assert_eq!(halves, [0.5, 0.5, 1.5, 1.5, 2.5, 2.5]);
            assert_eq!(part, [20 + 2 * r as i32, 21 + 2 * r as i32]);
        }
    }

    #[test]
    fn files_are_removed_with_the_last_communicator() {
        let dirs = ranks(2, |_, comm, stream| {
            let mut s = upload(stream, &[1u64; 3]);
            for _ in 0..4 {
                // SAFETY: three u64.
                let mut v = unsafe { s.transmute_mut::<u64>(3) }.unwrap();
                comm.all_reduce_in_place(&mut v, &ReduceOp::Sum).unwrap();
            }
            assert_eq!(download::<u64>(stream, &s), [16; 3]);
            // Calls 0 (the rendezvous) to 2 of this rank are gone or going; 3 and 4 remain.
            comm.dir.clone()
        });
        assert!(!dirs[0].exists(), "{} is left", dirs[0].display());
    }

    #[test]
    fn a_rank_that_never_comes_is_a_timeout_and_a_call_that_differs_is_invalid_usage() {
        let stream = CudaContext::new_private().default_stream();
        let id = Id::new().unwrap();
        let e = Comm::join(stream, 0, 2, id, Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.0, ncclResult_t::ncclTimeout);
        assert!(last_failure().is_some());

        let out = ranks(2, |r, comm, stream| {
            let mut s = upload(stream, &[1i64; 4]);
            // SAFETY: four i64 (rank 1 views three of them).
            let mut v = unsafe { s.transmute_mut::<i64>(4 - r) }.unwrap();
            comm.all_reduce_in_place(&mut v, &ReduceOp::Sum)
                .map(drop)
                .map_err(|e| e.0)
        });
        assert_eq!(out, [Err(ncclResult_t::ncclInvalidUsage); 2]);
        assert!(
            Id::uninit([0; 128]).internal().iter().all(|&c| c == 0),
            "an id of other bytes is kept as it is"
        );
    }
}
