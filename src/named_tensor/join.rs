//! Joining and looking up by name: `cat`, `stack`, `index_select`.

use super::Tensor;
use crate::dtype::Element;
use crate::error::Result;
use crate::named::DimTuple;
use crate::named::{HasDim, ReplaceDim, Stack};
use crate::tensor::{DynTensor, or_panic};

/// `Self` with dim `D` replaced by the index tensor's dims `I`.
type Selected<E, S, D, I, P> = Tensor<E, <S as ReplaceDim<D, I, P>>::Out, P>;

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Concatenates tensors with the same dims along `D` (sizes of the other dims must
    /// agree). Panics where [`Tensor::try_cat`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Seq, Hidden }
    /// let a = Tensor::<f32, (Seq, Hidden)>::zeros([2, 4]);
    /// let b = Tensor::<f32, (Seq, Hidden)>::ones([3, 4]);
    /// assert_eq!(Tensor::cat(Seq, &[&a, &b]).shape(), &[5, 4]);
    /// ```
    #[track_caller]
    pub fn cat<D>(dim: D, parts: &[&Self]) -> Self
    where
        S: HasDim<D, P>,
    {
        or_panic(Self::try_cat(dim, parts))
    }

    /// [`Tensor::cat`], or an error for an empty list or sizes that disagree.
    pub fn try_cat<D>(_dim: D, parts: &[&Self]) -> Result<Self>
    where
        S: HasDim<D, P>,
    {
        let raws: Vec<&DynTensor<E>> = parts.iter().map(|t| &t.raw).collect();
        Ok(Tensor::wrap(DynTensor::try_cat(
            &raws,
            <S as HasDim<D, P>>::AXIS,
        )?))
    }

    /// Stacks tensors with the same dims and sizes along a new leading dim `New` (after the
    /// private dims). Panics where [`Tensor::try_stack`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols, Frames }
    /// let f = Tensor::<u8, (Rows, Cols)>::zeros([2, 3]);
    /// let video = Tensor::stack(Frames, &[&f, &f, &f]);
    /// assert_eq!(video.names(), ["Frames", "Rows", "Cols"]);
    /// assert_eq!(video.shape(), &[3, 2, 3]);
    /// ```
    #[track_caller]
    pub fn stack<New>(dim: New, parts: &[&Self]) -> Tensor<E, <S as Stack<New, P>>::Out, P>
    where
        S: Stack<New, P>,
    {
        or_panic(Self::try_stack(dim, parts))
    }

    /// [`Tensor::stack`], or an error for an empty list or shapes that differ.
    pub fn try_stack<New>(
        _dim: New,
        parts: &[&Self],
    ) -> Result<Tensor<E, <S as Stack<New, P>>::Out, P>>
    where
        S: Stack<New, P>,
    {
        let raws: Vec<&DynTensor<E>> = parts.iter().map(|t| &t.raw).collect();
        Ok(Tensor::wrap(DynTensor::try_stack(
            &raws,
            <S as Stack<New, P>>::AXIS,
        )?))
    }

    /// Looks up entries along `D` with an index tensor, whose dims take `D`'s place: an
    /// embedding lookup `table.index_select(Vocab, &ids)` turns `(Vocab, Hidden)` and ids
    /// `(Batch, Seq)` into `(Batch, Seq, Hidden)`. Panics where [`Tensor::try_index_select`]
    /// fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Vocab, Hidden, Batch, Seq }
    /// let table = Tensor::<f32, (Vocab, Hidden)>::from_vec((0..8).map(|x| x as f32).collect(), [4, 2]);
    /// let ids = Tensor::<i64, (Batch, Seq)>::from_vec(vec![3, 0, 1, 1], [2, 2]);
    /// let emb = table.index_select(Vocab, &ids);
    /// assert_eq!(emb.names(), ["Batch", "Seq", "Hidden"]);
    /// assert_eq!(emb.to_vec(), vec![6., 7., 0., 1., 2., 3., 2., 3.]);
    /// ```
    #[track_caller]
    pub fn index_select<D, I: DimTuple>(
        &self,
        dim: D,
        index: &Tensor<i64, I>,
    ) -> Selected<E, S, D, I, P>
    where
        S: ReplaceDim<D, I, P>,
    {
        or_panic(self.try_index_select(dim, index))
    }

    /// [`Tensor::index_select`], or an error for an index out of range.
    pub fn try_index_select<D, I: DimTuple>(
        &self,
        _dim: D,
        index: &Tensor<i64, I>,
    ) -> Result<Selected<E, S, D, I, P>>
    where
        S: ReplaceDim<D, I, P>,
    {
        let axis = <S as ReplaceDim<D, I, P>>::AXIS;
        let flat = index.raw.try_reshape(&[-1])?;
        let picked = self.raw.try_index_select(axis, &flat)?;
        let a = axis as usize;
        let mut shape: Vec<isize> = picked.shape()[..a].iter().map(|&s| s as isize).collect();
        shape.extend(index.raw.shape().iter().map(|&s| s as isize));
        shape.extend(picked.shape()[a + 1..].iter().map(|&s| s as isize));
        Ok(Tensor::wrap(picked.try_reshape(&shape)?))
    }
}
