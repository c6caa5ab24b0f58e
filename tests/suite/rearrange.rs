//! `flip`, `repeat`, `tril` and `triu` against their definitions, element by element, on
//! every kind of view; `sort`, `argsort` and `topk` against a naive stable sort of each lane
//! written here (PyTorch's order: NaN above every number, `-0.0` equal to `0.0`).

use crate::common;

use common::{indices, make_view, shape, view_kind};
use namedtensor::{DynTensor, Element, ErrorKind};
use proptest::prelude::*;
use std::cmp::Ordering;

/// PyTorch's ascending order, written independently of the library: NaN ranks above every
/// number, numbers compare by value (so `-0.0 == 0.0`).
fn rank_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ if a < b => Ordering::Less,
        _ if a > b => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

/// Checks `sort`, `argsort` and every `topk` of `t` along `dim` against a naive stable sort
/// of each lane: positions, values (bit for bit, so the sign of a zero follows its index) and
/// indices.
fn check_sort<E: Element>(t: &DynTensor<E>, dim: usize, descending: bool) {
    let s = t.shape().to_vec();
    let (values, idx) = t.sort(dim as isize, descending);
    assert_eq!((values.shape(), idx.shape()), (&s[..], &s[..]));
    assert_eq!(t.argsort(dim as isize, descending).to_vec(), idx.to_vec());
    let n = s[dim];
    for start in indices(&s).into_iter().filter(|i| i[dim] == 0) {
        let at = |k: usize| {
            let mut i = start.clone();
            i[dim] = k;
            i
        };
        let mut want: Vec<(f64, usize)> = (0..n).map(|k| (t.get(&at(k)).to_f64(), k)).collect();
        if descending {
            want.sort_by(|a, b| rank_cmp(b.0, a.0));
        } else {
            want.sort_by(|a, b| rank_cmp(a.0, b.0));
        }
        for (k, &(_, from)) in want.iter().enumerate() {
            assert_eq!(idx.get(&at(k)), from as i64, "lane {start:?} position {k}");
            let (got, src) = (values.get(&at(k)), t.get(&at(from)));
            assert_eq!(
                got.to_f64().to_bits(),
                src.to_f64().to_bits(),
                "lane {start:?} position {k}: {got} vs {src}"
            );
        }
    }
    for k in [0, n / 2, n] {
        let (tv, ti) = t.topk(k, dim as isize, descending);
        assert_eq!(
            ti.to_vec(),
            idx.narrow(dim as isize, 0, k).to_vec(),
            "topk {k}"
        );
        let same = tv
            .to_vec()
            .iter()
            .zip(values.narrow(dim as isize, 0, k).to_vec())
            .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits());
        assert!(same, "topk {k} values");
    }
}

/// A tensor of `shape` from entries among NaN, ±0, ±1, ±inf and 2 (ties everywhere), stored
/// with its dims in reverse order (a permuted view).
fn special_values(shape: &[usize], seed: u64) -> DynTensor<f32> {
    const PICK: [f32; 8] = [
        f32::NAN,
        -0.0,
        0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        2.0,
    ];
    let n: usize = shape.iter().product();
    let v: Vec<f32> = common::data(n, seed, 0, 7)
        .iter()
        .map(|&k| PICK[k as usize])
        .collect();
    let rev: Vec<usize> = shape.iter().rev().copied().collect();
    let order: Vec<isize> = (0..shape.len() as isize).rev().collect();
    DynTensor::from_vec(v, &rev).permute(&order)
}

proptest! {
    #![proptest_config(common::proptest_cases(200))]

    #[test]
    fn flip_reverses_the_chosen_dims(
        s in shape(0..=4, 0..5),
        mask in 0u32..16,
        kind in view_kind(),
    ) {
        let t: DynTensor<i16> = make_view(&s, kind, 1);
        let dims: Vec<isize> = (0..s.len()).filter(|&d| mask >> d & 1 == 1).map(|d| d as isize).collect();
        let out = t.flip(&dims);
        prop_assert_eq!(out.shape(), &s[..]);
        for i in indices(&s) {
            let src: Vec<usize> = i
                .iter()
                .enumerate()
                .map(|(d, &x)| if mask >> d & 1 == 1 { s[d] - 1 - x } else { x })
                .collect();
            prop_assert_eq!(out.get(&i), t.get(&src));
        }
    }

    #[test]
    fn repeat_tiles_the_tensor(
        s in shape(0..=3, 0..4),
        reps in prop::collection::vec(0usize..4, 0..=2),
        kind in view_kind(),
    ) {
        let t: DynTensor<f64> = make_view(&s, kind, 2);
        let mut repeats = reps.clone();
        repeats.extend(std::iter::repeat_n(2, s.len()));
        let lead = reps.len();
        let out = t.repeat(&repeats);
        let want_shape: Vec<usize> = repeats
            .iter()
            .enumerate()
            .map(|(d, &r)| r * if d < lead { 1 } else { s[d - lead] })
            .collect();
        prop_assert_eq!(out.shape(), &want_shape[..]);
        for i in indices(&want_shape) {
            let src: Vec<usize> = i[lead..].iter().zip(&s).map(|(&x, &n)| x % n).collect();
            prop_assert_eq!(out.get(&i), t.get(&src));
        }
    }

    #[test]
    fn tril_and_triu_keep_one_side_of_a_diagonal(
        s in shape(2..=4, 0..5),
        k in -5isize..6,
        kind in view_kind(),
    ) {
        let t: DynTensor<f32> = make_view(&s, kind, 3);
        let (lower, upper) = (t.tril(k), t.triu(k));
        let r = s.len();
        for i in indices(&s) {
            let (row, col) = (i[r - 2] as isize, i[r - 1] as isize);
            let x = t.get(&i);
            prop_assert_eq!(lower.get(&i), if col <= row + k { x } else { 0.0 });
            prop_assert_eq!(upper.get(&i), if col >= row + k { x } else { 0.0 });
        }
    }

    #[test]
    fn sort_orders_each_lane_stably(
        s in shape(1..=4, 0..6),
        d in 0usize..4,
        descending in any::<bool>(),
        kind in view_kind(),
        seed in 0u64..50,
    ) {
        let d = d % s.len();
        check_sort(&make_view::<i16>(&s, kind, seed), d, descending);
        check_sort(&make_view::<f64>(&s, kind, seed), d, descending);
        check_sort(&special_values(&s, seed), d, descending);
    }
}

#[test]
fn sort_of_every_dtype_and_a_scalar() {
    let t = DynTensor::<f32>::from_vec(vec![2.5, -1.0, 2.5, 0.0], &[4]);
    check_sort(&t.to_dtype::<half::f16>(), 0, false);
    check_sort(&t.to_dtype::<half::bf16>(), 0, true);
    check_sort(&t.to_dtype::<u8>(), 0, true);
    check_sort(&t.to_dtype::<i8>(), 0, false);
    check_sort(&t.to_dtype::<i32>(), 0, true);
    let b = DynTensor::from_vec(vec![true, false, true, false], &[4]);
    let (v, i) = b.sort(0, false);
    assert_eq!(v.to_vec(), vec![false, false, true, true]);
    assert_eq!(i.to_vec(), vec![1, 3, 0, 2]);
    // i64 beyond 2^53: ordered exactly, not through f64.
    let big = DynTensor::from_vec(vec![(1i64 << 53) + 1, 1 << 53, i64::MAX, i64::MIN], &[4]);
    assert_eq!(big.argsort(0, false).to_vec(), vec![3, 1, 0, 2]);
    // A 0-d tensor is one entry (dim 0 or -1), as in PyTorch.
    let x = DynTensor::scalar(7.0f64);
    let (v, i) = x.sort(-1, true);
    assert_eq!(
        (v.shape(), v.item(), i.shape(), i.item()),
        (&[][..], 7.0, &[][..], 0)
    );
    assert_eq!(x.topk(1, 0, true).1.item(), 0);
    assert_eq!(x.topk(0, 0, true).0.shape(), &[0]);
    assert_eq!(
        x.try_sort(1, false).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
}

#[test]
fn large_sorts_across_threads() {
    namedtensor::set_num_threads(2);
    // 300 lanes of 1000 along the last dim and 1000 lanes of 300 along the first, with ties.
    let t = DynTensor::<i32>::arange(0, 300 * 1000, 1)
        .view(&[300, 1000])
        .remainder_scalar(997);
    check_sort(&t, 1, false);
    check_sort(&t, 0, true);
    let f = DynTensor::<f32>::randn(&[64, 4096], 3);
    check_sort(&f, 1, true);
}

#[test]
fn large_copies_across_threads() {
    namedtensor::set_num_threads(2);
    let t = DynTensor::<i32>::arange(0, 300 * 200, 1).view(&[300, 200]);
    let f = t.t().flip(&[1]);
    assert_eq!(f.get(&[3, 0]), t.get(&[299, 3]));
    assert_eq!(t.tril(0).get(&[10, 11]), 0);
    assert_eq!(t.tril(0).get(&[11, 10]), t.get(&[11, 10]));
    let r = t.repeat(&[1, 2]);
    assert_eq!(r.narrow(1, 200, 200).to_vec(), t.to_vec());
}

#[test]
fn errors() {
    let t = DynTensor::<f32>::zeros(&[2, 3]);
    assert_eq!(
        t.try_flip(&[2]).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_flip(&[0, -2]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        t.try_repeat(&[2]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        t.try_repeat(&[usize::MAX, 2]).unwrap_err().kind(),
        ErrorKind::Overflow
    );
    assert_eq!(
        t.try_sort(2, false).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_argsort(-3, true).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    let err = t.try_topk(4, 1, true).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.to_string().contains("topk")
            && err
                .to_string()
                .contains("k = 4 is more than the 3 entries along dim 1 (sizes [2, 3])"),
        "{err}"
    );
    let v = DynTensor::<f32>::zeros(&[3]);
    assert_eq!(
        v.try_tril(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        v.try_triu(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
