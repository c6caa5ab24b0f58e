//! Creating named tensors: one size per dim, checked at compile time.

use super::Tensor;
use crate::dtype::{Element, Float};
use crate::error::Result;
use crate::named::{DimTuple, Shape};
use crate::tensor::{DynTensor, or_panic};

/// A shape's sizes: an array with one `usize` per dim, so giving the wrong number of sizes
/// is a compile error.
///
/// ```
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Rows }
/// let t = Tensor::<f32, (Batch, Rows)>::zeros([2, 3]); // [usize; 2]
/// assert_eq!(t.shape(), &[2, 3]);
/// ```
pub trait ShapeSizes: Shape {
    /// `[usize; RANK]`.
    type Sizes: AsRef<[usize]> + Copy;
}

macro_rules! shape_sizes {
    ($($n:literal: ($($T:ident),*))*) => {$(
        impl<$($T: crate::named::Dim),*> ShapeSizes for ($($T,)*) where ($($T,)*): Shape {
            type Sizes = [usize; $n];
        }
    )*};
}
shape_sizes! {
    0: ()
    1: (A)
    2: (A, B)
    3: (A, B, C)
    4: (A, B, C, D)
    5: (A, B, C, D, E)
    6: (A, B, C, D, E, F)
    7: (A, B, C, D, E, F, G)
    8: (A, B, C, D, E, F, G, H)
    9: (A, B, C, D, E, F, G, H, I)
    10: (A, B, C, D, E, F, G, H, I, J)
    11: (A, B, C, D, E, F, G, H, I, J, K)
    12: (A, B, C, D, E, F, G, H, I, J, K, L)
}

impl<E: Element, S: DimTuple> Tensor<E, S> {
    /// A tensor of `value`s with one size per dim.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// assert_eq!(Tensor::<i8, (Rows, Cols)>::full([1, 2], 7).to_vec(), vec![7, 7]);
    /// ```
    #[track_caller]
    pub fn full(sizes: S::Sizes, value: E) -> Self
    where
        S: ShapeSizes,
    {
        Tensor::wrap(DynTensor::full(sizes.as_ref(), value))
    }

    /// Zeros with one size per dim.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// assert_eq!(Tensor::<f64, (Rows,)>::zeros([2]).to_vec(), vec![0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn zeros(sizes: S::Sizes) -> Self
    where
        S: ShapeSizes,
    {
        Self::full(sizes, E::ZERO)
    }

    /// Ones with one size per dim.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// assert_eq!(Tensor::<f32, (Rows,)>::ones([2]).to_vec(), vec![1.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn ones(sizes: S::Sizes) -> Self
    where
        S: ShapeSizes,
    {
        Self::full(sizes, E::ONE)
    }

    /// A tensor holding `data` in row-major order. Panics where [`Tensor::try_from_vec`]
    /// fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<f32, (Rows, Cols)>::from_vec(vec![1., 2., 3., 4., 5., 6.], [3, 2]);
    /// assert_eq!(t.size::<Rows>(), 3);
    /// ```
    #[track_caller]
    pub fn from_vec(data: Vec<E>, sizes: S::Sizes) -> Self
    where
        S: ShapeSizes,
    {
        Tensor::wrap(DynTensor::from_vec(data, sizes.as_ref()))
    }

    /// [`Tensor::from_vec`], or an error when the data's length does not match the sizes.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// assert!(Tensor::<f32, (Rows,)>::try_from_vec(vec![1.0], [2]).is_err());
    /// ```
    pub fn try_from_vec(data: Vec<E>, sizes: S::Sizes) -> crate::Result<Self>
    where
        S: ShapeSizes,
    {
        Ok(Tensor::wrap(DynTensor::try_from_vec(data, sizes.as_ref())?))
    }
}

impl<E: Float, S: DimTuple> Tensor<E, S> {
    /// Seeded uniform samples from `[0, 1)`, one size per dim.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let a = Tensor::<f32, (Rows,)>::rand([3], 1);
    /// assert_eq!(a.to_vec(), Tensor::<f32, (Rows,)>::rand([3], 1).to_vec());
    /// ```
    pub fn rand(sizes: S::Sizes, seed: u64) -> Self
    where
        S: ShapeSizes,
    {
        Tensor::wrap(DynTensor::rand(sizes.as_ref(), seed))
    }

    /// Seeded standard normal samples, one size per dim.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Hidden }
    /// assert_eq!(Tensor::<f32, (Batch, Hidden)>::randn([2, 8], 0).shape(), &[2, 8]);
    /// ```
    pub fn randn(sizes: S::Sizes, seed: u64) -> Self
    where
        S: ShapeSizes,
    {
        Tensor::wrap(DynTensor::randn(sizes.as_ref(), seed))
    }

    /// Seeded normal samples with the given mean and standard deviation.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// assert_eq!(Tensor::<f64, (Rows,)>::normal([2], 5.0, 0.0, 0).to_vec(), vec![5.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn normal(sizes: S::Sizes, mean: f64, std: f64, seed: u64) -> Self
    where
        S: ShapeSizes,
    {
        Tensor::wrap(DynTensor::normal(sizes.as_ref(), mean, std, seed))
    }
}

impl<E: crate::dtype::Numeric, S: DimTuple> Tensor<E, S> {
    /// Seeded integers drawn uniformly from `[low, high)` as values of `E`, one size per dim
    /// (PyTorch's `randint`). Panics where [`Tensor::try_randint`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq }
    /// let ids = Tensor::<i64, (Batch, Seq)>::randint(0, 50, [2, 8], 3);
    /// assert_eq!(ids.names(), ["Batch", "Seq"]);
    /// assert!(ids.to_vec().iter().all(|v| (0..50).contains(v)));
    /// ```
    #[track_caller]
    pub fn randint(low: i64, high: i64, sizes: S::Sizes, seed: u64) -> Self
    where
        S: ShapeSizes,
    {
        or_panic(Self::try_randint(low, high, sizes, seed))
    }

    /// [`Tensor::randint`], or an error when `low >= high` or a value of the range does not
    /// fit `E` exactly.
    pub fn try_randint(low: i64, high: i64, sizes: S::Sizes, seed: u64) -> Result<Self>
    where
        S: ShapeSizes,
    {
        DynTensor::try_randint(low, high, sizes.as_ref(), seed).map(Tensor::wrap)
    }
}

impl<E: Element, D: crate::named::Dim> Tensor<E, (D,)>
where
    (D,): Shape,
{
    /// Values `start, start + step, …` below `end` (above it for a negative step) along the one
    /// dim `D`, as [`DynTensor::arange`] (`torch.arange`). Panics where
    /// [`Tensor::try_arange`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Seq }
    /// let positions = Tensor::<i64, (Seq,)>::arange(0, 5, 2);
    /// assert_eq!(positions.names(), ["Seq"]);
    /// assert_eq!(positions.to_vec(), vec![0, 2, 4]);
    /// ```
    #[track_caller]
    pub fn arange(start: E, end: E, step: E) -> Self {
        Tensor::wrap(DynTensor::arange(start, end, step))
    }

    /// [`Tensor::arange`], or the error of [`DynTensor::try_arange`] (a zero or non-finite
    /// step, a step pointing away from `end`, more values than the host can hold).
    ///
    /// ```
    /// use namedtensor::{dims, ErrorKind, Tensor};
    /// dims! { Seq }
    /// let e = Tensor::<f32, (Seq,)>::try_arange(0.0, 1.0, -0.5).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn try_arange(start: E, end: E, step: E) -> crate::Result<Self> {
        DynTensor::try_arange(start, end, step).map(Tensor::wrap)
    }
}
