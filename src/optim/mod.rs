//! Optimisers with PyTorch's update rules: [`Sgd`] (momentum, Nesterov, weight decay) and
//! [`Adam`] (with AdamW's decoupled weight decay and AMSGrad), learning-rate schedules
//! ([`StepLr`], [`CosineAnnealingLr`], [`LinearLr`]) and [`clip_grad_norm_`].
//!
//! An optimiser holds handles to a module's parameters ([`Module::parameters`]); `step`
//! updates them in place, with gradient recording off, from the gradients the last
//! backward pass left, and skips parameters without one. State (momentum buffers, moment
//! estimates) is created at a parameter's first update, as in PyTorch.
//!
//! ```
//! use namedtensor::nn::{loss, Linear, Module};
//! use namedtensor::optim::{Optimizer, Sgd, SgdConfig};
//! use namedtensor::{dims, Tensor};
//! dims! { Batch, In, Out }
//! let model = Linear::<In, Out, f64>::new(3, 1);
//! let mut opt = Sgd::new(model.parameters(), SgdConfig { lr: 0.1, ..SgdConfig::default() });
//! let x = Tensor::<f64, (Batch, In)>::ones([4, 3]);
//! let y = Tensor::<f64, (Batch, Out)>::zeros([4, 1]);
//! let first = loss::mse_loss(&model.forward(&x), &y, loss::Reduction::Mean);
//! first.backward();
//! opt.step().unwrap();
//! opt.zero_grad();
//! let second = loss::mse_loss(&model.forward(&x), &y, loss::Reduction::Mean);
//! assert!(second.item() < first.item());
//! ```
//!
//! [`Module::parameters`]: crate::nn::Module::parameters

mod adam;
mod checkpoint;
mod clip;
mod schedule;
mod sgd;

pub use adam::{Adam, AdamConfig};
pub use checkpoint::{
    StateReader, StateWriter, TrainingState, load_checkpoint, load_training_state, save_checkpoint,
    save_training_state,
};
pub use clip::clip_grad_norm_;
pub use schedule::{CosineAnnealingLr, LinearLr, LrScheduler, StepLr};
pub use sgd::{Sgd, SgdConfig};

use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::nn::Parameter;
use crate::tensor::DynTensor;

/// What every optimiser does. Its state for a checkpoint (per-parameter buffers and step
/// counts, the learning rate) is its [`TrainingState`].
pub trait Optimizer: TrainingState {
    /// Updates every parameter that has a gradient, in place.
    fn step(&mut self) -> Result<()>;
    /// Clears every parameter's gradient.
    fn zero_grad(&self);
    /// The current learning rate.
    fn lr(&self) -> f64;
    /// Sets the learning rate (what schedules do); an error unless it is finite and ≥ 0 (0,
    /// as in PyTorch, is where a cosine schedule with `eta_min = 0` ends).
    fn set_lr(&mut self, lr: f64) -> Result<()>;
    /// Multiplies every parameter's gradient by `factor` in place; whether all of them are
    /// finite afterwards (what [`GradScaler`](crate::amp::GradScaler) needs).
    fn unscale_grads(&self, factor: f64) -> Result<bool>;
}

/// [`Optimizer::unscale_grads`] over `params`.
fn unscale_grads<E: Float>(params: &[Parameter<E>], factor: f64) -> Result<bool> {
    crate::autograd::no_grad(|| {
        let mut finite = true;
        for g in params.iter().filter_map(|p| p.tensor.grad()) {
            g.try_mul_scalar_(factor)?;
            finite &= g.isfinite().all();
        }
        Ok(finite)
    })
}

/// Moves a parameter's optimiser state to the parameter's device, in place, at each step:
/// after [`Module::to_device`](crate::nn::Module::to_device) (or a checkpoint loaded on the
/// CPU for parameters on a GPU) the state follows its parameter, so the optimiser stays right.
fn follow_param<E: Float>(param: &DynTensor<E>, state: &[&DynTensor<E>]) -> Result<()> {
    let device = param.device();
    state
        .iter()
        .try_for_each(|s| s.move_storage_to("Optimizer::step", device))
}

/// One parameter's saved state: its buffers, in the order asked for, and its step count.
type ParamState<E> = (Vec<DynTensor<E>>, Option<u64>);

/// The state of parameter `name` under `from`, for each buffer in `buffers` (shaped like
/// `like`) and its step count if `counted`; `None` when the checkpoint has none of it (a
/// parameter never stepped). Half of a state is an error naming the missing entry.
fn read_param_state<E: Float>(
    from: &StateReader<'_>,
    name: &str,
    like: &DynTensor<E>,
    buffers: &[&str],
    counted: bool,
) -> Result<Option<ParamState<E>>> {
    let key = |b: &str| format!("state.{name}.{b}");
    let any = buffers.iter().any(|b| from.has(&key(b))) || (counted && from.has(&key("step")));
    if !any {
        return Ok(None);
    }
    let tensors = buffers
        .iter()
        .map(|b| from.tensor(&key(b), like))
        .collect::<Result<Vec<_>>>()?;
    let step = if counted {
        Some(from.count(&key("step"))?)
    } else {
        None
    };
    Ok(Some((tensors, step)))
}

/// An error unless every entry of `from` under `state.` belongs to one of `params` and is
/// one of `known` buffers: state for a parameter the optimiser does not hold, or written by
/// another optimiser, would otherwise be dropped silently.
fn check_state_names<E: Float>(
    from: &StateReader<'_>,
    op: &str,
    params: &[Parameter<E>],
    known: &[&str],
) -> Result<()> {
    for entry in from.names_under("state.") {
        let ok = entry.rsplit_once('.').is_some_and(|(param, buffer)| {
            known.contains(&buffer) && params.iter().any(|p| p.name == param)
        });
        if !ok {
            return Err(from.error(
                ErrorKind::InvalidArgument,
                format!("the checkpoint's `optimizer.state.{entry}` is no state of this {op}"),
            ));
        }
    }
    Ok(())
}

/// Checks that `value` (the option `what` of optimiser `op`) passes `ok`; the error says
/// `what = value rule`, so `rule` states what the value must be (never what it is: a NaN is
/// neither negative nor positive).
fn check(op: &'static str, what: &str, value: f64, ok: bool, rule: &str) -> Result<()> {
    if ok {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidArgument,
        op,
        format!("{what} = {value} {rule}"),
    ))
}

/// Checks a factor such as momentum or weight decay: finite (an infinite one makes the
/// parameters infinite or NaN at the first step) and at least 0.
fn check_non_negative(op: &'static str, what: &str, value: f64) -> Result<()> {
    check(
        op,
        what,
        value,
        value.is_finite() && value >= 0.0,
        "must be a finite number ≥ 0",
    )
}

fn check_lr(op: &'static str, lr: f64) -> Result<()> {
    check(
        op,
        "the learning rate lr",
        lr,
        lr >= 0.0 && lr.is_finite(),
        "must be a finite number ≥ 0",
    )
}

/// The parameters an optimiser may update: float tensors that require grad.
fn check_params<E: Float>(op: &'static str, params: &[Parameter<E>]) -> Result<()> {
    match params.iter().find(|p| !p.tensor.requires_grad()) {
        Some(p) => Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "the parameter `{}` does not require grad, so it would never be updated",
                p.name
            ),
        )),
        None => Ok(()),
    }
}
