//! Autograd on named tensors: the positional methods, re-wrapped so that a gradient keeps
//! its tensor's names. `w.grad()` of a `Tensor<f32, (In, Out)>` is a
//! `Tensor<f32, (In, Out)>`; every named op differentiates through the positional ops it
//! calls.

use super::Tensor;
use crate::autograd::BackwardOptions;
use crate::dtype::Element;
use crate::error::Result;
use crate::named::DimTuple;
use crate::tensor::or_panic;

impl<E: Element, S: DimTuple, P: DimTuple> Tensor<E, S, P> {
    /// This tensor marked (or unmarked) as a leaf that requires grad. Panics where
    /// [`Tensor::try_requires_grad_`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { In, Out }
    /// let w = Tensor::<f32, (In, Out)>::ones([3, 2]).requires_grad_(true);
    /// w.sum::<(In, Out)>().backward();
    /// let g: Tensor<f32, (In, Out)> = w.grad().unwrap();
    /// assert_eq!(g.shape(), &[3, 2]);
    /// ```
    #[track_caller]
    #[must_use = "returns the marked tensor"]
    pub fn requires_grad_(self, requires: bool) -> Self {
        or_panic(self.try_requires_grad_(requires))
    }

    /// [`Tensor::requires_grad_`], or an error for an integer or `bool` tensor or for
    /// unmarking a non-leaf (see [`DynTensor::try_requires_grad_`](crate::DynTensor)).
    pub fn try_requires_grad_(self, requires: bool) -> Result<Self> {
        Ok(Tensor::wrap(self.raw.try_requires_grad_(requires)?))
    }

    /// Whether this tensor requires grad.
    pub fn requires_grad(&self) -> bool {
        self.raw.requires_grad()
    }

    /// Whether this tensor is a leaf (not made by a recorded op).
    pub fn is_leaf(&self) -> bool {
        self.raw.is_leaf()
    }

    /// The accumulated gradient, with this tensor's names.
    pub fn grad(&self) -> Option<Tensor<E, S, P>> {
        self.raw.grad().map(Tensor::wrap)
    }

    /// Replaces the accumulated gradient (`None` clears it).
    pub fn set_grad(&self, grad: Option<Tensor<E, S, P>>) -> Result<()> {
        self.raw.set_grad(grad.map(Tensor::into_dyn))
    }

    /// Clears the accumulated gradient.
    pub fn zero_grad(&self) {
        self.raw.zero_grad()
    }

    /// Keeps the gradient of this non-leaf tensor in [`Tensor::grad`]. Panics where
    /// [`DynTensor::try_retain_grad`](crate::DynTensor) fails.
    #[track_caller]
    pub fn retain_grad(&self) {
        self.raw.retain_grad()
    }

    /// The same view outside the graph (shares the storage).
    pub fn detach(&self) -> Self {
        Tensor::wrap(self.raw.detach())
    }

    /// The name of the op that made this tensor, if recorded.
    pub fn grad_fn(&self) -> Option<&'static str> {
        self.raw.grad_fn()
    }

    /// The backward pass from this one-element tensor. Panics where
    /// [`Tensor::try_backward`] fails.
    #[track_caller]
    pub fn backward(&self) {
        self.raw.backward()
    }

    /// [`Tensor::backward`], or an error (see [`DynTensor::try_backward`](crate::DynTensor)).
    pub fn try_backward(&self) -> Result<()> {
        self.raw.try_backward()
    }

    /// The backward pass with `grad` (of this tensor's names) as this tensor's gradient.
    pub fn backward_with(&self, grad: &Tensor<E, S, P>, options: BackwardOptions) -> Result<()> {
        self.raw.backward_with(&grad.raw, options)
    }
}
