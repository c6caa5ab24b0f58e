//! [`GradScaler`]: dynamic loss scaling for `f16` training, as PyTorch's
//! `torch.amp.GradScaler`.

use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::DimTuple;
use crate::named_tensor::Tensor;
use crate::optim::{Optimizer, StateReader, StateWriter, TrainingState};

/// A [`GradScaler`]'s options, PyTorch's defaults by [`Default`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradScalerConfig {
    /// The first scale (2¹⁶).
    pub init_scale: f64,
    /// The factor the scale grows by after `growth_interval` steps without overflow (2).
    pub growth_factor: f64,
    /// The factor the scale shrinks by after a step whose gradients overflowed (0.5).
    pub backoff_factor: f64,
    /// How many steps in a row without overflow make the scale grow (2000).
    pub growth_interval: u64,
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        GradScalerConfig {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
        }
    }
}

/// Multiplies the loss by a scale before the backward pass so that small `f16` gradients do
/// not flush to zero, divides the gradients by it before the optimiser's step, skips the step
/// when a gradient is infinite or NaN (the scale was too large), and adapts the scale:
/// halved after a skipped step, doubled after `growth_interval` good ones.
///
/// One step: `scaler.scale(&loss).backward()`, optionally `scaler.unscale_(&mut opt)` and a
/// clipping of the (now true) gradients, `scaler.step(&mut opt)`, `scaler.update()`.
///
/// ```
/// use namedtensor::amp::{self, GradScaler};
/// use namedtensor::nn::{loss, Linear, Module};
/// use namedtensor::optim::{Adam, AdamConfig, Optimizer};
/// use namedtensor::{dims, f16, Tensor};
/// dims! { Batch, In, Out }
/// let model = Linear::<In, Out>::seeded(4, 2, 0);
/// let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
/// let mut scaler = GradScaler::new();
/// let x = Tensor::<f32, (Batch, In)>::randn([8, 4], 1);
/// let y = Tensor::<f32, (Batch, Out)>::zeros([8, 2]);
/// let mut taken = Vec::new();
/// for _ in 0..8 {
///     opt.zero_grad();
///     let l = amp::autocast::<f16, _>(|| loss::mse_loss(&model.forward(&x), &y, loss::Reduction::Mean));
///     scaler.scale(&l).backward();
///     taken.push(scaler.step(&mut opt).unwrap()); // false: a gradient overflowed f16
///     scaler.update().unwrap();
/// }
/// // Each skipped step halved the scale, until the gradients fitted.
/// let skipped = taken.iter().filter(|&&t| !t).count();
/// assert!(skipped < 8);
/// assert_eq!(scaler.get_scale(), 65536.0 / 2f64.powi(skipped as i32));
/// ```
#[derive(Debug, Clone)]
pub struct GradScaler {
    config: GradScalerConfig,
    scale: f64,
    /// Good steps in a row since the scale last changed.
    growth_tracker: u64,
    /// Whether this step's gradients held an infinity or NaN, once they were unscaled.
    found_inf: Option<bool>,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new()
    }
}

impl GradScaler {
    /// A scaler with PyTorch's defaults.
    pub fn new() -> Self {
        GradScaler::from_config(GradScalerConfig::default()).expect("the default options are valid")
    }

    /// A scaler with `config`; an error unless the scale is finite and positive, the growth
    /// factor above 1, the backoff factor in (0, 1) and the interval at least 1.
    pub fn from_config(config: GradScalerConfig) -> Result<Self> {
        let c = config;
        let valid = c.init_scale.is_finite()
            && c.init_scale > 0.0
            && c.growth_factor.is_finite()
            && c.growth_factor > 1.0
            && c.backoff_factor > 0.0
            && c.backoff_factor < 1.0
            && c.growth_interval >= 1;
        if !valid {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "GradScaler",
                format!(
                    "{c:?}: the scale must be finite and > 0, the growth factor > 1, the \
                     backoff factor in (0, 1) and the interval ≥ 1"
                ),
            ));
        }
        Ok(GradScaler {
            config,
            scale: config.init_scale,
            growth_tracker: 0,
            found_inf: None,
        })
    }

    /// The current scale (PyTorch's `get_scale()`).
    pub fn get_scale(&self) -> f64 {
        self.scale
    }

    /// `loss` times the scale, recorded: call `backward` on the result.
    pub fn scale<E: Float, S: DimTuple, P: DimTuple>(
        &self,
        loss: &Tensor<E, S, P>,
    ) -> Tensor<E, S, P> {
        Tensor::wrap(loss.as_dyn().mul_scalar(self.scale))
    }

    /// Divides every gradient of `optimizer`'s parameters by the scale, in place, and notes
    /// whether any is infinite or NaN; at most once between two [`GradScaler::update`]s
    /// (an error otherwise, as in PyTorch). Call it before clipping gradients.
    pub fn unscale_(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        if self.found_inf.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "GradScaler::unscale_",
                "the gradients were already unscaled since the last update()",
            ));
        }
        // PyTorch multiplies by the reciprocal, rounded to f32.
        let inv = f64::from((1.0 / self.scale) as f32);
        self.found_inf = Some(!optimizer.unscale_grads(inv)?);
        Ok(())
    }

    /// Unscales the gradients (unless [`GradScaler::unscale_`] did) and takes `optimizer`'s
    /// step if they are all finite; whether the step was taken.
    pub fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<bool> {
        if self.found_inf.is_none() {
            self.unscale_(optimizer)?;
        }
        if self.found_inf == Some(true) {
            return Ok(false);
        }
        optimizer.step()?;
        Ok(true)
    }

    /// Adapts the scale to this step (halved after an overflow, grown after
    /// `growth_interval` good steps in a row) and starts the next step; an error if no step
    /// unscaled gradients since the last update.
    pub fn update(&mut self) -> Result<()> {
        let Some(found_inf) = self.found_inf.take() else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "GradScaler::update",
                "no gradients were unscaled since the last update(): call step() first",
            ));
        };
        if found_inf {
            self.scale *= self.config.backoff_factor;
            self.growth_tracker = 0;
        } else {
            self.growth_tracker += 1;
            if self.growth_tracker == self.config.growth_interval {
                self.scale *= self.config.growth_factor;
                self.growth_tracker = 0;
            }
        }
        Ok(())
    }
}

/// PyTorch's `state_dict` entries (`scale`, `growth_factor`, `backoff_factor`,
/// `growth_interval`, `_growth_tracker`), read back as its `load_state_dict` does (the options
/// too). A step between its `unscale_` and its `update` is dropped: a checkpoint is loaded
/// between steps.
impl TrainingState for GradScaler {
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.number("scale", self.scale);
        out.number("growth_factor", self.config.growth_factor);
        out.number("backoff_factor", self.config.backoff_factor);
        out.count("growth_interval", self.config.growth_interval);
        out.count("_growth_tracker", self.growth_tracker);
        Ok(())
    }

    fn load_state(&mut self, from: &StateReader<'_>, apply: bool) -> Result<()> {
        let config = GradScalerConfig {
            init_scale: from.number("scale")?,
            growth_factor: from.number("growth_factor")?,
            backoff_factor: from.number("backoff_factor")?,
            growth_interval: from.count("growth_interval")?,
        };
        let tracker = from.count("_growth_tracker")?;
        let mut loaded =
            GradScaler::from_config(config).map_err(|e| from.error(e.kind(), e.to_string()))?;
        if tracker >= config.growth_interval {
            return Err(from.error(
                ErrorKind::InvalidArgument,
                format!(
                    "the gradient scaler's `_growth_tracker` is {tracker}, not below its \
                     growth interval {}",
                    config.growth_interval
                ),
            ));
        }
        loaded.growth_tracker = tracker;
        if apply {
            *self = loaded;
        }
        Ok(())
    }
}
