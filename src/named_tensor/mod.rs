//! [`Tensor<E, S, P>`]: a [`DynTensor`] whose dims have names checked by the compiler.
//!
//! `S` is a tuple of dims declared with [`dims!`](crate::dims) (the visible dims) and `P`
//! a tuple of private dims hidden by [`Tensor::mask_to`]. The full tensor's axes are `P`
//! followed by `S`. A `Tensor` is the positional tensor plus zero-sized type information:
//! every named operation resolves its names to axis positions at compile time (see
//! [`crate::named`]) and calls the positional operation with those constants, so it runs
//! exactly as fast as the positional call.
//!
//! ```
//! use namedtensor::{dims, Tensor};
//! dims! { Batch, Channels, Rows, Cols }
//! let img = Tensor::<f32, (Batch, Channels, Rows, Cols)>::ones([2, 3, 4, 5]);
//! let gray = img.sum::<Channels>();                // (Batch, Rows, Cols)
//! assert_eq!(gray.shape(), &[2, 4, 5]);
//! assert_eq!(gray.size::<Rows>(), 4);
//! ```

mod binary;
mod contract;
mod create;
mod file;
mod grad;
mod join;
mod reduce;
mod select;
mod sort;
mod unary;
mod view;

pub use create::ShapeSizes;

use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{DimTuple, HasDim, Shape};
use crate::tensor::DynTensor;
use std::fmt;
use std::marker::PhantomData;

/// A tensor with named dims `S` (visible) and `P` (private, see [`Tensor::mask_to`]).
///
/// Invariants: the positional tensor inside has rank `P::RANK + S::RANK`, its first
/// `P::RANK` axes are the private dims and the rest are `S`, in order; `S` and `P` are
/// [`Shape`]s (no dim repeats). The type asks only for [`DimTuple`], so code generic over
/// dims holds `Tensor<E, (In, Out)>` with no bound. Every way of creating a tensor asks for
/// [`Shape`] (`zeros`, `from_vec`, `refine_names`, `load`, …) and every named operation's
/// result dims are a [`Shape`] by its trait, so no tensor with repeated dims can exist and
/// methods on an existing tensor need not check again.
///
/// ```
/// use namedtensor::{dims, DynTensor, Tensor};
/// dims! { Rows, Cols }
/// let t: Tensor<f32, (Rows, Cols)> = DynTensor::from_vec(vec![1., 2., 3., 4., 5., 6.], &[2, 3])
///     .refine_names();
/// assert_eq!(t.names(), ["Rows", "Cols"]);
/// assert_eq!(t.sum::<Rows>().into_dyn().to_vec(), vec![5., 7., 9.]);
/// ```
///
/// # Dims as type parameters or as values
///
/// Rust has no overloading by the number of arguments, so each op takes its dims in one form:
/// a dim that is the op's only input is a type parameter, `x.sum::<Hidden>()`,
/// `x.softmax::<Classes>()`, `x.mask::<(Batch, Heads)>()`, `x.size::<Seq>()`; a dim given
/// together with tensors is a value, written as in PyTorch's keyword-free calls:
/// `q.dot(Hidden, &k)`, `table.index_select(Vocab, &ids)`, `logp.take_along(Classes,
/// &labels)`, `x.gather(Classes, &index)`, `Tensor::cat(Seq, &[&a, &b])`. A dim type is its
/// own only value (`dims!` declares unit structs), so both forms name the same thing.
///
/// # Masks and selection by name
///
/// Comparisons (`x.gt(&y)`, `x.gt_scalar(0.0)`) broadcast by name as arithmetic does, and a
/// boolean mask may have any subset of the dims it selects in, in any order:
///
/// ```
/// use namedtensor::{dims, Tensor};
/// dims! { Height, Width, Channels }
/// let img = Tensor::<f32, (Height, Width, Channels)>::ones([2, 2, 3]);
/// let dark = Tensor::<f32, (Width, Height)>::zeros([2, 2]).lt_scalar(0.5); // all true
/// assert!(img.masked_fill(&dark, 0.0).to_vec().iter().all(|&v| v == 0.0));
/// ```
pub struct Tensor<E: Element, S: DimTuple, P: DimTuple = ()> {
    raw: DynTensor<E>,
    names: PhantomData<fn() -> (S, P)>,
}

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// Wraps a positional tensor whose rank is known to be `P::RANK + S::RANK`.
    pub(crate) fn wrap(raw: DynTensor<E>) -> Self {
        debug_assert_eq!(
            raw.dim(),
            P::RANK + S::RANK,
            "named tensor of the wrong rank"
        );
        Tensor {
            raw,
            names: PhantomData,
        }
    }

    /// The positional tensor, dropping the names (no copy).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<i32, (Rows,)>::zeros([3]);
    /// assert_eq!(t.into_dyn().shape(), &[3]);
    /// ```
    pub fn into_dyn(self) -> DynTensor<E> {
        self.raw
    }

    /// The positional tensor, borrowed.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// assert_eq!(Tensor::<i32, (Rows,)>::zeros([3]).as_dyn().numel(), 3);
    /// ```
    pub fn as_dyn(&self) -> &DynTensor<E> {
        &self.raw
    }

    /// The names of the visible dims, in order.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Rows }
    /// assert_eq!(Tensor::<f32, (Batch, Rows)>::zeros([1, 2]).names(), ["Batch", "Rows"]);
    /// ```
    pub fn names(&self) -> &'static [&'static str] {
        S::NAMES
    }

    /// The size of the visible dim `D`; naming a dim the tensor lacks is a compile error.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Rows }
    /// assert_eq!(Tensor::<f32, (Batch, Rows)>::zeros([2, 5]).size::<Rows>(), 5);
    /// ```
    pub fn size<D>(&self) -> usize
    where
        S: HasDim<D, P>,
    {
        self.raw.shape()[<S as HasDim<D, P>>::AXIS as usize]
    }

    /// Sizes of the full tensor (private dims first).
    pub fn shape(&self) -> &[usize] {
        self.raw.shape()
    }

    /// Strides of the full tensor (private dims first).
    pub fn stride(&self) -> &[usize] {
        self.raw.stride()
    }

    /// The storage index of the first element.
    pub fn storage_offset(&self) -> usize {
        self.raw.storage_offset()
    }

    /// The storage this tensor is a view of.
    pub fn storage(&self) -> &crate::Storage<E> {
        self.raw.storage()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.raw.numel()
    }

    /// Whether the elements are in row-major order without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.raw.is_contiguous()
    }

    /// The elements in row-major order of the full shape (private dims first) as a borrowed
    /// slice, without copying: `Some` when contiguous in host memory; see
    /// [`DynTensor::as_slice`].
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<f32, (Rows, Cols)>::ones([2, 3]);
    /// assert_eq!(t.as_slice().unwrap().len(), 6);
    /// assert!(t.align_to::<(Cols, Rows)>().as_slice().is_none());
    /// ```
    pub fn as_slice(&self) -> Option<crate::ElementsRef<'_, E>> {
        self.raw.as_slice()
    }

    /// Runs `f` on the elements in row-major order of the full shape, borrowed when possible
    /// and copied otherwise; see [`DynTensor::with_contiguous`].
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<f32, (Rows, Cols)>::ones([2, 3]);
    /// assert_eq!(t.with_contiguous(|s| s.iter().sum::<f32>()), 6.0);
    /// ```
    #[track_caller]
    pub fn with_contiguous<R>(&self, f: impl FnOnce(&[E]) -> R) -> R {
        self.raw.with_contiguous(f)
    }

    /// The elements in row-major order of the full shape.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// assert_eq!(Tensor::<u8, (Rows,)>::ones([2]).to_vec(), vec![1, 1]);
    /// ```
    pub fn to_vec(&self) -> Vec<E> {
        self.raw.to_vec()
    }

    /// The value of a one-element tensor.
    pub fn item(&self) -> E {
        self.raw.item()
    }

    /// Another handle to the same storage (no copy).
    pub fn shallow_clone(&self) -> Self {
        Tensor::wrap(self.raw.shallow_clone())
    }

    /// This tensor if contiguous, otherwise a contiguous copy; names unchanged.
    pub fn contiguous(&self) -> Self {
        Tensor::wrap(self.raw.contiguous())
    }

    /// A copy with elements converted to `F`; names unchanged.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f32, (Rows,)>::full([2], 2.7).to_dtype::<i64>();
    /// assert_eq!(t.to_vec(), vec![2, 2]);
    /// ```
    pub fn to_dtype<F: Element>(&self) -> Tensor<F, S, P> {
        Tensor::wrap(self.raw.to_dtype::<F>())
    }
}

crate::dims! {
    /// The leading dims that [`DynTensor::refine_names_trailing`] leaves unnamed, merged into
    /// one private dim.
    pub Leading,
}

impl<E: Element> DynTensor<E> {
    /// Names the last dims `S` and hides the leading ones, however many, merged into the one
    /// private dim [`Leading`]: PyTorch's `refine_names('...', 'C', 'H', 'W')`, for code that
    /// works per item whatever the batch dims are. The merge is a view when the strides allow
    /// it and a copy otherwise (as [`DynTensor::reshape`]); with no leading dims, `Leading` has
    /// size 1. [`Tensor::unmask`] makes it visible. Panics where
    /// [`DynTensor::try_refine_names_trailing`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, DynTensor};
    /// dims! { Channels, Rows, Cols }
    /// let batch = DynTensor::<f32>::ones(&[2, 5, 3, 4, 4]); // two unnamed leading dims
    /// let img = batch.refine_names_trailing::<(Channels, Rows, Cols)>();
    /// assert_eq!(img.names(), ["Channels", "Rows", "Cols"]);
    /// assert_eq!(img.shape(), &[10, 3, 4, 4]);
    /// let gray = img.mean::<Channels>();                        // per image, any batch dims
    /// assert_eq!(gray.unmask().names(), ["Leading", "Rows", "Cols"]);
    /// ```
    #[track_caller]
    pub fn refine_names_trailing<S: Shape>(self) -> Tensor<E, S, (Leading,)> {
        crate::tensor::or_panic(self.try_refine_names_trailing())
    }

    /// [`DynTensor::refine_names_trailing`], or an error if the tensor has fewer dims than
    /// `S`.
    ///
    /// ```
    /// use namedtensor::{dims, DynTensor, ErrorKind};
    /// dims! { Rows, Cols }
    /// let e = DynTensor::<f32>::zeros(&[3]).try_refine_names_trailing::<(Rows, Cols)>();
    /// assert_eq!(e.unwrap_err().kind(), ErrorKind::ShapeMismatch);
    /// ```
    pub fn try_refine_names_trailing<S: Shape>(self) -> Result<Tensor<E, S, (Leading,)>> {
        const OP: &str = "refine_names_trailing";
        let Some(lead) = self.dim().checked_sub(S::RANK) else {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                OP,
                format!(
                    "a tensor of rank {} (shape {:?}) has too few dims for the {} names {:?}",
                    self.dim(),
                    self.shape(),
                    S::RANK,
                    S::NAMES
                ),
            ));
        };
        let (leading, named) = self.shape().split_at(lead);
        let merged = leading.iter().product::<usize>() as isize;
        let shape: Vec<isize> = std::iter::once(merged)
            .chain(named.iter().map(|&s| s as isize))
            .collect();
        Ok(Tensor::wrap(self.try_reshape(&shape)?))
    }

    /// Names the dims of this tensor `S` (no copy). Panics where
    /// [`DynTensor::try_refine_names`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, DynTensor, Tensor};
    /// dims! { Rows, Cols }
    /// let t: Tensor<f32, (Rows, Cols)> = DynTensor::zeros(&[2, 3]).refine_names();
    /// assert_eq!(t.size::<Cols>(), 3);
    /// ```
    #[track_caller]
    pub fn refine_names<S: Shape>(self) -> Tensor<E, S> {
        crate::tensor::or_panic(self.try_refine_names())
    }

    /// Names the dims of this tensor `S`, or an error if its rank is not `S`'s.
    ///
    /// ```
    /// use namedtensor::{dims, DynTensor, ErrorKind};
    /// dims! { Rows, Cols }
    /// let e = DynTensor::<f32>::zeros(&[2]).try_refine_names::<(Rows, Cols)>().unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    /// ```
    pub fn try_refine_names<S: Shape>(self) -> Result<Tensor<E, S>> {
        if self.dim() != S::RANK {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "refine_names",
                format!(
                    "a tensor of rank {} (shape {:?}) cannot take the {} names {:?}",
                    self.dim(),
                    self.shape(),
                    S::RANK,
                    S::NAMES
                ),
            ));
        }
        Ok(Tensor::wrap(self))
    }
}

impl<E: Element, S: DimTuple, P: DimTuple> Clone for Tensor<E, S, P> {
    /// A deep copy, like [`DynTensor`]'s `clone`.
    fn clone(&self) -> Self {
        Tensor::wrap(self.raw.clone())
    }
}

impl<E: Element, S: DimTuple, P: DimTuple> fmt::Display for Tensor<E, S, P> {
    /// The positional display followed by the names, as PyTorch prints named tensors.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<f32, (Rows, Cols)>::ones([1, 2]);
    /// assert_eq!(t.to_string(), "tensor([[1., 1.]], names=('Rows', 'Cols'))");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.raw.to_string();
        let body = s.strip_suffix(')').unwrap_or(&s);
        let names: Vec<String> = P::NAMES
            .iter()
            .map(|n| format!("<{n}>"))
            .chain(S::NAMES.iter().map(|n| format!("'{n}'")))
            .collect();
        let tuple = if names.len() == 1 {
            format!("({},)", names[0])
        } else {
            format!("({})", names.join(", "))
        };
        write!(f, "{body}, names={tuple})")
    }
}

impl<E: Element, S: DimTuple, P: DimTuple> fmt::Debug for Tensor<E, S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor {{ names: {:?}, private: {:?}, shape: {:?}, strides: {:?}, offset: {}, dtype: {} }}",
            S::NAMES,
            P::NAMES,
            self.raw.shape(),
            self.raw.stride(),
            self.raw.storage_offset(),
            E::DTYPE
        )
    }
}
