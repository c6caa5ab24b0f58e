//! Recurrent layers along a named sequence dim: [`Lstm`] and [`Gru`], one generic layer
//! ([`Recurrent`]) with PyTorch's gate order, initialisation and parameter names, so that the
//! `state_dict` of a one-layer `nn.LSTM` or `nn.GRU` loads into it.
//!
//! The layer maps the dim `In` of its input to `Hidden` (`In` leaves, `Hidden` comes last,
//! as [`Linear`](super::Linear) does) and runs along the dim named at the call,
//! `lstm.forward(&x, Seq)`: every other dim is a batch dim, whatever the order. The input's
//! share of every step's gates is one matrix product before the loop; each step then adds
//! the hidden state's share and applies the cell.

use super::init::{derive_seed, fan_in_bound, uniform};
use super::linear::LinearOut;
use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Contract, Dim, HasDim, Shape};
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};
use std::marker::PhantomData;

crate::dims! {
    /// A recurrent layer's gates, stacked in PyTorch's order: `4·hidden` rows for an LSTM
    /// (input, forget, cell, output), `3·hidden` for a GRU (reset, update, new).
    pub Gates,
}

/// What makes a [`Recurrent`] layer an LSTM or a GRU: its gates and one step.
pub trait RecurrentCell: 'static {
    /// The layer's name in errors (`"LSTM"`).
    const NAME: &'static str;
    /// Gates per hidden unit.
    const GATES: usize;
    /// Tensors of state carried from step to step (the hidden state first).
    const STATES: usize;

    /// The next state from the input's share `gx` and the hidden state's share `gh` of the
    /// gates (`(…, GATES·hidden)`, biases included) and the current state.
    fn step<E: Float>(
        gx: &DynTensor<E>,
        gh: &DynTensor<E>,
        state: &[DynTensor<E>],
    ) -> Result<Vec<DynTensor<E>>>;
}

/// PyTorch's `nn.LSTM` cell: `i, f, g, o` from the gates (σ, σ, tanh, σ),
/// `c' = f·c + i·g`, `h' = o·tanh(c')`.
#[derive(Debug, Clone, Copy, Default)]
pub struct LstmCell;

impl RecurrentCell for LstmCell {
    const NAME: &'static str = "LSTM";
    const GATES: usize = 4;
    const STATES: usize = 2;

    fn step<E: Float>(
        gx: &DynTensor<E>,
        gh: &DynTensor<E>,
        state: &[DynTensor<E>],
    ) -> Result<Vec<DynTensor<E>>> {
        let gates = gx.try_add(gh)?.try_chunk(4, -1)?;
        let (i, f) = (gates[0].sigmoid(), gates[1].sigmoid());
        let (g, o) = (gates[2].tanh(), gates[3].sigmoid());
        let c = f.try_mul(&state[1])?.try_add(&i.try_mul(&g)?)?;
        let h = o.try_mul(&c.tanh())?;
        Ok(vec![h, c])
    }
}

/// PyTorch's `nn.GRU` cell: `r = σ(x_r + h_r)`, `z = σ(x_z + h_z)`,
/// `n = tanh(x_n + r·h_n)`, `h' = (1 − z)·n + z·h`, where `h_n` includes its bias.
#[derive(Debug, Clone, Copy, Default)]
pub struct GruCell;

impl RecurrentCell for GruCell {
    const NAME: &'static str = "GRU";
    const GATES: usize = 3;
    const STATES: usize = 1;

    fn step<E: Float>(
        gx: &DynTensor<E>,
        gh: &DynTensor<E>,
        state: &[DynTensor<E>],
    ) -> Result<Vec<DynTensor<E>>> {
        let (x, h) = (gx.try_chunk(3, -1)?, gh.try_chunk(3, -1)?);
        let r = x[0].try_add(&h[0])?.sigmoid();
        let z = x[1].try_add(&h[1])?.sigmoid();
        let n = x[2].try_add(&r.try_mul(&h[2])?)?.tanh();
        // (1 − z)·n + z·h, as n + z·(h − n).
        let next = n.try_add(&z.try_mul(&state[0].try_sub(&n)?)?)?;
        Ok(vec![next])
    }
}

/// A one-layer LSTM from `In` to `Hidden` (PyTorch's `nn.LSTM(in, hidden)`).
///
/// ```
/// use namedtensor::nn::{Lstm, Module};
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, In, Hidden }
/// let lstm = Lstm::<In, Hidden>::new(3, 5);
/// let names: Vec<String> = lstm.parameters().into_iter().map(|p| p.name).collect();
/// assert_eq!(names, ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]);
/// let x = Tensor::<f32, (Seq, Batch, In)>::randn([7, 2, 3], 0); // sequence first: by name
/// let y = lstm.forward(&x, Seq);
/// assert_eq!(y.names(), ["Seq", "Batch", "Hidden"]);
/// assert_eq!(y.shape(), &[7, 2, 5]);
/// ```
pub type Lstm<In, Hidden, E = f32> = Recurrent<In, Hidden, LstmCell, E>;

/// A one-layer GRU from `In` to `Hidden` (PyTorch's `nn.GRU(in, hidden)`).
///
/// ```
/// use namedtensor::nn::Gru;
/// use namedtensor::{dims, Tensor};
/// dims! { Batch, Seq, In, Hidden }
/// let gru = Gru::<In, Hidden, f64>::new(3, 4);
/// let y = gru.forward(&Tensor::<f64, (Batch, Seq, In)>::randn([2, 6, 3], 0), Seq);
/// assert_eq!(y.shape(), &[2, 6, 4]);
/// ```
pub type Gru<In, Hidden, E = f32> = Recurrent<In, Hidden, GruCell, E>;

/// A recurrent layer from `In` to `Hidden` whose cell is `C` ([`LstmCell`], [`GruCell`]):
/// use it as [`Lstm`] or [`Gru`]. Parameters as PyTorch names them (`weight_ih_l0`, …), all
/// uniform on `[-1/sqrt(hidden), 1/sqrt(hidden)]`; the initial state is zeros.
pub struct Recurrent<In: Dim, Hidden: Dim, C: RecurrentCell, E: Float = f32> {
    /// `(Gates, In)`: the input's weights of every gate, stacked (`weight_ih_l0`).
    pub weight_ih: Tensor<E, (Gates, In)>,
    /// `(Gates, Hidden)`: the hidden state's weights (`weight_hh_l0`).
    pub weight_hh: Tensor<E, (Gates, Hidden)>,
    /// `(Gates,)` (`bias_ih_l0`); `None` without biases (`bias=False`).
    pub bias_ih: Option<Tensor<E, (Gates,)>>,
    /// `(Gates,)` (`bias_hh_l0`); `None` without biases.
    pub bias_hh: Option<Tensor<E, (Gates,)>>,
    cell: PhantomData<C>,
}

impl<In: Dim, Hidden: Dim, C: RecurrentCell, E: Float> Recurrent<In, Hidden, C, E> {
    /// A layer from `input` to `hidden` features with PyTorch's initialisation, drawn from
    /// the process's generator; its parameters require grad. Panics where
    /// [`Recurrent::try_new`] fails.
    #[track_caller]
    pub fn new(input: usize, hidden: usize) -> Self
    where
        (Gates, In): Shape,
        (Gates, Hidden): Shape,
    {
        or_panic(Self::try_new(input, hidden))
    }

    /// [`Recurrent::new`], or an error when a weight's element count overflows.
    pub fn try_new(input: usize, hidden: usize) -> Result<Self>
    where
        (Gates, In): Shape,
        (Gates, Hidden): Shape,
    {
        Self::try_seeded(input, hidden, next_seed())
    }

    /// [`Recurrent::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(input: usize, hidden: usize, seed: u64) -> Self
    where
        (Gates, In): Shape,
        (Gates, Hidden): Shape,
    {
        or_panic(Self::try_seeded(input, hidden, seed))
    }

    /// [`Recurrent::seeded`], or an error as [`Recurrent::try_new`].
    pub fn try_seeded(input: usize, hidden: usize, seed: u64) -> Result<Self>
    where
        (Gates, In): Shape,
        (Gates, Hidden): Shape,
    {
        let gates = C::GATES.checked_mul(hidden).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                C::NAME,
                format!("{} gates of {hidden} hidden units overflow", C::GATES),
            )
        })?;
        let bound = fan_in_bound(hidden);
        fn leaf<E: Float, S: Shape>(
            sizes: &[usize],
            bound: f64,
            seed: u64,
        ) -> Result<Tensor<E, S>> {
            uniform(sizes, bound, seed)?.try_requires_grad_(true)
        }
        Ok(Recurrent {
            weight_ih: leaf(&[gates, input], bound, derive_seed(seed, 0))?,
            weight_hh: leaf(&[gates, hidden], bound, derive_seed(seed, 1))?,
            bias_ih: Some(leaf(&[gates], bound, derive_seed(seed, 2))?),
            bias_hh: Some(leaf(&[gates], bound, derive_seed(seed, 3))?),
            cell: PhantomData,
        })
    }

    /// The layer without biases (`bias=False`).
    pub fn without_bias(mut self) -> Self {
        self.bias_ih = None;
        self.bias_hh = None;
        self
    }

    /// The hidden state at every position of `x` along `Seq`: `x`'s dims without `In`, then
    /// `Hidden` (PyTorch's `output`; its entry at the last position is `h_n`). Panics where
    /// [`Recurrent::try_forward`] fails.
    #[track_caller]
    pub fn forward<Seq: Dim, S>(
        &self,
        x: &Tensor<E, S>,
        seq: Seq,
    ) -> LinearOut<E, S, (), In, Hidden>
    where
        S: HasDim<Seq> + HasDim<In> + Contract<In, (Hidden, In), (), ()>,
    {
        or_panic(self.try_forward(x, seq))
    }

    /// [`Recurrent::forward`], or an error when `x`'s `In` size is not the layer's, or `x`
    /// already has a dim `Hidden`.
    pub fn try_forward<Seq: Dim, S>(
        &self,
        x: &Tensor<E, S>,
        _seq: Seq,
    ) -> Result<LinearOut<E, S, (), In, Hidden>>
    where
        S: HasDim<Seq> + HasDim<In> + Contract<In, (Hidden, In), (), ()>,
    {
        let in_axis = <S as HasDim<In>>::AXIS as usize;
        let seq_axis = <S as HasDim<Seq>>::AXIS as usize;
        let input = self.weight_ih.shape()[1];
        if x.shape()[in_axis] != input || S::NAMES.contains(&Hidden::NAME) {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                C::NAME,
                format!(
                    "the input {:?} of dims {:?} needs {input} entries along `{}` and no dim \
                     `{}`",
                    x.shape(),
                    S::NAMES,
                    In::NAME,
                    Hidden::NAME
                ),
            ));
        }
        Ok(Tensor::wrap(self.run(x.as_dyn(), in_axis, seq_axis)?))
    }

    /// The recurrence on a positional tensor whose features are on `in_axis` and steps on
    /// `seq_axis`: the result has `in_axis` removed and the hidden units last.
    fn run(&self, x: &DynTensor<E>, in_axis: usize, seq_axis: usize) -> Result<DynTensor<E>> {
        let hidden = self.weight_hh.shape()[1];
        let mut order: Vec<isize> = (0..x.dim() as isize)
            .filter(|&i| i != in_axis as isize)
            .collect();
        order.push(in_axis as isize);
        // (x's dims without In, Gates): every step's input share in one product.
        let gx = x
            .try_permute(&order)?
            .try_matmul(&self.weight_ih.as_dyn().t())?;
        let gx = match &self.bias_ih {
            Some(b) => gx.try_add_bias(b.as_dyn())?,
            None => gx,
        };
        let step_axis = seq_axis - usize::from(seq_axis > in_axis);
        let mut state_shape = gx.shape().to_vec();
        state_shape.remove(step_axis);
        *state_shape.last_mut().expect("the gates' dim") = hidden;
        let zeros = DynTensor::<E>::zeros_on(&state_shape, x.device())?;
        let mut state = vec![zeros; C::STATES];
        let w_hh = self.weight_hh.as_dyn().t();
        let steps = gx.shape()[step_axis];
        let mut outputs = Vec::with_capacity(steps);
        for t in 0..steps {
            let gh = state[0].try_matmul(&w_hh)?;
            let gh = match &self.bias_hh {
                Some(b) => gh.try_add_bias(b.as_dyn())?,
                None => gh,
            };
            let gx_t = gx.try_select(step_axis as isize, t as isize)?;
            state = C::step(&gx_t, &gh, &state)?;
            outputs.push(state[0].shallow_clone());
        }
        if outputs.is_empty() {
            let mut shape = gx.shape().to_vec();
            *shape.last_mut().expect("the gates' dim") = hidden;
            return DynTensor::zeros_on(&shape, x.device());
        }
        let outputs: Vec<&DynTensor<E>> = outputs.iter().collect();
        DynTensor::try_stack(&outputs, step_axis as isize)
    }
}

impl<In: Dim, Hidden: Dim, C: RecurrentCell, E: Float> Module<E> for Recurrent<In, Hidden, C, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight_ih_l0", &self.weight_ih);
        v.param("weight_hh_l0", &self.weight_hh);
        v.param_opt("bias_ih_l0", &self.bias_ih);
        v.param_opt("bias_hh_l0", &self.bias_hh);
    }
}
