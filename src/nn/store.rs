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
use crate::tensor::DynTensor;
use std::collections::HashMap;
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
    let metadata: HashMap<String, String> = params
        .iter()
        .map(|p| (format!("dims.{}", p.name), p.dims.join(",")))
        .collect();
    let tensors: Vec<(&str, &dyn crate::SaveTensor)> = params
        .iter()
        .map(|p| (p.name.as_str(), &p.tensor as &dyn crate::SaveTensor))
        .collect();
    crate::ops::save_with_metadata(path.as_ref(), &tensors, Some(metadata))
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
    let (tensors, metadata) = crate::ops::load_with_metadata::<E>(path)?;
    let mut by_name: HashMap<String, DynTensor<E>> = tensors.into_iter().collect();
    let params = module.parameters();
    let err = |kind, msg: String| {
        Error::new(
            kind,
            "load_parameters",
            format!("{}: {msg}", path.display()),
        )
    };
    let mut pairs: Vec<(&Parameter<E>, DynTensor<E>)> = Vec::with_capacity(params.len());
    for p in &params {
        let Some(t) = by_name.remove(&p.name) else {
            return Err(err(
                ErrorKind::InvalidArgument,
                format!(
                    "the file has no tensor `{}` for the parameter of dims {:?}",
                    p.name, p.dims
                ),
            ));
        };
        if let Some(saved) = metadata.get(&format!("dims.{}", p.name)) {
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
        pairs.push((p, t));
    }
    if !by_name.is_empty() {
        let mut extra: Vec<&String> = by_name.keys().collect();
        extra.sort();
        return Err(err(
            ErrorKind::InvalidArgument,
            format!("the file has tensors the module does not: {extra:?}"),
        ));
    }
    crate::autograd::no_grad(|| {
        for (p, t) in &pairs {
            let t = t.to_device(p.tensor.device())?; // a handle when already there
            p.tensor.try_copy_(&t)?;
        }
        Ok(())
    })
}
