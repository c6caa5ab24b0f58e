//! The parameter store: a module's parameters and buffers (its `state_dict`) in a
//! safetensors file, by dotted name, with their dim names in the file's metadata.
//!
//! # Invariants
//! - A file saved here records, for each parameter or buffer `name`, the metadata entry
//!   `dims.<name>` = its dim names joined by `,` (`"Out,In"`); tensors are the plain
//!   safetensors that PyTorch's `safetensors.torch.load_file` reads.
//! - Loading checks everything before writing anything: every parameter and buffer present,
//!   no tensor left over, the dtype, the shape and (where the file records them) the dim
//!   names agree; then all are overwritten in place, so handles held by optimisers see the
//!   new values. A failed load leaves the module as it was.

use super::module::{Buffer, BufferTensor, Module, Parameter};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::{SafetensorsFile, SaveTensor};
use crate::tensor::DynTensor;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Saves every parameter and buffer of `module` under its dotted name, with its dim names.
///
/// ```
/// use namedtensor::nn::{load_parameters, save_parameters, Linear, Module};
/// use namedtensor::dims;
/// dims! { In, Out }
/// let path = std::env::temp_dir().join(format!("nt-doc-params-{}.safetensors", std::process::id()));
/// let a = Linear::<In, Out>::new(3, 2);
/// save_parameters(&a, &path).unwrap();
/// let b = Linear::<In, Out>::new(3, 2);
/// load_parameters(&b, &path).unwrap();
/// assert_eq!(b.weight.to_vec(), a.weight.to_vec());
/// let wrong = Linear::<In, Out>::new(4, 2);
/// assert!(load_parameters(&wrong, &path).is_err());
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn save_parameters<E: Element, M: Module<E> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    let state = ModuleState::of(module);
    crate::ops::save_with_metadata(path.as_ref(), &state.tensors(), Some(state.dims_metadata()))
}

/// Loads every parameter and buffer of `module` from a safetensors file: one saved by
/// [`save_parameters`], or a PyTorch `state_dict` saved with `safetensors.torch.save_file`
/// whose names match the module's. Errors ([`ErrorKind::Io`] for the file itself): a
/// parameter missing from the file or a tensor the module lacks (`InvalidArgument`), another
/// dtype (`DTypeMismatch`), another shape or other dim names (`ShapeMismatch`: loading
/// `(Rows, Cols)` data into a `(Cols, Rows)` parameter is refused, not transposed). On error
/// nothing is changed.
pub fn load_parameters<E: Element, M: Module<E> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let file = SafetensorsFile::open(path)?;
    let state = ModuleState::of(module);
    let values = state.read("load_parameters", &file, path, |_| false)?;
    state.write(values)
}

/// A module's parameters and buffers, as the store and checkpoints read and write them.
pub(crate) struct ModuleState<E: Element> {
    /// The parameters, in visiting order.
    pub(crate) params: Vec<Parameter<E>>,
    buffers: Vec<Buffer<E>>,
}

/// The values [`ModuleState::read`] found and checked, in the state's order.
pub(crate) struct StateValues<E: Element> {
    params: Vec<DynTensor<E>>,
    buffers: Vec<BufferTensor<E>>,
}

impl<E: Element> ModuleState<E> {
    /// The state of `module`: handles to its own tensors.
    pub(crate) fn of<M: Module<E> + ?Sized>(module: &M) -> Self {
        ModuleState {
            params: module.parameters(),
            buffers: module.buffers(),
        }
    }

    /// Every tensor under its name, parameters first, for saving.
    pub(crate) fn tensors(&self) -> Vec<(&str, &dyn SaveTensor)> {
        let params = self
            .params
            .iter()
            .map(|p| (p.name.as_str(), &p.tensor as &dyn SaveTensor));
        let buffers = self.buffers.iter().map(|b| {
            let t: &dyn SaveTensor = match &b.tensor {
                BufferTensor::Float(t) => t,
                BufferTensor::Count(t) => t,
            };
            (b.name.as_str(), t)
        });
        params.chain(buffers).collect()
    }

    /// The names of the parameters and buffers.
    pub(crate) fn names(&self) -> Vec<&str> {
        let params = self.params.iter().map(|p| p.name.as_str());
        params
            .chain(self.buffers.iter().map(|b| b.name.as_str()))
            .collect()
    }

    /// The metadata entries `dims.<name>` = the dim names joined by `,`.
    pub(crate) fn dims_metadata(&self) -> HashMap<String, String> {
        let params = self.params.iter().map(|p| (&p.name, p.dims));
        let buffers = self.buffers.iter().map(|b| (&b.name, b.dims));
        params
            .chain(buffers)
            .map(|(name, dims)| (format!("dims.{name}"), dims.join(",")))
            .collect()
    }

    /// The value in `file` of each parameter and buffer, checked against it: present, of
    /// its dtype, its shape and (where the file records them) its dim names; and every
    /// tensor of the file is one of them, or one that `other` claims (a checkpoint's
    /// optimiser state). Nothing is written.
    pub(crate) fn read(
        &self,
        op: &'static str,
        file: &SafetensorsFile,
        path: &Path,
        other: impl Fn(&str) -> bool,
    ) -> Result<StateValues<E>> {
        let entry = Entry { op, file, path };
        let params = self
            .params
            .iter()
            .map(|p| entry.get::<E>(&p.name, p.dims, p.tensor.shape()))
            .collect::<Result<Vec<_>>>()?;
        let buffers = self
            .buffers
            .iter()
            .map(|b| {
                Ok(match &b.tensor {
                    BufferTensor::Float(t) => {
                        BufferTensor::Float(entry.get::<E>(&b.name, b.dims, t.shape())?)
                    }
                    BufferTensor::Count(t) => {
                        BufferTensor::Count(entry.get::<i64>(&b.name, b.dims, t.shape())?)
                    }
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let ours: HashSet<&str> = self
            .params
            .iter()
            .map(|p| p.name.as_str())
            .chain(self.buffers.iter().map(|b| b.name.as_str()))
            .collect();
        let mut extra: Vec<&str> = file
            .names()
            .into_iter()
            .filter(|n| !ours.contains(n) && !other(n))
            .collect();
        if !extra.is_empty() {
            extra.sort_unstable();
            return Err(entry.error(
                ErrorKind::InvalidArgument,
                format!("the file has tensors the module does not: {extra:?}"),
            ));
        }
        Ok(StateValues { params, buffers })
    }

    /// Overwrites each parameter and buffer with its value from [`ModuleState::read`], in
    /// place (handles held by optimisers see the new values), on its own device.
    pub(crate) fn write(&self, values: StateValues<E>) -> Result<()> {
        fn put<T: Element>(to: &DynTensor<T>, value: DynTensor<T>) -> Result<()> {
            let value = value.to_device(to.device())?; // a handle when already there
            to.try_copy_(&value).map(|_| ())
        }
        crate::autograd::no_grad(|| {
            for (p, t) in self.params.iter().zip(values.params) {
                put(&p.tensor, t)?;
            }
            for (b, t) in self.buffers.iter().zip(values.buffers) {
                match (&b.tensor, t) {
                    (BufferTensor::Float(to), BufferTensor::Float(t)) => put(to, t)?,
                    (BufferTensor::Count(to), BufferTensor::Count(t)) => put(to, t)?,
                    _ => unreachable!("read gives each buffer a value of its own kind"),
                }
            }
            Ok(())
        })
    }
}

/// Reads one checked entry of a file.
struct Entry<'a> {
    op: &'static str,
    file: &'a SafetensorsFile,
    path: &'a Path,
}

impl Entry<'_> {
    fn error(&self, kind: ErrorKind, msg: String) -> Error {
        Error::new(kind, self.op, format!("{}: {msg}", self.path.display()))
    }

    /// The tensor `name`, which must be present and have the element type `T`, the sizes
    /// `shape` and (where the file records them) the dim names `dims`.
    fn get<T: Element>(&self, name: &str, dims: &[&str], shape: &[usize]) -> Result<DynTensor<T>> {
        if self.file.dtype(name).is_none() {
            return Err(self.error(
                ErrorKind::InvalidArgument,
                format!("the file has no tensor `{name}` for the parameter of dims {dims:?}"),
            ));
        }
        if let Some(saved) = self.file.metadata().get(&format!("dims.{name}")) {
            let ours = dims.join(",");
            if *saved != ours {
                return Err(self.error(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "`{name}` was saved with dims ({saved}) but the parameter has dims ({ours})"
                    ),
                ));
            }
        }
        let t = self.file.get::<T>(name)?;
        if t.shape() != shape {
            return Err(self.error(
                ErrorKind::ShapeMismatch,
                format!(
                    "`{name}` has shape {:?} in the file but {shape:?} (dims {dims:?}) in the module",
                    t.shape()
                ),
            ));
        }
        Ok(t)
    }
}
