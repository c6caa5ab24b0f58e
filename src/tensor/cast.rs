//! Element type conversion.

use super::{DynTensor, or_panic};
use crate::dtype::Element;
use crate::error::Result;

impl<E: Element> DynTensor<E> {
    /// A contiguous copy with elements converted to `F` (see [`crate::dtype`] for the rounding
    /// rules), on the same device. Converting to the same type still copies, like PyTorch's
    /// `to(copy=True)`. Panics if the device fails (see [`DynTensor::try_to_dtype`]).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.7f32, -2.5, 300.0], &[3]);
    /// assert_eq!(t.to_dtype::<i32>().to_vec(), vec![1, -2, 300]);
    /// assert_eq!(t.to_dtype::<u8>().to_vec(), vec![1, 0, 255]);
    /// assert_eq!(t.to_dtype::<bool>().to_vec(), vec![true, true, true]);
    /// ```
    #[track_caller]
    pub fn to_dtype<F: Element>(&self) -> DynTensor<F> {
        or_panic(self.try_to_dtype())
    }

    /// [`DynTensor::to_dtype`], or an error if the device fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![0.5f64, 2.0], &[2]);
    /// assert_eq!(t.try_to_dtype::<half::f16>().unwrap().to_vec()[1], half::f16::from_f32(2.0));
    /// ```
    pub fn try_to_dtype<F: Element>(&self) -> Result<DynTensor<F>> {
        let buffer = self.storage.read().cast::<F>("to_dtype", &self.layout)?;
        let out = DynTensor::from_contiguous_buffer(buffer, self.shape())?;
        Ok(crate::autograd::identity("to_dtype", self, out))
    }
}
