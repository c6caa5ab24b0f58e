//! Learning-rate schedules, with PyTorch's recursive ("chainable") formulas so that the rates
//! match `torch.optim.lr_scheduler` to the last bit, not only in closed form.
//!
//! A schedule is made from an optimiser (which sets the rate of epoch 0, as PyTorch's
//! constructors do) and stepped once per epoch after the optimiser's step.

use super::{Optimizer, StateReader, StateWriter, TrainingState};
use crate::error::{Error, ErrorKind, Result};

/// A learning-rate schedule; its counters and rates for a checkpoint are its [`TrainingState`].
pub trait LrScheduler: TrainingState {
    /// Advances one epoch and sets the optimiser's rate for it.
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()>;
    /// The number of steps taken (PyTorch's `last_epoch`).
    fn last_epoch(&self) -> usize;
}

/// A count of a saved schedule, as a `usize`.
fn read_count(from: &StateReader<'_>, name: &str) -> Result<usize> {
    let v = from.count(name)?;
    usize::try_from(v).map_err(|_| {
        from.error(
            ErrorKind::InvalidArgument,
            format!("the schedule's `{name}` = {v} does not fit a usize"),
        )
    })
}

fn invalid(op: &'static str, msg: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, op, msg)
}

/// Checks a schedule's count option `what` (a number of epochs): at least 1.
fn check_count(op: &'static str, what: &str, value: usize) -> Result<()> {
    if value == 0 {
        return Err(invalid(op, format!("{what} = 0 must be at least 1")));
    }
    Ok(())
}

/// Checks a schedule's float option `what`: finite and in the range `rule` states (`ok`).
fn check_float(op: &'static str, what: &str, value: f64, ok: bool, rule: &str) -> Result<()> {
    if value.is_finite() && ok {
        return Ok(());
    }
    Err(invalid(op, format!("{what} = {value} must be {rule}")))
}

/// Multiplies the rate by `gamma` every `step_size` epochs (PyTorch's `StepLR`).
///
/// ```
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::{LrScheduler, Optimizer, Sgd, SgdConfig, StepLr};
/// namedtensor::dims! { In, Out }
/// let fc = Linear::<In, Out>::new(2, 2);
/// let mut opt = Sgd::new(fc.parameters(), SgdConfig { lr: 1.0, ..SgdConfig::default() });
/// let mut s = StepLr::new(&mut opt, 2, 0.5).unwrap();
/// let mut rates = vec![opt.lr()];
/// for _ in 0..4 { s.step(&mut opt).unwrap(); rates.push(opt.lr()); }
/// assert_eq!(rates, [1.0, 1.0, 0.5, 0.5, 0.25]);
/// ```
#[derive(Clone, Debug)]
pub struct StepLr {
    step_size: usize,
    gamma: f64,
    epoch: usize,
}

impl StepLr {
    /// A schedule for `opt`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the option for a `step_size` of 0 or a `gamma`
    /// that is not a finite number > 0.
    pub fn new(_opt: &mut dyn Optimizer, step_size: usize, gamma: f64) -> Result<Self> {
        const OP: &str = "StepLR";
        check_count(OP, "step_size", step_size)?;
        check_float(OP, "gamma", gamma, gamma > 0.0, "a finite number > 0")?;
        Ok(StepLr {
            step_size,
            gamma,
            epoch: 0,
        })
    }
}

impl LrScheduler for StepLr {
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        self.epoch += 1;
        if self.epoch.is_multiple_of(self.step_size) {
            opt.set_lr(opt.lr() * self.gamma)?;
        }
        Ok(())
    }

    fn last_epoch(&self) -> usize {
        self.epoch
    }
}

impl TrainingState for StepLr {
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.count("last_epoch", self.epoch as u64);
        out.count("step_size", self.step_size as u64);
        out.number("gamma", self.gamma);
        Ok(())
    }

    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()> {
        let loaded = StepLr {
            epoch: read_count(from, "last_epoch")?,
            step_size: read_count(from, "step_size")?,
            gamma: from.number("gamma")?,
        };
        if apply {
            *self = loaded;
        }
        Ok(())
    }
}

/// Cosine annealing from the initial rate to `eta_min` over `t_max` epochs (PyTorch's
/// `CosineAnnealingLR`, without restarts; past `t_max` it rises again as PyTorch's does).
///
/// ```
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::{CosineAnnealingLr, LrScheduler, Optimizer, Sgd, SgdConfig};
/// namedtensor::dims! { In, Out }
/// let fc = Linear::<In, Out>::new(2, 2);
/// let mut opt = Sgd::new(fc.parameters(), SgdConfig { lr: 1.0, ..SgdConfig::default() });
/// let mut s = CosineAnnealingLr::new(&mut opt, 4, 0.0).unwrap();
/// for _ in 0..2 { s.step(&mut opt).unwrap(); }
/// assert!((opt.lr() - 0.5).abs() < 1e-12);
/// ```
#[derive(Clone, Debug)]
pub struct CosineAnnealingLr {
    t_max: usize,
    eta_min: f64,
    base_lr: f64,
    epoch: usize,
}

impl CosineAnnealingLr {
    /// A schedule for `opt`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the option for a `t_max` of 0 or an `eta_min`
    /// that is not a finite number ≥ 0.
    pub fn new(opt: &mut dyn Optimizer, t_max: usize, eta_min: f64) -> Result<Self> {
        const OP: &str = "CosineAnnealingLR";
        check_count(OP, "t_max", t_max)?;
        check_float(
            OP,
            "eta_min",
            eta_min,
            eta_min >= 0.0,
            "a finite number ≥ 0",
        )?;
        Ok(CosineAnnealingLr {
            t_max,
            eta_min,
            base_lr: opt.lr(),
            epoch: 0,
        })
    }
}

impl LrScheduler for CosineAnnealingLr {
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        use std::f64::consts::PI;
        self.epoch += 1;
        let (e, t, lr, min) = (self.epoch as f64, self.t_max as f64, opt.lr(), self.eta_min);
        // PyTorch's branch test `(epoch − 1 − t_max) mod 2·t_max == 0`, in `i128`: every term
        // is a `usize`, so it is exact for any `t_max` (in `i64`, `2·t_max` overflows from
        // `t_max = 2^62`).
        let (epoch, t_max) = (self.epoch as i128, self.t_max as i128);
        let next = if (epoch - 1 - t_max).rem_euclid(2 * t_max) == 0 {
            lr + (self.base_lr - min) * (1.0 - (PI / t).cos()) / 2.0
        } else {
            (1.0 + (PI * e / t).cos()) / (1.0 + (PI * (e - 1.0) / t).cos()) * (lr - min) + min
        };
        opt.set_lr(next)
    }

    fn last_epoch(&self) -> usize {
        self.epoch
    }
}

impl TrainingState for CosineAnnealingLr {
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.count("last_epoch", self.epoch as u64);
        out.count("t_max", self.t_max as u64);
        out.number("eta_min", self.eta_min);
        out.number("base_lr", self.base_lr);
        Ok(())
    }

    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()> {
        let loaded = CosineAnnealingLr {
            epoch: read_count(from, "last_epoch")?,
            t_max: read_count(from, "t_max")?,
            eta_min: from.number("eta_min")?,
            base_lr: from.number("base_lr")?,
        };
        if apply {
            *self = loaded;
        }
        Ok(())
    }
}

/// Scales the initial rate linearly from `start_factor` to `end_factor` over `total_iters`
/// epochs, then keeps it (PyTorch's `LinearLR`; a linear warm-up with `start_factor` < 1).
///
/// ```
/// use namedtensor::nn::{Linear, Module};
/// use namedtensor::optim::{LinearLr, LrScheduler, Optimizer, Sgd, SgdConfig};
/// namedtensor::dims! { In, Out }
/// let fc = Linear::<In, Out>::new(2, 2);
/// let mut opt = Sgd::new(fc.parameters(), SgdConfig { lr: 1.0, ..SgdConfig::default() });
/// let mut s = LinearLr::new(&mut opt, 0.25, 1.0, 3).unwrap();
/// assert_eq!(opt.lr(), 0.25);
/// for _ in 0..5 { s.step(&mut opt).unwrap(); }
/// assert!((opt.lr() - 1.0).abs() < 1e-12);
/// ```
#[derive(Clone, Debug)]
pub struct LinearLr {
    start: f64,
    end: f64,
    total: usize,
    epoch: usize,
}

impl LinearLr {
    /// A schedule for `opt`, which it sets to `start_factor` times its rate.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the option for a `start_factor` outside
    /// `(0, 1]` or an `end_factor` outside `[0, 1]` (the optimiser's rate is then left as it
    /// was), and the error of the optimiser's `set_lr`.
    pub fn new(
        opt: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> Result<Self> {
        const OP: &str = "LinearLR";
        let (s, e) = (start_factor, end_factor);
        check_float(OP, "start_factor", s, s > 0.0 && s <= 1.0, "in (0, 1]")?;
        check_float(OP, "end_factor", e, (0.0..=1.0).contains(&e), "in [0, 1]")?;
        opt.set_lr(opt.lr() * start_factor)?;
        Ok(LinearLr {
            start: start_factor,
            end: end_factor,
            total: total_iters,
            epoch: 0,
        })
    }
}

impl LrScheduler for LinearLr {
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        self.epoch += 1;
        if self.epoch > self.total {
            return Ok(());
        }
        let (s, e) = (self.start, self.end);
        let factor = 1.0 + (e - s) / (self.total as f64 * s + (self.epoch as f64 - 1.0) * (e - s));
        opt.set_lr(opt.lr() * factor)
    }

    fn last_epoch(&self) -> usize {
        self.epoch
    }
}

impl TrainingState for LinearLr {
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.count("last_epoch", self.epoch as u64);
        out.count("total_iters", self.total as u64);
        out.number("start_factor", self.start);
        out.number("end_factor", self.end);
        Ok(())
    }

    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()> {
        let loaded = LinearLr {
            epoch: read_count(from, "last_epoch")?,
            total: read_count(from, "total_iters")?,
            start: from.number("start_factor")?,
            end: from.number("end_factor")?,
        };
        if apply {
            *self = loaded;
        }
        Ok(())
    }
}
