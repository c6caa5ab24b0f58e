//! Dimension names checked by the compiler.
//!
//! A tensor's dimensions are types declared with [`dims!`](crate::dims), and its shape
//! is a tuple of them, `(Batch, Channels, Rows, Cols)`. Every named operation is a trait
//! on the shape that does two things at compile time:
//!
//! 1. it checks the operation (the dimension exists, the target is a permutation, the
//!    contracted dims line up, …) and, if not, fails with a message in the user's terms:
//!    ``dimension `Channels` is not in tensor of dims `(Batch, Rows, Cols)` ``;
//! 2. it computes the result's dims as a type, and the axis positions the positional
//!    operation needs as associated constants.
//!
//! ```
//! use namedtensor::named::{names, Contract, PermuteTo, ReduceOver};
//! namedtensor::dims! { Batch, Channels, Rows, Cols }
//! type Image = (Batch, Channels, Rows, Cols);
//!
//! // `img.sum(Channels)`: reduce over axis 1, giving (Batch, Rows, Cols).
//! assert_eq!(<Image as ReduceOver<Channels>>::AXES, [1]);
//! assert_eq!(names::<<Image as ReduceOver<Channels>>::Out>(), ["Batch", "Rows", "Cols"]);
//!
//! // `img.permute::<(Batch, Rows, Cols, Channels)>()`: NCHW to NHWC.
//! assert_eq!(<Image as PermuteTo<(Batch, Rows, Cols, Channels)>>::PERM, [0, 2, 3, 1]);
//!
//! // `img.dot(Cols, &img)`: the shared dims not contracted are batch dims, so this is
//! // the dot product of every row with itself.
//! type RowNorms = <Image as Contract<Cols, Image>>::Out;
//! assert_eq!(names::<RowNorms>(), ["Batch", "Channels", "Rows"]);
//! ```
//!
//! # Conventions
//!
//! - Axis positions are `isize`, as in the positional API, and index the *full* tensor:
//!   private (masked) dims first, then visible dims (see [`Axes`], [`Alignment`]).
//! - Every operation trait takes the tensor's private dims as a parameter defaulting to
//!   `()`, and binary operations take both operands' (see [`MaskTo`]).
//! - Generic code states the operation it needs as a bound on the whole shape,
//!   `where S: ReduceOver<Seq>`, and works for any shape that has `Seq` (next section).
//!
//! # Generic code
//!
//! A function or type that is generic over dims states, for each named operation it calls,
//! that operation's trait as a bound, and takes the result's dims from the trait's `Out`:
//!
//! | operation | bound |
//! |---|---|
//! | `size`, `softmax`, `log_softmax`, `narrow`, `cumsum`, `cat` | `S: HasDim<D>` |
//! | `sum`, `mean`, `var`, `std`, … over `R` (a dim or a tuple) | `S: ReduceOver<R>` |
//! | `select`, `unbind`, `max`/`min` along `D` | `S: RemoveDim<D>` |
//! | `dot(K, &other)` | `S: Contract<K, S2>` |
//! | `matmul(&other)` | `S: MatMul<S2>` |
//! | arithmetic, comparisons, `where_` between two tensors of the same dims `X` | `X: Elementwise` |
//! | the same between tensors of other dims (by name / strict) | `S: Broadcast<S2>` / `S: SameDims<S2>` |
//! | `align_to`, `align_as` / `permute` | `S: AlignTo<T>` / `S: PermuteTo<T>` |
//! | `rename` | `S: Rename<Old, New>` |
//! | `split` / `merge` | `S: ReplaceDim<D, With>` / `S: MergeDims<Src, New>` |
//! | `mask` / `mask_to` | `S: MaskDims<R>` / `S: MaskTo<D>` |
//!
//! A struct or function may hold and pass tensors whose dims are generic parameters,
//! `Tensor<f32, (In, Out)>`, with no bound: the type asks only for a [`DimTuple`]. Creating
//! one (`zeros`, `randn`, `refine_names`, `load`) asks for a [`Shape`], whose dims are
//! distinct; whether `In` and `Out` differ is known only once they are concrete, so
//! generic code that creates such a tensor states `where (In, Out): Shape`, and the check
//! happens at each use with concrete dims. Leaving a bound out is an error whose first
//! line says so (the list traits that rustc's own suggestion names are internal). An
//! operation that produces private dims is bounded with them, e.g. `Contract<H, K, Private
//! = ()>`, and naming the result's dims (`Out = X`) lets the next operation's bound be on
//! `X`, as in the gated layer below.
//!
//! ```
//! use namedtensor::named::{Contract, Dim, Elementwise, HasDim, ReduceOver, Shape};
//! use namedtensor::nn::Linear;
//! use namedtensor::Tensor;
//! namedtensor::dims! { Batch, Seq, Query, Key, Hidden }
//!
//! fn probabilities<S: HasDim<D>, D>(x: &Tensor<f32, S>) -> Tensor<f32, S> {
//!     x.softmax::<D>()
//! }
//! fn pooled<S: ReduceOver<R>, R>(x: &Tensor<f32, S>) -> Tensor<f32, <S as ReduceOver<R>>::Out> {
//!     x.mean::<R>()
//! }
//! fn scores<Q, K: Shape, H: Default>(q: &Tensor<f32, Q>, k: &Tensor<f32, K>)
//!     -> Tensor<f32, <Q as Contract<H, K>>::Out>
//! where
//!     Q: Contract<H, K, Private = ()>,
//! {
//!     q.dot(H::default(), k)
//! }
//! struct Layer<In: Dim, Out: Dim> {
//!     weight: Tensor<f32, (In, Out)>,
//! }
//! impl<In: Dim, Out: Dim> Layer<In, Out> {
//!     // Only creating a tensor asks whether `In` and `Out` differ.
//!     fn new(rows: usize, cols: usize) -> Self
//!     where
//!         (In, Out): Shape,
//!     {
//!         Layer { weight: Tensor::ones([rows, cols]) }
//!     }
//!     fn total(&self) -> f32 {
//!         self.weight.to_vec().iter().sum()
//!     }
//! }
//! /// `value(x) * sigmoid(gate(x)) + skip(x)` for any dims that have `In`: the layers'
//! /// result is named `X` (`Out = X`), and `X: Elementwise` allows `*` and the strict `+`.
//! struct Gated<In: Dim, Out: Dim> {
//!     value: Linear<In, Out>,
//!     gate: Linear<In, Out>,
//!     skip: Linear<In, Out>,
//! }
//! impl<In: Dim, Out: Dim> Gated<In, Out> {
//!     fn forward<S, X>(&self, x: &Tensor<f32, S>) -> Tensor<f32, X>
//!     where
//!         S: Contract<In, (Out, In), Out = X, Private = ()>,
//!         X: Elementwise,
//!     {
//!         let gated = self.value.forward(x) * self.gate.forward(x).sigmoid();
//!         gated.add_strict(&self.skip.forward(x))
//!     }
//! }
//!
//! let x = Tensor::<f32, (Batch, Seq, Hidden)>::ones([2, 3, 4]);
//! let p: Tensor<f32, (Batch, Hidden)> = pooled::<_, Seq>(&x);
//! assert_eq!(probabilities::<_, Hidden>(&p).to_vec()[0], 0.25);
//! let q = Tensor::<f32, (Batch, Query, Hidden)>::ones([2, 3, 4]);
//! let k = Tensor::<f32, (Batch, Key, Hidden)>::ones([2, 5, 4]);
//! let s: Tensor<f32, (Batch, Query, Key)> = scores::<_, _, Hidden>(&q, &k);
//! assert_eq!(s.to_vec()[0], 4.0);
//! let layer = Layer::<Hidden, Key>::new(4, 5);
//! assert_eq!(layer.weight.shape(), &[4, 5]);
//! assert_eq!(layer.total(), 20.0);
//! let (value, gate, skip) = (Linear::new(4, 5), Linear::new(4, 5), Linear::new(4, 5));
//! let gated = Gated::<Hidden, Key> { value, gate, skip };
//! let y: Tensor<f32, (Batch, Seq, Key)> = gated.forward(&x);
//! assert_eq!(y.shape(), &[2, 3, 5]);
//! ```
//!
//! # How it works
//!
//! Each dimension type carries a 64-bit id as sixteen hexadecimal digit types
//! ([`id`]), which makes type equality decidable ([`DimEq`]). Inside, shapes are
//! frunk HLists, and the algebra on them ([`list`]) is total: it always yields a
//! type. Rules are enforced only by the small traits of [`assert`](mod@assert), whose
//! `#[diagnostic::on_unimplemented]` messages are the errors users see. Axis positions
//! are then computed by `const fn`s from the shapes' ids.
//!
//! # Compile time
//!
//! Each operation trait forwards to a hidden helper implemented for the type a method
//! call infers last: the other operand's dims, or the dimension argument. The trait
//! solver never selects an impl for a type it has not inferred yet, so `a.dot(Hidden,
//! &b)` is checked once `b`'s dims are known instead of being expanded symbolically
//! first, which made such calls two to three times slower to compile. For the same reason
//! the list algebra's impls dispatch only on a list's outermost constructor: a partially
//! inferred list never sends the solver into unbounded recursion.
//! `benches/compile-time` measures a crate of 300 operations.

pub mod assert;
mod axes;
mod dim;
pub mod id;
pub mod list;
pub mod logic;
mod shape;

mod align;
mod broadcast;
mod contract;
mod mask;
mod reduce;
mod rename;
mod reshape;

pub use align::{AlignTo, PermuteTo};
pub use assert::Pass;
pub use axes::{Alignment, Axes, MAX_AXES};
pub use broadcast::{Broadcast, BroadcastPositional, Elementwise, SameDims};
pub use contract::{Contract, Contraction, MatMul};
pub use dim::{Dim, DimEq, Dims, NoDim};
pub use mask::{MaskDims, MaskTo, Unmask};
pub use reduce::{HasDim, ReduceOver, RemoveDim, axis_of};
pub use rename::Rename;
pub use reshape::{MergeDims, ReplaceDim, Stack};
pub use shape::{DimTuple, MAX_RANK, RankTooLarge, Shape, ToTuple, Tuple, names, rank};

#[doc(hidden)]
pub use namedtensor_macros::__dims;

// The helpers the operation traits forward to (see "Compile time" above). Public because
// they appear in the operations' bounds; re-exported here so that compiler notes name
// them briefly.
#[doc(hidden)]
pub use {
    align::{AlignToTarget, PermuteToTarget},
    broadcast::{BroadcastPositionalRhs, BroadcastRhs, ByNameDims, SameDimsRhs, StrictDims},
    contract::{ContractRhs, MatMulRhs},
    dim::DimEqRest,
    mask::{MaskDimsArg, MaskToArg},
    reduce::{HasDimArg, ReduceOverArg, RemoveDimArg},
    rename::RenameArg,
    reshape::{MergeDimsArg, ReplaceDimArg, StackArg},
};
