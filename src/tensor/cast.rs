//! Element type conversion.

use super::{DynTensor, or_panic};
use crate::dtype::Element;

impl<E: Element> DynTensor<E> {
    /// A contiguous copy with elements converted to `F` (see [`crate::dtype`] for the rounding
    /// rules). Converting to the same type still copies, like PyTorch's `to(copy=True)`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.7f32, -2.5, 300.0], &[3]);
    /// assert_eq!(t.to_dtype::<i32>().to_vec(), vec![1, -2, 300]);
    /// assert_eq!(t.to_dtype::<u8>().to_vec(), vec![1, 0, 255]);
    /// assert_eq!(t.to_dtype::<bool>().to_vec(), vec![true, true, true]);
    /// ```
    pub fn to_dtype<F: Element>(&self) -> DynTensor<F> {
        let data = {
            let guard = self.storage.read();
            let src = or_panic(guard.cpu("to_dtype"));
            crate::backend::cpu::map_to_vec(src, &self.layout, |x: E| x.cast::<F>())
        };
        or_panic(DynTensor::from_contiguous_vec(data, self.shape()))
    }
}
