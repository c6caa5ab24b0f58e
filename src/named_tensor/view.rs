//! Named views: renaming, aligning, permuting, masking, splitting and merging dims,
//! selecting and narrowing by name. None of them copies, except `merge` and `split` when
//! the strides do not allow a view.

use super::Tensor;
use crate::dtype::Element;
use crate::error::Result;
use crate::named::DimTuple;
use crate::named::{
    AlignTo, Alignment, HasDim, MaskDims, MaskTo, MergeDims, PermuteTo, RemoveDim, Rename,
    ReplaceDim, Shape, Unmask,
};
use crate::tensor::DynTensor;

/// Brings `raw`'s axes into a result's order: permute, then insert size-1 axes (a view).
pub(crate) fn aligned<E: Element>(raw: &DynTensor<E>, plan: &Alignment) -> DynTensor<E> {
    if plan.is_identity() {
        return raw.shallow_clone();
    }
    let mut out = if plan.perm.is_identity() {
        raw.shallow_clone()
    } else {
        let layout = raw.layout().permute_trusted(&plan.perm);
        let perm = || {
            Ok(crate::autograd::ViewGrad::Permute(
                plan.perm.iter().map(|&d| d as usize).collect(),
            ))
        };
        crate::tensor::or_panic(raw.view_op("align", layout, perm))
    };
    for &d in plan.insert.iter() {
        out = out.unsqueeze(d);
    }
    out
}

/// `raw` aligned by `plan` as a new view, or `None` when the plan changes nothing (the
/// caller then uses `raw` itself and no view is made).
pub(crate) fn view_unless_identity<E: Element>(
    raw: &DynTensor<E>,
    plan: &Alignment,
) -> Option<DynTensor<E>> {
    (!plan.is_identity()).then(|| aligned(raw, plan))
}

/// `Self` with dim `D` replaced by the dims `With`.
type Replaced<E, S, D, With, P> = Tensor<E, <S as ReplaceDim<D, With, P>>::Out, P>;

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Renames dim `Old` to `New` (no copy). `New` must not already be a dim.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Height, Crop }
    /// let t = Tensor::<f32, (Batch, Height)>::zeros([2, 3]).rename::<Height, Crop>();
    /// assert_eq!(t.names(), ["Batch", "Crop"]);
    /// ```
    pub fn rename<Old, New>(&self) -> Tensor<E, <S as Rename<Old, New, P>>::Out, P>
    where
        S: Rename<Old, New, P>,
    {
        Tensor::wrap(self.raw.shallow_clone())
    }

    /// Reorders the dims to `T`, a permutation of them (a view).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Channels, Rows, Cols }
    /// let nchw = Tensor::<f32, (Batch, Channels, Rows, Cols)>::zeros([2, 3, 4, 5]);
    /// let nhwc = nchw.permute::<(Batch, Rows, Cols, Channels)>();
    /// assert_eq!(nhwc.shape(), &[2, 4, 5, 3]);
    /// ```
    pub fn permute<T: Shape>(&self) -> Tensor<E, T, P>
    where
        S: PermuteTo<T, P>,
    {
        let perm = <S as PermuteTo<T, P>>::PERM;
        Tensor::wrap(if perm.is_identity() {
            self.raw.shallow_clone()
        } else {
            self.raw.permute(&perm)
        })
    }

    /// Views this tensor with dims `T`, a superset in any order: dims are permuted into
    /// `T`'s order and the missing ones added with size 1, so the result broadcasts against
    /// tensors with dims `T` (PyTorch's `align_to`).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Channels, Rows, Cols }
    /// let w = Tensor::<f32, (Channels,)>::from_vec(vec![0.3, 0.59, 0.11], [3]);
    /// let a = w.align_to::<(Channels, Rows, Cols)>();
    /// assert_eq!(a.shape(), &[3, 1, 1]);
    /// ```
    pub fn align_to<T: Shape>(&self) -> Tensor<E, T, P>
    where
        S: AlignTo<T, P>,
    {
        Tensor::wrap(aligned(&self.raw, const { &<S as AlignTo<T, P>>::PLAN }))
    }

    /// [`Tensor::align_to`] the dims of `other` (PyTorch's `align_as`).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Channels, Rows, Cols }
    /// let img = Tensor::<f32, (Batch, Channels, Rows, Cols)>::ones([2, 3, 4, 4]);
    /// let w = Tensor::<f32, (Channels,)>::from_vec(vec![0.3, 0.59, 0.11], [3]);
    /// assert_eq!(w.align_as(&img).shape(), &[1, 3, 1, 1]);
    /// ```
    pub fn align_as<F: Element, T: Shape>(&self, _other: &Tensor<F, T, P>) -> Tensor<E, T, P>
    where
        S: AlignTo<T, P>,
    {
        self.align_to::<T>()
    }

    /// Hides `D` and every dim left of it (Harvard NamedTensor's `mask_to`): code that
    /// receives the result cannot name them, while elementwise operations still broadcast
    /// over them. No copy.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq, Hidden }
    /// let x = Tensor::<f32, (Batch, Seq, Hidden)>::ones([2, 3, 4]);
    /// let inner = x.mask_to::<Batch>();
    /// assert_eq!(inner.names(), ["Seq", "Hidden"]);
    /// assert_eq!(inner.shape(), &[2, 3, 4]); // the batch is still there
    /// ```
    pub fn mask_to<D>(&self) -> Tensor<E, <S as MaskTo<D, P>>::Out, <S as MaskTo<D, P>>::Private>
    where
        S: MaskTo<D, P>,
    {
        Tensor::wrap(self.raw.shallow_clone())
    }

    /// Hides the dims `R` (one dim or a tuple, anywhere in the shape), as [`Tensor::mask_to`]
    /// hides leading ones: code that receives the result cannot name them, elementwise
    /// operations broadcast over them. A view: the hidden dims are permuted to the front,
    /// behind those already private, in `R`'s order (so [`Tensor::unmask`] puts them there).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq, Heads, HeadDim }
    /// let q = Tensor::<f32, (Batch, Seq, Heads, HeadDim)>::ones([2, 5, 4, 8]);
    /// let per_head = q.mask::<(Batch, Heads)>();        // attention code sees (Seq, HeadDim)
    /// assert_eq!(per_head.names(), ["Seq", "HeadDim"]);
    /// assert_eq!(per_head.shape(), &[2, 4, 5, 8]);
    /// assert_eq!(per_head.unmask().names(), ["Batch", "Heads", "Seq", "HeadDim"]);
    /// ```
    pub fn mask<R>(&self) -> Tensor<E, <S as MaskDims<R, P>>::Out, <S as MaskDims<R, P>>::Private>
    where
        S: MaskDims<R, P>,
    {
        let perm = const { &<S as MaskDims<R, P>>::PERM };
        Tensor::wrap(if perm.is_identity() {
            self.raw.shallow_clone()
        } else {
            self.raw.permute(perm)
        })
    }

    /// Makes the private dims visible again, in front (no copy).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq }
    /// let x = Tensor::<f32, (Batch, Seq)>::ones([2, 3]).mask_to::<Batch>();
    /// assert_eq!(x.unmask().names(), ["Batch", "Seq"]);
    /// ```
    pub fn unmask(&self) -> Tensor<E, <S as Unmask<P>>::Out>
    where
        S: Unmask<P>,
    {
        Tensor::wrap(self.raw.shallow_clone())
    }

    /// Splits dim `D` into the dims `With` with the given sizes (one may be `-1`): a view
    /// when the strides allow it, a copy otherwise. Panics where [`Tensor::try_split`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Pixels, Height, Width }
    /// let t = Tensor::<f32, (Batch, Pixels)>::zeros([2, 12]);
    /// let s = t.split::<Pixels, (Height, Width)>(&[3, -1]);
    /// assert_eq!((s.size::<Height>(), s.size::<Width>()), (3, 4));
    /// ```
    #[track_caller]
    pub fn split<D, With: Shape>(&self, sizes: &[isize]) -> Replaced<E, S, D, With, P>
    where
        S: ReplaceDim<D, With, P>,
    {
        crate::tensor::or_panic(self.try_split::<D, With>(sizes))
    }

    /// [`Tensor::split`], or an error when the sizes do not multiply to `D`'s size or their
    /// count is not `With`'s rank.
    pub fn try_split<D, With: Shape>(&self, sizes: &[isize]) -> Result<Replaced<E, S, D, With, P>>
    where
        S: ReplaceDim<D, With, P>,
    {
        let axis = <S as ReplaceDim<D, With, P>>::AXIS as usize;
        if sizes.len() != With::RANK {
            return Err(crate::Error::new(
                crate::ErrorKind::ShapeMismatch,
                "split",
                format!(
                    "{} sizes {sizes:?} given for the {} dims {:?}",
                    sizes.len(),
                    With::RANK,
                    With::NAMES
                ),
            ));
        }
        let size = self.raw.shape()[axis];
        let piece = crate::layout::infer_shape("split", sizes, &[size])?;
        let mut shape: Vec<isize> = self.raw.shape()[..axis]
            .iter()
            .map(|&s| s as isize)
            .collect();
        shape.extend(piece.iter().map(|&s| s as isize));
        shape.extend(self.raw.shape()[axis + 1..].iter().map(|&s| s as isize));
        Ok(Tensor::wrap(self.raw.try_reshape(&shape)?))
    }

    /// Merges the adjacent dims `Src` (in this order) into one dim `New`: a view when the
    /// strides allow it, a copy otherwise.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Height, Width, Pixels }
    /// let t = Tensor::<f32, (Batch, Height, Width)>::zeros([2, 3, 4]);
    /// let m = t.merge::<(Height, Width), Pixels>();
    /// assert_eq!(m.shape(), &[2, 12]);
    /// ```
    pub fn merge<Src, New>(&self) -> Tensor<E, <S as MergeDims<Src, New, P>>::Out, P>
    where
        S: MergeDims<Src, New, P>,
    {
        let (start, end) = (
            <S as MergeDims<Src, New, P>>::START,
            <S as MergeDims<Src, New, P>>::END,
        );
        Tensor::wrap(self.raw.flatten(start, end))
    }

    /// Fixes dim `D` at `index`, removing it (a view). Panics where [`Tensor::try_select`]
    /// fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Rows }
    /// let t = Tensor::<i64, (Batch, Rows)>::from_vec(vec![1, 2, 3, 4, 5, 6], [2, 3]);
    /// assert_eq!(t.select::<Batch>(1).to_vec(), vec![4, 5, 6]);
    /// ```
    #[track_caller]
    pub fn select<D>(&self, index: isize) -> Tensor<E, <S as RemoveDim<D, P>>::Out, P>
    where
        S: RemoveDim<D, P>,
    {
        Tensor::wrap(self.raw.select(<S as RemoveDim<D, P>>::AXIS, index))
    }

    /// [`Tensor::select`], or an error for an index out of range.
    pub fn try_select<D>(&self, index: isize) -> Result<Tensor<E, <S as RemoveDim<D, P>>::Out, P>>
    where
        S: RemoveDim<D, P>,
    {
        Ok(Tensor::wrap(
            self.raw.try_select(<S as RemoveDim<D, P>>::AXIS, index)?,
        ))
    }

    /// The same as [`Tensor::select`] (Harvard NamedTensor's `get`).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Rows }
    /// assert_eq!(Tensor::<f32, (Batch, Rows)>::zeros([2, 3]).get::<Batch>(0).names(), ["Rows"]);
    /// ```
    #[track_caller]
    pub fn get<D>(&self, index: isize) -> Tensor<E, <S as RemoveDim<D, P>>::Out, P>
    where
        S: RemoveDim<D, P>,
    {
        self.select::<D>(index)
    }

    /// Every entry along `D`, as views without `D`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Rows }
    /// let rows = Tensor::<i32, (Batch, Rows)>::from_vec(vec![1, 2, 3, 4], [2, 2]).unbind::<Batch>();
    /// assert_eq!(rows[1].to_vec(), vec![3, 4]);
    /// ```
    pub fn unbind<D>(&self) -> Vec<Tensor<E, <S as RemoveDim<D, P>>::Out, P>>
    where
        S: RemoveDim<D, P>,
    {
        let axis = <S as RemoveDim<D, P>>::AXIS;
        let n = self.raw.shape()[axis as usize];
        (0..n)
            .map(|i| Tensor::wrap(self.raw.select(axis, i as isize)))
            .collect()
    }

    /// Keeps `length` entries of `D` from `start` on (a view; the name stays). Panics where
    /// [`Tensor::try_narrow`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Seq }
    /// let t = Tensor::<i32, (Seq,)>::from_vec(vec![0, 1, 2, 3], [4]);
    /// assert_eq!(t.narrow::<Seq>(1, 2).to_vec(), vec![1, 2]);
    /// ```
    #[track_caller]
    pub fn narrow<D>(&self, start: isize, length: usize) -> Self
    where
        S: HasDim<D, P>,
    {
        Tensor::wrap(self.raw.narrow(<S as HasDim<D, P>>::AXIS, start, length))
    }

    /// [`Tensor::narrow`], or an error when the range does not fit.
    pub fn try_narrow<D>(&self, start: isize, length: usize) -> Result<Self>
    where
        S: HasDim<D, P>,
    {
        Ok(Tensor::wrap(self.raw.try_narrow(
            <S as HasDim<D, P>>::AXIS,
            start,
            length,
        )?))
    }

    /// [`Tensor::narrow`] that also renames the narrowed dim to `New`, so it no longer
    /// broadcasts against the original (Harvard NamedTensor's rule).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Seq, Window }
    /// let t = Tensor::<i32, (Seq,)>::from_vec(vec![0, 1, 2, 3], [4]);
    /// let w = t.narrow_as::<Seq, Window>(1, 2);
    /// assert_eq!(w.names(), ["Window"]);
    /// ```
    #[track_caller]
    pub fn narrow_as<D, New>(
        &self,
        start: isize,
        length: usize,
    ) -> Tensor<E, <S as Rename<D, New, P>>::Out, P>
    where
        S: Rename<D, New, P>,
    {
        Tensor::wrap(
            self.raw
                .narrow(<S as Rename<D, New, P>>::AXIS, start, length),
        )
    }
}
