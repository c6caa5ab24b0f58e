//! [`Module`]: how a model shows its parameters, by dotted name, to optimisers, the
//! parameter store and train/eval switching.
//!
//! A model is an ordinary Rust struct of layers; it implements one method, [`Module::visit`],
//! that hands each field to the [`Visitor`] under its name. Everything else (the parameter
//! list, `train`/`eval`, `zero_grad`, saving and loading) is provided on top of that walk.
//!
//! # Invariants
//! - A [`Parameter`]'s tensor is a handle to the layer's own tensor (same storage, same
//!   gradient slot): an optimiser writing it in place updates the layer, and the gradient a
//!   backward pass leaves on the layer's tensor is the parameter's.
//! - Names are the fields' names joined with `.` (`encoder.0.weight`), in visiting order,
//!   which is the order parameters are listed, optimised and saved in.

use crate::dtype::Element;
use crate::named::DimTuple;
use crate::named_tensor::Tensor;
use crate::tensor::DynTensor;
use std::sync::atomic::{AtomicBool, Ordering};

/// One parameter of a model: its dotted name, a handle to its tensor and its dim names.
#[derive(Debug)]
pub struct Parameter<E: Element> {
    /// The dotted path of fields that leads to it: `encoder.0.weight`.
    pub name: String,
    /// A handle sharing the layer's storage and gradient.
    pub tensor: DynTensor<E>,
    /// The names of its dims, as the layer declares them (`["Out", "In"]`).
    pub dims: &'static [&'static str],
}

/// Whether a layer behaves as in training (dropout active) or evaluation. Layers that
/// depend on it hold one and show it to [`Visitor::mode`]; a new flag is in training.
#[derive(Debug)]
pub struct TrainingFlag(AtomicBool);

impl Default for TrainingFlag {
    fn default() -> Self {
        TrainingFlag(AtomicBool::new(true))
    }
}

impl TrainingFlag {
    /// Whether the layer is in training.
    pub fn is_training(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Switches the layer to training (`true`) or evaluation.
    pub fn set(&self, training: bool) {
        self.0.store(training, Ordering::Relaxed)
    }
}

/// What a [`Visitor`] hands to the walk's callback.
enum Item<'a, E: Element> {
    Param(&'a str, &'a DynTensor<E>, &'static [&'static str]),
    Mode(&'a TrainingFlag),
}

/// Receives a module's parameters, sub-modules and training flags, each under a name.
pub struct Visitor<'a, E: Element> {
    prefix: String,
    sink: &'a mut dyn FnMut(Item<'_, E>),
}

impl<E: Element> Visitor<'_, E> {
    /// Shows the parameter `tensor` under `name`.
    pub fn param<S: DimTuple>(&mut self, name: &str, tensor: &Tensor<E, S>) {
        let full = self.join(name);
        (self.sink)(Item::Param(&full, tensor.as_dyn(), S::NAMES));
    }

    /// Shows an optional parameter (a layer built without bias shows nothing).
    pub fn param_opt<S: DimTuple>(&mut self, name: &str, tensor: &Option<Tensor<E, S>>) {
        if let Some(t) = tensor {
            self.param(name, t);
        }
    }

    /// Shows the parameters of the sub-module `module` under `name.`.
    pub fn module<M: Module<E> + ?Sized>(&mut self, name: &str, module: &M) {
        let inner = self.join(name);
        let outer = std::mem::replace(&mut self.prefix, inner);
        module.visit(self);
        self.prefix = outer;
    }

    /// Shows a training flag, so that [`Module::train`] and [`Module::eval`] reach it.
    pub fn mode(&mut self, flag: &TrainingFlag) {
        (self.sink)(Item::Mode(flag));
    }

    fn join(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }
}

/// A model or layer: something with parameters of element type `E`, named.
///
/// ```
/// use namedtensor::nn::{Linear, Module, Visitor};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Pixels, Hidden, Classes }
///
/// struct Mlp {
///     fc1: Linear<Pixels, Hidden>,
///     fc2: Linear<Hidden, Classes>,
/// }
/// impl Module<f32> for Mlp {
///     fn visit(&self, v: &mut Visitor<'_, f32>) {
///         v.module("fc1", &self.fc1);
///         v.module("fc2", &self.fc2);
///     }
/// }
/// let mlp = Mlp { fc1: Linear::new(64, 32), fc2: Linear::new(32, 10) };
/// let names: Vec<String> = mlp.parameters().into_iter().map(|p| p.name).collect();
/// assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
/// assert_eq!(mlp.num_parameters(), 64 * 32 + 32 + 32 * 10 + 10);
/// ```
pub trait Module<E: Element> {
    /// Shows every parameter, sub-module and training flag to `v`, each under its name.
    fn visit(&self, v: &mut Visitor<'_, E>);

    /// Every parameter, in visiting order, as handles to the module's own tensors.
    fn parameters(&self) -> Vec<Parameter<E>> {
        let mut out = Vec::new();
        walk(self, &mut |item| {
            if let Item::Param(name, t, dims) = item {
                out.push(Parameter {
                    name: name.to_string(),
                    tensor: t.shallow_clone(),
                    dims,
                });
            }
        });
        out
    }

    /// The number of parameter elements.
    fn num_parameters(&self) -> usize {
        self.parameters().iter().map(|p| p.tensor.numel()).sum()
    }

    /// Clears every parameter's gradient (PyTorch's `zero_grad(set_to_none=True)`).
    fn zero_grad(&self) {
        walk(self, &mut |item| {
            if let Item::Param(_, t, _) = item {
                t.zero_grad();
            }
        });
    }

    /// Switches every layer to training (dropout active).
    fn train(&self) {
        set_mode(self, true)
    }

    /// Switches every layer to evaluation (dropout off).
    fn eval(&self) {
        set_mode(self, false)
    }
}

fn walk<E: Element, M: Module<E> + ?Sized>(module: &M, sink: &mut dyn FnMut(Item<'_, E>)) {
    let mut v = Visitor {
        prefix: String::new(),
        sink,
    };
    module.visit(&mut v);
}

fn set_mode<E: Element, M: Module<E> + ?Sized>(module: &M, training: bool) {
    walk(module, &mut |item| {
        if let Item::Mode(flag) = item {
            flag.set(training);
        }
    });
}

/// A list of modules, named by position (`0`, `1`, …) as in PyTorch's `ModuleList`.
impl<E: Element, M: Module<E>> Module<E> for Vec<M> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        for (i, m) in self.iter().enumerate() {
            v.module(&i.to_string(), m);
        }
    }
}

impl<E: Element, M: Module<E>, const N: usize> Module<E> for [M; N] {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        for (i, m) in self.iter().enumerate() {
            v.module(&i.to_string(), m);
        }
    }
}

/// An optional sub-module shows its parameters when present.
impl<E: Element, M: Module<E>> Module<E> for Option<M> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        if let Some(m) = self {
            m.visit(v);
        }
    }
}
