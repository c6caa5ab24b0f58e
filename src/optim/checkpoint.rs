//! Checkpoints that resume a run exactly: a model's parameters, its optimiser's state and its
//! learning-rate schedule's, in one safetensors file ([`save_checkpoint`],
//! [`load_checkpoint`]). Training k steps, saving, loading into freshly built objects and
//! training on gives the parameters of the uninterrupted run, bit for bit.
//!
//! # Invariants
//! - Loading checks every part (parameters, optimiser state, schedule) against the file
//!   before it changes any: a missing or extra tensor, another dtype, shape or dim names, a
//!   truncated file is an error naming the file and the tensor, and leaves everything as
//!   it was.
//! - State tensors are loaded onto their parameter's device.

use super::{LrScheduler, Optimizer};
use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::nn::Module;
use crate::nn::store::ModuleState;
use crate::ops::{SafetensorsFile, SaveTensor};
use crate::tensor::DynTensor;
use std::path::Path;

const OPTIMIZER: &str = "optimizer.";
const SCHEDULER: &str = "scheduler.";

/// Where an optimiser or schedule writes its state for a checkpoint: tensors and numbers
/// by name, under the part's prefix.
pub struct StateWriter {
    prefix: &'static str,
    entries: Vec<(String, Box<dyn SaveTensor>)>,
}

impl StateWriter {
    /// A tensor of the state (a moment estimate, a momentum buffer).
    pub fn tensor<E: Element>(&mut self, name: &str, t: &DynTensor<E>) {
        self.push(name, t.shallow_clone());
    }

    /// A count (a step number, an epoch).
    pub fn count(&mut self, name: &str, value: u64) {
        // Counts are far below 2^63; saturating keeps the file well-formed regardless.
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        self.push(name, DynTensor::<i64>::scalar(value));
    }

    /// A real number (a learning rate).
    pub fn number(&mut self, name: &str, value: f64) {
        self.push(name, DynTensor::<f64>::scalar(value));
    }

    fn push<E: Element>(&mut self, name: &str, t: DynTensor<E>) {
        self.entries
            .push((format!("{}{name}", self.prefix), Box::new(t)));
    }
}

/// Where an optimiser or schedule reads its state back from a checkpoint, under its prefix.
/// Every read checks the entry (present, dtype, shape) and names the file and the entry in
/// its error.
pub struct StateReader<'a> {
    prefix: &'static str,
    file: &'a SafetensorsFile,
    path: &'a Path,
}

impl StateReader<'_> {
    /// Whether the entry `name` is in the file.
    pub fn has(&self, name: &str) -> bool {
        self.file.dtype(&self.key(name)).is_some()
    }

    /// The names under `prefix` (itself under the part's), without it: the parameters a
    /// saved optimiser has state for, from `state.`.
    pub fn names_under(&self, prefix: &str) -> Vec<String> {
        let full = format!("{}{prefix}", self.prefix);
        self.file
            .names()
            .into_iter()
            .filter_map(|n| n.strip_prefix(full.as_str()).map(str::to_string))
            .collect()
    }

    /// The tensor `name`, which must have `like`'s dtype and shape, on `like`'s device.
    pub fn tensor<E: Element>(&self, name: &str, like: &DynTensor<E>) -> Result<DynTensor<E>> {
        let key = self.key(name);
        self.present(&key)?;
        let t = self.file.get::<E>(&key).map_err(|e| self.wrap(e))?;
        if t.shape() != like.shape() {
            return Err(self.error(
                ErrorKind::ShapeMismatch,
                format!(
                    "`{key}` has shape {:?} but its parameter has shape {:?}",
                    t.shape(),
                    like.shape()
                ),
            ));
        }
        t.to_device(like.device())
    }

    /// The count `name`.
    pub fn count(&self, name: &str) -> Result<u64> {
        let key = self.key(name);
        let v = self.scalar::<i64>(&key)?;
        u64::try_from(v).map_err(|_| {
            self.error(
                ErrorKind::InvalidArgument,
                format!("`{key}` is {v}, not a count"),
            )
        })
    }

    /// The real number `name`.
    pub fn number(&self, name: &str) -> Result<f64> {
        self.scalar::<f64>(&self.key(name))
    }

    fn scalar<E: Element>(&self, key: &str) -> Result<E> {
        self.present(key)?;
        let t = self.file.get::<E>(key).map_err(|e| self.wrap(e))?;
        if t.numel() != 1 {
            return Err(self.error(
                ErrorKind::ShapeMismatch,
                format!("`{key}` has shape {:?}, not a single number", t.shape()),
            ));
        }
        Ok(t.to_vec()[0])
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn present(&self, key: &str) -> Result<()> {
        if self.file.dtype(key).is_none() {
            return Err(self.error(
                ErrorKind::InvalidArgument,
                format!("the checkpoint has no `{key}`"),
            ));
        }
        Ok(())
    }

    /// An error of this load, naming the file.
    pub fn error(&self, kind: ErrorKind, msg: String) -> Error {
        Error::new(
            kind,
            "load_checkpoint",
            format!("{}: {msg}", self.path.display()),
        )
    }

    fn wrap(&self, e: Error) -> Error {
        self.error(e.kind(), e.to_string())
    }
}

/// Saves `model`'s parameters, `optimizer`'s state and, if given, `scheduler`'s to one
/// safetensors file, which [`load_checkpoint`] reads back.
///
/// # Layout
/// - `<param>`: each parameter under its dotted name, with the metadata entry
///   `dims.<param>`, as [`save_parameters`](crate::nn::save_parameters) writes them (so
///   [`load_parameters`](crate::nn::load_parameters) cannot read a checkpoint: it refuses the
///   optimiser's tensors; `load_checkpoint` is the reader).
/// - `optimizer.state.<param>.<buffer>`: PyTorch's state names, keyed by the parameter's
///   name instead of its index (`exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`,
///   `momentum_buffer`, in the parameter's dtype; `step`, an `i64` count); a parameter that
///   has not been stepped has none, as in PyTorch.
/// - `optimizer.param_groups.lr`: the learning rate (`f64`), which schedules change.
/// - `scheduler.<field>`: the schedule's counters and rates (`last_epoch`, `base_lr`, …).
///
/// ```
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::{load_checkpoint, save_checkpoint, Adam, AdamConfig, Optimizer};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, In, Out }
/// let path = std::env::temp_dir().join(format!("nt-doc-ckpt-{}.safetensors", std::process::id()));
/// let model = Linear::<In, Out, f64>::seeded(3, 2, 0);
/// let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
/// let x = Tensor::<f64, (Batch, In)>::ones([4, 3]);
/// model.forward(&x).sum::<(Batch, Out)>().backward();
/// opt.step().unwrap();
/// save_checkpoint(&path, &model, &opt, None).unwrap();
///
/// // Later, in a fresh process: build the same objects, then load.
/// let resumed = Linear::<In, Out, f64>::seeded(3, 2, 1);
/// let mut opt2 = Adam::new(resumed.parameters(), AdamConfig::adamw());
/// load_checkpoint(&path, &resumed, &mut opt2, None).unwrap();
/// assert_eq!(resumed.weight.to_vec(), model.weight.to_vec());
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn save_checkpoint<E: Float, M: Module<E> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: &dyn Optimizer,
    scheduler: Option<&dyn LrScheduler>,
) -> Result<()> {
    let state = ModuleState::of(model);
    let mut opt = StateWriter {
        prefix: OPTIMIZER,
        entries: Vec::new(),
    };
    optimizer.save_state(&mut opt)?;
    let mut sched = StateWriter {
        prefix: SCHEDULER,
        entries: Vec::new(),
    };
    if let Some(s) = scheduler {
        s.save_state(&mut sched)?;
    }
    let mut tensors = state.tensors();
    for (name, t) in opt.entries.iter().chain(&sched.entries) {
        tensors.push((name.as_str(), t.as_ref()));
    }
    crate::ops::save_with_metadata(path.as_ref(), &tensors, Some(state.dims_metadata()))
}

/// Loads a checkpoint of [`save_checkpoint`] into `model`, `optimizer` and, if given,
/// `scheduler`, built as they were for the saved run (the same layers, parameter order and
/// options). Every part is checked before any is changed; on error nothing is.
///
/// # Errors
/// [`ErrorKind::Io`] for a file that cannot be read or is truncated;
/// [`ErrorKind::InvalidArgument`] for a missing or extra entry (a parameter the model lacks,
/// optimiser state for a parameter the optimiser does not hold, a schedule's state where no
/// schedule is given or the reverse); `DTypeMismatch` and `ShapeMismatch` for an entry of
/// another dtype, shape or dim names. Each names the file and the entry.
pub fn load_checkpoint<E: Float, M: Module<E> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: &mut dyn Optimizer,
    mut scheduler: Option<&mut dyn LrScheduler>,
) -> Result<()> {
    let path = path.as_ref();
    let file = SafetensorsFile::open(path)?;
    let state = ModuleState::of(model);
    let values = state.read("load_checkpoint", &file, path, |n| {
        n.starts_with(OPTIMIZER) || n.starts_with(SCHEDULER)
    })?;
    let opt = StateReader {
        prefix: OPTIMIZER,
        file: &file,
        path,
    };
    let sched = StateReader {
        prefix: SCHEDULER,
        file: &file,
        path,
    };
    let saved_schedule = !sched.names_under("").is_empty();
    if saved_schedule != scheduler.is_some() {
        return Err(sched.error(
            ErrorKind::InvalidArgument,
            if saved_schedule {
                "the checkpoint has a schedule's state but no schedule was given to load it"
                    .to_string()
            } else {
                "a schedule was given but the checkpoint has no schedule's state".to_string()
            },
        ));
    }
    // Check every part, then apply every part: only the first pass can meet a bad file.
    optimizer.load_state(&opt, false)?;
    if let Some(s) = scheduler.as_deref_mut() {
        s.load_state(&sched, false)?;
    }
    optimizer.load_state(&opt, true)?;
    if let Some(s) = scheduler {
        s.load_state(&sched, true)?;
    }
    state.write(values)
}
