//! The MPI thread: the one thread of the process that calls MPI.
//!
//! # Invariants
//! - MPI is initialised (`MPI_THREAD_FUNNELED`), used and finalised on this thread only; every
//!   other thread hands it jobs through one FIFO queue. A collective therefore runs after every
//!   collective queued before it, whichever thread queued it, and blocking and non-blocking
//!   calls need nothing from the MPI library's own thread support.
//! - A job owns its data (elements already copied out of the tensor, a communicator id): it
//!   never touches a tensor and holds no handle to the runtime, so the runtime is never dropped
//!   on its own thread. (An NCCL call's data is a device copy of the tensor that only the job
//!   holds, `nccl.rs`. A blocking all-reduce from a tensor's storage holds a handle to that
//!   storage and a range of it, which it reads and writes under the storage's write lock:
//!   no autograd state, no tensor.)
//! - NCCL communicators (feature `nccl`) are made, used and dropped on this thread too, next
//!   to the MPI communicator they were made with (same id): NCCL's calls are therefore issued
//!   in the order of the MPI calls, the same order on every rank, which NCCL needs.
//! - The runtime lives while any handle to it lives ([`Communicator`](super::Communicator)s,
//!   pending calls). When the last one goes, the queue closes, the thread drops every
//!   communicator and then the MPI universe, which finalises MPI, and the dropping thread
//!   joins it. MPI cannot start twice in one process, so [`start`] refuses after that.
//! - Except when the last handle goes because its thread panics: then MPI is left
//!   unfinalised. `MPI_Finalize` waits for the other ranks, which may be waiting for this one
//!   in a collective it will never join, so finalising would hang the whole job; a process
//!   that ends without it makes `mpirun` end every rank with an error instead.

#[cfg(feature = "nccl")]
use crate::backend::cuda::nccl::NcclComm;
use crate::error::{Error, ErrorKind, Result};
use mpi::environment::{Threading, Universe};
use mpi::topology::SimpleCommunicator;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;

/// What the MPI thread holds: the communicators by id (0 is the world), the NCCL
/// communicators made with some of them, and the universe. Fields drop in order, so every
/// communicator is freed before MPI is finalised.
pub(super) struct State {
    #[cfg(feature = "nccl")]
    nccl: std::collections::HashMap<usize, NcclComm>,
    comms: Vec<Option<SimpleCommunicator>>,
    _universe: Universe,
}

/// A communicator as a job sees it: the MPI communicator and, if it was made with NCCL, the
/// NCCL one.
pub(super) struct Group<'a> {
    pub(super) mpi: &'a SimpleCommunicator,
    #[cfg(feature = "nccl")]
    pub(super) nccl: Option<&'a NcclComm>,
}

impl State {
    /// The communicator `id`, which lives while a handle to it does.
    pub(super) fn comm(&self, id: usize) -> &SimpleCommunicator {
        self.comms[id]
            .as_ref()
            .expect("a communicator is used only while a handle to it lives")
    }

    /// The communicator `id` with its NCCL communicator, if any.
    pub(super) fn group(&self, id: usize) -> Group<'_> {
        Group {
            mpi: self.comm(id),
            #[cfg(feature = "nccl")]
            nccl: self.nccl.get(&id),
        }
    }

    /// Keeps `comm` and returns its id.
    pub(super) fn insert(&mut self, comm: SimpleCommunicator) -> usize {
        self.comms.push(Some(comm));
        self.comms.len() - 1
    }

    /// Keeps `nccl` with the communicator `id`.
    #[cfg(feature = "nccl")]
    pub(super) fn insert_nccl(&mut self, id: usize, nccl: NcclComm) {
        self.nccl.insert(id, nccl);
    }

    /// Frees the communicator `id` (its last handle is gone), and its NCCL one.
    pub(super) fn remove(&mut self, id: usize) {
        #[cfg(feature = "nccl")]
        self.nccl.remove(&id);
        self.comms[id] = None;
    }
}

type Job = Box<dyn FnOnce(&mut State) + Send>;

/// The handle to the MPI thread.
pub(super) struct Runtime {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    /// Set when the runtime is dropped by a panicking thread: the MPI thread then leaves MPI
    /// unfinalised (see the invariants).
    abandon: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The world's rank of this process and the world's size.
    pub(super) rank: usize,
    pub(super) size: usize,
}

/// The live runtime, if any; a second `init` gets it again.
static LIVE: Mutex<Weak<Runtime>> = Mutex::new(Weak::new());
/// Set once MPI has been started in this process.
static STARTED: AtomicBool = AtomicBool::new(false);

/// The live runtime, or a new one that initialises MPI on its own thread.
pub(super) fn start() -> Result<Arc<Runtime>> {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = live.upgrade() {
        return Ok(rt);
    }
    if STARTED.swap(true, Ordering::SeqCst) {
        return Err(Error::new(
            ErrorKind::Distributed,
            "dist::init",
            "MPI was finalised when the last communicator of this process was dropped, and MPI \
             cannot start twice in one process: keep a communicator for as long as collectives \
             are needed",
        ));
    }
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(usize, usize)>>();
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let abandon = Arc::new(AtomicBool::new(false));
    let abandoned = Arc::clone(&abandon);
    let thread = std::thread::Builder::new()
        .name("namedtensor-mpi".into())
        .spawn(move || {
            let Some((universe, _level)) = mpi::initialize_with_threading(Threading::Funneled)
            else {
                let _ = ready_tx.send(Err(Error::new(
                    ErrorKind::Distributed,
                    "dist::init",
                    "MPI was already initialised in this process by other code; namedtensor \
                     must start MPI itself (it calls MPI from one thread of its own)",
                )));
                return;
            };
            let world = universe.world();
            use mpi::traits::Communicator as _;
            let (rank, size) = (world.rank() as usize, world.size() as usize);
            let mut state = State {
                #[cfg(feature = "nccl")]
                nccl: Default::default(),
                comms: vec![Some(world)],
                _universe: universe,
            };
            let _ = ready_tx.send(Ok((rank, size)));
            while let Ok(job) = job_rx.recv() {
                job(&mut state);
            }
            if abandoned.load(Ordering::SeqCst) {
                std::mem::forget(state);
            } else {
                drop(state);
            }
        })
        .map_err(|e| {
            Error::new(
                ErrorKind::Distributed,
                "dist::init",
                format!("cannot start the MPI thread: {e}"),
            )
        })?;
    let (rank, size) = match ready_rx.recv() {
        Ok(r) => r?,
        Err(_) => {
            return Err(Error::new(
                ErrorKind::Distributed,
                "dist::init",
                "the MPI thread ended while initialising MPI",
            ));
        }
    };
    let rt = Arc::new(Runtime {
        queue: Mutex::new(Some(job_tx)),
        abandon,
        thread: Mutex::new(Some(thread)),
        rank,
        size,
    });
    *live = Arc::downgrade(&rt);
    Ok(rt)
}

impl Runtime {
    /// Queues `f` and returns the receiver of its result.
    pub(super) fn submit<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut State) -> T + Send + 'static,
    ) -> Result<mpsc::Receiver<T>> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |state| {
            let _ = tx.send(f(state));
        });
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        match queue.as_ref().map(|q| q.send(job)) {
            Some(Ok(())) => Ok(rx),
            _ => Err(thread_gone(op)),
        }
    }
}

/// The error of a call whose job the MPI thread could not run.
pub(super) fn thread_gone(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Distributed,
        op,
        "the MPI thread has stopped (a collective panicked on it)",
    )
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.abandon.store(true, Ordering::SeqCst);
        }
        // Closing the queue ends the thread's loop; it then finalises MPI (or not, above).
        drop(self.queue.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}
