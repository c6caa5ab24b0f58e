//! Selection by index tensors: `index_select` (whole slices, e.g. embedding rows) and
//! `gather` (one element per index), and their adjoints, which add into the positions the
//! indices name: `index_add` and `scatter_add` (repeated indices accumulate). Each pair is the
//! other's gradient.
//!
//! Indices are `i64` and must lie in `0..size` of the indexed dim (as in PyTorch, negative
//! indices are out of range); every index is checked before anything is copied, and one out
//! of range is an [`ErrorKind::IndexOutOfRange`] error, never a panic or an out-of-bounds read.

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::normalize_dim;
use crate::storage::{dispatch, with_write_read_buffers};
use crate::tensor::{DynTensor, or_panic};

impl<E: Element> DynTensor<E> {
    /// The entries `index` of dim `dim`, in that order (repeats allowed): the result has the
    /// shape of `self` with dim `dim` of size `index.numel()`. `index` is 1-D (or 0-d).
    /// A new contiguous tensor. Panics where [`DynTensor::try_index_select`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let embeddings = tensor!([[0., 0.], [1., 1.], [2., 2.]]);
    /// let ids = tensor!([2, 0, 2]; i64);
    /// assert_eq!(embeddings.index_select(0, &ids).to_vec(), vec![2., 2., 0., 0., 2., 2.]);
    /// assert_eq!(embeddings.index_select(1, &tensor!([1]; i64)).shape(), &[3, 1]);
    /// ```
    #[track_caller]
    pub fn index_select(&self, dim: isize, index: &DynTensor<i64>) -> DynTensor<E> {
        or_panic(self.try_index_select(dim, index))
    }

    /// [`DynTensor::index_select`], or an error: [`ErrorKind::IndexOutOfRange`] for an index
    /// outside `0..size`, [`ErrorKind::InvalidArgument`] for an index of rank > 1,
    /// [`ErrorKind::DimOutOfRange`].
    ///
    /// ```
    /// use namedtensor::{tensor, ErrorKind};
    /// let t = tensor!([1., 2., 3.]);
    /// let err = t.try_index_select(0, &tensor!([0, 3]; i64)).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
    /// assert!(err.to_string().contains("index 3 is out of range for dim 0 of size 3"));
    /// ```
    pub fn try_index_select(&self, dim: isize, index: &DynTensor<i64>) -> Result<DynTensor<E>> {
        const OP: &str = "index_select";
        let d = normalize_dim(OP, dim, self.dim())?;
        if index.dim() > 1 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                OP,
                format!(
                    "the index must be 1-D (or 0-d), got shape {:?}",
                    index.shape()
                ),
            ));
        }
        let mut shape = self.shape().to_vec();
        shape[d] = index.numel();
        let (src, idx) = (self.storage(), index.storage());
        let buf = dispatch::index_select(OP, src, self.layout(), d, idx, index.layout())?;
        let out = DynTensor::from_contiguous_buffer(buf, &shape)?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        Ok(crate::autograd::index_select(self, d, index, out))
    }

    /// PyTorch's `gather`: `out[i][j][k] = self[index[i][j][k]][j][k]` for `dim = 0` (and
    /// likewise for other dims). `index` has the rank of `self` and, in every dim other than
    /// `dim`, a size no larger than `self`'s; the result has the shape of `index`.
    /// Panics where [`DynTensor::try_gather`] fails.
    ///
    /// ```
    /// use namedtensor::tensor;
    /// let t = tensor!([[1, 2], [3, 4]]; i32);
    /// let picked = t.gather(1, &tensor!([[0, 0], [1, 0]]; i64));
    /// assert_eq!(picked.to_vec(), vec![1, 1, 4, 3]);
    /// ```
    #[track_caller]
    pub fn gather(&self, dim: isize, index: &DynTensor<i64>) -> DynTensor<E> {
        or_panic(self.try_gather(dim, index))
    }

    /// [`DynTensor::gather`], or an error: [`ErrorKind::IndexOutOfRange`] for an index
    /// outside `0..size` of `dim`, [`ErrorKind::ShapeMismatch`] for an index of another rank
    /// or larger in another dim, [`ErrorKind::DimOutOfRange`].
    ///
    /// ```
    /// use namedtensor::{tensor, ErrorKind};
    /// let t = tensor!([[1, 2], [3, 4]]; i32);
    /// let err = t.try_gather(0, &tensor!([[2, 0]]; i64)).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
    /// ```
    pub fn try_gather(&self, dim: isize, index: &DynTensor<i64>) -> Result<DynTensor<E>> {
        const OP: &str = "gather";
        let d = normalize_dim(OP, dim, self.dim())?;
        let fits = index.dim() == self.dim()
            && (0..self.dim()).all(|e| e == d || index.shape()[e] <= self.shape()[e]);
        if !fits {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                OP,
                format!(
                    "the index must have the rank of the input and sizes no larger in every dim \
                     but {d}; got index shape {:?} for input shape {:?}",
                    index.shape(),
                    self.shape()
                ),
            ));
        }
        let (src, idx) = (self.storage(), index.storage());
        let buf = dispatch::gather(OP, src, self.layout(), d, idx, index.layout())?;
        let out = DynTensor::from_contiguous_buffer(buf, index.shape())?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        Ok(crate::autograd::gather(OP, self, d, index, out))
    }

    /// PyTorch's `scatter_add`: a copy of `self` with, for every position `i` of `index`,
    /// `src[i]` added at `i` with its coordinate in dim `dim` replaced by `index[i]`; for
    /// `dim = 0`, `out[index[i][j]][j] += src[i][j]`. Repeated indices accumulate (in the
    /// index's row-major order, the same on every device and thread count). `index` and `src`
    /// have the rank of `self`; `index` is no larger than `src` in any dim and no larger than
    /// `self` in any dim but `dim` (only `src`'s first `index.shape()` elements are read). The
    /// adjoint of [`DynTensor::gather`], and its gradient. Panics where
    /// [`DynTensor::try_scatter_add`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let counts = DynTensor::<f32>::zeros(&[3]);
    /// let hits = counts.scatter_add(0, &tensor!([2, 0, 2, 2]; i64), &DynTensor::ones(&[4]));
    /// assert_eq!(hits.to_vec(), vec![1., 0., 3.]);
    /// ```
    #[track_caller]
    pub fn scatter_add(&self, dim: isize, index: &DynTensor<i64>, src: &DynTensor<E>) -> Self {
        or_panic(self.try_scatter_add(dim, index, src))
    }

    /// [`DynTensor::scatter_add`], or an error: [`ErrorKind::IndexOutOfRange`] for an index
    /// outside `0..size` of `dim`, [`ErrorKind::ShapeMismatch`] for an index or source of
    /// another rank or an index too large, [`ErrorKind::DimOutOfRange`],
    /// [`ErrorKind::Device`] for operands on two devices.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor, ErrorKind};
    /// let t = DynTensor::<f32>::zeros(&[2]);
    /// let err = t.try_scatter_add(0, &tensor!([2]; i64), &tensor!([1.])).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
    /// ```
    pub fn try_scatter_add(
        &self,
        dim: isize,
        index: &DynTensor<i64>,
        src: &DynTensor<E>,
    ) -> Result<Self> {
        scatter_add("scatter_add", self, dim, index, src)
    }

    /// [`DynTensor::scatter_add`] in place: adds into this view's elements (a view of a
    /// larger tensor writes through to it). Panics where [`DynTensor::try_scatter_add_`]
    /// fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let t = DynTensor::<i64>::zeros(&[2, 3]);
    /// t.i(1).scatter_add_(0, &tensor!([0, 0]; i64), &tensor!([5, 6]; i64));
    /// assert_eq!(t.to_vec(), vec![0, 0, 0, 11, 0, 0]);
    /// ```
    #[track_caller]
    pub fn scatter_add_(&self, dim: isize, index: &DynTensor<i64>, src: &DynTensor<E>) -> &Self {
        or_panic(self.try_scatter_add_(dim, index, src))
    }

    /// [`DynTensor::scatter_add_`], or the errors of [`DynTensor::try_scatter_add`] and of
    /// writing in place (an expanded view; a tensor that requires grad outside `no_grad`).
    /// On error nothing is written.
    pub fn try_scatter_add_(
        &self,
        dim: isize,
        index: &DynTensor<i64>,
        src: &DynTensor<E>,
    ) -> Result<&Self> {
        in_place("scatter_add_", self, src, |op, t| {
            scatter_add(op, t, dim, index, src)
        })
    }

    /// PyTorch's `index_add`: a copy of `self` with slice `j` of `source` along `dim` added to
    /// slice `index[j]` (repeated indices accumulate). `index` is 1-D (or 0-d); `source` has
    /// the shape of `self` except `index.numel()` in dim `dim`. The adjoint of
    /// [`DynTensor::index_select`], and its gradient (an embedding's weight gradient). Panics
    /// where [`DynTensor::try_index_add`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let table = DynTensor::<f32>::zeros(&[3, 2]);
    /// let rows = tensor!([[1., 1.], [2., 2.], [4., 4.]]);
    /// let summed = table.index_add(0, &tensor!([2, 0, 2]; i64), &rows);
    /// assert_eq!(summed.to_vec(), vec![2., 2., 0., 0., 5., 5.]);
    /// ```
    #[track_caller]
    pub fn index_add(&self, dim: isize, index: &DynTensor<i64>, source: &DynTensor<E>) -> Self {
        or_panic(self.try_index_add(dim, index, source))
    }

    /// [`DynTensor::index_add`], or an error: [`ErrorKind::IndexOutOfRange`],
    /// [`ErrorKind::InvalidArgument`] for an index of rank > 1, [`ErrorKind::ShapeMismatch`]
    /// for a source of another shape, [`ErrorKind::DimOutOfRange`], [`ErrorKind::Device`].
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor, ErrorKind};
    /// let t = DynTensor::<f32>::zeros(&[3, 2]);
    /// let err = t.try_index_add(0, &tensor!([0]; i64), &tensor!([[1., 2., 3.]])).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    /// ```
    pub fn try_index_add(
        &self,
        dim: isize,
        index: &DynTensor<i64>,
        source: &DynTensor<E>,
    ) -> Result<Self> {
        index_add("index_add", self, dim, index, source)
    }

    /// [`DynTensor::index_add`] in place, writing through this view. Panics where
    /// [`DynTensor::try_index_add_`] fails.
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let t = DynTensor::<f32>::ones(&[3]);
    /// t.index_add_(0, &tensor!([1, 1]; i64), &tensor!([0.5, 0.25]));
    /// assert_eq!(t.to_vec(), vec![1., 1.75, 1.]);
    /// ```
    #[track_caller]
    pub fn index_add_(&self, dim: isize, index: &DynTensor<i64>, source: &DynTensor<E>) -> &Self {
        or_panic(self.try_index_add_(dim, index, source))
    }

    /// [`DynTensor::index_add_`], or the errors of [`DynTensor::try_index_add`] and of
    /// writing in place. On error nothing is written.
    pub fn try_index_add_(
        &self,
        dim: isize,
        index: &DynTensor<i64>,
        source: &DynTensor<E>,
    ) -> Result<&Self> {
        in_place("index_add_", self, source, |op, t| {
            index_add(op, t, dim, index, source)
        })
    }
}

/// `t` with `src` added at `index` along `dim` (see [`DynTensor::scatter_add`]), as op `op`.
fn scatter_add<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    dim: isize,
    index: &DynTensor<i64>,
    src: &DynTensor<E>,
) -> Result<DynTensor<E>> {
    let d = normalize_dim(op, dim, t.dim())?;
    let rank = t.dim();
    let fits = index.dim() == rank
        && src.dim() == rank
        && (0..rank).all(|e| {
            index.shape()[e] <= src.shape()[e] && (e == d || index.shape()[e] <= t.shape()[e])
        });
    if !fits {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the index and the source must have the rank of the input, the index no larger \
                 than the source in any dim and than the input in every dim but {d}; got index \
                 shape {:?}, source shape {:?}, input shape {:?}",
                index.shape(),
                src.shape(),
                t.shape()
            ),
        ));
    }
    // Only the source's first `index.shape()` elements take part: that view is the operand
    // (and what its gradient is embedded back into).
    let mut part = src.clone();
    for (e, (&want, &have)) in index.shape().iter().zip(src.shape()).enumerate() {
        if want != have {
            part = part.try_narrow(e as isize, 0, want)?;
        }
    }
    let buf = dispatch::scatter_add(
        op,
        t.storage(),
        t.layout(),
        d,
        index.storage(),
        index.layout(),
        part.storage(),
        part.layout(),
    )?;
    let out = DynTensor::from_contiguous_buffer(buf, t.shape())?;
    if !crate::autograd::tracks(t) && !crate::autograd::tracks(&part) {
        return Ok(out);
    }
    Ok(crate::autograd::scatter_add(op, t, d, index, &part, out))
}

/// `t` with slice `j` of `source` along `dim` added to slice `index[j]` (see
/// [`DynTensor::index_add`]): a [`scatter_add`] whose index is `index` broadcast over the
/// source's other dims (a stride-0 view, nothing copied).
fn index_add<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    dim: isize,
    index: &DynTensor<i64>,
    source: &DynTensor<E>,
) -> Result<DynTensor<E>> {
    let d = normalize_dim(op, dim, t.dim())?;
    if index.dim() > 1 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "the index must be 1-D (or 0-d), got shape {:?}",
                index.shape()
            ),
        ));
    }
    let mut expected = t.shape().to_vec();
    expected[d] = index.numel();
    if source.shape() != expected.as_slice() {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the source must have the input's shape {:?} with {} (the index's length) in \
                 dim {d}, i.e. {expected:?}; got {:?}",
                t.shape(),
                index.numel(),
                source.shape()
            ),
        ));
    }
    let mut along = vec![1isize; t.dim()];
    along[d] = index.numel() as isize;
    let target: Vec<isize> = expected.iter().map(|&s| s as isize).collect();
    let spread = index.try_reshape(&along)?.try_expand(&target)?;
    scatter_add(op, t, dim, &spread, source)
}

/// Runs the out-of-place form of the in-place op `op` (with `source` written into `dst`) on
/// `dst` and writes its result through `dst`'s view; nothing is written if either fails. In
/// a graph, the write is recorded (see `autograd::inplace`).
fn in_place<'a, E: Element>(
    op: &'static str,
    dst: &'a DynTensor<E>,
    source: &DynTensor<E>,
    out_of_place: impl Fn(&'static str, &DynTensor<E>) -> Result<DynTensor<E>>,
) -> Result<&'a DynTensor<E>> {
    let tracked = crate::autograd::tracks(source);
    if crate::autograd::write_in_place(op, dst, tracked, |old| out_of_place(op, old))? {
        return Ok(dst);
    }
    let result = out_of_place(op, dst)?;
    // SAFETY: the copy writes elements of the buffer only.
    unsafe {
        with_write_read_buffers(op, dst.storage(), result.storage(), |buf, r| {
            buf.copy_from(op, dst.layout(), r, result.layout())
        })
    }?;
    Ok(dst)
}
