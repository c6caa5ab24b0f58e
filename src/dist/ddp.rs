//! Data-parallel training: PyTorch's `DistributedDataParallel` over a [`Communicator`].
//!
//! Every rank holds the whole model and runs forward and backward on its own part of the
//! batch; the wrapper makes the gradients the mean over the ranks, so every rank takes the
//! same optimiser step and the parameters stay equal.
//!
//! # Invariants
//! - At construction rank 0's parameters are broadcast to every rank.
//! - Parameters are grouped in buckets of about `bucket_cap_bytes` (PyTorch's 25 MiB by
//!   default), in reverse registration order, which is roughly the order in which backward
//!   produces their gradients. A hook on each parameter's gradient accumulation marks it ready;
//!   buckets are launched (a non-blocking all-reduce of the bucket's gradients, flattened)
//!   strictly in bucket order, as soon as a bucket and every bucket before it are ready, so the
//!   ranks' collectives are in the same order whatever order their gradients arrive in, and
//!   communication overlaps the rest of backward.
//! - When the last bucket has been launched, the hook waits for all of them and sets each
//!   parameter's gradient to its part of the averaged bucket: when `backward` returns, the
//!   gradients are averaged.
//! - Inside [`DistributedDataParallel::no_sync`], hooks do nothing: gradients accumulate on
//!   each rank, and the next backward outside it reduces the accumulated sum.
//! - A parameter that gets no gradient in a step keeps its bucket and every later one waiting;
//!   [`DistributedDataParallel::sync_gradients`] reduces them with zeros for the missing
//!   gradients (PyTorch's `find_unused_parameters=True`). A step that starts before that is
//!   an error, not a silent mix of two steps.

use super::{Communicator, Pending, ReduceOp};
use crate::autograd::{GradHookHandle, no_grad};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::nn::{Module, Visitor};
use crate::tensor::DynTensor;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// PyTorch's default bucket size: 25 MiB.
pub const DEFAULT_BUCKET_CAP_BYTES: usize = 25 * 1024 * 1024;

/// A model whose gradients are averaged across the ranks of a [`Communicator`] during
/// backward (PyTorch's `DistributedDataParallel`). It is the model for everything else:
/// `Deref` reaches the model's own methods (`forward`), and it is a [`Module`] with the
/// model's parameter names, so optimisers and parameter files see the model unchanged.
///
/// ```no_run
/// use namedtensor::dist::{self, DistributedDataParallel};
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::{Adam, AdamConfig, Optimizer};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Features, Classes }
/// # fn main() -> namedtensor::Result<()> {
/// let world = dist::init()?;
/// // Rank 0's initial parameters reach every rank.
/// let model = DistributedDataParallel::new(Linear::<Features, Classes>::new(8, 3), &world)?;
/// let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
/// let x = Tensor::<f32, (Batch, Features)>::ones([4, 8]); // this rank's part of the batch
/// let loss = model.forward(&x).sum::<(Batch, Classes)>();
/// loss.backward();          // gradients averaged over the ranks when it returns
/// opt.step();               // the same step on every rank
/// # Ok(()) }
/// ```
pub struct DistributedDataParallel<E: Float, M: Module<E>> {
    module: M,
    reducer: Arc<Mutex<Reducer<E>>>,
    hooks: Vec<GradHookHandle>,
}

/// The state the hooks share.
struct Reducer<E: Float> {
    comm: Communicator,
    params: Vec<(String, DynTensor<E>)>,
    /// Parameter indices per bucket, in launch order.
    buckets: Vec<Vec<usize>>,
    bucket_of: Vec<usize>,
    /// This step: which parameters have their gradient, how many each bucket waits for.
    ready: Vec<bool>,
    missing: Vec<usize>,
    next_launch: usize,
    in_flight: Vec<(usize, Pending<()>, DynTensor<E>)>,
    sync: bool,
    /// Buckets launched by hooks during backward, and by `sync_gradients`, since the start.
    launched_in_backward: usize,
    launched_in_sync: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<E: Float, M: Module<E>> DistributedDataParallel<E, M> {
    /// Wraps `module` for data-parallel training over `comm`, with buckets of
    /// [`DEFAULT_BUCKET_CAP_BYTES`]. A collective call: every rank of `comm` makes it, and
    /// rank 0's parameters replace every other rank's.
    ///
    /// # Errors
    /// Ranks whose models differ (another parameter count, shape or dtype: the broadcast's
    /// error names them); a parameter that does not require grad.
    pub fn new(module: M, comm: &Communicator) -> Result<Self> {
        Self::with_bucket_cap(module, comm, DEFAULT_BUCKET_CAP_BYTES)
    }

    /// [`DistributedDataParallel::new`] with buckets of about `bucket_cap_bytes` (a
    /// parameter larger than that is a bucket of its own; 0 makes one bucket per parameter).
    pub fn with_bucket_cap(
        module: M,
        comm: &Communicator,
        bucket_cap_bytes: usize,
    ) -> Result<Self> {
        let op = "DistributedDataParallel";
        let params: Vec<(String, DynTensor<E>)> = module
            .parameters()
            .into_iter()
            .map(|p| (p.name, p.tensor))
            .collect();
        if let Some((name, _)) = params.iter().find(|(_, t)| !t.requires_grad()) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("parameter `{name}` does not require grad"),
            ));
        }
        // Reverse registration order, packed up to the cap.
        let mut buckets: Vec<Vec<usize>> = Vec::new();
        let mut bytes = 0usize;
        for i in (0..params.len()).rev() {
            let size = params[i].1.numel() * std::mem::size_of::<E>();
            match buckets.last_mut() {
                Some(b) if bytes + size <= bucket_cap_bytes => b.push(i),
                _ => {
                    buckets.push(vec![i]);
                    bytes = 0;
                }
            }
            bytes += size;
        }
        let mut bucket_of = vec![0; params.len()];
        for (b, members) in buckets.iter().enumerate() {
            for &i in members {
                bucket_of[i] = b;
            }
        }
        broadcast_parameters(comm, &params, &buckets)?;
        let missing = buckets.iter().map(Vec::len).collect();
        let reducer = Arc::new(Mutex::new(Reducer {
            comm: comm.clone(),
            ready: vec![false; params.len()],
            missing,
            next_launch: 0,
            in_flight: Vec::new(),
            sync: true,
            buckets,
            bucket_of,
            params,
            launched_in_backward: 0,
            launched_in_sync: 0,
        }));
        let mut hooks = Vec::new();
        let tensors: Vec<DynTensor<E>> = lock(&reducer)
            .params
            .iter()
            .map(|(_, t)| t.shallow_clone())
            .collect();
        for (i, t) in tensors.iter().enumerate() {
            // A weak handle: the reducer holds the parameters, whose nodes hold the hooks.
            let weak = Arc::downgrade(&reducer);
            hooks.push(
                t.register_post_accumulate_grad_hook(move || match weak.upgrade() {
                    Some(r) => lock(&r).ready(i),
                    None => Ok(()),
                })?,
            );
        }
        Ok(DistributedDataParallel {
            module,
            reducer,
            hooks,
        })
    }

    /// The wrapped model.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The communicator the gradients are averaged over.
    pub fn communicator(&self) -> Communicator {
        lock(&self.reducer).comm.clone()
    }

    /// Runs `f` (forward and backward passes) without averaging: gradients accumulate on each
    /// rank, and the next backward outside reduces their sum (gradient accumulation over
    /// micro-batches, PyTorch's `no_sync`).
    pub fn no_sync<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore<'a, E: Float>(&'a Mutex<Reducer<E>>, bool);
        impl<E: Float> Drop for Restore<'_, E> {
            fn drop(&mut self) {
                lock(self.0).sync = self.1;
            }
        }
        let before = std::mem::replace(&mut lock(&self.reducer).sync, false);
        let _restore = Restore(&self.reducer, before);
        f()
    }

    /// Finishes the step's averaging where some parameter got no gradient in backward: the
    /// buckets still waiting are reduced with zeros for the missing gradients, and every
    /// parameter then has the averaged gradient. Does nothing when backward already averaged
    /// everything (every parameter got a gradient) or inside [`no_sync`](Self::no_sync).
    ///
    /// Every rank must run backward through the model in every step (as in PyTorch): a rank
    /// whose parameters all got no gradient has nothing under way and returns at once.
    pub fn sync_gradients(&self) -> Result<()> {
        lock(&self.reducer).flush()
    }

    /// How many buckets were launched by hooks during backward and how many by
    /// [`sync_gradients`](Self::sync_gradients), since construction.
    pub fn launch_counts(&self) -> (usize, usize) {
        let r = lock(&self.reducer);
        (r.launched_in_backward, r.launched_in_sync)
    }

    /// The number of buckets.
    pub fn num_buckets(&self) -> usize {
        lock(&self.reducer).buckets.len()
    }
}

/// Rank 0's parameters to every rank, one broadcast per bucket.
fn broadcast_parameters<E: Float>(
    comm: &Communicator,
    params: &[(String, DynTensor<E>)],
    buckets: &[Vec<usize>],
) -> Result<()> {
    for members in buckets {
        let parts: Vec<DynTensor<E>> = members
            .iter()
            .map(|&i| params[i].1.detach().try_reshape(&[-1]))
            .collect::<Result<_>>()?;
        let refs: Vec<&DynTensor<E>> = parts.iter().collect();
        let flat = DynTensor::try_cat(&refs, 0)?.to_device(crate::Device::Cpu)?;
        comm.broadcast_(&flat, 0)?;
        let mut off = 0;
        for &i in members {
            let p = &params[i].1;
            let n = p.numel();
            let shape: Vec<isize> = p.shape().iter().map(|&s| s as isize).collect();
            let part = flat.try_narrow(0, off as isize, n)?.try_view(&shape)?;
            no_grad(|| p.try_copy_(&part.to_device(p.device())?).map(|_| ()))?;
            off += n;
        }
    }
    Ok(())
}

impl<E: Float> Reducer<E> {
    /// Parameter `i` has its gradient for this step.
    fn ready(&mut self, i: usize) -> Result<()> {
        if !self.sync {
            return Ok(());
        }
        if self.ready[i] {
            return Err(Error::new(
                ErrorKind::Distributed,
                "DistributedDataParallel",
                format!(
                    "parameter `{}` got its gradient again before the previous step's averaging \
                     finished: some parameter got no gradient in that step and its bucket is \
                     still waiting; call sync_gradients() after backward when parameters may \
                     go unused (PyTorch's find_unused_parameters)",
                    self.params[i].0
                ),
            ));
        }
        self.ready[i] = true;
        self.missing[self.bucket_of[i]] -= 1;
        self.launch_ready(true)
    }

    /// Launches the buckets that are ready, in order; finishes the step after the last.
    fn launch_ready(&mut self, in_backward: bool) -> Result<()> {
        while self.next_launch < self.buckets.len() && self.missing[self.next_launch] == 0 {
            self.launch(self.next_launch)?;
            if in_backward {
                self.launched_in_backward += 1;
            } else {
                self.launched_in_sync += 1;
            }
            self.next_launch += 1;
        }
        if self.next_launch == self.buckets.len() {
            self.finish()?;
        }
        Ok(())
    }

    /// Starts the all-reduce of bucket `b`'s gradients (zeros for a parameter without one),
    /// flattened into one new tensor on their device that only this call holds, so a host
    /// bucket is reduced within its own storage. Where the flattening fails on this rank
    /// (out of memory), the call still goes out, marked failed, so that every rank's
    /// backward returns the error instead of the others waiting for this rank.
    fn launch(&mut self, b: usize) -> Result<()> {
        let members = &self.buckets[b];
        let flat = members
            .iter()
            .map(|&i| {
                let p = &self.params[i].1;
                match p.grad() {
                    Some(g) => g.detach().try_reshape(&[-1]),
                    None => DynTensor::zeros_on(&[p.numel()], p.device()),
                }
            })
            .collect::<Result<Vec<DynTensor<E>>>>()
            .and_then(|parts| {
                let refs: Vec<&DynTensor<E>> = parts.iter().collect();
                no_grad(|| DynTensor::try_cat(&refs, 0))
            });
        let (pending, flat) = match flat {
            Ok(flat) => {
                let pending = match self.comm.all_reduce_in_storage_start(&flat, ReduceOp::Mean) {
                    Some(pending) => pending?,
                    None => self.comm.all_reduce_start(&flat, ReduceOp::Mean)?,
                };
                (pending, flat)
            }
            Err(e) => {
                let n = members.iter().map(|&i| self.params[i].1.numel()).sum();
                let device = self.params[members[0]].1.device();
                let pending =
                    self.comm
                        .all_reduce_failed_start::<E>(&[n], device, ReduceOp::Mean, e)?;
                (pending, DynTensor::zeros(&[0]))
            }
        };
        self.in_flight.push((b, pending, flat));
        Ok(())
    }

    /// Waits for every bucket and gives each parameter its averaged gradient.
    fn finish(&mut self) -> Result<()> {
        let in_flight = std::mem::take(&mut self.in_flight);
        self.ready.iter_mut().for_each(|r| *r = false);
        self.missing = self.buckets.iter().map(Vec::len).collect();
        self.next_launch = 0;
        let mut first_error = None;
        // Every pending call is waited for, even after an error, so none is left behind.
        for (b, pending, flat) in in_flight {
            let done = pending.wait().and_then(|()| {
                let mut off = 0;
                for &i in &self.buckets[b] {
                    let p = &self.params[i].1;
                    let n = p.numel();
                    let shape: Vec<isize> = p.shape().iter().map(|&s| s as isize).collect();
                    let g = flat.try_narrow(0, off as isize, n)?.try_view(&shape)?;
                    p.set_grad(Some(g.to_device(p.device())?))?;
                    off += n;
                }
                Ok(())
            });
            if let Err(e) = done {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `sync_gradients`: the waiting buckets, with zeros for missing gradients.
    fn flush(&mut self) -> Result<()> {
        if !self.sync || (self.next_launch == 0 && !self.ready.iter().any(|&r| r)) {
            return Ok(());
        }
        for i in 0..self.params.len() {
            if !self.ready[i] {
                self.ready[i] = true;
                self.missing[self.bucket_of[i]] -= 1;
            }
        }
        self.launch_ready(false)
    }
}

impl<E: Float, M: Module<E>> Drop for DistributedDataParallel<E, M> {
    fn drop(&mut self) {
        for h in self.hooks.drain(..) {
            h.remove();
        }
    }
}

impl<E: Float, M: Module<E>> std::ops::Deref for DistributedDataParallel<E, M> {
    type Target = M;
    fn deref(&self) -> &M {
        &self.module
    }
}

impl<E: Float, M: Module<E>> Module<E> for DistributedDataParallel<E, M> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        self.module.visit(v);
    }
}
