//! Layers, losses and parameter files for model code written by names.
//!
//! A layer's type says what it does to dims: [`Linear<In, Out>`](Linear) maps `(…, In)` to
//! `(…, Out)`, [`Embedding<Vocab, D>`](Embedding) maps indices `(…)` to `(…, D)`,
//! [`LayerNorm<D>`](LayerNorm) and [`RmsNorm<D>`](RmsNorm) keep the shape,
//! [`Conv2d<In, Out, H, W>`](Conv2d) maps `(…, In, H, W)` to `(…, Out, H', W')` (dims found by
//! name, in any order), the pools keep the names, [`MultiHeadAttention`] and [`TransformerBlock`] keep the
//! shape and attend along a sequence dim named at the call (under key padding and attention
//! masks checked by name: [`AttentionMasks`]), so applying one to a tensor without the dim it
//! needs is a compile error naming that dim. Every layer is a [`Forward`] of its input, and
//! a tuple of layers is one too, applying them in order (PyTorch's `nn.Sequential`, its
//! parameter names included): `(Linear<A, B>, Relu, Linear<B, C>)` maps `(…, A)` to `(…, C)`,
//! with the activations as layer values ([`Relu`], [`Gelu`], [`Softmax<D>`](Softmax), …) and
//! [`Along<Seq, _>`](Along) fixing the sequence dim of attention blocks. A model is a plain
//! struct of layers implementing [`Module`] (one method naming its fields), which gives it
//! the parameter list by dotted name, `train`/`eval`, `zero_grad` and the parameter store
//! ([`save_parameters`], [`load_parameters`]). Losses are in [`loss`]; optimisers in
//! [`crate::optim`].
//!
//! Parameters and initialisations follow PyTorch's `torch.nn`. A layer's `new` draws its
//! parameters from the process's generator, which [`manual_seed`](crate::random::manual_seed)
//! seeds (PyTorch's model: one seed per program, and two layers built one after the other
//! start different); its `seeded` form takes an explicit seed instead.

mod activation;
mod adaptive_pool;
mod attention;
mod attention_mask;
mod batch_norm;
mod conv;
mod conv1d;
mod dropout;
mod embedding;
mod forward;
mod group_norm;
pub mod init;
mod layer_norm;
mod linear;
pub mod loss;
mod module;
mod recurrent;
mod rms_norm;
pub(crate) mod store;
mod transformer;

pub use activation::{Gelu, GeluTanh, LogSoftmax, Relu, Sigmoid, Silu, Softmax, Tanh};
pub use adaptive_pool::AdaptiveAvgPool2d;
pub use attention::MultiHeadAttention;
pub use attention_mask::{AttentionMasks, KeyPaddingMask, MaskElement, NoMask, QueryKeyMask};
pub use batch_norm::BatchNorm;
pub use conv::{AvgPool2d, Conv2d, ConvOut, ConvWeight, KernelCols, KernelRows, MaxPool2d};
pub use conv1d::Conv1d;
pub use dropout::Dropout;
pub use embedding::{Embedded, Embedding};
pub use forward::{Along, Forward, Output};
pub use group_norm::GroupNorm;
pub use layer_norm::LayerNorm;
pub use linear::{Linear, LinearOut};
pub use module::{Buffer, BufferTensor, Module, Parameter, TrainingFlag, Visitor};
pub use recurrent::{Gates, Gru, GruCell, Lstm, LstmCell, Recurrent, RecurrentCell};
pub use rms_norm::RmsNorm;
pub use store::{load_parameters, save_parameters};
pub use transformer::{TransformerBlock, TransformerConfig};
