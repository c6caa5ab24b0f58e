//! Named tensors in files: safetensors with the dim names in the file's metadata (checked on
//! load), and NumPy `.npy` (which has no place for names: the rank is checked).
//!
//! Invariants:
//! - `save` writes one tensor named `"tensor"` and the metadata entry `dims.tensor` = the dim
//!   names joined by `,` (the convention of the parameter store, `nn/store.rs`), so the file
//!   is a plain safetensors file that PyTorch reads.
//! - `load` refuses a file whose recorded names differ from the type's, even when the sizes
//!   would fit (`(Cols, Rows)` data into `(Rows, Cols)` is an error, not a silent transpose);
//!   a file without names (written by PyTorch, NumPy, …) is accepted when the rank fits.

use super::Tensor;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{DimTuple, Shape};
use crate::tensor::DynTensor;
use std::collections::HashMap;
use std::path::Path;

const NAME: &str = "tensor";
const DIMS_KEY: &str = "dims.tensor";

impl<E: Element, S: DimTuple> Tensor<E, S> {
    /// Writes this tensor to a safetensors file at `path` (replacing it), with its dim names
    /// in the file's metadata; [`Tensor::load`] checks them.
    ///
    /// ```
    /// use namedtensor::{dims, ErrorKind, Tensor};
    /// dims! { Rows, Cols }
    /// let path = std::env::temp_dir().join(format!("nt-doc-named-save-{}.safetensors", std::process::id()));
    /// let t = Tensor::<f32, (Rows, Cols)>::randn([2, 3], 0);
    /// t.save(&path).unwrap();
    /// let back = Tensor::<f32, (Rows, Cols)>::load(&path).unwrap();
    /// assert_eq!(back.to_vec(), t.to_vec());
    /// let err = Tensor::<f32, (Cols, Rows)>::load(&path).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let metadata = HashMap::from([(DIMS_KEY.to_string(), S::NAMES.join(","))]);
        crate::ops::save_with_metadata(path.as_ref(), &[(NAME, self.as_dyn())], Some(metadata))
    }

    /// Reads the one tensor of a safetensors file. Errors: those of [`DynTensor::load`], and
    /// [`ErrorKind::ShapeMismatch`] when the file records other dim names or the rank differs
    /// from `S`'s.
    pub fn load(path: impl AsRef<Path>) -> Result<Self>
    where
        S: Shape,
    {
        let path = path.as_ref();
        let (mut tensors, metadata) = crate::ops::load_with_metadata::<E>(path)?;
        if tensors.len() != 1 {
            let names: Vec<&str> = tensors.iter().map(|(n, _)| n.as_str()).collect();
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "load",
                format!(
                    "{}: expected one tensor, found {} ({names:?})",
                    path.display(),
                    names.len()
                ),
            ));
        }
        let (name, t) = tensors.pop().expect("one tensor");
        let recorded = metadata
            .get(&format!("dims.{name}"))
            .or_else(|| metadata.get(DIMS_KEY));
        if let Some(saved) = recorded {
            let ours = S::NAMES.join(",");
            if *saved != ours {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    "load",
                    format!(
                        "{}: the tensor was saved with dims ({saved}), not ({ours})",
                        path.display()
                    ),
                ));
            }
        }
        t.try_refine_names().map_err(|e| in_file(e, "load", path))
    }

    /// Writes this tensor to a NumPy `.npy` file (see [`DynTensor::save_npy`]); NumPy files
    /// have no place for dim names.
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        self.as_dyn().save_npy(path)
    }

    /// Reads a NumPy `.npy` file (see [`DynTensor::load_npy`]) as dims `S`: an error
    /// ([`ErrorKind::ShapeMismatch`]) when its rank is not `S`'s.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let path = std::env::temp_dir().join(format!("nt-doc-named-npy-{}.npy", std::process::id()));
    /// Tensor::<i64, (Rows, Cols)>::zeros([2, 3]).save_npy(&path).unwrap();
    /// assert_eq!(Tensor::<i64, (Rows, Cols)>::load_npy(&path).unwrap().size::<Cols>(), 3);
    /// assert!(Tensor::<i64, (Rows,)>::load_npy(&path).is_err());
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load_npy(path: impl AsRef<Path>) -> Result<Self>
    where
        S: Shape,
    {
        let path = path.as_ref();
        DynTensor::<E>::load_npy(path)?
            .try_refine_names()
            .map_err(|e| in_file(e, "load_npy", path))
    }
}

/// `e` (a rank mismatch) as the error of `op` on the file at `path`.
fn in_file(e: Error, op: &'static str, path: &Path) -> Error {
    Error::new(e.kind(), op, format!("{}: {}", path.display(), e.message()))
}
