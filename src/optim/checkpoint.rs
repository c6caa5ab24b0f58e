//! Checkpoints that resume a run exactly: a model's parameters and the state of every other
//! part of the run (an optimiser, a learning-rate schedule, a gradient scaler: each a
//! [`TrainingState`]) in one safetensors file ([`save_checkpoint`], [`load_checkpoint`] for
//! the usual parts, [`save_training_state`], [`load_training_state`] for any). Training k
//! steps, saving, loading into freshly built objects and training on gives the parameters of
//! the uninterrupted run, bit for bit.
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

/// A part of a training run whose state a checkpoint keeps beside the model's parameters,
/// under the part's name: every [`Optimizer`], [`LrScheduler`] and
/// [`GradScaler`](crate::amp::GradScaler).
pub trait TrainingState {
    /// Writes the state a resumed run needs (buffers, counters, rates).
    fn save_state(&self, out: &mut StateWriter) -> Result<()>;
    /// Reads the state [`TrainingState::save_state`] wrote, checking it against this part
    /// (its parameters, its options); it changes nothing unless `apply`
    /// ([`load_training_state`] checks every part of a checkpoint before it applies any).
    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()>;
}

/// Where an optimiser or schedule writes its state for a checkpoint: tensors and numbers
/// by name, under the part's prefix.
pub struct StateWriter {
    prefix: String,
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
    prefix: String,
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
/// safetensors file, which [`load_checkpoint`] reads back: [`save_training_state`] with the
/// parts `optimizer` and `scheduler`.
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
    let mut parts: Vec<(&str, &dyn TrainingState)> = vec![("optimizer", optimizer)];
    if let Some(s) = scheduler {
        parts.push(("scheduler", s));
    }
    save_training_state(path, model, &parts)
}

/// Loads a checkpoint of [`save_checkpoint`] into `model`, `optimizer` and, if given,
/// `scheduler`, built as they were for the saved run (the same layers, parameter order and
/// options): [`load_training_state`] with the parts `optimizer` and `scheduler`. Every part
/// is checked before any is changed; on error nothing is.
///
/// # Errors
/// As [`load_training_state`]'s: a schedule's state in the file where no schedule is given,
/// or the reverse, is an `InvalidArgument` naming the schedule.
pub fn load_checkpoint<E: Float, M: Module<E> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: &mut dyn Optimizer,
    scheduler: Option<&mut dyn LrScheduler>,
) -> Result<()> {
    let mut parts: Vec<(&str, &mut dyn TrainingState)> = vec![("optimizer", optimizer)];
    if let Some(s) = scheduler {
        parts.push(("scheduler", s));
    }
    load_training_state(path, model, &mut parts)
}

/// Saves `model`'s parameters and the state of each named part of the run (an optimiser, a
/// schedule, a [`GradScaler`](crate::amp::GradScaler), anything that is a
/// [`TrainingState`]) to one safetensors file, the part's entries under `<name>.`;
/// [`load_training_state`] reads it back. The layout of the parameters and of the optimiser's
/// and schedule's entries is [`save_checkpoint`]'s; a gradient scaler writes PyTorch's
/// `state_dict` names (`scale`, `growth_factor`, `backoff_factor`, `growth_interval`,
/// `_growth_tracker`).
///
/// # Errors
/// `InvalidArgument` for a part name that is empty, holds a `.`, repeats, or begins a
/// parameter's name (`fc` when the model has `fc.weight`); nothing is written then.
///
/// ```
/// use namedtensor::amp::GradScaler;
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::{load_training_state, save_training_state, Adam, AdamConfig, StepLr};
/// use namedtensor::dims;
/// dims! { In, Out }
/// let path = std::env::temp_dir().join(format!("nt-doc-state-{}.safetensors", std::process::id()));
/// let model = Linear::<In, Out>::seeded(3, 2, 0);
/// let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
/// let sched = StepLr::new(&mut opt, 10, 0.5).unwrap();
/// let scaler = GradScaler::new();
/// save_training_state(&path, &model, &[("optimizer", &opt), ("scheduler", &sched), ("scaler", &scaler)])
///     .unwrap();
///
/// let mut opt2 = Adam::new(model.parameters(), AdamConfig::adamw());
/// let mut sched2 = StepLr::new(&mut opt2, 10, 0.5).unwrap();
/// let mut scaler2 = GradScaler::new();
/// load_training_state(
///     &path,
///     &model,
///     &mut [("optimizer", &mut opt2), ("scheduler", &mut sched2), ("scaler", &mut scaler2)],
/// )
/// .unwrap();
/// assert_eq!(scaler2.get_scale(), 65536.0);
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn save_training_state<E: Float, M: Module<E> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    parts: &[(&str, &dyn TrainingState)],
) -> Result<()> {
    let state = ModuleState::of(model);
    let names: Vec<&str> = parts.iter().map(|(n, _)| *n).collect();
    check_part_names("save_training_state", &names, &state)?;
    let mut writers = Vec::with_capacity(parts.len());
    for (name, part) in parts {
        let mut w = StateWriter {
            prefix: format!("{name}."),
            entries: Vec::new(),
        };
        part.save_state(&mut w)?;
        writers.push(w);
    }
    let mut tensors = state.tensors();
    for (name, t) in writers.iter().flat_map(|w| &w.entries) {
        tensors.push((name.as_str(), t.as_ref()));
    }
    crate::ops::save_with_metadata(path.as_ref(), &tensors, Some(state.dims_metadata()))
}

/// Loads a file of [`save_training_state`] (or [`save_checkpoint`]) into `model` and the
/// named `parts`, built as they were for the saved run (the same layers, parameter order and
/// options). Every part is checked before any is changed; on error nothing is.
///
/// # Errors
/// [`ErrorKind::Io`] for a file that cannot be read or is truncated;
/// [`ErrorKind::InvalidArgument`] for a missing or extra entry (a parameter the model lacks,
/// optimiser state for a parameter the optimiser does not hold, a part's state in the file
/// that no part given loads, a part given whose state is not in the file);
/// `DTypeMismatch` and `ShapeMismatch` for an entry of another dtype, shape or dim names.
/// Each names the file and the entry.
pub fn load_training_state<E: Float, M: Module<E> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    parts: &mut [(&str, &mut dyn TrainingState)],
) -> Result<()> {
    let op = "load_checkpoint";
    let path = path.as_ref();
    let file = SafetensorsFile::open(path)?;
    let state = ModuleState::of(model);
    let names: Vec<&str> = parts.iter().map(|(n, _)| *n).collect();
    check_part_names(op, &names, &state)?;
    let readers: Vec<StateReader<'_>> = names
        .iter()
        .map(|name| StateReader {
            prefix: format!("{name}."),
            file: &file,
            path,
        })
        .collect();
    for r in &readers {
        if r.names_under("").is_empty() {
            return Err(r.error(
                ErrorKind::InvalidArgument,
                format!(
                    "{} was given but the checkpoint has no state for it (no `{}*` entries)",
                    describe(&r.prefix),
                    r.prefix
                ),
            ));
        }
    }
    // Entries that are neither parameters nor any given part's: a part saved but not given.
    let params: Vec<&str> = state.names();
    if let Some(extra) = file
        .names()
        .into_iter()
        .find(|n| !params.contains(n) && !readers.iter().any(|r| n.starts_with(&r.prefix)))
        && let Some((part, _)) = extra.split_once('.')
        && !params.iter().any(|p| p.starts_with(&format!("{part}.")))
    {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "{}: the checkpoint has the state of {} (`{extra}`) but none was given to load \
                 it",
                path.display(),
                describe(&format!("{part}."))
            ),
        ));
    }
    let values = state.read(op, &file, path, |n| {
        readers.iter().any(|r| n.starts_with(&r.prefix))
    })?;
    // Check every part, then apply every part: only the first pass can meet a bad file.
    for apply in [false, true] {
        for ((_, part), r) in parts.iter_mut().zip(&readers) {
            part.load_state(r, apply)?;
        }
    }
    state.write(values)
}

/// What a part of this name is, for messages: "a schedule" for `scheduler.`.
fn describe(prefix: &str) -> String {
    match prefix {
        "optimizer." => "an optimiser".to_string(),
        "scheduler." => "a schedule (`scheduler`)".to_string(),
        "scaler." => "a gradient scaler (`scaler`)".to_string(),
        p => format!("the part `{}`", p.trim_end_matches('.')),
    }
}

/// Refuses part names that are empty, hold a `.`, repeat, or begin a parameter's name.
fn check_part_names<E: Element>(
    op: &'static str,
    names: &[&str],
    state: &ModuleState<E>,
) -> Result<()> {
    let params = state.names();
    for (i, name) in names.iter().enumerate() {
        let why = if name.is_empty() || name.contains('.') {
            "must be non-empty and hold no `.`"
        } else if names[..i].contains(name) {
            "is given twice"
        } else if params.iter().any(|p| p.starts_with(&format!("{name}."))) {
            "begins a parameter's name"
        } else {
            continue;
        };
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("the part name `{name}` {why}"),
        ));
    }
    Ok(())
}
