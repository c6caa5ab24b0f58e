//! The autograd methods of [`DynTensor`]: PyTorch's `requires_grad_`, `grad`, `backward`,
//! `detach`, `retain_grad`, and the free function [`grad`].

use super::any::AnyTensor;
use super::engine::{self, BackwardOptions, Sink};
use super::node::{GradInfo, Meta, Node, lock};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{DynTensor, or_panic};
use std::sync::Arc;

impl<E: Element> DynTensor<E> {
    /// Whether this tensor requires grad: a leaf marked with [`DynTensor::requires_grad_`] or
    /// the result of an op recorded on one.
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// assert!(w.requires_grad() && w.exp().requires_grad());
    /// assert!(!w.detach().requires_grad());
    /// ```
    pub fn requires_grad(&self) -> bool {
        self.meta().is_some()
    }

    /// This tensor marked (or unmarked) as a leaf whose gradient [`DynTensor::backward`]
    /// computes. Panics where [`DynTensor::try_requires_grad_`] fails.
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f64>::zeros(&[3]).requires_grad_(true);
    /// assert!(w.requires_grad() && w.is_leaf());
    /// ```
    #[track_caller]
    #[must_use = "returns the marked tensor"]
    pub fn requires_grad_(self, requires: bool) -> Self {
        or_panic(self.try_requires_grad_(requires))
    }

    /// [`DynTensor::requires_grad_`], or an error for a tensor of an integer or `bool` type
    /// (only floats have gradients) and for unmarking a tensor that is not a leaf.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<i64>::zeros(&[3]).try_requires_grad_(true).is_err());
    /// ```
    pub fn try_requires_grad_(self, requires: bool) -> Result<Self> {
        let op = "requires_grad_";
        if requires && !E::DTYPE.is_float() {
            return Err(Error::new(
                ErrorKind::Autograd,
                op,
                format!(
                    "only tensors of a float type can require grad, this one is {}",
                    E::DTYPE
                ),
            ));
        }
        match (self.meta().map(|m| &**m), requires) {
            (Some(Meta::Interior(_)), false) => Err(Error::new(
                ErrorKind::Autograd,
                op,
                "only leaves can stop requiring grad; use detach() for a tensor outside the \
                 graph",
            )),
            (Some(_), true) => Ok(self),
            (_, false) => Ok(self.with_meta(None)),
            (None, true) => {
                let node = Node::accumulate(GradInfo {
                    dtype: E::DTYPE,
                    shape: self.shape().to_vec(),
                });
                Ok(self.with_meta(Some(Arc::new(Meta::Leaf { node }))))
            }
        }
    }

    /// Whether this tensor is a leaf: it was not made by a recorded op (every tensor that
    /// does not require grad is a leaf, as in PyTorch).
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// assert!(w.is_leaf() && !w.exp().is_leaf());
    /// ```
    pub fn is_leaf(&self) -> bool {
        !matches!(self.meta().map(|m| &**m), Some(Meta::Interior(_)))
    }

    /// The name of the op that made this tensor, if it was recorded (PyTorch's `grad_fn`).
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// assert_eq!(w.exp().grad_fn(), Some("exp"));
    /// assert_eq!(w.grad_fn(), None);
    /// ```
    pub fn grad_fn(&self) -> Option<&'static str> {
        self.meta()?.grad_fn_name()
    }

    /// The gradient accumulated by backward passes: for a leaf that requires grad, or a
    /// non-leaf after [`DynTensor::retain_grad`]; `None` before the first pass. It has this
    /// tensor's shape and type.
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// assert!(w.grad().is_none());
    /// w.sum().backward();
    /// assert_eq!(w.grad().unwrap().to_vec(), vec![1.0, 1.0]);
    /// ```
    pub fn grad(&self) -> Option<DynTensor<E>> {
        let slot = self.meta()?.grad_slot()?;
        let g = lock(slot).as_ref()?.handle();
        g.into_typed::<E>("grad").ok()
    }

    /// Replaces the accumulated gradient (`None` clears it, as PyTorch's `grad = None`).
    /// Fails for a tensor without a gradient slot, or a gradient of another shape.
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// w.set_grad(Some(namedtensor::DynTensor::full(&[2], 0.5))).unwrap();
    /// (&w * 2.0).sum().backward();
    /// assert_eq!(w.grad().unwrap().to_vec(), vec![2.5, 2.5]); // accumulated
    /// ```
    pub fn set_grad(&self, grad: Option<DynTensor<E>>) -> Result<()> {
        let op = "set_grad";
        let Some(slot) = self.meta().and_then(|m| m.grad_slot()) else {
            return Err(Error::new(
                ErrorKind::Autograd,
                op,
                "this tensor has no gradient slot: mark it with requires_grad_(true), or call \
                 retain_grad() on a non-leaf",
            ));
        };
        if let Some(g) = &grad
            && g.shape() != self.shape()
        {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!(
                    "the gradient has shape {:?}, the tensor {:?}",
                    g.shape(),
                    self.shape()
                ),
            ));
        }
        *lock(slot) = grad.map(|g| AnyTensor::new(g.detach()));
        Ok(())
    }

    /// Clears the accumulated gradient (PyTorch's `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&self) {
        if let Some(slot) = self.meta().and_then(|m| m.grad_slot()) {
            *lock(slot) = None;
        }
    }

    /// Makes backward passes keep the gradient of this non-leaf tensor in
    /// [`DynTensor::grad`] (leaves keep theirs anyway). Panics where
    /// [`DynTensor::try_retain_grad`] fails.
    ///
    /// ```
    /// let x = namedtensor::DynTensor::from_vec(vec![1.0f64, 2.0], &[2]).requires_grad_(true);
    /// let y = &x * 3.0;
    /// y.retain_grad();
    /// (&y * &y).sum().backward();
    /// assert_eq!(y.grad().unwrap().to_vec(), vec![6.0, 12.0]); // 2y
    /// ```
    #[track_caller]
    pub fn retain_grad(&self) {
        or_panic(self.try_retain_grad())
    }

    /// [`DynTensor::retain_grad`], or an error for a tensor that does not require grad.
    pub fn try_retain_grad(&self) -> Result<()> {
        match self.meta() {
            None => Err(Error::new(
                ErrorKind::Autograd,
                "retain_grad",
                "this tensor does not require grad, so it has no gradient to retain",
            )),
            Some(m) => {
                m.retain();
                Ok(())
            }
        }
    }

    /// The same view of the same storage, outside the graph: it does not require grad, and
    /// writes through it are seen by this tensor (PyTorch's `detach`).
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// let d = w.detach();
    /// assert!(!d.requires_grad() && d.shares_storage(&w));
    /// ```
    pub fn detach(&self) -> Self {
        self.shallow_clone().with_meta(None)
    }

    /// Computes the gradient of this one-element tensor with respect to every leaf it was
    /// computed from, adding it into their [`DynTensor::grad`]. Panics where
    /// [`DynTensor::try_backward`] fails.
    #[track_caller]
    pub fn backward(&self) {
        or_panic(self.try_backward())
    }

    /// [`DynTensor::backward`], or an error for a tensor that does not require grad, has
    /// more than one element, or whose graph was already freed or modified.
    ///
    /// ```
    /// let w = namedtensor::DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    /// assert!(w.exp().try_backward().is_err()); // two elements: give a gradient
    /// ```
    pub fn try_backward(&self) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::new(
                ErrorKind::Autograd,
                "backward",
                format!(
                    "backward() without a gradient needs a one-element tensor, this one has \
                     shape {:?}; pass the gradient with backward_with",
                    self.shape()
                ),
            ));
        }
        let one = DynTensor::full_on(self.shape(), E::ONE, self.device())?;
        self.backward_with(&one, BackwardOptions::default())
    }

    /// The backward pass with `grad` as the gradient of this tensor (of its shape and type).
    ///
    /// ```
    /// use namedtensor::{DynTensor, autograd::BackwardOptions};
    /// let x = DynTensor::from_vec(vec![1.0f64, 2.0], &[2]).requires_grad_(true);
    /// let y = &x * &x;
    /// let g = DynTensor::from_vec(vec![1.0, 10.0], &[2]);
    /// y.backward_with(&g, BackwardOptions::retain_graph()).unwrap();
    /// y.backward_with(&g, BackwardOptions::default()).unwrap(); // the graph was kept
    /// assert_eq!(x.grad().unwrap().to_vec(), vec![4.0, 80.0]);
    /// ```
    pub fn backward_with(&self, grad: &DynTensor<E>, options: BackwardOptions) -> Result<()> {
        let node = root_node("backward", self, grad)?;
        engine::run(
            vec![(node, AnyTensor::new(grad.detach_unless(options)))],
            options,
            Sink::Accumulate,
        )?;
        Ok(())
    }

    fn detach_unless(&self, options: BackwardOptions) -> DynTensor<E> {
        if options.create_graph {
            self.shallow_clone()
        } else {
            self.detach()
        }
    }
}

/// The node a pass from `t` starts at, after checking `grad` against `t`.
fn root_node<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    grad: &DynTensor<E>,
) -> Result<Arc<Node>> {
    let Some(meta) = t.meta() else {
        return Err(Error::new(
            ErrorKind::Autograd,
            op,
            "this tensor does not require grad and has no grad_fn: no input it was computed \
             from requires grad (or it was computed under no_grad)",
        ));
    };
    if grad.shape() != t.shape() {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the gradient has shape {:?}, but the tensor has shape {:?}",
                grad.shape(),
                t.shape()
            ),
        ));
    }
    Ok(meta.node())
}

/// The gradients of `outputs` with respect to `inputs` (PyTorch's `torch.autograd.grad`),
/// without touching any tensor's [`DynTensor::grad`]. `grad_outputs` gives the gradient of
/// each output (`None`: ones, for one-element outputs). An input that the outputs do not
/// depend on gets `None`.
///
/// ```
/// use namedtensor::{DynTensor, autograd::{grad, BackwardOptions}};
/// let x = DynTensor::from_vec(vec![3.0f64], &[1]).requires_grad_(true);
/// let y = (&x * &x * &x).sum();                       // x³
/// let dy = grad(&[&y], None, &[&x], BackwardOptions::create_graph()).unwrap();
/// let dy = dy[0].as_ref().unwrap();                    // 3x² = 27, differentiable
/// assert_eq!(dy.to_vec(), vec![27.0]);
/// let d2 = grad(&[&dy.sum()], None, &[&x], BackwardOptions::default()).unwrap();
/// assert_eq!(d2[0].as_ref().unwrap().to_vec(), vec![18.0]); // 6x
/// assert!(x.grad().is_none());
/// ```
pub fn grad<E: Element>(
    outputs: &[&DynTensor<E>],
    grad_outputs: Option<&[&DynTensor<E>]>,
    inputs: &[&DynTensor<E>],
    options: BackwardOptions,
) -> Result<Vec<Option<DynTensor<E>>>> {
    let op = "grad";
    if let Some(g) = grad_outputs
        && g.len() != outputs.len()
    {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "{} outputs but {} gradients for them",
                outputs.len(),
                g.len()
            ),
        ));
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (i, out) in outputs.iter().enumerate() {
        let g = match grad_outputs {
            Some(gs) => gs[i].shallow_clone(),
            None if out.numel() == 1 => DynTensor::full_on(out.shape(), E::ONE, out.device())?,
            None => {
                return Err(Error::new(
                    ErrorKind::Autograd,
                    op,
                    format!(
                        "output {i} has shape {:?}: a gradient can be implied only for \
                         one-element outputs; pass grad_outputs",
                        out.shape()
                    ),
                ));
            }
        };
        let node = root_node(op, out, &g)?;
        roots.push((node, AnyTensor::new(g.detach_unless(options))));
    }
    let mut targets = Vec::with_capacity(inputs.len());
    for (i, x) in inputs.iter().enumerate() {
        match x.meta() {
            Some(m) => targets.push(m.node()),
            None => {
                return Err(Error::new(
                    ErrorKind::Autograd,
                    op,
                    format!("input {i} does not require grad"),
                ));
            }
        }
    }
    let found = engine::run(roots, options, Sink::Capture(&targets))?;
    found
        .into_iter()
        .map(|g| g.map(|g| g.into_typed::<E>(op)).transpose())
        .collect()
}
