//! [`Sgd`]: stochastic gradient descent with PyTorch's momentum, dampening, Nesterov and
//! weight-decay rules.

use super::{
    Optimizer, StateReader, StateWriter, TrainingState, check, check_lr, check_non_negative,
    check_params, check_state_names, follow_param, read_param_state,
};
use crate::autograd::no_grad;
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::nn::Parameter;
use crate::tensor::DynTensor;

/// [`Sgd`]'s options, PyTorch's names and defaults (`lr` has none there; 0.01 here).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdConfig {
    /// The learning rate, finite and ≥ 0.
    pub lr: f64,
    /// The momentum factor, finite and ≥ 0.
    pub momentum: f64,
    /// Dampening of the momentum, in `[0, 1]`.
    pub dampening: f64,
    /// L2 penalty added to the gradient, finite and ≥ 0.
    pub weight_decay: f64,
    /// Nesterov momentum (needs momentum > 0 and no dampening).
    pub nesterov: bool,
}

impl Default for SgdConfig {
    fn default() -> Self {
        SgdConfig {
            lr: 0.01,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        }
    }
}

/// Per parameter: `d = g + wd·p`; with momentum `b = d` at the first step, then
/// `b = μ·b + (1 − dampening)·d`, and `d = d + μ·b` (Nesterov) or `d = b`; `p -= lr·d`.
pub struct Sgd<E: Float> {
    params: Vec<Parameter<E>>,
    config: SgdConfig,
    buffers: Vec<Option<DynTensor<E>>>,
}

impl<E: Float> Sgd<E> {
    /// An optimiser over `params`. Panics where [`Sgd::try_new`] fails.
    #[track_caller]
    pub fn new(params: Vec<Parameter<E>>, config: SgdConfig) -> Self {
        crate::tensor::or_panic(Sgd::try_new(params, config))
    }

    /// [`Sgd::new`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the option and its value for a learning rate
    /// that is not a finite number > 0, a momentum or weight decay that is not a finite
    /// number ≥ 0, a dampening outside `[0, 1]`, Nesterov momentum without momentum or with
    /// dampening; and naming the parameter, for one that does not require grad.
    pub fn try_new(params: Vec<Parameter<E>>, config: SgdConfig) -> Result<Self> {
        const OP: &str = "SGD";
        check_lr(OP, config.lr)?;
        let c = &config;
        check_non_negative(OP, "momentum", c.momentum)?;
        check(
            OP,
            "dampening",
            c.dampening,
            (0.0..=1.0).contains(&c.dampening),
            "must be in [0, 1]",
        )?;
        check_non_negative(OP, "weight_decay", c.weight_decay)?;
        if c.nesterov && !(c.momentum > 0.0 && c.dampening == 0.0) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                OP,
                format!(
                    "Nesterov momentum needs momentum > 0 and dampening = 0, got momentum = {} \
                     and dampening = {}",
                    c.momentum, c.dampening
                ),
            ));
        }
        check_params(OP, &params)?;
        let buffers = params.iter().map(|_| None).collect();
        Ok(Sgd {
            params,
            config,
            buffers,
        })
    }

    /// The options.
    pub fn config(&self) -> &SgdConfig {
        &self.config
    }
}

impl<E: Float> Optimizer for Sgd<E> {
    fn step(&mut self) -> Result<()> {
        let c = self.config;
        no_grad(|| {
            for (p, buf) in self.params.iter().zip(&mut self.buffers) {
                let Some(g) = p.tensor.grad() else { continue };
                let p = &p.tensor;
                let mut d = if c.weight_decay != 0.0 {
                    g.try_add(&p.try_mul_scalar(c.weight_decay)?)?
                } else {
                    g
                };
                if c.momentum != 0.0 {
                    let b = match buf {
                        Some(b) => {
                            follow_param(p, &[b])?;
                            b.try_mul_scalar_(c.momentum)?
                                .try_add_(&d.try_mul_scalar(1.0 - c.dampening)?)?;
                            b
                        }
                        None => buf.insert(d.clone()),
                    };
                    d = if c.nesterov {
                        d.try_add(&b.try_mul_scalar(c.momentum)?)?
                    } else {
                        b.shallow_clone()
                    };
                }
                p.try_sub_(&d.try_mul_scalar(c.lr)?)?;
            }
            Ok(())
        })
    }

    fn zero_grad(&self) {
        self.params.iter().for_each(|p| p.tensor.zero_grad());
    }

    fn unscale_grads(&self, factor: f64) -> Result<bool> {
        super::unscale_grads(&self.params, factor)
    }

    fn lr(&self) -> f64 {
        self.config.lr
    }

    fn set_lr(&mut self, lr: f64) -> Result<()> {
        check_lr("SGD", lr)?;
        self.config.lr = lr;
        Ok(())
    }
}

impl<E: Float> TrainingState for Sgd<E> {
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.number("param_groups.lr", self.config.lr);
        for (p, b) in self.params.iter().zip(&self.buffers) {
            if let Some(b) = b {
                out.tensor(&format!("state.{}.momentum_buffer", p.name), b);
            }
        }
        Ok(())
    }

    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()> {
        let lr = from.number("param_groups.lr")?;
        check_lr("SGD", lr).map_err(|e| from.error(e.kind(), e.to_string()))?;
        check_state_names(from, "SGD", &self.params, &["momentum_buffer"])?;
        let buffers = self
            .params
            .iter()
            .map(|p| {
                let read = read_param_state(from, &p.name, &p.tensor, &["momentum_buffer"], false)?;
                Ok(read.map(|(mut t, _)| t.remove(0)))
            })
            .collect::<Result<Vec<_>>>()?;
        if apply {
            self.config.lr = lr;
            self.buffers = buffers;
        }
        Ok(())
    }
}
