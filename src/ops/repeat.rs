//! `repeat`: a copy tiling the tensor along every dim.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, checked_numel};
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// A contiguous copy repeated `repeats[d]` times along each dim (PyTorch's `repeat`, NumPy's
    /// `tile`). `repeats` may be longer than the rank: the tensor is then seen with leading
    /// dims of size 1. Panics where [`DynTensor::try_repeat`] fails.
    ///
    /// ```
    /// let t = namedtensor::tensor!([1, 2, 3]; i64);
    /// let r = t.repeat(&[2, 2]);
    /// assert_eq!(r.shape(), &[2, 6]);
    /// assert_eq!(r.to_vec(), vec![1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
    /// ```
    #[track_caller]
    pub fn repeat(&self, repeats: &[usize]) -> DynTensor<E> {
        or_panic(self.try_repeat(repeats))
    }

    /// [`DynTensor::repeat`], or an error when `repeats` is shorter than the rank or the result
    /// is too large.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// assert!(t.try_repeat(&[2]).is_err());
    /// ```
    pub fn try_repeat(&self, repeats: &[usize]) -> Result<DynTensor<E>> {
        if repeats.len() < self.dim() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "repeat",
                format!(
                    "{} repeat counts given for a tensor of rank {} (shape {:?}); give at least \
                     one per dim",
                    repeats.len(),
                    self.dim(),
                    self.shape()
                ),
            ));
        }
        let lead = repeats.len() - self.dim();
        // Each dim d becomes the pair (repeats[d] with stride 0, size[d] with its stride):
        // the row-major order of the pairs is the row-major order of the repeated tensor.
        let (mut sizes, mut strides, mut out_shape) = (vec![], vec![], vec![]);
        for (d, &r) in repeats.iter().enumerate() {
            let (size, stride) = match d.checked_sub(lead) {
                Some(e) => (self.shape()[e], self.stride()[e]),
                None => (1, 0),
            };
            sizes.extend([r, size]);
            strides.extend([0, stride]);
            out_shape.push(
                r.checked_mul(size).ok_or_else(|| {
                    Error::overflow("repeat", format!("{r} repeats of size {size}"))
                })?,
            );
        }
        checked_numel(&out_shape)
            .ok_or_else(|| Error::overflow("repeat", format!("the result shape {out_shape:?}")))?;
        if crate::autograd::tracks(self) {
            // Through recorded views, so that the gradient sums over the copies.
            // Even positions are the repeat counts, odd ones the input's dims.
            let unit: Vec<isize> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| if i % 2 == 0 { 1 } else { s as isize })
                .collect();
            let sizes: Vec<isize> = sizes.iter().map(|&s| s as isize).collect();
            let shape: Vec<isize> = out_shape.iter().map(|&s| s as isize).collect();
            return self
                .try_reshape(&unit)?
                .try_expand(&sizes)?
                .try_contiguous()?
                .try_reshape(&shape);
        }
        let layout = Layout::from_parts_unchecked(sizes, strides, self.storage_offset());
        let buf = self.storage().read().gather("repeat", &layout)?;
        DynTensor::from_contiguous_buffer(buf, &out_shape)
    }
}
