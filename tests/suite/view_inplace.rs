//! In-place view ops (`unsqueeze_`, `squeeze_`, `squeeze_dim_`, `t_`, `transpose_`,
//! `as_strided_`) against their out-of-place forms: same layout and elements, other handles
//! untouched, errors leave the tensor as it was, gradients flow through the recorded view.

use crate::common;
use namedtensor::autograd::no_grad;
use namedtensor::{DynTensor, ErrorKind};
use proptest::prelude::*;

fn layout<E: namedtensor::Element>(t: &DynTensor<E>) -> (Vec<usize>, Vec<usize>, usize) {
    (t.shape().to_vec(), t.stride().to_vec(), t.storage_offset())
}

#[test]
fn each_op_becomes_its_out_of_place_view_and_leaves_other_handles_alone() {
    let base = DynTensor::<i32>::arange(0, 12, 1).view(&[1, 3, 4]);
    type Op = fn(&mut DynTensor<i32>);
    type View = fn(&DynTensor<i32>) -> DynTensor<i32>;
    let cases: [(Op, View); 5] = [
        (
            |t| {
                t.unsqueeze_(1);
            },
            |t| t.unsqueeze(1),
        ),
        (
            |t| {
                t.transpose_(0, 2);
            },
            |t| t.transpose(0, 2),
        ),
        (
            |t| {
                t.squeeze_dim_(0);
            },
            |t| t.squeeze_dim(0),
        ),
        (
            |t| {
                t.squeeze_();
            },
            |t| t.squeeze(),
        ),
        (
            |t| {
                t.as_strided_(&[3, 2], &[1, 5], 2);
            },
            |t| t.as_strided(&[3, 2], &[1, 5], 2),
        ),
    ];
    for (i, (op, view)) in cases.iter().enumerate() {
        let mut t = base.shallow_clone();
        let other = base.shallow_clone();
        let want = view(&base);
        op(&mut t);
        assert_eq!(layout(&t), layout(&want), "case {i}");
        assert_eq!(t.to_vec(), want.to_vec(), "case {i}");
        assert_eq!(
            layout(&other),
            layout(&base),
            "case {i}: another handle changed"
        );
    }
    // The chained forms return `self`, as PyTorch's methods do.
    let mut t = base.select(0, 0);
    t.t_().unsqueeze_(0).squeeze_();
    assert_eq!(layout(&t), layout(&base.select(0, 0).t()));
    assert_eq!(t.to_vec(), base.select(0, 0).t().to_vec());
}

#[test]
fn the_new_view_writes_through_to_the_shared_storage() {
    let base = DynTensor::<f32>::zeros(&[2, 3]);
    let mut t = base.shallow_clone();
    t.t_().unsqueeze_(0);
    assert_eq!(t.shape(), &[1, 3, 2]);
    t.set(&[0, 2, 1], 5.0);
    assert_eq!(base.get(&[1, 2]), 5.0);
}

#[test]
fn errors_leave_the_tensor_unchanged() {
    let mut t = DynTensor::<f32>::zeros(&[2, 3, 4]).transpose(0, 1);
    let before = layout(&t);
    assert_eq!(
        t.try_unsqueeze_(5).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_transpose_(0, 3).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_squeeze_dim_(-4).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert!(t.try_t_().is_err());
    assert!(t.try_as_strided_(&[100], &[1], 0).is_err());
    assert_eq!(layout(&t), before);
}

#[test]
fn graph_tensors_differentiate_through_the_in_place_view() {
    let x =
        DynTensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).requires_grad_(true);
    let mut y = &x * 2.0;
    y.t_().unsqueeze_(0);
    assert_eq!(y.shape(), &[1, 3, 2]);
    assert!(y.requires_grad() && !y.is_leaf());
    // loss = sum(y * w) with w over y's (1, 3, 2) layout: dloss/dx[i][j] = 2 * w[0][j][i].
    let w = DynTensor::from_vec(vec![1.0f64, 10.0, 2.0, 20.0, 3.0, 30.0], &[1, 3, 2]);
    (&y * &w).sum().backward();
    assert_eq!(
        x.grad().unwrap().to_vec(),
        vec![2.0, 4.0, 6.0, 20.0, 40.0, 60.0]
    );
}

#[test]
fn a_leaf_that_requires_grad_is_refused_with_or_without_grad_mode() {
    let mut w = DynTensor::<f32>::ones(&[2, 3]).requires_grad_(true);
    let e = w.try_t_().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Autograd);
    assert!(
        e.to_string().contains("use the out-of-place form (`t`)"),
        "{e}"
    );
    no_grad(|| assert!(w.try_unsqueeze_(0).is_err()));
    assert_eq!(w.shape(), &[2, 3]);
    assert!(w.requires_grad() && w.is_leaf());
    // A detached handle of the same storage may change shape.
    let mut d = w.detach();
    d.unsqueeze_(0);
    assert_eq!(d.shape(), &[1, 2, 3]);
}

proptest! {
    #![proptest_config(common::proptest_cases(64))]

    /// A random chain of in-place view ops gives the layout and elements of the same chain
    /// out of place.
    #[test]
    fn random_chains_match_the_out_of_place_chain(
        sizes in prop::collection::vec(1usize..4, 1..4),
        ops in prop::collection::vec((0u8..5, 0isize..4, 0isize..4), 0..8),
    ) {
        let n: usize = sizes.iter().product();
        let shape: Vec<isize> = sizes.iter().map(|&s| s as isize).collect();
        let base = DynTensor::<i64>::arange(0, n as i64, 1).view(&shape);
        let mut in_place = base.shallow_clone();
        let mut out = base.shallow_clone();
        for &(op, a, b) in &ops {
            let rank = out.dim() as isize;
            let (a, b) = (a % rank.max(1), b % rank.max(1));
            let next = match op {
                0 => out.try_unsqueeze(a),
                1 => Ok(out.squeeze()),
                2 => out.try_squeeze_dim(a),
                3 => out.try_transpose(a, b),
                _ => out.try_t(),
            };
            let done = match op {
                0 => in_place.try_unsqueeze_(a).map(|_| ()),
                1 => in_place.try_squeeze_().map(|_| ()),
                2 => in_place.try_squeeze_dim_(a).map(|_| ()),
                3 => in_place.try_transpose_(a, b).map(|_| ()),
                _ => in_place.try_t_().map(|_| ()),
            };
            prop_assert_eq!(next.is_ok(), done.is_ok());
            if let Ok(next) = next {
                out = next;
            }
            prop_assert_eq!(layout(&in_place), layout(&out));
        }
        prop_assert_eq!(in_place.to_vec(), out.to_vec());
    }
}
