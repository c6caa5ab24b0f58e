// Generic named code: each operation is stated once as a bound in user terms, and the
// result's dims are that bound's `Out`.
use namedtensor::named::{Contract, Dim, HasDim, ReduceOver, Shape};
use namedtensor::Tensor;

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
fn scores<Q, K, H>(q: &Tensor<f32, Q>, k: &Tensor<f32, K>) -> Tensor<f32, <Q as Contract<H, K>>::Out>
where
    Q: Contract<H, K, Private = ()>,
    K: Shape,
    H: Default,
{
    q.dot(H::default(), k)
}

/// A layer whose parameter's dims are generic: its shape is one bound.
struct Layer<In: Dim, Out: Dim>
where
    (In, Out): Shape,
{
    weight: Tensor<f32, (In, Out)>,
}

impl<In: Dim, Out: Dim> Layer<In, Out>
where
    (In, Out): ReduceOver<(In, Out), Out = ()>,
{
    fn total(&self) -> f32 {
        self.weight.sum::<(In, Out)>().item()
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
    let layer = Layer::<Hidden, Classes> { weight: Tensor::ones([4, 3]) };
    assert_eq!(layer.total(), 12.0);
}
