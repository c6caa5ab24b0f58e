//! [`Adam`] and AdamW (decoupled weight decay) with PyTorch's update rule, AMSGrad
//! included.

use super::{
    Optimizer, StateReader, StateWriter, TrainingState, check, check_lr, check_non_negative,
    check_params, check_state_names, follow_param, read_param_state,
};
use crate::autograd::no_grad;
use crate::backend::op::AdamStep;
use crate::dtype::Float;
use crate::error::{ErrorKind, Result};
use crate::nn::Parameter;
use crate::storage::dispatch;
use crate::tensor::DynTensor;

/// [`Adam`]'s options, PyTorch's names and defaults. [`AdamConfig::adamw`] gives AdamW's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    /// The learning rate, finite and ≥ 0 (1e-3).
    pub lr: f64,
    /// The decay rates of the first and second moment estimates, each in `[0, 1)`.
    pub betas: (f64, f64),
    /// Added to the denominator, finite and ≥ 0 (1e-8).
    pub eps: f64,
    /// Weight decay, finite and ≥ 0: added to the gradient as an L2 penalty (Adam), or
    /// applied to the parameter directly when `decoupled_weight_decay` (AdamW).
    pub weight_decay: f64,
    /// AdamW: `p *= 1 − lr·wd` before the update instead of `g += wd·p`.
    pub decoupled_weight_decay: bool,
    /// Divide by the running maximum of the second moment (AMSGrad).
    pub amsgrad: bool,
}

impl Default for AdamConfig {
    /// `torch.optim.Adam`'s defaults.
    fn default() -> Self {
        AdamConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled_weight_decay: false,
            amsgrad: false,
        }
    }
}

impl AdamConfig {
    /// `torch.optim.AdamW`'s defaults: decoupled weight decay 0.01.
    ///
    /// ```
    /// let c = namedtensor::optim::AdamConfig::adamw();
    /// assert!(c.decoupled_weight_decay && c.weight_decay == 0.01);
    /// ```
    pub fn adamw() -> Self {
        AdamConfig {
            weight_decay: 1e-2,
            decoupled_weight_decay: true,
            ..AdamConfig::default()
        }
    }
}

/// One parameter's state.
struct Moments<E: Float> {
    exp_avg: DynTensor<E>,
    exp_avg_sq: DynTensor<E>,
    max_exp_avg_sq: Option<DynTensor<E>>,
    step: i32,
}

/// Adam (Kingma & Ba) as PyTorch computes it, per parameter at step `t`:
/// `m = m + (1 − β₁)(g − m)`, `v = β₂·v + (1 − β₂)·g²`, and
/// `p -= lr / (1 − β₁ᵗ) · m / (sqrt(v) / sqrt(1 − β₂ᵗ) + eps)`, after weight decay.
pub struct Adam<E: Float> {
    params: Vec<Parameter<E>>,
    config: AdamConfig,
    state: Vec<Option<Moments<E>>>,
}

impl<E: Float> Adam<E> {
    /// An optimiser over `params`. Panics where [`Adam::try_new`] fails.
    #[track_caller]
    pub fn new(params: Vec<Parameter<E>>, config: AdamConfig) -> Self {
        crate::tensor::or_panic(Adam::try_new(params, config))
    }

    /// [`Adam::new`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind`](crate::ErrorKind)`::InvalidArgument` naming the option and its value
    /// for a learning rate that is not a finite number ≥ 0, a beta outside `[0, 1)`, an `eps`
    /// or weight decay that is not a finite number ≥ 0; and naming the parameter, for one
    /// that does not require grad.
    pub fn try_new(params: Vec<Parameter<E>>, config: AdamConfig) -> Result<Self> {
        let op = op_name(&config);
        check_lr(op, config.lr)?;
        let (b1, b2) = config.betas;
        check(
            op,
            "beta1",
            b1,
            (0.0..1.0).contains(&b1),
            "must be in [0, 1)",
        )?;
        check(
            op,
            "beta2",
            b2,
            (0.0..1.0).contains(&b2),
            "must be in [0, 1)",
        )?;
        check_non_negative(op, "eps", config.eps)?;
        check_non_negative(op, "weight_decay", config.weight_decay)?;
        check_params(op, &params)?;
        let state = params.iter().map(|_| None).collect();
        Ok(Adam {
            params,
            config,
            state,
        })
    }

    /// The options.
    pub fn config(&self) -> &AdamConfig {
        &self.config
    }
}

/// Zeros of `p`'s shape on `p`'s device.
pub(super) fn zeros_on<E: Float>(p: &DynTensor<E>) -> Result<DynTensor<E>> {
    DynTensor::<E>::zeros(p.shape()).to_device(p.device())
}

/// The step as one pass of the backend (`Backend::adam_`) where the parameter and its
/// gradient are contiguous and the state buffers are whole contiguous storages of their own
/// (as a module's parameters, their gradients and the state this optimiser creates are):
/// `true` when done, `false` for the op-by-op update, which does the same arithmetic (bit for
/// bit in `f32` and `f64`; `f16`/`bf16` round once per stored value here, at each op there).
fn fused_step<E: Float>(
    op: &'static str,
    p: &DynTensor<E>,
    g: &DynTensor<E>,
    s: &Moments<E>,
    step: &AdamStep,
) -> Result<bool> {
    let mut state = vec![&s.exp_avg, &s.exp_avg_sq];
    state.extend(&s.max_exp_avg_sq);
    let whole = |t: &DynTensor<E>| {
        t.is_contiguous() && t.layout().offset() == 0 && t.storage().len() == p.numel()
    };
    let mut storages: Vec<usize> = state.iter().map(|t| t.storage().lock_order()).collect();
    storages.extend([p.storage().lock_order(), g.storage().lock_order()]);
    storages.sort_unstable();
    let distinct = storages.windows(2).all(|w| w[0] != w[1]);
    if !p.is_contiguous() || !g.is_contiguous() || g.device() != p.device() || !distinct {
        return Ok(false);
    }
    if !state.iter().all(|t| whole(t)) || g.shape() != p.shape() {
        return Ok(false);
    }
    let state: Vec<_> = state.iter().map(|t| t.storage()).collect();
    dispatch::adam_(
        op,
        p.storage(),
        p.layout(),
        g.storage(),
        g.layout(),
        &state,
        step,
    )?;
    Ok(true)
}

fn op_name(c: &AdamConfig) -> &'static str {
    if c.decoupled_weight_decay {
        "AdamW"
    } else {
        "Adam"
    }
}

impl<E: Float> Optimizer for Adam<E> {
    fn step(&mut self) -> Result<()> {
        let c = self.config;
        let (b1, b2) = c.betas;
        no_grad(|| {
            for (p, state) in self.params.iter().zip(&mut self.state) {
                let Some(g) = p.tensor.grad() else { continue };
                let p = &p.tensor;
                let s = match state {
                    Some(s) => s,
                    None => state.insert(Moments {
                        exp_avg: zeros_on(p)?,
                        exp_avg_sq: zeros_on(p)?,
                        max_exp_avg_sq: if c.amsgrad { Some(zeros_on(p)?) } else { None },
                        step: 0,
                    }),
                };
                let mut buffers = vec![&s.exp_avg, &s.exp_avg_sq];
                buffers.extend(&s.max_exp_avg_sq);
                follow_param(p, &buffers)?;
                s.step += 1;
                let correction1 = 1.0 - b1.powi(s.step);
                let correction2_sqrt = (1.0 - b2.powi(s.step)).sqrt();
                let decoupled = c.decoupled_weight_decay;
                let fused = AdamStep {
                    decay: if decoupled {
                        1.0 - c.lr * c.weight_decay
                    } else {
                        1.0
                    },
                    l2: if decoupled { 0.0 } else { c.weight_decay },
                    beta1: b1,
                    beta2: b2,
                    step_size: c.lr / correction1,
                    correction2_sqrt,
                    eps: c.eps,
                    amsgrad: c.amsgrad,
                };
                if fused_step(op_name(&c), p, &g, s, &fused)? {
                    continue;
                }
                let g = if c.weight_decay == 0.0 {
                    g
                } else if c.decoupled_weight_decay {
                    p.try_mul_scalar_(1.0 - c.lr * c.weight_decay)?;
                    g
                } else {
                    g.try_add(&p.try_mul_scalar(c.weight_decay)?)?
                };
                // m = m + (1 − β₁)(g − m): PyTorch's lerp for a weight below 1/2.
                s.exp_avg
                    .try_add_(&g.try_sub(&s.exp_avg)?.try_mul_scalar(1.0 - b1)?)?;
                s.exp_avg_sq
                    .try_mul_scalar_(b2)?
                    .try_add_(&g.try_mul(&g)?.try_mul_scalar(1.0 - b2)?)?;
                let second = match &s.max_exp_avg_sq {
                    Some(max) => {
                        max.try_maximum_(&s.exp_avg_sq)?;
                        max
                    }
                    None => &s.exp_avg_sq,
                };
                let denom = second
                    .sqrt()
                    .try_div_scalar(correction2_sqrt)?
                    .try_add_scalar(c.eps)?;
                let step_size = c.lr / correction1;
                p.try_add_(&s.exp_avg.try_mul_scalar(-step_size)?.try_div(&denom)?)?;
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
        check_lr(op_name(&self.config), lr)?;
        self.config.lr = lr;
        Ok(())
    }
}

impl<E: Float> TrainingState for Adam<E> {
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.number("param_groups.lr", self.config.lr);
        for (p, s) in self.params.iter().zip(&self.state) {
            let Some(s) = s else { continue };
            let key = |b: &str| format!("state.{}.{b}", p.name);
            out.count(&key("step"), u64::try_from(s.step).unwrap_or(0));
            out.tensor(&key("exp_avg"), &s.exp_avg);
            out.tensor(&key("exp_avg_sq"), &s.exp_avg_sq);
            if let Some(max) = &s.max_exp_avg_sq {
                out.tensor(&key("max_exp_avg_sq"), max);
            }
        }
        Ok(())
    }

    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()> {
        let op = op_name(&self.config);
        let lr = from.number("param_groups.lr")?;
        check_lr(op, lr).map_err(|e| from.error(e.kind(), e.to_string()))?;
        let buffers: &[&str] = if self.config.amsgrad {
            &["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
        } else {
            &["exp_avg", "exp_avg_sq"]
        };
        check_state_names(from, op, &self.params, &[buffers, &["step"]].concat())?;
        let mut state = Vec::with_capacity(self.params.len());
        for p in &self.params {
            let read = read_param_state(from, &p.name, &p.tensor, buffers, true)?;
            state.push(match read {
                None => None,
                Some((mut t, step)) => {
                    let step = i32::try_from(step.unwrap_or(0)).map_err(|_| {
                        from.error(
                            ErrorKind::InvalidArgument,
                            format!("the step count of `{}` does not fit an i32", p.name),
                        )
                    })?;
                    let max_exp_avg_sq = (t.len() == 3).then(|| t.remove(2));
                    let exp_avg_sq = t.remove(1);
                    let exp_avg = t.remove(0);
                    Some(Moments {
                        exp_avg,
                        exp_avg_sq,
                        max_exp_avg_sq,
                        step,
                    })
                }
            });
        }
        if apply {
            self.config.lr = lr;
            self.state = state;
        }
        Ok(())
    }
}
