//! Several processes and machines: collectives on tensors over MPI (feature `mpi`).
//!
//! A program runs as one process per *rank*, started by `mpirun -np N` (or Slurm's `srun`),
//! on one machine or several (`mpirun --hostfile hosts -np N`). [`init`] starts MPI in the
//! process and returns the world [`Communicator`]; [`Communicator::split`] makes smaller
//! groups. The collectives work on any tensor, positional or named, of every dtype, on any
//! device and through any view:
//!
//! | call | what every rank ends with |
//! |---|---|
//! | [`all_reduce_`](Communicator::all_reduce_) | the elementwise sum, mean, max or min of every rank's tensor, written into its own |
//! | [`broadcast_`](Communicator::broadcast_) | the root's tensor, written into its own |
//! | [`all_gather`](Communicator::all_gather) | every rank's tensor concatenated along a dim, in rank order (sizes along it may differ) |
//! | [`reduce_scatter`](Communicator::reduce_scatter) | its part along a dim of the reduced tensor (`tensor_split`'s parts: the first ranks get one more where the size does not divide) |
//! | [`barrier`](Communicator::barrier) | nothing, once every rank has called it |
//!
//! Each has a form ending in `_start` that returns at once with a [`Pending`] call, so a
//! program can compute while the data moves; [`Pending::wait`] finishes it (and, for the
//! in-place calls, writes the result into the tensor then).
//!
//! ```no_run
//! use namedtensor::dist::{self, ReduceOp};
//! use namedtensor::{dims, Tensor};
//! dims! { Batch, Hidden }
//! # fn main() -> namedtensor::Result<()> {
//! let world = dist::init()?;
//! let t = Tensor::<f32, (Batch, Hidden)>::full([2, 3], world.rank() as f32);
//! world.all_reduce_(&t, ReduceOp::Sum)?;   // every element: 0 + 1 + … + (size − 1)
//! let all = world.all_gather(&t, Batch)?;  // (Batch, Hidden), Batch = 2 × size
//! assert_eq!(all.shape(), &[2 * world.size(), 3]);
//! # Ok(()) }
//! ```
//!
//! # Rules and guarantees
//! - Every rank makes the same collective calls in the same order (MPI's rule). Before its
//!   data, each call exchanges a 16-word header (op, dtype, shape, kind of device, root or
//!   reduction): ranks that disagree all get an error naming the op, the ranks and what
//!   differs ([`ErrorKind::ShapeMismatch`](crate::ErrorKind), `DTypeMismatch`, `Device` or
//!   `Distributed`), never a hang or mixed data. Tensors of one call are on the CPU on every
//!   rank or on a CUDA device on every rank (each rank's own ordinal). A rank whose own part
//!   fails first (a dim out of range) tells the others the same way. No tensor is changed by
//!   a call that fails.
//! - All MPI calls of the process run on one thread of the library's (module `runtime`),
//!   in the order they were made: collectives may be started from any thread, and their order
//!   is the order of the calls.
//! - Elements travel in a wire type MPI reduces: `f16`/`bf16` as `f32` (summed in `f32`,
//!   rounded once), `bool` as `u8` (`Sum`/`Max` mean any, `Min` all), the rest as themselves.
//!   `Mean` is for float dtypes. `Max`/`Min` of NaN follow the MPI library's comparison.
//! - A tensor is read when the call starts and written when it completes; gradients and
//!   autograd do not flow through collectives (as `torch.distributed`). The blocking
//!   `all_reduce_` of a contiguous host tensor (any dtype but `bool`, `f16`, `bf16`) instead
//!   lets MPI work in the tensor's storage, which it holds locked meanwhile: other threads'
//!   operations on that storage wait for the call.
//! - MPI is finalised when the last communicator and pending call of the process are gone; it
//!   cannot start again in that process.
//!
//! # NCCL (feature `nccl`)
//! `Communicator::with_nccl` makes a communicator of the same ranks whose collectives on
//! CUDA tensors run GPU to GPU on NCCL (libnccl, loaded at run time), on the device's stream,
//! instead of through host memory; on CPU tensors they still run over MPI. The header exchange
//! before every call stays on MPI, so the rules above hold for both engines; in one call all
//! ranks' tensors must be on the same kind of device (CPU or CUDA), since the engine follows
//! from it. NCCL reduces `f16`/`bf16` in their own type (one rounding per addition), `bool`
//! as any/all as above, `i16` through `i32`; `Mean` is NCCL's sum divided once on the device.
//! Without a GPU, the `cuda-emu` feature emulates NCCL between the processes of one machine.
//!
//! Threads: each rank has its own thread pool ([`set_num_threads`](crate::set_num_threads),
//! `NAMEDTENSOR_NUM_THREADS`); with several ranks on one machine, give each its share of the
//! cores.

mod collective;
mod ddp;
mod header;
#[cfg(feature = "nccl")]
mod nccl;
mod runtime;
mod wire;

pub use collective::{CollectiveDim, CollectiveTensor};
pub use ddp::{DEFAULT_BUCKET_CAP_BYTES, DistributedDataParallel};

#[cfg(feature = "nccl")]
use crate::backend::device::Device;
use crate::error::{Error, ErrorKind, Result};
use header::{Header, Op};
use runtime::{Group, Runtime};
use std::sync::{Arc, mpsc};

/// How [`Communicator::all_reduce_`] and [`Communicator::reduce_scatter`] combine the ranks'
/// elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum (for `bool`: any).
    Sum = 1,
    /// The sum divided by the number of ranks (float dtypes).
    Mean,
    /// The maximum (for `bool`: any).
    Max,
    /// The minimum (for `bool`: all).
    Min,
}

impl ReduceOp {
    fn from_word(w: u64) -> Option<ReduceOp> {
        [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min]
            .into_iter()
            .find(|op| *op as u64 == w)
    }
}

/// A group of ranks that make collective calls together: the world ([`init`]) or a part of
/// it ([`Communicator::split`]). Cloning gives another handle to the same group.
#[derive(Clone)]
pub struct Communicator {
    inner: Arc<CommHandle>,
}

struct CommHandle {
    rt: Arc<Runtime>,
    /// The communicator's id on the MPI thread.
    id: usize,
    rank: usize,
    size: usize,
    /// The device of the NCCL communicator the MPI thread holds under the same id
    /// ([`Communicator::with_nccl`]).
    #[cfg(feature = "nccl")]
    nccl: Option<Device>,
}

impl Drop for CommHandle {
    fn drop(&mut self) {
        if self.id != 0 {
            let id = self.id;
            let _ = self.rt.submit("drop", move |st| st.remove(id));
        }
    }
}

/// Starts MPI in this process (once; later calls return the same world while it lives) and
/// returns the world communicator. A process started without `mpirun` is a world of one.
///
/// # Errors
/// [`ErrorKind::Distributed`] where MPI cannot start: after the process's last communicator
/// was dropped (MPI was finalised then and cannot start again), or when other code already
/// initialised MPI.
pub fn init() -> Result<Communicator> {
    let rt = runtime::start()?;
    Ok(Communicator {
        inner: Arc::new(CommHandle {
            rank: rt.rank,
            size: rt.size,
            rt,
            id: 0,
            #[cfg(feature = "nccl")]
            nccl: None,
        }),
    })
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Communicator(rank {} of {}",
            self.inner.rank, self.inner.size
        )?;
        #[cfg(feature = "nccl")]
        if let Some(device) = self.inner.nccl {
            write!(f, ", NCCL on {device}")?;
        }
        f.write_str(")")
    }
}

impl Communicator {
    /// This process's rank in the group, `0..size`.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The number of ranks in the group.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Runs a call on the MPI thread: exchanges `mine` with every rank, checks that all agree,
    /// then runs `data` on the communicator. Returns at once with the pending call, which
    /// `finish` completes on the caller's thread.
    fn start<R: Send + 'static, T>(
        &self,
        mine: Header,
        data: impl FnOnce(&Group<'_>, &[[u64; header::WORDS]]) -> R + Send + 'static,
        finish: impl FnOnce(R) -> Result<T> + Send + 'static,
    ) -> Result<Pending<T>> {
        let (id, me, size) = (self.inner.id, self.inner.rank, self.inner.size);
        let op = mine.op.name();
        let rx = self.inner.rt.submit(op, move |st| -> Result<Reply> {
            let group = st.group(id);
            let all = header::exchange(group.mpi, &mine, size);
            header::agree(&mine, &all, me)?;
            Ok(Box::new(data(&group, &all)))
        })?;
        Ok(Pending {
            rx,
            finish: Box::new(move |reply| {
                let r = *reply
                    .downcast::<R>()
                    .expect("a pending call's reply has the type its job made");
                finish(r)
            }),
            op,
            own_error: None,
            _comm: self.clone(),
        })
    }

    /// Waits until every rank of the group has called `barrier`.
    pub fn barrier(&self) -> Result<()> {
        self.barrier_start()?.wait()
    }

    /// [`Communicator::barrier`], returning at once.
    pub fn barrier_start(&self) -> Result<Pending<()>> {
        self.start(Header::bare(Op::Barrier), |_, _| (), Ok)
    }

    /// Splits the group (a collective call): ranks that pass the same `color` form a new
    /// communicator, ordered by `key` and then by their rank here; a rank that passes `None`
    /// gets `None` (MPI's `MPI_Comm_split`).
    ///
    /// ```no_run
    /// # fn main() -> namedtensor::Result<()> {
    /// let world = namedtensor::dist::init()?;
    /// // Even and odd ranks, each a group of its own.
    /// let half = world.split(Some((world.rank() % 2) as u32), 0)?.unwrap();
    /// assert_eq!(half.rank(), world.rank() / 2);
    /// # Ok(()) }
    /// ```
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        // A bad color is this rank's own failure: it still takes part in the exchange, marked
        // failed, so that no other rank waits for it in the split.
        let own_error = color.filter(|&c| c > i32::MAX as u32).map(|c| {
            Error::new(
                ErrorKind::InvalidArgument,
                "split",
                format!("color {c} is above MPI's limit {}", i32::MAX),
            )
        });
        let mut mine = Header::bare(Op::Split);
        mine.failed = own_error.is_some();
        let id = self.inner.id;
        let rx = self.inner.rt.submit(
            "split",
            move |st| -> Result<Option<(usize, usize, usize)>> {
                use mpi::topology::Color;
                use mpi::traits::Communicator as _;
                let parent = st.comm(id);
                let size = parent.size() as usize;
                let all = header::exchange(parent, &mine, size);
                header::agree(&mine, &all, parent.rank() as usize)?;
                let c = color.map_or_else(Color::undefined, |c| Color::with_value(c as i32));
                Ok(parent.split_by_color_with_key(c, key).map(|comm| {
                    let (rank, size) = (comm.rank() as usize, comm.size() as usize);
                    (st.insert(comm), rank, size)
                }))
            },
        )?;
        let made = match rx.recv() {
            Ok(Ok(made)) => made,
            Ok(Err(e)) => return Err(own_error.unwrap_or(e)),
            Err(_) => return Err(runtime::thread_gone("split")),
        };
        Ok(made.map(|(id, rank, size)| Communicator {
            inner: Arc::new(CommHandle {
                rt: self.inner.rt.clone(),
                id,
                rank,
                size,
                #[cfg(feature = "nccl")]
                nccl: None,
            }),
        }))
    }
}

/// What a job sends back: the call's own data, typed again by its `finish`.
type Reply = Box<dyn std::any::Any + Send>;

/// A collective call under way ([`Communicator::all_reduce_start`] and the other `_start`
/// forms). [`Pending::wait`] finishes it; dropping it lets the data exchange finish but
/// writes nothing (the in-place calls write their result in `wait`).
#[must_use = "a pending collective writes its result only in `wait`"]
pub struct Pending<T> {
    rx: mpsc::Receiver<Result<Reply>>,
    finish: Box<dyn FnOnce(Reply) -> Result<T> + Send>,
    op: &'static str,
    /// This rank's own error, where its part of the call failed before the exchange: `wait`
    /// returns it rather than the exchange's "failed on rank …".
    own_error: Option<Error>,
    /// Keeps MPI alive until the call is done.
    _comm: Communicator,
}

impl<T> Pending<T> {
    /// Waits for the exchange to finish and completes the call (writing the result into the
    /// tensor for the in-place calls).
    pub fn wait(self) -> Result<T> {
        match self.rx.recv() {
            Ok(Ok(reply)) => (self.finish)(reply),
            Ok(Err(e)) => Err(self.own_error.unwrap_or(e)),
            Err(_) => Err(runtime::thread_gone(self.op)),
        }
    }
}
