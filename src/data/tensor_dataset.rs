//! [`TensorDataset`]: items stored along the leading dim of a named input and label tensor.

use super::loader::Dataset;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::DimTuple;
use crate::named_tensor::Tensor;
use crate::tensor::DynTensor;

/// Inputs `(Items, …)` and labels `(Items, …)`: item `i` is entry `i` of the leading dim
/// of both. A batch keeps the names, its leading dim holding the batch's items.
///
/// ```
/// use namedtensor::data::{Dataset, TensorDataset};
/// use namedtensor::{dims, DynTensor, Tensor};
/// dims! { Items, Pixels }
/// let x = Tensor::<f32, (Items, Pixels)>::from_vec((0..6).map(|v| v as f32).collect(), [3, 2]);
/// let y = Tensor::<i64, (Items,)>::from_vec(vec![7, 8, 9], [3]);
/// let data = TensorDataset::new(x, y).unwrap();
/// let (bx, by) = data.batch(&DynTensor::from_vec(vec![2i64, 0], &[2])).unwrap();
/// assert_eq!(bx.to_vec(), vec![4.0, 5.0, 0.0, 1.0]);
/// assert_eq!(by.to_vec(), vec![9, 7]);
/// ```
#[derive(Debug)]
pub struct TensorDataset<E: Element, S: DimTuple, L: Element, T: DimTuple> {
    inputs: Tensor<E, S>,
    labels: Tensor<L, T>,
}

impl<E: Element, S: DimTuple, L: Element, T: DimTuple> Clone for TensorDataset<E, S, L, T> {
    /// Another handle to the same tensors (no copy).
    fn clone(&self) -> Self {
        TensorDataset {
            inputs: self.inputs.shallow_clone(),
            labels: self.labels.shallow_clone(),
        }
    }
}

impl<E: Element, S: DimTuple, L: Element, T: DimTuple> TensorDataset<E, S, L, T> {
    /// A dataset of the items along the leading dims of `inputs` and `labels`; an error when
    /// either is 0-d or their leading sizes differ.
    pub fn new(inputs: Tensor<E, S>, labels: Tensor<L, T>) -> Result<Self> {
        let (a, b) = (inputs.shape().first(), labels.shape().first());
        if a.is_none() || a != b {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "TensorDataset",
                format!(
                    "inputs of shape {:?} (dims {:?}) and labels of shape {:?} (dims {:?}) must \
                     have the same number of items along their leading dim",
                    inputs.shape(),
                    S::NAMES,
                    labels.shape(),
                    T::NAMES
                ),
            ));
        }
        Ok(TensorDataset { inputs, labels })
    }
}

impl<E: Element, S: DimTuple, L: Element, T: DimTuple> Dataset for TensorDataset<E, S, L, T> {
    type Batch = (Tensor<E, S>, Tensor<L, T>);

    fn len(&self) -> usize {
        self.inputs.shape()[0]
    }

    fn batch(&self, indices: &DynTensor<i64>) -> Result<Self::Batch> {
        Ok((
            Tensor::wrap(self.inputs.as_dyn().try_index_select(0, indices)?),
            Tensor::wrap(self.labels.as_dyn().try_index_select(0, indices)?),
        ))
    }
}
