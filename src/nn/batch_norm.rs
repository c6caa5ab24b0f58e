//! [`BatchNorm`]: normalises each channel over the batch (every dim but the channels'), with
//! running statistics for evaluation.

use super::layer_norm::{affine, along};
use super::module::{Module, TrainingFlag, Visitor};
use crate::autograd::no_grad;
use crate::backend::op::ReduceOp;
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, HasDim};
use crate::named_tensor::Tensor;
use crate::tensor::{DynTensor, or_panic};

/// Batch normalisation over the channel dim `C`, as PyTorch's `nn.BatchNorm1d`/`2d`/`3d`
/// (one layer for all three: the statistics are taken over every dim of the input but `C`,
/// wherever `C` sits).
///
/// In training, each channel is normalised with its batch mean and biased variance,
/// `(x − mean) / sqrt(var + eps) · weight + bias`, and the buffers `running_mean` and
/// `running_var` (the unbiased variance) move towards them by `momentum`:
/// `running = (1 − momentum) · running + momentum · batch`; with `momentum: None` they are
/// the cumulative average over `num_batches_tracked` batches. In evaluation
/// ([`Module::eval`]) the running statistics normalise instead. Parameters `weight` (ones)
/// and `bias` (zeros), `(C,)`; `eps` 1e-5; names as PyTorch's `state_dict`, so its files load.
///
/// ```
/// use namedtensor::nn::{BatchNorm, Module};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Channels, Rows }
/// let norm = BatchNorm::<Channels, f64>::new(2);
/// let x = Tensor::<f64, (Batch, Rows, Channels)>::from_vec(vec![1., 10., 3., 30., 5., 50.], [1, 3, 2]);
/// let y = norm.forward(&x); // channels last: found by name
/// assert!(y.as_dyn().select(2, 1).sum().item().abs() < 1e-12);
/// let running = norm.running_mean.to_vec(); // 0.9·0 + 0.1·mean
/// assert!((running[0] - 0.3).abs() < 1e-15 && (running[1] - 3.0).abs() < 1e-15);
/// norm.eval();
/// assert_eq!(norm.forward(&x).shape(), &[1, 3, 2]);
/// ```
pub struct BatchNorm<C: Dim, E: Float = f32> {
    /// `(C,)`, ones; `None` without the affine step (PyTorch's `affine=False`).
    pub weight: Option<Tensor<E, (C,)>>,
    /// `(C,)`, zeros; `None` without the affine step.
    pub bias: Option<Tensor<E, (C,)>>,
    /// `(C,)`, zeros: a buffer.
    pub running_mean: Tensor<E, (C,)>,
    /// `(C,)`, ones: a buffer.
    pub running_var: Tensor<E, (C,)>,
    /// How many training batches updated the running statistics: a buffer.
    pub num_batches_tracked: Tensor<i64, ()>,
    /// Added to the variance.
    pub eps: f64,
    /// The running statistics' update factor; `None`: the cumulative average.
    pub momentum: Option<f64>,
    training: TrainingFlag,
}

impl<C: Dim, E: Float> BatchNorm<C, E> {
    /// A layer over `channels` channels, in training; its parameters require grad.
    pub fn new(channels: usize) -> Self {
        BatchNorm {
            weight: Some(Tensor::ones([channels]).requires_grad_(true)),
            bias: Some(Tensor::zeros([channels]).requires_grad_(true)),
            running_mean: Tensor::zeros([channels]),
            running_var: Tensor::ones([channels]),
            num_batches_tracked: Tensor::zeros([]),
            eps: 1e-5,
            momentum: Some(0.1),
            training: TrainingFlag::default(),
        }
    }

    /// The layer without `weight` and `bias` (PyTorch's `affine=False`).
    pub fn without_affine(mut self) -> Self {
        self.weight = None;
        self.bias = None;
        self
    }

    /// The layer with another running-statistics factor (`None`: cumulative average).
    pub fn momentum(mut self, momentum: Option<f64>) -> Self {
        self.momentum = momentum;
        self
    }

    /// Normalises `x` per channel. Panics where [`BatchNorm::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Tensor<E, S, P>
    where
        S: HasDim<C, P>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`BatchNorm::forward`], or an error when `x`'s `C` size is not the layer's, or, in
    /// training, a channel has a single value (its variance is undefined). On error the
    /// running statistics are unchanged.
    pub fn try_forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> Result<Tensor<E, S, P>>
    where
        S: HasDim<C, P>,
    {
        let axis = <S as HasDim<C, P>>::AXIS;
        Ok(Tensor::wrap(self.normalize(x.as_dyn(), axis as usize)?))
    }

    fn normalize(&self, x: &DynTensor<E>, axis: usize) -> Result<DynTensor<E>> {
        const OP: &str = "BatchNorm";
        let channels = self.running_mean.shape()[0];
        let rank = x.dim();
        if x.shape()[axis] != channels {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                OP,
                format!(
                    "the input has {} entries along the channel dim {} but the layer has {channels}",
                    x.shape()[axis],
                    C::NAME
                ),
            ));
        }
        let over: Vec<bool> = (0..rank).map(|i| i != axis).collect();
        let axis = axis as isize;
        let normed = if self.training.is_training() {
            let count = x.numel() / channels.max(1);
            if count < 2 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    OP,
                    format!(
                        "in training each channel needs more than one value for its variance, \
                         but the input {:?} has {count} per channel of {}",
                        x.shape(),
                        C::NAME
                    ),
                ));
            }
            self.track(x, &over)?;
            crate::ops::normalize(OP, x, &over, self.eps, true)?
        } else {
            let mean = along(&self.running_mean, axis, rank)?;
            let std = along(&self.running_var, axis, rank)?
                .try_add_scalar(self.eps)?
                .sqrt();
            x.try_sub(&mean)?.try_div(&std)?
        };
        affine(normed, &self.weight, &self.bias, axis)
    }

    /// Moves the running statistics towards the batch's (`x` over the dims in `over`).
    fn track(&self, x: &DynTensor<E>, over: &[bool]) -> Result<()> {
        no_grad(|| {
            let x = x.detach();
            let mean = crate::ops::reduce_keepdim("BatchNorm", ReduceOp::Mean, &x, over)?
                .try_reshape(&[-1])?;
            let dims: Vec<isize> = (0..over.len() as isize)
                .filter(|&i| over[i as usize])
                .collect();
            let var = x.try_var_dims(&dims, 1, false)?;
            let tracked = self.num_batches_tracked.as_dyn();
            let batches = tracked.item() + 1;
            let factor = self.momentum.unwrap_or(1.0 / batches as f64);
            for (running, batch) in [(&self.running_mean, mean), (&self.running_var, var)] {
                // PyTorch's order of operations: (1 − f) · running + f · batch.
                running
                    .as_dyn()
                    .try_mul_scalar_(1.0 - factor)?
                    .try_add_(&batch.try_mul_scalar(factor)?)?;
            }
            tracked.try_fill_(batches)?;
            Ok(())
        })
    }
}

impl<C: Dim, E: Float> Module<E> for BatchNorm<C, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param_opt("weight", &self.weight);
        v.param_opt("bias", &self.bias);
        v.buffer("running_mean", &self.running_mean);
        v.buffer("running_var", &self.running_var);
        v.count_buffer("num_batches_tracked", &self.num_batches_tracked);
        v.mode(&self.training);
    }
}
