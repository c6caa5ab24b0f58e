// Generic named code: each operation is stated once as a bound in user terms, and the
// result's dims are that bound's `Out`.
use namedtensor::Tensor;
use namedtensor::named::{Contract, Dim, Elementwise, HasDim, ReduceOver, Shape};
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
            fc1: Linear::seeded(sizes[0], sizes[1], seed),
            fc2: Linear::seeded(sizes[1], sizes[2], seed + 1),
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

/// A gated layer with a projected skip, generic over the input's other dims: the layers'
/// result is named `X`, and `X: Elementwise` is the one bound elementwise math on two `X`
/// tensors needs (by name, strict, comparisons, `where_`).
struct Gated<In: Dim, Out: Dim> {
    value: Linear<In, Out>,
    gate: Linear<In, Out>,
    skip: Linear<In, Out>,
}

impl<In: Dim, Out: Dim> Gated<In, Out> {
    fn forward<S, X>(&self, x: &Tensor<f32, S>) -> Tensor<f32, X>
    where
        S: Contract<In, (Out, In), Out = X, Private = ()>,
        X: Elementwise,
    {
        let gated = self.value.forward(x) * self.gate.forward(x).sigmoid();
        let skip = self.skip.forward(x);
        let out = gated.add_strict(&skip) - &skip * 0.5;
        // Keep the larger of the two where it is positive: a comparison and `where_`.
        let larger = out.gt(&skip);
        out.where_(&larger, &skip)
    }
}

/// A residual update of any dims: strict, so a mismatch would not compile at the call.
fn residual<X: Elementwise>(x: &Tensor<f32, X>, update: &Tensor<f32, X>) -> Tensor<f32, X> {
    x.add_strict(update) / 2.0
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

    // The generic gated layer against the same math on concrete dims, element by element.
    let gated = Gated::<Hidden, Key> {
        value: Linear::seeded(4, 5, 1),
        gate: Linear::seeded(4, 5, 2),
        skip: Linear::seeded(4, 5, 3),
    };
    let x = Tensor::<f32, (Batch, Seq, Hidden)>::randn([2, 3, 4], 4);
    let y: Tensor<f32, (Batch, Seq, Key)> = gated.forward(&x);
    let (v, g, k) = (
        gated.value.forward(&x).to_vec(),
        gated.gate.forward(&x).to_vec(),
        gated.skip.forward(&x).to_vec(),
    );
    for (i, &got) in y.to_vec().iter().enumerate() {
        let out = v[i] / (1.0 + (-g[i]).exp()) + k[i] - 0.5 * k[i];
        let want = if out > k[i] { out } else { k[i] };
        assert!((got - want).abs() < 1e-5, "element {i}: {got} vs {want}");
    }
    let r = residual(&y, &y.map(|t| t.neg()));
    assert_eq!(r.to_vec(), vec![0.0; 30]);
}
