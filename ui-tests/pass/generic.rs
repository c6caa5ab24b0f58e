// Generic named code: each operation is stated once as a bound in user terms, and the
// result's dims are that bound's `Out`.
use namedtensor::Tensor;
use namedtensor::named::{Contract, Dim, HasDim, ReduceOver, Shape};
use namedtensor::nn::{Linear, LinearOut};

namedtensor::dims! { Batch, Seq, Query, Key, Hidden, Classes }

/// Softmax along any dim of any shape.
fn probabilities<S, D>(logits: &Tensor<f32, S>) -> Tensor<f32, S>
where
    S: HasDim<D>,
{
    logits.softmax::<D>()
}

/// Mean over any dims, whatever the rest of the shape.
fn pooled<S, R>(x: &Tensor<f32, S>) -> Tensor<f32, <S as ReduceOver<R>>::Out>
where
    S: ReduceOver<R>,
{
    x.mean::<R>()
}

/// Attention scores over any hidden dim, with any batch dims around it.
fn scores<Q, K, H>(
    q: &Tensor<f32, Q>,
    k: &Tensor<f32, K>,
) -> Tensor<f32, <Q as Contract<H, K>>::Out>
where
    Q: Contract<H, K, Private = ()>,
    K: Shape,
    H: Default,
{
    q.dot(H::default(), k)
}

/// A layer whose parameter's dims are generic: holding and using it needs no bound on its
/// dims; only creating the tensor asks whether they differ.
struct Layer<In: Dim, Out: Dim> {
    weight: Tensor<f32, (In, Out)>,
}

impl<In: Dim, Out: Dim> Layer<In, Out> {
    fn new(rows: usize, cols: usize) -> Self
    where
        (In, Out): Shape,
    {
        Layer {
            weight: Tensor::ones([rows, cols]),
        }
    }

    /// Math that keeps the dims, a copy and gradients need no bound.
    fn squashed(&self) -> Tensor<f32, (In, Out)> {
        let y = (-self.weight.relu() * 2.0 + 3.0).abs().sqrt();
        y.clone().requires_grad_(true)
    }

    fn total(&self) -> f32
    where
        (In, Out): ReduceOver<(In, Out), Out = ()>,
    {
        self.weight.sum::<(In, Out)>().item()
    }
}

/// A model of library layers, generic over its dims: no bound on the struct, the shapes of
/// its parameters on the constructor, and each operation's bound on `forward`.
struct Mlp<In: Dim, Hid: Dim, Out: Dim> {
    fc1: Linear<In, Hid>,
    fc2: Linear<Hid, Out>,
}

impl<In: Dim, Hid: Dim, Out: Dim> Mlp<In, Hid, Out> {
    fn new(sizes: [usize; 3], seed: u64) -> Self
    where
        (Hid, In): Shape,
        (Out, Hid): Shape,
    {
        Mlp {
            fc1: Linear::new(sizes[0], sizes[1], seed),
            fc2: Linear::new(sizes[1], sizes[2], seed + 1),
        }
    }

    fn forward<S, H>(&self, x: &Tensor<f32, S>) -> LinearOut<f32, H, (), Hid, Out>
    where
        S: Contract<In, (Hid, In), Out = H, Private = ()>,
        H: Contract<Hid, (Out, Hid), Private = ()>,
    {
        self.fc2.forward(&self.fc1.forward(x).relu())
    }
}

fn main() {
    let logits = Tensor::<f32, (Batch, Classes)>::zeros([2, 4]);
    assert_eq!(probabilities::<_, Classes>(&logits).to_vec()[0], 0.25);
    let x = Tensor::<f32, (Batch, Seq, Hidden)>::ones([2, 3, 4]);
    let p: Tensor<f32, (Batch, Hidden)> = pooled::<_, Seq>(&x);
    assert_eq!(p.shape(), &[2, 4]);
    let q = Tensor::<f32, (Batch, Query, Hidden)>::ones([2, 3, 4]);
    let k = Tensor::<f32, (Batch, Key, Hidden)>::ones([2, 5, 4]);
    let s: Tensor<f32, (Batch, Query, Key)> = scores::<_, _, Hidden>(&q, &k);
    assert_eq!(s.to_vec()[0], 4.0);
    let layer = Layer::<Hidden, Classes>::new(4, 3);
    assert_eq!(layer.total(), 12.0);
    assert_eq!(layer.squashed().to_vec(), vec![1.0; 12]);
    let mlp = Mlp::<Hidden, Key, Classes>::new([4, 5, 3], 0);
    let y: Tensor<f32, (Batch, Seq, Classes)> = mlp.forward(&x);
    assert_eq!(y.shape(), &[2, 3, 3]);
}
