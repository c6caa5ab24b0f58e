//! Losses, as PyTorch's `torch.nn.functional` computes them, with the class dim named.
//!
//! - [`cross_entropy`] / [`CrossEntropy`]: logits with a class dim and integer labels,
//!   label smoothing and an ignored label; [`nll_loss`] / [`Nll`] for log-probabilities.
//! - [`mse_loss`] and [`bce_with_logits`] between tensors of the same dims.
//!
//! Each reduces by [`Reduction::Mean`] or [`Reduction::Sum`] to a 0-d tensor; the
//! `per_item` forms keep one loss per item (PyTorch's `reduction='none'`). All are recorded
//! ops, so `loss.backward()` reaches the model's parameters.

use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{DimTuple, RemoveDim};
use crate::named_tensor::Tensor;
use crate::tensor::{DynTensor, or_panic};

/// How a loss over many items becomes one number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// The mean over the items (over the labels not ignored, for the classification losses).
    #[default]
    Mean,
    /// The sum over the items.
    Sum,
}

/// The labels of logits with dims `S` and class dim `C`: `S` without `C`.
pub type Labels<S, C, P> = Tensor<i64, <S as RemoveDim<C, P>>::Out, P>;
/// One loss per label.
pub type PerItem<E, S, C, P> = Tensor<E, <S as RemoveDim<C, P>>::Out, P>;

/// Cross-entropy between `logits` (class dim `C`) and integer `labels`, averaged over the
/// labels: PyTorch's `F.cross_entropy(logits, labels)` with the class dim named. See
/// [`CrossEntropy`] for label smoothing, sums and ignored labels. Panics where
/// [`CrossEntropy::try_forward`] fails.
///
/// ```
/// use namedtensor::nn::loss::cross_entropy;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Classes }
/// let logits = Tensor::<f64, (Batch, Classes)>::from_vec(vec![2.0, 0.0, 0.0, 1.0], [2, 2]);
/// let labels = Tensor::<i64, (Batch,)>::from_vec(vec![0, 1], [2]);
/// let loss = cross_entropy(&logits, Classes, &labels);
/// let expected = ((1.0 + (-2f64).exp()).ln() + (1.0 + (-1f64).exp()).ln()) / 2.0;
/// assert!((loss.item() - expected).abs() < 1e-12);
/// ```
#[track_caller]
pub fn cross_entropy<E: Float, S, P: DimTuple, C>(
    logits: &Tensor<E, S, P>,
    class_dim: C,
    labels: &Labels<S, C, P>,
) -> Tensor<E, ()>
where
    S: RemoveDim<C, P>,
{
    CrossEntropy::default().forward(logits, class_dim, labels)
}

/// The negative log-likelihood of `labels` under `log_probs` (class dim `C`), averaged:
/// PyTorch's `F.nll_loss`. Panics where [`Nll::try_forward`] fails.
///
/// ```
/// use namedtensor::nn::loss::nll_loss;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Classes }
/// let logp = Tensor::<f64, (Batch, Classes)>::from_vec(vec![-0.5, -1.0, -2.0, -0.25], [2, 2]);
/// let labels = Tensor::<i64, (Batch,)>::from_vec(vec![1, 0], [2]);
/// assert_eq!(nll_loss(&logp, Classes, &labels).item(), 1.5);
/// ```
#[track_caller]
pub fn nll_loss<E: Float, S, P: DimTuple, C>(
    log_probs: &Tensor<E, S, P>,
    class_dim: C,
    labels: &Labels<S, C, P>,
) -> Tensor<E, ()>
where
    S: RemoveDim<C, P>,
{
    Nll::default().forward(log_probs, class_dim, labels)
}

/// Cross-entropy with PyTorch's options: `reduction`, `label_smoothing` (the target puts
/// `1 − ε` on the label and `ε` spread evenly over all classes) and `ignore_index` (labels
/// equal to it add nothing and are not counted by the mean; −100 as in PyTorch).
///
/// ```
/// use namedtensor::nn::loss::{CrossEntropy, Reduction};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Classes }
/// let logits = Tensor::<f64, (Batch, Classes)>::zeros([3, 4]);
/// let labels = Tensor::<i64, (Batch,)>::from_vec(vec![0, -100, 3], [3]);
/// let ce = CrossEntropy { reduction: Reduction::Sum, ..CrossEntropy::default() };
/// assert!((ce.forward(&logits, Classes, &labels).item() - 2.0 * 4f64.ln()).abs() < 1e-12);
/// let per = ce.per_item(&logits, Classes, &labels).to_vec();
/// assert_eq!(per[1], 0.0);
/// let bad = Tensor::<i64, (Batch,)>::from_vec(vec![0, 4, 1], [3]);
/// let err = ce.try_forward(&logits, Classes, &bad).unwrap_err();
/// assert!(err.to_string().contains("label 4"), "{err}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrossEntropy {
    /// Mean (over the labels not ignored) or sum.
    pub reduction: Reduction,
    /// ε in `[0, 1]`.
    pub label_smoothing: f64,
    /// The label value that is skipped.
    pub ignore_index: i64,
}

impl Default for CrossEntropy {
    fn default() -> Self {
        CrossEntropy {
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
            ignore_index: -100,
        }
    }
}

/// The negative log-likelihood with PyTorch's `reduction` and `ignore_index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nll {
    /// Mean (over the labels not ignored) or sum.
    pub reduction: Reduction,
    /// The label value that is skipped.
    pub ignore_index: i64,
}

impl Default for Nll {
    fn default() -> Self {
        Nll {
            reduction: Reduction::Mean,
            ignore_index: -100,
        }
    }
}

macro_rules! classification_forms {
    ($ty:ident, $op:literal, $input:ident, $smoothing:expr, $from_logits:literal) => {
        impl $ty {
            /// The reduced loss. Panics where the `try_` form fails.
            #[track_caller]
            pub fn forward<E: Float, S, P: DimTuple, C>(
                &self,
                $input: &Tensor<E, S, P>,
                class_dim: C,
                labels: &Labels<S, C, P>,
            ) -> Tensor<E, ()>
            where
                S: RemoveDim<C, P>,
            {
                or_panic(self.try_forward($input, class_dim, labels))
            }

            /// The reduced loss, or an error for a label outside the classes (and not
            /// ignored), labels whose sizes differ from the input's, a class dim of size 0,
            /// or an invalid option.
            pub fn try_forward<E: Float, S, P: DimTuple, C>(
                &self,
                $input: &Tensor<E, S, P>,
                _class_dim: C,
                labels: &Labels<S, C, P>,
            ) -> Result<Tensor<E, ()>>
            where
                S: RemoveDim<C, P>,
            {
                let parts = self.parts($input, labels)?;
                Ok(Tensor::wrap(parts.reduce(self.reduction)?))
            }

            /// One loss per label (`reduction='none'`; ignored labels give 0). Panics where
            /// the `try_` form fails.
            #[track_caller]
            pub fn per_item<E: Float, S, P: DimTuple, C>(
                &self,
                $input: &Tensor<E, S, P>,
                class_dim: C,
                labels: &Labels<S, C, P>,
            ) -> PerItem<E, S, C, P>
            where
                S: RemoveDim<C, P>,
            {
                or_panic(self.try_per_item($input, class_dim, labels))
            }

            /// One loss per label, or the errors of the reduced form.
            pub fn try_per_item<E: Float, S, P: DimTuple, C>(
                &self,
                $input: &Tensor<E, S, P>,
                _class_dim: C,
                labels: &Labels<S, C, P>,
            ) -> Result<PerItem<E, S, C, P>>
            where
                S: RemoveDim<C, P>,
            {
                let parts = self.parts($input, labels)?;
                Ok(Tensor::wrap(parts.per_item()?))
            }
            /// The unreduced terms of this loss for `input` with class dim `C`.
            fn parts<E: Float, S, P: DimTuple, C>(
                &self,
                $input: &Tensor<E, S, P>,
                labels: &Labels<S, C, P>,
            ) -> Result<Parts<E>>
            where
                S: RemoveDim<C, P>,
            {
                classification(&Classification {
                    op: $op,
                    input: $input.as_dyn(),
                    axis: <S as RemoveDim<C, P>>::AXIS as usize,
                    names: full_names::<S, P>(),
                    labels: labels.as_dyn(),
                    ignore_index: self.ignore_index,
                    smoothing: $smoothing(self),
                    from_logits: $from_logits,
                })
            }
        }
    };
}

classification_forms!(
    CrossEntropy,
    "cross_entropy",
    logits,
    |s: &CrossEntropy| s.label_smoothing,
    true
);
classification_forms!(Nll, "nll_loss", log_probs, |_: &Nll| 0.0, false);

fn full_names<S: DimTuple, P: DimTuple>() -> Vec<&'static str> {
    P::NAMES.iter().chain(S::NAMES).copied().collect()
}

/// The inputs of a classification loss, positionally.
struct Classification<'a, E: Float> {
    op: &'static str,
    input: &'a DynTensor<E>,
    axis: usize,
    names: Vec<&'static str>,
    labels: &'a DynTensor<i64>,
    ignore_index: i64,
    smoothing: f64,
    from_logits: bool,
}

/// A classification loss before reduction: the negative log-likelihood and smoothing terms
/// per item (zero at ignored labels) and the number of labels not ignored.
struct Parts<E: Float> {
    nll: DynTensor<E>,
    /// `−Σ_c log p_c / classes` per item, when smoothing.
    smooth: Option<DynTensor<E>>,
    smoothing: f64,
    counted: usize,
}

fn classification<E: Float>(c: &Classification<'_, E>) -> Result<Parts<E>> {
    let err = |kind, msg: String| Error::new(kind, c.op, msg);
    if !(0.0..=1.0).contains(&c.smoothing) {
        return Err(err(
            ErrorKind::InvalidArgument,
            format!("label_smoothing = {} is not between 0 and 1", c.smoothing),
        ));
    }
    let shape = c.input.shape();
    let classes = shape[c.axis];
    let mut expected = shape.to_vec();
    expected.remove(c.axis);
    if c.labels.shape() != expected {
        return Err(err(
            ErrorKind::ShapeMismatch,
            format!(
                "labels of shape {:?} do not fit an input of shape {:?} (dims {:?}) without its \
                 class dim `{}`: expected {:?}",
                c.labels.shape(),
                shape,
                c.names,
                c.names[c.axis],
                expected
            ),
        ));
    }
    if classes == 0 {
        // Checked here, not left to the gather below: with every label ignored, nothing else
        // would catch it, and the gather's error would name an index the caller never gave.
        return Err(err(
            ErrorKind::InvalidArgument,
            format!(
                "the class dim `{}` of the input (shape {:?}, dims {:?}) has size 0: there are \
                 no classes to score the labels against",
                c.names[c.axis], shape, c.names
            ),
        ));
    }
    let values = c.labels.to_vec();
    if let Some(bad) = values
        .iter()
        .find(|&&l| l != c.ignore_index && !(0..classes as i64).contains(&l))
    {
        return Err(err(
            ErrorKind::IndexOutOfRange,
            format!(
                "label {bad} is out of range for the {classes} classes along `{}` (valid labels \
                 are 0..{classes}, or the ignored {})",
                c.names[c.axis], c.ignore_index
            ),
        ));
    }
    let counted = values.iter().filter(|&&l| l != c.ignore_index).count();
    let axis = c.axis as isize;
    let logp = if c.from_logits {
        c.input.try_log_softmax(axis)?
    } else {
        c.input.shallow_clone()
    };
    let ignored = c.labels.eq_scalar(c.ignore_index);
    let safe = c.labels.try_masked_fill(&ignored, 0)?;
    let picked = logp
        .try_gather(axis, &safe.try_unsqueeze(axis)?)?
        .try_squeeze_dim(axis)?;
    let nll = (-&picked).try_masked_fill(&ignored, E::ZERO)?;
    let smooth = if c.smoothing > 0.0 {
        let total = logp.try_sum_dim(axis, false)?;
        let per = (-&total).try_div_scalar(classes as f64)?;
        Some(per.try_masked_fill(&ignored, E::ZERO)?)
    } else {
        None
    };
    Ok(Parts {
        nll,
        smooth,
        smoothing: c.smoothing,
        counted,
    })
}

impl<E: Float> Parts<E> {
    /// `(1 − ε)·nll + ε·smooth`, each reduced the same way.
    fn combine(
        &self,
        reduce: impl Fn(&DynTensor<E>) -> Result<DynTensor<E>>,
    ) -> Result<DynTensor<E>> {
        let nll = reduce(&self.nll)?;
        match &self.smooth {
            None => Ok(nll),
            Some(s) => nll
                .try_mul_scalar(1.0 - self.smoothing)?
                .try_add(&reduce(s)?.try_mul_scalar(self.smoothing)?),
        }
    }

    fn reduce(&self, reduction: Reduction) -> Result<DynTensor<E>> {
        let counted = self.counted as f64;
        self.combine(|t| match reduction {
            Reduction::Sum => t.try_sum_dims(&[], false),
            Reduction::Mean => t.try_sum_dims(&[], false)?.try_div_scalar(counted),
        })
    }

    fn per_item(&self) -> Result<DynTensor<E>> {
        self.combine(|t| Ok(t.shallow_clone()))
    }
}

/// The mean (or sum) of `(input − target)²`: PyTorch's `F.mse_loss`. Both have the same
/// dims, in the same order. Panics where [`try_mse_loss`] fails.
///
/// ```
/// use namedtensor::nn::loss::{mse_loss, Reduction};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch }
/// let x = Tensor::<f32, (Batch,)>::from_vec(vec![1.0, 2.0], [2]);
/// let t = Tensor::<f32, (Batch,)>::from_vec(vec![0.0, 4.0], [2]);
/// assert_eq!(mse_loss(&x, &t, Reduction::Mean).item(), 2.5);
/// ```
#[track_caller]
pub fn mse_loss<E: Float, S: DimTuple, P: DimTuple>(
    input: &Tensor<E, S, P>,
    target: &Tensor<E, S, P>,
    reduction: Reduction,
) -> Tensor<E, ()> {
    or_panic(try_mse_loss(input, target, reduction))
}

/// [`mse_loss`], or an error naming both shapes when they differ.
pub fn try_mse_loss<E: Float, S: DimTuple, P: DimTuple>(
    input: &Tensor<E, S, P>,
    target: &Tensor<E, S, P>,
    reduction: Reduction,
) -> Result<Tensor<E, ()>> {
    same_shape("mse_loss", input, target)?;
    let sq = input.as_dyn().try_sub(target.as_dyn())?.square();
    Ok(Tensor::wrap(reduce_all(&sq, reduction)?))
}

/// Binary cross-entropy of `target` probabilities under `sigmoid(logits)`, computed stably
/// as `(1 − t)·x + softplus(−x)`: PyTorch's `F.binary_cross_entropy_with_logits`. Panics
/// where [`try_bce_with_logits`] fails.
///
/// ```
/// use namedtensor::nn::loss::{bce_with_logits, Reduction};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch }
/// let x = Tensor::<f64, (Batch,)>::from_vec(vec![0.0, 800.0], [2]);
/// let t = Tensor::<f64, (Batch,)>::from_vec(vec![1.0, 0.0], [2]);
/// let loss = bce_with_logits(&x, &t, Reduction::Sum).item();
/// assert!((loss - (2f64.ln() + 800.0)).abs() < 1e-9);
/// ```
#[track_caller]
pub fn bce_with_logits<E: Float, S: DimTuple, P: DimTuple>(
    logits: &Tensor<E, S, P>,
    target: &Tensor<E, S, P>,
    reduction: Reduction,
) -> Tensor<E, ()> {
    or_panic(try_bce_with_logits(logits, target, reduction))
}

/// [`bce_with_logits`], or an error naming both shapes when they differ.
pub fn try_bce_with_logits<E: Float, S: DimTuple, P: DimTuple>(
    logits: &Tensor<E, S, P>,
    target: &Tensor<E, S, P>,
    reduction: Reduction,
) -> Result<Tensor<E, ()>> {
    Ok(Tensor::wrap(reduce_all(
        bce_with_logits_per_item(logits, target)?.as_dyn(),
        reduction,
    )?))
}

/// [`bce_with_logits`] per element (`reduction='none'`).
pub fn bce_with_logits_per_item<E: Float, S: DimTuple, P: DimTuple>(
    logits: &Tensor<E, S, P>,
    target: &Tensor<E, S, P>,
) -> Result<Tensor<E, S, P>> {
    same_shape("bce_with_logits", logits, target)?;
    let (x, t) = (logits.as_dyn(), target.as_dyn());
    // softplus(−x) = logsumexp(0, −x): exact gradients everywhere, no overflow.
    let neg = -x;
    let zeros = DynTensor::<E>::zeros_like(x).to_device(x.device())?;
    let softplus = DynTensor::try_stack(&[&zeros, &neg], -1)?.try_logsumexp_dim(-1, false)?;
    let keep = t.try_mul_scalar(-1.0)?.try_add_scalar(1.0)?;
    Ok(Tensor::wrap(keep.try_mul(x)?.try_add(&softplus)?))
}

fn same_shape<E: Float, S: DimTuple, P: DimTuple>(
    op: &'static str,
    a: &Tensor<E, S, P>,
    b: &Tensor<E, S, P>,
) -> Result<()> {
    if a.shape() == b.shape() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::ShapeMismatch,
        op,
        format!(
            "the input has shape {:?} and the target {:?} (dims {:?})",
            a.shape(),
            b.shape(),
            full_names::<S, P>()
        ),
    ))
}

fn reduce_all<E: Float>(t: &DynTensor<E>, reduction: Reduction) -> Result<DynTensor<E>> {
    match reduction {
        Reduction::Mean => t.try_mean_dims(&[], false),
        Reduction::Sum => t.try_sum_dims(&[], false),
    }
}
