//! [`Module`]: how a model shows its parameters, by dotted name, to optimisers, the
//! parameter store and train/eval switching.
//!
//! A model is an ordinary Rust struct of layers; it implements one method, [`Module::visit`],
//! that hands each field to the [`Visitor`] under its name. Everything else (the parameter
//! and buffer lists, `train`/`eval`, `zero_grad`, moving, saving and loading) is provided on
//! top of that walk.
//!
//! # Invariants
//! - A [`Parameter`]'s tensor is a handle to the layer's own tensor (same storage, same
//!   gradient slot): an optimiser writing it in place updates the layer, and the gradient a
//!   backward pass leaves on the layer's tensor is the parameter's.
//! - Names are the fields' names joined with `.` (`encoder.0.weight`), in visiting order,
//!   which is the order parameters are listed, optimised and saved in.

use crate::backend::device::Device;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
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

/// One buffer of a model: state a layer keeps besides its parameters and does not train
/// (`BatchNorm`'s running statistics), by dotted name. Buffers move with
/// [`Module::to_device`], are saved and loaded with the parameters (PyTorch's `state_dict`)
/// and copied by [`Module::copy_state_from`].
#[derive(Debug)]
pub struct Buffer<E: Element> {
    /// The dotted path of fields that leads to it: `norm.running_mean`.
    pub name: String,
    /// A handle sharing the layer's storage.
    pub tensor: BufferTensor<E>,
    /// The names of its dims, as the layer declares them.
    pub dims: &'static [&'static str],
}

/// A buffer's tensor: of the parameters' element type (running statistics), or a count
/// (`num_batches_tracked`, an `i64` as in PyTorch, whatever the parameters' type).
#[derive(Debug)]
pub enum BufferTensor<E: Element> {
    /// Of the parameters' element type.
    Float(DynTensor<E>),
    /// A count.
    Count(DynTensor<i64>),
}

impl<E: Element> BufferTensor<E> {
    /// Its sizes.
    pub fn shape(&self) -> &[usize] {
        match self {
            BufferTensor::Float(t) => t.shape(),
            BufferTensor::Count(t) => t.shape(),
        }
    }

    /// Its device.
    pub fn device(&self) -> Device {
        match self {
            BufferTensor::Float(t) => t.device(),
            BufferTensor::Count(t) => t.device(),
        }
    }

    fn move_storage_to(&self, op: &'static str, device: Device) -> Result<()> {
        match self {
            BufferTensor::Float(t) => t.move_storage_to(op, device),
            BufferTensor::Count(t) => t.move_storage_to(op, device),
        }
    }
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
    Buffer(&'a str, BufferTensor<E>, &'static [&'static str]),
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

    /// Shows the buffer `tensor` under `name`: state that is saved and moved with the
    /// parameters but not trained.
    pub fn buffer<S: DimTuple>(&mut self, name: &str, tensor: &Tensor<E, S>) {
        let full = self.join(name);
        let t = BufferTensor::Float(tensor.as_dyn().shallow_clone());
        (self.sink)(Item::Buffer(&full, t, S::NAMES));
    }

    /// Shows the counting buffer `tensor` (0-d, `i64`) under `name`.
    pub fn count_buffer(&mut self, name: &str, tensor: &Tensor<i64, ()>) {
        let full = self.join(name);
        let t = BufferTensor::Count(tensor.as_dyn().shallow_clone());
        (self.sink)(Item::Buffer(&full, t, &[]));
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
    /// Shows every parameter, buffer, sub-module and training flag to `v`, each under its
    /// name.
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

    /// Every buffer, in visiting order, as handles to the module's own tensors.
    fn buffers(&self) -> Vec<Buffer<E>> {
        let mut out = Vec::new();
        walk(self, &mut |item| {
            if let Item::Buffer(name, tensor, dims) = item {
                out.push(Buffer {
                    name: name.to_string(),
                    tensor,
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

    /// Moves every parameter, its gradient and every buffer to `device`, in place (PyTorch's
    /// `module.to(device)`): the layers keep their tensors, which now live on `device`, and
    /// so does every other handle to them.
    ///
    /// An optimiser built before the move stays right: it holds handles to the same
    /// tensors, and at its next step it moves its own state (Adam's moments, SGD's momentum)
    /// to each parameter's device. A graph recorded before the move cannot run backward
    /// (moving is a write, which the graph's version check sees). Tensors that share storage
    /// with a parameter (a view, a tied weight) move with it.
    ///
    /// Fails with [`ErrorKind::Device`](crate::ErrorKind) where `device` is unavailable, and
    /// then, as on any failure part-way, leaves every parameter where it was.
    ///
    /// ```
    /// use namedtensor::nn::{Linear, Module};
    /// use namedtensor::{Device, dims};
    /// dims! { In, Out }
    /// let layer = Linear::<In, Out>::new(3, 2);
    /// let weight = layer.weight.as_dyn().shallow_clone();
    /// if namedtensor::cuda_is_available() {
    ///     layer.to_device(Device::Cuda(0)).unwrap();
    ///     assert_eq!(weight.device(), Device::Cuda(0)); // the same tensor, moved
    ///     layer.cpu().unwrap();
    /// } else {
    ///     assert!(layer.to_device(Device::Cuda(0)).is_err());
    ///     assert_eq!(weight.device(), Device::Cpu);
    /// }
    /// ```
    fn to_device(&self, device: Device) -> Result<()> {
        const OP: &str = "Module::to_device";
        device.check_available()?;
        let mut tensors = Vec::new();
        for p in self.parameters() {
            tensors.extend(p.tensor.grad().map(BufferTensor::Float));
            tensors.push(BufferTensor::Float(p.tensor));
        }
        tensors.extend(self.buffers().into_iter().map(|b| b.tensor));
        let mut moved: Vec<(&BufferTensor<E>, Device)> = Vec::new();
        for t in &tensors {
            let from = t.device();
            if let Err(e) = t.move_storage_to(OP, device) {
                for (t, back) in moved.iter().rev() {
                    // Best effort: the way back is the way the elements came.
                    let _ = t.move_storage_to(OP, *back);
                }
                return Err(e);
            }
            moved.push((t, from));
        }
        Ok(())
    }

    /// [`Module::to_device`] with `Device::Cuda(ordinal)` (PyTorch's `module.cuda()`).
    fn cuda(&self, ordinal: usize) -> Result<()> {
        self.to_device(Device::Cuda(ordinal))
    }

    /// [`Module::to_device`] with `Device::Cpu` (PyTorch's `module.cpu()`).
    fn cpu(&self) -> Result<()> {
        self.to_device(Device::Cpu)
    }

    /// Copies every parameter and buffer of `source` into this module's one of the same
    /// name, converting the elements to `E` and moving them to this module's device
    /// (PyTorch's `load_state_dict(source.state_dict())`).
    ///
    /// A model's element type is part of its type (`Linear<In, Out, bf16>`), so a model is
    /// cast to another dtype by building it in that dtype and copying into it, where PyTorch
    /// casts in place with `module.to(dtype)`.
    ///
    /// Fails, writing nothing, unless both modules have the same parameter and buffer names
    /// with the same dims and sizes.
    ///
    /// ```
    /// use namedtensor::nn::{Linear, Module};
    /// use namedtensor::{bf16, dims};
    /// dims! { In, Out }
    /// let full = Linear::<In, Out>::seeded(3, 2, 0);
    /// let half = Linear::<In, Out, bf16>::seeded(3, 2, 1);
    /// half.copy_state_from(&full).unwrap();
    /// assert_eq!(half.weight.as_dyn().to_dtype::<f32>().to_vec(),
    ///            full.weight.as_dyn().to_dtype::<bf16>().to_dtype::<f32>().to_vec());
    /// assert!(half.copy_state_from(&Linear::<In, Out>::seeded(4, 2, 0)).is_err());
    /// ```
    fn copy_state_from<F: Element, M: Module<F> + ?Sized>(&self, source: &M) -> Result<()>
    where
        Self: Sized,
    {
        const OP: &str = "Module::copy_state_from";
        let error = |what: String| Err(Error::new(ErrorKind::InvalidArgument, OP, what));
        let (into, from) = (entries(self), entries(source));
        if let Some(q) = from.iter().find(|q| !into.iter().any(|p| p.name == q.name)) {
            return error(format!(
                "the source's {} `{}` has no {0} of that name to go to",
                q.kind(),
                q.name
            ));
        }
        let mut pairs = Vec::with_capacity(into.len());
        for p in &into {
            let Some(q) = from.iter().find(|q| q.name == p.name) else {
                return error(format!("the source has no {} `{}`", p.kind(), p.name));
            };
            if p.kind() != q.kind() || p.dims != q.dims || p.tensor.shape() != q.tensor.shape() {
                return error(format!(
                    "the {} `{}` is {} here and the source's {} is {}",
                    p.kind(),
                    p.name,
                    described(p.dims, p.tensor.shape()),
                    q.kind(),
                    described(q.dims, q.tensor.shape())
                ));
            }
            pairs.push((p, q));
        }
        crate::autograd::no_grad(|| {
            for (p, q) in pairs {
                match (&p.tensor, &q.tensor) {
                    (BufferTensor::Float(to), BufferTensor::Float(from)) => {
                        to.try_copy_(&from.detach().to_device(to.device())?)?;
                    }
                    (BufferTensor::Count(to), BufferTensor::Count(from)) => {
                        to.try_copy_(&from.to_device(to.device())?)?;
                    }
                    _ => unreachable!("the kinds were checked to agree"),
                }
            }
            Ok(())
        })
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

/// `(Out=2, In=3)`: dims and sizes side by side, as errors name them.
fn described(dims: &[&str], sizes: &[usize]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .zip(sizes)
        .map(|(d, n)| format!("{d}={n}"))
        .collect();
    format!("({})", parts.join(", "))
}

/// A parameter or buffer, for the walks that treat both alike.
struct Entry<E: Element> {
    name: String,
    tensor: BufferTensor<E>,
    dims: &'static [&'static str],
    is_param: bool,
}

impl<E: Element> Entry<E> {
    /// What an error calls it.
    fn kind(&self) -> &'static str {
        match (&self.tensor, self.is_param) {
            (_, true) => "parameter",
            (BufferTensor::Float(_), false) => "buffer",
            (BufferTensor::Count(_), false) => "count buffer",
        }
    }
}

/// Every parameter, then every buffer, of `module`.
fn entries<E: Element, M: Module<E> + ?Sized>(module: &M) -> Vec<Entry<E>> {
    let mut out = Vec::new();
    walk(module, &mut |item| match item {
        Item::Param(name, t, dims) => out.push(Entry {
            name: name.to_string(),
            tensor: BufferTensor::Float(t.shallow_clone()),
            dims,
            is_param: true,
        }),
        Item::Buffer(name, tensor, dims) => out.push(Entry {
            name: name.to_string(),
            tensor,
            dims,
            is_param: false,
        }),
        Item::Mode(_) => {}
    });
    out
}
