//! Activations as layer values (PyTorch's `nn.ReLU`, `nn.GELU`, …), for chains of layers:
//! `(Linear<A, B>, Relu, Linear<B, C>)`. Each keeps its input's dims and has no parameters;
//! [`Softmax<D>`] and [`LogSoftmax<D>`] name the dim they normalise along, checked at compile
//! time like `x.softmax::<D>()`.

use super::forward::Forward;
use super::module::{Module, Visitor};
use crate::dtype::{Element, Float, Numeric};
use crate::error::Result;
use crate::named::{DimTuple, HasDim};
use crate::named_tensor::Tensor;
use core::marker::PhantomData;

macro_rules! activation {
    ($($(#[$doc:meta])* $name:ident: $bound:ident, $op:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;

        impl $name {
            #[doc = concat!("`x.", stringify!($op), "()`: names and shape kept.")]
            pub fn forward<E: $bound, S: DimTuple, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P> {
                x.$op()
            }
        }

        impl<E: $bound, S: DimTuple, P: DimTuple> Forward<Tensor<E, S, P>> for $name {
            type Output = Tensor<E, S, P>;
            fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
                Ok(x.$op())
            }
        }

        impl<E: Element> Module<E> for $name {
            fn visit(&self, _: &mut Visitor<'_, E>) {}
        }
    )*};
}

activation! {
    /// `max(x, 0)` (PyTorch's `nn.ReLU`).
    ///
    /// ```
    /// use namedtensor::nn::Relu;
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows }
    /// let x = Tensor::<f32, (Rows,)>::from_vec(vec![-1.0, 2.0], [2]);
    /// assert_eq!(Relu.forward(&x).to_vec(), vec![0.0, 2.0]);
    /// ```
    Relu: Numeric, relu;
    /// `x Φ(x)` with the exact normal CDF (PyTorch's `nn.GELU()`).
    Gelu: Float, gelu;
    /// GELU's tanh approximation (PyTorch's `nn.GELU(approximate="tanh")`).
    GeluTanh: Float, gelu_tanh;
    /// `x σ(x)` (PyTorch's `nn.SiLU`).
    Silu: Float, silu;
    /// `1 / (1 + e^-x)` (PyTorch's `nn.Sigmoid`).
    Sigmoid: Float, sigmoid;
    /// `tanh x` (PyTorch's `nn.Tanh`).
    Tanh: Float, tanh;
}

macro_rules! along_dim {
    ($($(#[$doc:meta])* $name:ident, $op:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<D>(PhantomData<fn() -> D>);

        impl<D> $name<D> {
            #[doc = concat!("The layer along `D`, as `", stringify!($name), "::<D>::new()`.")]
            pub fn new() -> Self {
                $name(PhantomData)
            }

            #[doc = concat!("`x.", stringify!($op), "::<D>()`: names and shape kept.")]
            pub fn forward<E: Float, S: HasDim<D, P>, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P> {
                x.$op::<D>()
            }
        }

        impl<D> Default for $name<D> {
            fn default() -> Self {
                $name::new()
            }
        }

        impl<D> Clone for $name<D> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<D> Copy for $name<D> {}

        impl<E: Float, S: HasDim<D, P>, P: DimTuple, D> Forward<Tensor<E, S, P>> for $name<D> {
            type Output = Tensor<E, S, P>;
            fn try_forward(&self, x: &Tensor<E, S, P>) -> Result<Self::Output> {
                Ok(x.$op::<D>())
            }
        }

        impl<E: Element, D> Module<E> for $name<D> {
            fn visit(&self, _: &mut Visitor<'_, E>) {}
        }
    )*};
}

along_dim! {
    /// The softmax along `D` (PyTorch's `nn.Softmax(dim)`, the dim by name).
    ///
    /// ```
    /// use namedtensor::nn::Softmax;
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let x = Tensor::<f32, (Batch, Classes)>::zeros([2, 4]);
    /// assert_eq!(Softmax::<Classes>::new().forward(&x).to_vec(), vec![0.25; 8]);
    /// ```
    Softmax, softmax;
    /// The log of the softmax along `D` (PyTorch's `nn.LogSoftmax(dim)`).
    LogSoftmax, log_softmax;
}
