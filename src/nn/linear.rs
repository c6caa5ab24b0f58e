//! [`Linear`]: `y = x Wᵀ + b` by name, mapping `(…, In)` to `(…, Out)`.

use super::init::{derive_seed, fan_in_bound, uniform};
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Contract, Dim, DimTuple, Shape};
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};

/// The result of a `Linear<In, Out>` on a tensor of dims `S` (private dims `P`): `S` without
/// `In`, then `Out`.
pub type LinearOut<E, S, P, In, Out> = Tensor<
    E,
    <S as Contract<In, (Out, In), P, ()>>::Out,
    <S as Contract<In, (Out, In), P, ()>>::Private,
>;

/// A fully connected layer: contracts the dim `In` of its input with a `(Out, In)` weight and
/// adds a bias along `Out`. Any other dims of the input are kept, in order, and `Out` comes
/// last: `(Batch, Seq, In)` becomes `(Batch, Seq, Out)`. Applying it to a tensor without
/// `In` is a compile error naming `In`.
///
/// `In` and `Out` are different dims, even where their sizes agree: the weight `(Out, In)`
/// could not otherwise tell its rows from its columns (`Linear::<Model, Model>::new` does
/// not compile, as `(Model, Model)` is no shape). A square layer maps to a new name, and
/// [`rename`](Tensor::rename) takes the result back where it belongs —
/// `proj.forward(&x).rename::<Proj, Model>()` — or the layer splits the dim by names, as
/// [`MultiHeadAttention`](super::MultiHeadAttention)'s `(Model, Heads, HeadDim)` output does.
///
/// Parameters as PyTorch's `nn.Linear` names and initialises them: `weight` `(Out, In)` and
/// `bias` `(Out,)`, both uniform on `[-1/sqrt(in), 1/sqrt(in)]`.
///
/// ```
/// use namedtensor::nn::Linear;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, Hidden, Classes }
/// let fc = Linear::<Hidden, Classes>::new(8, 3);
/// let x = Tensor::<f32, (Batch, Seq, Hidden)>::ones([2, 5, 8]);
/// let y = fc.forward(&x);                    // (Batch, Seq, Classes)
/// assert_eq!(y.names(), ["Batch", "Seq", "Classes"]);
/// assert_eq!(y.shape(), &[2, 5, 3]);
/// ```
pub struct Linear<In: Dim, Out: Dim, E: Float = f32> {
    /// `(Out, In)`, as in PyTorch.
    pub weight: Tensor<E, (Out, In)>,
    /// `(Out,)`, or none for a layer built [`without_bias`](Linear::without_bias).
    pub bias: Option<Tensor<E, (Out,)>>,
}

impl<In: Dim, Out: Dim, E: Float> Linear<In, Out, E> {
    /// A layer from `in_size` to `out_size` features with PyTorch's initialisation, drawn
    /// from the process's generator ([`manual_seed`](crate::random::manual_seed) makes it
    /// reproducible); its parameters require grad. Panics where [`Linear::try_new`] fails.
    #[track_caller]
    pub fn new(in_size: usize, out_size: usize) -> Self
    where
        (Out, In): Shape,
    {
        or_panic(Linear::try_new(in_size, out_size))
    }

    /// [`Linear::new`], or an error when the weight's element count overflows or the host
    /// cannot hold it.
    pub fn try_new(in_size: usize, out_size: usize) -> Result<Self>
    where
        (Out, In): Shape,
    {
        Linear::try_seeded(in_size, out_size, next_seed())
    }

    /// [`Linear::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(in_size: usize, out_size: usize, seed: u64) -> Self
    where
        (Out, In): Shape,
    {
        or_panic(Linear::try_seeded(in_size, out_size, seed))
    }

    /// [`Linear::seeded`], or an error as [`Linear::try_new`].
    pub fn try_seeded(in_size: usize, out_size: usize, seed: u64) -> Result<Self>
    where
        (Out, In): Shape,
    {
        let bound = fan_in_bound(in_size);
        let weight = uniform(&[out_size, in_size], bound, derive_seed(seed, 0))?;
        let bias = uniform(&[out_size], bound, derive_seed(seed, 1))?;
        Linear::try_from_parameters(weight, Some(bias))
    }

    /// The layer without its bias (`bias=False`): `Linear::new(8, 3).without_bias()`.
    pub fn without_bias(mut self) -> Self {
        self.bias = None;
        self
    }

    /// A layer with the given parameters (detached from any graph, then marked as leaves
    /// that require grad). Panics where [`Linear::try_from_parameters`] fails.
    #[track_caller]
    pub fn from_parameters(weight: Tensor<E, (Out, In)>, bias: Option<Tensor<E, (Out,)>>) -> Self {
        or_panic(Linear::try_from_parameters(weight, bias))
    }

    /// [`Linear::from_parameters`], or an error when the bias's size is not the weight's
    /// `Out` size.
    pub fn try_from_parameters(
        weight: Tensor<E, (Out, In)>,
        bias: Option<Tensor<E, (Out,)>>,
    ) -> Result<Self> {
        if let Some(b) = &bias
            && b.shape()[0] != weight.shape()[0]
        {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "Linear",
                format!(
                    "the bias has {} entries along `{}` but the weight {:?} has {}",
                    b.shape()[0],
                    Out::NAME,
                    weight.shape(),
                    weight.shape()[0]
                ),
            ));
        }
        Ok(Linear {
            weight: weight.detach().try_requires_grad_(true)?,
            bias: bias
                .map(|b| b.detach().try_requires_grad_(true))
                .transpose()?,
        })
    }

    /// `x Wᵀ + b` over the dim `In`. Panics where [`Linear::try_forward`] fails.
    #[track_caller]
    pub fn forward<S, P: DimTuple>(&self, x: &Tensor<E, S, P>) -> LinearOut<E, S, P, In, Out>
    where
        S: Contract<In, (Out, In), P, ()>,
    {
        or_panic(self.try_forward(x))
    }

    /// [`Linear::forward`], or an error when `x`'s `In` size is not the layer's, or when `x`
    /// already has a dim `Out` (it would be matched against the weight's, not produced).
    pub fn try_forward<S, P: DimTuple>(
        &self,
        x: &Tensor<E, S, P>,
    ) -> Result<LinearOut<E, S, P, In, Out>>
    where
        S: Contract<In, (Out, In), P, ()>,
    {
        if <S as Contract<In, (Out, In), P, ()>>::PLAN.rhs_free != 1 {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "Linear",
                format!(
                    "the input already has the output dim `{}` (input dims {:?}); rename it first",
                    Out::NAME,
                    S::NAMES
                ),
            ));
        }
        let y = x.try_dot(In::default(), &self.weight)?;
        match &self.bias {
            // `Out` is the result's last dim, so the bias broadcasts positionally.
            Some(b) => Ok(Tensor::wrap(y.as_dyn().try_add_bias(b.as_dyn())?)),
            None => Ok(y),
        }
    }
    /// `x Wᵀ + b` over the last axis of a positional tensor (layers built on this one call
    /// it on their batched views).
    pub(super) fn apply_last(&self, x: &DynTensor<E>) -> Result<DynTensor<E>> {
        let y = x.try_matmul(&self.weight.as_dyn().t())?;
        match &self.bias {
            Some(b) => y.try_add_bias(b.as_dyn()),
            None => Ok(y),
        }
    }
}

impl<In: Dim, Out: Dim, E: Float> Module<E> for Linear<In, Out, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight", &self.weight);
        v.param_opt("bias", &self.bias);
    }
}
