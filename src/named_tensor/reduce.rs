//! Reductions, softmax and cumulative sums by name.

use super::Tensor;
use crate::dtype::{Element, Float};
use crate::named::DimTuple;
use crate::named::{HasDim, ReduceOver, RemoveDim};
use crate::ops::SumOutput;

type Reduced<O, S, R, P> = Tensor<O, <S as ReduceOver<R, P>>::Out, P>;
/// `Self` without the dim `D`.
type Removed<O, S, D, P> = Tensor<O, <S as RemoveDim<D, P>>::Out, P>;
/// The values and indices of a `max` over `D`.
type MaxAlong<E, S, D, P> = (Removed<E, S, D, P>, Removed<i64, S, D, P>);

macro_rules! named_reductions {
    ($bound:ident; $($op:ident $keep:ident $pos:ident $Out:ty, $doc:literal;)*) => {
        impl<E: $bound, S: DimTuple, P: DimTuple> Tensor<E, S, P> {$(
            #[doc = concat!("The ", $doc, " over the dim or tuple of dims `R`, which the result no longer has.")]
            ///
            /// ```
            /// use namedtensor::{dims, Tensor};
            /// dims! { Batch, Rows, Cols }
            /// let t = Tensor::<f32, (Batch, Rows, Cols)>::ones([2, 3, 4]);
            #[doc = concat!("assert_eq!(t.", stringify!($op), "::<Rows>().names(), [\"Batch\", \"Cols\"]);")]
            #[doc = concat!("assert_eq!(t.", stringify!($op), "::<(Batch, Cols)>().shape(), &[3]);")]
            /// ```
            pub fn $op<R>(&self) -> Reduced<$Out, S, R, P>
            where
                S: ReduceOver<R, P>,
            {
                Tensor::wrap(self.raw.$pos(&<S as ReduceOver<R, P>>::AXES, false))
            }

            #[doc = concat!("The ", $doc, " over `R`, keeping the reduced dims with size 1 (and their names).")]
            pub fn $keep<R>(&self) -> Tensor<$Out, S, P>
            where
                S: ReduceOver<R, P>,
            {
                Tensor::wrap(self.raw.$pos(&<S as ReduceOver<R, P>>::AXES, true))
            }
        )*}
    };
}

named_reductions! { Element;
    sum sum_keepdim sum_dims SumOutput<E>, "sum";
    prod prod_keepdim prod_dims SumOutput<E>, "product";
    amax amax_keepdim amax_dims E, "maximum";
    amin amin_keepdim amin_dims E, "minimum";
}
named_reductions! { Float;
    mean mean_keepdim mean_dims E, "mean";
    logsumexp logsumexp_keepdim logsumexp_dims E, "log-sum-exp";
}

impl<E: Float, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// The variance over `R` with Bessel's `correction` (1 for the unbiased estimate).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f64, (Rows,)>::from_vec(vec![1.0, 2.0, 3.0, 4.0], [4]);
    /// assert!((t.var::<Rows>(1).item() - 5.0 / 3.0).abs() < 1e-12);
    /// ```
    pub fn var<R>(&self, correction: usize) -> Reduced<E, S, R, P>
    where
        S: ReduceOver<R, P>,
    {
        Tensor::wrap(
            self.raw
                .var_dims(&<S as ReduceOver<R, P>>::AXES, correction, false),
        )
    }

    /// The standard deviation over `R` with Bessel's `correction`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f64, (Rows,)>::from_vec(vec![2.0, 4.0], [2]);
    /// assert_eq!(t.std::<Rows>(0).item(), 1.0);
    /// ```
    pub fn std<R>(&self, correction: usize) -> Reduced<E, S, R, P>
    where
        S: ReduceOver<R, P>,
    {
        Tensor::wrap(
            self.raw
                .std_dims(&<S as ReduceOver<R, P>>::AXES, correction, false),
        )
    }

    /// The `p`-norm over `R`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let t = Tensor::<f32, (Rows,)>::from_vec(vec![3.0, 4.0], [2]);
    /// assert_eq!(t.norm::<Rows>(2.0).item(), 5.0);
    /// ```
    pub fn norm<R>(&self, p: f64) -> Reduced<E, S, R, P>
    where
        S: ReduceOver<R, P>,
    {
        Tensor::wrap(self.raw.norm_dims(p, &<S as ReduceOver<R, P>>::AXES, false))
    }

    /// Softmax along `D` (numerically stable).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Query, Key }
    /// let s = Tensor::<f32, (Query, Key)>::zeros([2, 4]).softmax::<Key>();
    /// assert_eq!(s.to_vec(), vec![0.25; 8]);
    /// ```
    pub fn softmax<D>(&self) -> Self
    where
        S: HasDim<D, P>,
    {
        Tensor::wrap(self.raw.softmax(<S as HasDim<D, P>>::AXIS))
    }

    /// Log-softmax along `D`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Classes }
    /// let s = Tensor::<f64, (Classes,)>::zeros([2]).log_softmax::<Classes>();
    /// assert!((s.to_vec()[0] + 2f64.ln()).abs() < 1e-12);
    /// ```
    pub fn log_softmax<D>(&self) -> Self
    where
        S: HasDim<D, P>,
    {
        Tensor::wrap(self.raw.log_softmax(<S as HasDim<D, P>>::AXIS))
    }
}

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// The index of the largest entry along `D`, which the result no longer has.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let t = Tensor::<f32, (Batch, Classes)>::from_vec(vec![0.1, 0.7, 0.2, 0.9, 0.05, 0.05], [2, 3]);
    /// assert_eq!(t.argmax::<Classes>().to_vec(), vec![1, 0]);
    /// ```
    pub fn argmax<D>(&self) -> Tensor<i64, <S as RemoveDim<D, P>>::Out, P>
    where
        S: RemoveDim<D, P>,
    {
        Tensor::wrap(self.raw.argmax_dim(<S as RemoveDim<D, P>>::AXIS, false))
    }

    /// The largest entries along `D` and their indices.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let t = Tensor::<i32, (Batch, Classes)>::from_vec(vec![1, 5, 2, 7, 0, 3], [2, 3]);
    /// let (values, indices) = t.max::<Classes>();
    /// assert_eq!((values.to_vec(), indices.to_vec()), (vec![5, 7], vec![1, 0]));
    /// ```
    pub fn max<D>(&self) -> MaxAlong<E, S, D, P>
    where
        S: RemoveDim<D, P>,
    {
        let (v, i) = self.raw.max_dim(<S as RemoveDim<D, P>>::AXIS, false);
        (Tensor::wrap(v), Tensor::wrap(i))
    }

    /// Cumulative sum along `D`.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Seq }
    /// let t = Tensor::<i32, (Seq,)>::from_vec(vec![1, 2, 3], [3]);
    /// assert_eq!(t.cumsum::<Seq>().to_vec(), vec![1i64, 3, 6]);
    /// ```
    pub fn cumsum<D>(&self) -> Tensor<SumOutput<E>, S, P>
    where
        S: HasDim<D, P>,
    {
        Tensor::wrap(self.raw.cumsum(<S as HasDim<D, P>>::AXIS))
    }
}
