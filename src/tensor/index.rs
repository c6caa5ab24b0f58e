//! NumPy/PyTorch basic indexing: `t.i((1.., 0))`, `t.i((.., NewAxis, Idx::step(.., 2)))`.

use super::{DynTensor, or_panic};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// One entry of an index expression.
///
/// Integers and Rust ranges convert into `Idx`; `..` keeps a whole dim, [`NewAxis`] inserts a
/// dim of size 1 and [`Idx::Ellipsis`] stands for all dims not otherwise indexed.
///
/// ```
/// use namedtensor::{DynTensor, Idx, NewAxis};
/// let t = DynTensor::<i64>::arange(0, 24, 1).view(&[2, 3, 4]);
/// assert_eq!(t.i((1, .., 0)).to_vec(), vec![12, 16, 20]);
/// assert_eq!(t.i((Idx::Ellipsis, 1)).shape(), &[2, 3]);
/// assert_eq!(t.i((0, NewAxis)).shape(), &[1, 3, 4]);
/// assert_eq!(t.i((0, 0, Idx::step(.., 2))).to_vec(), vec![0, 2]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idx {
    /// Fix the dim at this index (removes it); negative counts from the end.
    At(isize),
    /// Python slice `start:end:step` (bounds clamped like Python's; `step` > 0).
    Slice {
        /// First index (default 0).
        start: Option<isize>,
        /// One past the last index (default the size).
        end: Option<isize>,
        /// Distance between taken indices.
        step: usize,
    },
    /// A new dim of size 1.
    NewAxis,
    /// All remaining dims.
    Ellipsis,
}

/// Inserts a dim of size 1 in an index expression (NumPy's `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAxis;

impl From<NewAxis> for Idx {
    fn from(_: NewAxis) -> Idx {
        Idx::NewAxis
    }
}

impl From<RangeFull> for Idx {
    fn from(_: RangeFull) -> Idx {
        Idx::Slice {
            start: None,
            end: None,
            step: 1,
        }
    }
}

impl Idx {
    /// A slice of `range` taking every `step`-th index.
    ///
    /// ```
    /// use namedtensor::{DynTensor, Idx};
    /// let t = DynTensor::<i32>::arange(0, 10, 1);
    /// assert_eq!(t.i(Idx::step(1..8, 3)).to_vec(), vec![1, 4, 7]);
    /// ```
    pub fn step(range: impl Into<Idx>, step: usize) -> Idx {
        match range.into() {
            Idx::Slice { start, end, .. } => Idx::Slice { start, end, step },
            Idx::At(i) => Idx::Slice {
                start: Some(i),
                end: None,
                step,
            },
            other => other,
        }
    }
}

/// `v` as an index: values past `isize::MAX` (only `usize` has them) become `isize::MAX`,
/// which is out of range for every tensor, so they are refused or clamped like any index too
/// large instead of wrapping to a negative one (`usize::MAX as isize` is -1, the last entry).
fn ix<T: TryInto<isize>>(v: T) -> isize {
    v.try_into().unwrap_or(isize::MAX)
}

macro_rules! int_idx {
    ($($t:ty),*) => {$(
        impl From<$t> for Idx {
            fn from(i: $t) -> Idx { Idx::At(ix(i)) }
        }
        impl From<Range<$t>> for Idx {
            fn from(r: Range<$t>) -> Idx {
                Idx::Slice { start: Some(ix(r.start)), end: Some(ix(r.end)), step: 1 }
            }
        }
        impl From<RangeFrom<$t>> for Idx {
            fn from(r: RangeFrom<$t>) -> Idx {
                Idx::Slice { start: Some(ix(r.start)), end: None, step: 1 }
            }
        }
        impl From<RangeTo<$t>> for Idx {
            fn from(r: RangeTo<$t>) -> Idx {
                Idx::Slice { start: None, end: Some(ix(r.end)), step: 1 }
            }
        }
        impl From<RangeInclusive<$t>> for Idx {
            fn from(r: RangeInclusive<$t>) -> Idx {
                // `..=isize::MAX` reaches as far as any tensor: saturating keeps it so.
                let end = ix(*r.end()).saturating_add(1);
                Idx::Slice { start: Some(ix(*r.start())), end: Some(end), step: 1 }
            }
        }
        impl From<RangeToInclusive<$t>> for Idx {
            fn from(r: RangeToInclusive<$t>) -> Idx {
                Idx::Slice { start: None, end: Some(ix(r.end).saturating_add(1)), step: 1 }
            }
        }
        impl IndexSpec for $t { fn into_indices(self) -> Vec<Idx> { vec![self.into()] } }
        impl IndexSpec for Range<$t> { fn into_indices(self) -> Vec<Idx> { vec![self.into()] } }
        impl IndexSpec for RangeFrom<$t> { fn into_indices(self) -> Vec<Idx> { vec![self.into()] } }
        impl IndexSpec for RangeTo<$t> { fn into_indices(self) -> Vec<Idx> { vec![self.into()] } }
        impl IndexSpec for RangeInclusive<$t> { fn into_indices(self) -> Vec<Idx> { vec![self.into()] } }
        impl IndexSpec for RangeToInclusive<$t> { fn into_indices(self) -> Vec<Idx> { vec![self.into()] } }
    )*};
}
int_idx!(i32, i64, isize, usize);

/// Something [`DynTensor::i`] accepts: one index entry or a tuple of up to 8.
pub trait IndexSpec {
    /// The entries, left to right.
    fn into_indices(self) -> Vec<Idx>;
}

impl IndexSpec for Idx {
    fn into_indices(self) -> Vec<Idx> {
        vec![self]
    }
}
impl IndexSpec for RangeFull {
    fn into_indices(self) -> Vec<Idx> {
        vec![self.into()]
    }
}
impl IndexSpec for NewAxis {
    fn into_indices(self) -> Vec<Idx> {
        vec![Idx::NewAxis]
    }
}
impl IndexSpec for Vec<Idx> {
    fn into_indices(self) -> Vec<Idx> {
        self
    }
}

macro_rules! tuple_spec {
    ($($T:ident),+) => {
        impl<$($T: Into<Idx>),+> IndexSpec for ($($T,)+) {
            #[allow(non_snake_case)]
            fn into_indices(self) -> Vec<Idx> {
                let ($($T,)+) = self;
                vec![$($T.into()),+]
            }
        }
    };
}
tuple_spec!(A);
tuple_spec!(A, B);
tuple_spec!(A, B, C);
tuple_spec!(A, B, C, D);
tuple_spec!(A, B, C, D, F);
tuple_spec!(A, B, C, D, F, G);
tuple_spec!(A, B, C, D, F, G, H);
tuple_spec!(A, B, C, D, F, G, H, I);

impl<E: Element> DynTensor<E> {
    /// Basic indexing, as `t[1:, 0]` in PyTorch: integers select, ranges slice, `..` keeps a
    /// dim, [`NewAxis`] inserts one and [`Idx::Ellipsis`] covers the dims not named. The result
    /// is a view. Panics where [`DynTensor::try_i`] fails.
    ///
    /// ```
    /// let points = namedtensor::DynTensor::from_vec(vec![4., 1., 5., 3., 2., 1.], &[3, 2]);
    /// assert_eq!(points.i((1.., 0)).to_vec(), vec![5., 2.]);
    /// assert_eq!(points.i(1).to_vec(), vec![5., 3.]);
    /// ```
    #[track_caller]
    pub fn i(&self, index: impl IndexSpec) -> Self {
        or_panic(self.try_i(index))
    }

    /// [`DynTensor::i`], or an error for too many indices, an index out of range, a zero step
    /// or more than one ellipsis.
    pub fn try_i(&self, index: impl IndexSpec) -> Result<Self> {
        let entries = index.into_indices();
        let consumed = entries
            .iter()
            .filter(|e| matches!(e, Idx::At(_) | Idx::Slice { .. }))
            .count();
        let ellipses = entries
            .iter()
            .filter(|e| matches!(e, Idx::Ellipsis))
            .count();
        let err = |why: String| {
            Error::new(
                ErrorKind::IndexOutOfRange,
                "index",
                format!("{why} (shape {:?}, index {entries:?})", self.shape()),
            )
        };
        if ellipses > 1 {
            return Err(err("an index can have only one ellipsis".into()));
        }
        if consumed > self.dim() {
            return Err(err(format!(
                "too many indices: {consumed} for a tensor of rank {}",
                self.dim()
            )));
        }
        let apply = |layout: &Layout| -> Result<Layout> {
            index_layout(layout, &entries, self.dim() - consumed)
        };
        self.view_op("index", apply(&self.layout)?, || self.embedded(apply))
    }
}

/// `layout` indexed by `entries`, where an ellipsis stands for `ellipsis_dims` dims.
fn index_layout(layout: &Layout, entries: &[Idx], ellipsis_dims: usize) -> Result<Layout> {
    {
        let mut layout = layout.clone();
        let mut pos = 0usize; // the next dim of `layout` to index
        for entry in entries {
            match *entry {
                Idx::At(i) => {
                    layout = layout
                        .select(pos as isize, i)
                        .map_err(|e| relabel(e, "index"))?;
                }
                Idx::Slice { start, end, step } => {
                    layout = layout
                        .slice(pos as isize, start, end, step)
                        .map_err(|e| relabel(e, "index"))?;
                    pos += 1;
                }
                Idx::NewAxis => {
                    layout = layout.unsqueeze(pos as isize)?;
                    pos += 1;
                }
                Idx::Ellipsis => pos += ellipsis_dims,
            }
        }
        Ok(layout)
    }
}

fn relabel(e: Error, op: &'static str) -> Error {
    Error::new(e.kind(), op, e.message())
}
