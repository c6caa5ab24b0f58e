//! [`Dropout`]: zeroes entries at random in training, scaling the rest.

use super::init::derive_seed;
use super::module::{Module, TrainingFlag, Visitor};
use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::named::DimTuple;
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};
use std::sync::atomic::{AtomicU64, Ordering};

/// In training, each entry is zeroed with probability `p` and the others are multiplied by
/// `1 / (1 − p)` (so the expectation is unchanged); in evaluation the input passes through.
/// PyTorch's `nn.Dropout(p)`. Each call draws a new mask from the layer's seed and a call
/// counter, so a run is the same on every machine.
///
/// ```
/// use namedtensor::nn::{Dropout, Module};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Model }
/// let drop = Dropout::seeded(0.5, 7);
/// let x = Tensor::<f64, (Batch, Model)>::ones([4, 250]);
/// let y = drop.forward(&x).to_vec();
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// let kept = y.iter().filter(|&&v| v == 2.0).count();
/// assert!((400..600).contains(&kept));
/// Module::<f64>::eval(&drop);
/// assert_eq!(drop.forward(&x).to_vec(), x.to_vec());
/// ```
#[derive(Debug)]
pub struct Dropout {
    p: f64,
    seed: u64,
    calls: AtomicU64,
    training: TrainingFlag,
}

impl Dropout {
    /// A layer dropping with probability `p`, its masks drawn from a seed taken from the
    /// process's generator ([`manual_seed`](crate::random::manual_seed)). Panics where
    /// [`Dropout::try_new`] fails.
    #[track_caller]
    pub fn new(p: f64) -> Self {
        or_panic(Dropout::try_new(p))
    }

    /// [`Dropout::new`], or an error unless `0 ≤ p ≤ 1`.
    pub fn try_new(p: f64) -> Result<Self> {
        Dropout::try_seeded(p, next_seed())
    }

    /// [`Dropout::new`] with masks drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(p: f64, seed: u64) -> Self {
        or_panic(Dropout::try_seeded(p, seed))
    }

    /// [`Dropout::seeded`], or an error unless `0 ≤ p ≤ 1`.
    pub fn try_seeded(p: f64, seed: u64) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "Dropout",
                format!("the probability p = {p} is not between 0 and 1"),
            ));
        }
        Ok(Dropout {
            p,
            seed,
            calls: AtomicU64::new(0),
            training: TrainingFlag::default(),
        })
    }

    /// The drop probability.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// `x` with entries dropped (in training) or unchanged (in evaluation).
    pub fn forward<E: Float, S: DimTuple, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
    ) -> Tensor<E, S, P> {
        Tensor::wrap(self.apply(x.as_dyn()))
    }

    /// [`Dropout::forward`] on a positional tensor (layers built on this one call it).
    pub(super) fn apply<E: Float>(&self, x: &DynTensor<E>) -> DynTensor<E> {
        if !self.training.is_training() || self.p == 0.0 {
            return x.shallow_clone();
        }
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let u = DynTensor::<f64>::rand(x.shape(), derive_seed(self.seed, call));
        let keep = u.ge_scalar(self.p);
        let scale = if self.p == 1.0 {
            0.0
        } else {
            1.0 / (1.0 - self.p)
        };
        let mask = keep.to_dtype::<E>().mul_scalar(scale);
        // `to_device` is a no-op handle on the same device.
        x.mul(&or_panic(mask.to_device(x.device())))
    }
}

impl<E: Element> Module<E> for Dropout {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.mode(&self.training);
    }
}
