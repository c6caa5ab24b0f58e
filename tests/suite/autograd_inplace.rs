//! In-place ops inside a graph: recorded writes on tensors made by ops and through their
//! views, checked against central finite differences of the same in-place code run under
//! `no_grad`, over random shapes, views and ops; and the writes that stay errors. (PyTorch's
//! gradients for fixed cases are in `autograd_torch.rs`.)

use namedtensor::autograd::no_grad;
use namedtensor::nn::{Linear, Module};
use namedtensor::{DynTensor, ErrorKind, Tensor, dims};
use proptest::prelude::*;

type T = DynTensor<f64>;

fn leaf(v: Vec<f64>, shape: &[usize]) -> T {
    DynTensor::from_vec(v, shape).requires_grad_(true)
}

/// Where in `h` an in-place op writes.
#[derive(Clone, Copy, Debug)]
enum Place {
    Whole,
    /// `narrow(dim, start, len)`.
    Narrow(usize, usize, usize),
    /// `select(dim, index)`.
    Select(usize, usize),
    /// `t()` then `narrow(0, start, len)`.
    TransposedNarrow(usize, usize),
    /// `narrow(0, start, len)` then `select(1, index)`: a view of a view.
    NarrowSelect(usize, usize, usize),
    /// Flattened (a view across the dims), then `narrow(0, start, len)`.
    FlatNarrow(usize, usize),
}

impl Place {
    fn of(self, h: &T) -> T {
        match self {
            Place::Whole => h.shallow_clone(),
            Place::Narrow(d, s, l) => h.narrow(d as isize, s as isize, l),
            Place::Select(d, i) => h.select(d as isize, i as isize),
            Place::TransposedNarrow(s, l) => h.t().narrow(0, s as isize, l),
            Place::NarrowSelect(s, l, i) => h.narrow(0, s as isize, l).select(1, i as isize),
            Place::FlatNarrow(s, l) => h.view(&[-1]).narrow(0, s as isize, l),
        }
    }
}

/// The in-place op written through the view `v`, with `z` (of `v`'s shape) as its operand.
#[derive(Clone, Copy, Debug)]
enum Op {
    Exp,
    Sin,
    MulScalar,
    AddTensor,
    MulTensor,
    CopyFrom,
    Fill,
    Clamp,
}

impl Op {
    fn apply(self, v: &T, z: &T) {
        match self {
            Op::Exp => v.exp_(),
            Op::Sin => v.sin_(),
            Op::MulScalar => v.mul_scalar_(-1.5),
            Op::AddTensor => v.add_(z),
            Op::MulTensor => v.mul_(z),
            Op::CopyFrom => v.copy_(z),
            Op::Fill => v.fill_(0.25),
            Op::Clamp => v.clamp_(-0.3, 0.4),
        };
    }
}

/// `Σ r ⊙ g(h')` where `h = tanh(x) · 2`, `h'` is `h` after `op` through `place` and a
/// second op on the whole of `h`, and the earlier view is read again afterwards (so that a
/// view whose base moved on is used). `x` and `z` may or may not require grad.
fn loss(x: &T, z: &T, r: &T, place: Place, op: Op, then_scale: bool) -> T {
    let h = &x.tanh() * 2.0;
    let v = place.of(&h);
    op.apply(&v, z);
    if then_scale {
        h.mul_(&x.cos());
    }
    let out = &(&h * &h) * r;
    out.sum() + (&v * &v).sum()
}

fn place_for(a: usize, b: usize) -> impl Strategy<Value = Place> {
    prop_oneof![
        Just(Place::Whole),
        (0..2usize).prop_flat_map(move |d| {
            let n = [a, b][d];
            (0..n).prop_flat_map(move |s| (1..=n - s).prop_map(move |l| Place::Narrow(d, s, l)))
        }),
        (0..2usize).prop_flat_map(move |d| (0..[a, b][d]).prop_map(move |i| Place::Select(d, i))),
        (0..b).prop_flat_map(move |s| (1..=b - s).prop_map(move |l| Place::TransposedNarrow(s, l))),
        (0..a).prop_flat_map(move |s| {
            (1..=a - s)
                .prop_flat_map(move |l| (0..b).prop_map(move |i| Place::NarrowSelect(s, l, i)))
        }),
        (0..a * b)
            .prop_flat_map(move |s| { (1..=a * b - s).prop_map(move |l| Place::FlatNarrow(s, l)) }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Exp),
        Just(Op::Sin),
        Just(Op::MulScalar),
        Just(Op::AddTensor),
        Just(Op::MulTensor),
        Just(Op::CopyFrom),
        Just(Op::Fill),
        Just(Op::Clamp),
    ]
}

proptest! {
    #![proptest_config(crate::common::proptest_cases(48))]

    #[test]
    fn recorded_in_place_writes_match_finite_differences(
        (shape, place) in (2..5usize, 2..5usize)
            .prop_flat_map(|(a, b)| (Just(vec![a, b]), place_for(a, b))),
        op in op(),
        then_scale in any::<bool>(),
        seed in 0..1000u64,
    ) {
        let x0 = DynTensor::<f64>::randn(&shape, seed).to_vec();
        let r = DynTensor::<f64>::randn(&shape, seed + 1);
        let vshape = place.of(&T::zeros(&shape)).shape().to_vec();
        let z0 = DynTensor::<f64>::randn(&vshape, seed + 2).to_vec();
        let x = leaf(x0.clone(), &shape);
        let z = leaf(z0.clone(), &vshape);
        let l = loss(&x, &z, &r, place, op, then_scale);
        if matches!(op, Op::Exp) && then_scale {
            // `exp_` saved its output, which the write of the whole of `h` overwrote: the
            // backward pass is an error naming it, as in PyTorch.
            let e = l.try_backward().unwrap_err();
            prop_assert!(e.to_string().contains("`exp`"), "{}", e);
            return Ok(());
        }
        l.backward();
        let f = |xs: &[f64], zs: &[f64]| {
            no_grad(|| {
                let x = DynTensor::from_vec(xs.to_vec(), &shape);
                let z = DynTensor::from_vec(zs.to_vec(), &vshape);
                loss(&x, &z, &r, place, op, then_scale).item()
            })
        };
        let eps = 1e-6;
        let check = |what: &str, grad: Option<T>, base: &[f64], of_x: bool| {
            let grad = grad.map(|g| g.to_vec()).unwrap_or_else(|| vec![0.0; base.len()]);
            for i in 0..base.len() {
                let (mut up, mut down) = (base.to_vec(), base.to_vec());
                up[i] += eps;
                down[i] -= eps;
                let fd = if of_x {
                    (f(&up, &z0) - f(&down, &z0)) / (2.0 * eps)
                } else {
                    (f(&x0, &up) - f(&x0, &down)) / (2.0 * eps)
                };
                prop_assert!(
                    (grad[i] - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                    "{what}[{i}] {place:?} {op:?} then_scale={then_scale}: ours {}, finite \
                     differences {fd}", grad[i]
                );
            }
            Ok(())
        };
        check("x", x.grad(), &x0, true)?;
        check("z", z.grad(), &z0, false)?;
    }
}

#[test]
fn overwriting_a_saved_output_makes_backward_the_error_naming_the_op() {
    let x = leaf(vec![0.5, 1.0], &[2]);
    let y = x.exp(); // exp saves its output
    y.mul_scalar_(2.0); // recorded, but it overwrites what exp saved
    let e = y.sum().try_backward().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Autograd);
    let msg = e.to_string();
    assert!(
        msg.contains("`exp`") && msg.contains("modified in place"),
        "{msg}"
    );
    // An op that saves nothing it overwrote differentiates.
    let h = &x * 3.0;
    h.mul_scalar_(2.0);
    h.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![6.0, 6.0]);
}

#[test]
fn writes_into_leaves_and_untracked_tensors_stay_errors() {
    let w = leaf(vec![1.0, 2.0, 3.0], &[3]);
    for e in [
        w.try_exp_().map(drop).unwrap_err(),
        w.narrow(0, 1, 2)
            .try_add_scalar_(1.0)
            .map(drop)
            .unwrap_err(),
        w.t().try_fill_(0.0).map(drop).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Autograd);
        assert!(e.to_string().contains("leaf"), "{e}");
    }
    assert_eq!(w.to_vec(), vec![1.0, 2.0, 3.0]);
    // A source that requires grad into a tensor that does not.
    let buf = T::zeros(&[3]);
    assert!(buf.try_copy_(&w).is_err());
    assert!(buf.try_add_(&w).is_err());
    assert_eq!(buf.to_vec(), vec![0.0; 3]);
    // Under no_grad every write is a plain one.
    no_grad(|| {
        w.narrow(0, 0, 1).fill_(7.0);
    });
    assert_eq!(w.to_vec(), vec![7.0, 2.0, 3.0]);
    // Element `set` is not recorded: refused on a tensor of a graph.
    let h = &w * 1.0;
    assert_eq!(
        h.try_set(&[0], 1.0).unwrap_err().kind(),
        ErrorKind::Autograd
    );
}

#[test]
fn a_failed_in_place_op_leaves_the_tensor_and_its_graph_alone() {
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let h = &x * 2.0;
    let before = h.grad_fn();
    assert!(h.try_add_(&T::ones(&[3])).is_err()); // does not broadcast
    assert!(h.expand(&[2, 2, 2]).try_exp_().is_err()); // overlapping
    assert_eq!(h.to_vec(), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!(h.grad_fn(), before);
    h.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![2.0; 4]);
}

#[test]
fn the_written_tensor_and_its_base_name_their_new_nodes() {
    let x = leaf(vec![1.0, -2.0, 3.0], &[3]);
    let h = &x * 2.0;
    assert_eq!(h.grad_fn(), Some("mul"));
    h.relu_();
    assert_eq!(h.grad_fn(), Some("relu"));
    let v = h.narrow(0, 0, 2);
    v.add_scalar_(1.0);
    assert_eq!(h.grad_fn(), Some("CopySlices"));
    assert!(!h.is_leaf() && h.requires_grad());
}

#[test]
fn a_retained_gradient_follows_the_tensor_through_an_in_place_op() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let h = &x * 1.0;
    h.retain_grad();
    h.mul_scalar_(3.0);
    (&h * &h).sum().backward();
    // The gradient of h's current value (3x): 2·3x.
    assert_eq!(h.grad().unwrap().to_vec(), vec![6.0, 12.0]);
    assert_eq!(x.grad().unwrap().to_vec(), vec![18.0, 36.0]);
}

dims! { Batch, In, Hidden, Out }

/// A two-layer perceptron whose activation is `relu_` or `relu`.
fn mlp_grads(in_place: bool) -> Vec<Vec<f32>> {
    let l1 = Linear::<In, Hidden>::seeded(5, 7, 3);
    let l2 = Linear::<Hidden, Out>::seeded(7, 2, 4);
    let x = Tensor::<f32, (Batch, In)>::randn([6, 5], 9);
    let h = l1.forward(&x);
    let h = if in_place {
        h.relu_();
        h
    } else {
        h.relu()
    };
    let y = l2.forward(&h);
    let y = if in_place {
        y.sigmoid_();
        y
    } else {
        y.sigmoid()
    };
    (&y * &y).sum::<(Batch, Out)>().backward();
    let mut grads = Vec::new();
    for p in l1.parameters().iter().chain(&l2.parameters()) {
        grads.push(p.tensor.grad().unwrap().to_vec());
    }
    grads
}

#[test]
fn in_place_activations_in_a_model_give_the_out_of_place_gradients() {
    assert_eq!(mlp_grads(true), mlp_grads(false));
}

#[test]
fn an_activation_in_place_saves_its_output_like_pytorch() {
    // relu_ reads only its output in the backward pass: it writes in place, and its node
    // keeps the written tensor, so a later write over it is the backward error.
    let x = leaf(vec![1.0, -2.0, 3.0], &[3]);
    let h = &x * 2.0;
    h.relu_();
    h.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![2.0, 0.0, 2.0]);
    let h = &x * 2.0;
    h.relu_();
    let loss = h.sum();
    h.add_scalar_(1.0); // recorded itself, but relu's saved output is gone
    let e = loss.try_backward().unwrap_err();
    assert!(e.to_string().contains("`relu`"), "{e}");
    // sin_ reads its input: recorded on a copy, so a later write is harmless.
    let s = &x * 1.0;
    s.sin_();
    let loss = s.sum();
    s.add_scalar_(1.0);
    x.zero_grad();
    loss.backward();
    let want: Vec<f64> = [1.0f64, -2.0, 3.0].iter().map(|v| v.cos()).collect();
    assert_eq!(x.grad().unwrap().to_vec(), want);
}

#[test]
fn reshaped_and_expanded_views_follow_their_base() {
    // A flat view across the base's dims, written in place.
    let x = leaf(vec![1.0, -2.0, 3.0, 4.0, -5.0, 6.0], &[2, 3]);
    let h = &x * 1.0;
    h.view(&[6]).relu_();
    (&h * &h).sum().backward();
    assert_eq!(
        x.grad().unwrap().to_vec(),
        vec![2.0, 0.0, 6.0, 8.0, 0.0, 12.0]
    );
    // A flat view made before its base was written: it reads 2x.
    let x = leaf(vec![1.0, -2.0, 3.0, 4.0, -5.0, 6.0], &[2, 3]);
    let h = &x * 1.0;
    let f = h.view(&[6]);
    h.mul_scalar_(2.0);
    (&f * &f).sum().backward();
    let want: Vec<f64> = x.to_vec().iter().map(|v| 8.0 * v).collect();
    assert_eq!(x.grad().unwrap().to_vec(), want);
    // An expanded view made before its base was written: each element counted twice.
    let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
    let h = &x * 1.0;
    let e = h.unsqueeze(0).expand(&[2, 3]);
    h.mul_scalar_(2.0);
    e.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![4.0, 4.0, 4.0]);
    // Written through a row of the expanded view: Σ e² = 2 Σ (2x)².
    let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
    let h = &x * 1.0;
    let e = h.unsqueeze(0).expand(&[2, 3]);
    e.select(0, 0).mul_scalar_(2.0);
    (&e * &e).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![16.0, 32.0, 48.0]);
}
