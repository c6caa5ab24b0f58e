//! The parameter store: a module's parameters in a safetensors file, by dotted name, with
//! their dim names in the file's metadata.
//!
//! # Invariants
//! - A file saved here records, for each parameter `name`, the metadata entry
//!   `dims.<name>` = its dim names joined by `,` (`"Out,In"`); tensors are the plain
//!   safetensors that PyTorch's `safetensors.torch.load_file` reads.
//! - Loading checks everything before writing anything: every parameter present, no
//!   tensor left over, the dtype, the shape and (where the file records them) the dim names
//!   agree; then all parameters are overwritten in place, so handles held by optimisers see
//!   the new values. A failed load leaves the module as it was.

use super::module::{Module, Parameter};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::SafetensorsFile;
use crate::tensor::DynTensor;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Saves every parameter of `module` under its dotted name, with its dim names.
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
    let params = module.parameters();
    let tensors: Vec<(&str, &dyn crate::SaveTensor)> = params
        .iter()
        .map(|p| (p.name.as_str(), &p.tensor as &dyn crate::SaveTensor))
        .collect();
    crate::ops::save_with_metadata(path.as_ref(), &tensors, Some(dims_metadata(&params)))
}

/// The metadata entries `dims.<name>` = the parameter's dim names joined by `,`.
pub(crate) fn dims_metadata<E: Element>(params: &[Parameter<E>]) -> HashMap<String, String> {
    params
        .iter()
        .map(|p| (format!("dims.{}", p.name), p.dims.join(",")))
        .collect()
}

/// Loads every parameter of `module` from a safetensors file: one saved by
/// [`save_parameters`], or a PyTorch `state_dict` saved with `safetensors.torch.save_file`
/// whose names match the module's. Errors ([`ErrorKind::Io`] for the file itself): a
/// parameter missing from the file or a tensor the module lacks (`InvalidArgument`), another
/// dtype (`DTypeMismatch`), another shape or other dim names (`ShapeMismatch`: loading
/// `(Rows, Cols)` data into a `(Cols, Rows)` parameter is refused, not transposed). On error
/// no parameter is changed.
pub fn load_parameters<E: Element, M: Module<E> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let file = SafetensorsFile::open(path)?;
    let params = module.parameters();
    let values = read_parameters("load_parameters", &params, &file, path, |_| false)?;
    write_parameters(&params, values)
}

/// The value in `file` of each of `params`, checked against it: present, of its dtype, its
/// shape and (where the file records them) its dim names; and every tensor of the file is a
/// parameter, or one that `other` claims (a checkpoint's optimiser state). Nothing is
/// written.
pub(crate) fn read_parameters<E: Element>(
    op: &'static str,
    params: &[Parameter<E>],
    file: &SafetensorsFile,
    path: &Path,
    other: impl Fn(&str) -> bool,
) -> Result<Vec<DynTensor<E>>> {
    let err = |kind, msg: String| Error::new(kind, op, format!("{}: {msg}", path.display()));
    let mut values = Vec::with_capacity(params.len());
    for p in params {
        if file.dtype(&p.name).is_none() {
            return Err(err(
                ErrorKind::InvalidArgument,
                format!(
                    "the file has no tensor `{}` for the parameter of dims {:?}",
                    p.name, p.dims
                ),
            ));
        }
        if let Some(saved) = file.metadata().get(&format!("dims.{}", p.name)) {
            let ours = p.dims.join(",");
            if *saved != ours {
                return Err(err(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "`{}` was saved with dims ({saved}) but the parameter has dims ({ours})",
                        p.name
                    ),
                ));
            }
        }
        let t = file.get::<E>(&p.name)?;
        if t.shape() != p.tensor.shape() {
            return Err(err(
                ErrorKind::ShapeMismatch,
                format!(
                    "`{}` has shape {:?} in the file but {:?} (dims {:?}) in the module",
                    p.name,
                    t.shape(),
                    p.tensor.shape(),
                    p.dims
                ),
            ));
        }
        values.push(t);
    }
    let ours: HashSet<&str> = params.iter().map(|p| p.name.as_str()).collect();
    let mut extra: Vec<&str> = file
        .names()
        .into_iter()
        .filter(|n| !ours.contains(n) && !other(n))
        .collect();
    if !extra.is_empty() {
        extra.sort_unstable();
        return Err(err(
            ErrorKind::InvalidArgument,
            format!("the file has tensors the module does not: {extra:?}"),
        ));
    }
    Ok(values)
}

/// Overwrites each parameter with its value from [`read_parameters`], in place (handles held
/// by optimisers see the new values), on the parameter's device.
pub(crate) fn write_parameters<E: Element>(
    params: &[Parameter<E>],
    values: Vec<DynTensor<E>>,
) -> Result<()> {
    crate::autograd::no_grad(|| {
        for (p, t) in params.iter().zip(values) {
            let t = t.to_device(p.tensor.device())?; // a handle when already there
            p.tensor.try_copy_(&t)?;
        }
        Ok(())
    })
}
