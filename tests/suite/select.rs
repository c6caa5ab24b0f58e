//! `index_select` and `gather`, and their adjoints `scatter_add` and `index_add`, against
//! their definitions, element by element, on every kind of view of the input, the source and
//! the index; out-of-range indices are errors that leave the inputs untouched.

use crate::common;

use common::{ViewKind, indices, make_view, shape, view_kind};
use namedtensor::{DynTensor, ErrorKind};
use proptest::prelude::*;

/// An index tensor of `shape` holding `values` (row-major), seen through a view of `kind`.
fn index_view(values: &[i64], shape: &[usize], kind: ViewKind) -> DynTensor<i64> {
    // Lay the values out so that the view of `kind` reads them in row-major order.
    let t = make_view::<i64>(shape, kind, 0);
    let fresh = DynTensor::from_vec(values.to_vec(), shape);
    if kind == ViewKind::Expanded {
        return fresh; // an expanded view cannot hold arbitrary values
    }
    t.copy_(&fresh);
    t
}

proptest! {
    #![proptest_config(common::proptest_cases(200))]

    #[test]
    fn index_select_takes_the_indexed_slices(
        s in shape(1..=4, 1..4),
        dim_pick in 0usize..4,
        picks in prop::collection::vec(0usize..100, 0..6),
        kind in view_kind(),
        index_kind in view_kind(),
    ) {
        let d = dim_pick % s.len();
        let t: DynTensor<f32> = make_view(&s, kind, 1);
        let idx: Vec<i64> = picks.iter().map(|&p| (p % s[d]) as i64).collect();
        let index = index_view(&idx, &[idx.len()], index_kind);
        let out = t.index_select(d as isize, &index);
        let mut want_shape = s.clone();
        want_shape[d] = idx.len();
        prop_assert_eq!(out.shape(), &want_shape[..]);
        for i in indices(out.shape()) {
            let mut src = i.clone();
            src[d] = idx[i[d]] as usize;
            prop_assert_eq!(out.get(&i), t.get(&src));
        }
    }

    #[test]
    fn gather_picks_one_element_per_index(
        s in shape(1..=4, 1..4),
        dim_pick in 0usize..4,
        shrink in prop::collection::vec(0usize..3, 4),
        extra in 0usize..4,
        seed in 0u64..1000,
        kind in view_kind(),
        index_kind in view_kind(),
    ) {
        let d = dim_pick % s.len();
        let t: DynTensor<i32> = make_view(&s, kind, 2);
        // The index may be smaller than the source in every dim but `d`, any size in `d`.
        let ishape: Vec<usize> = s
            .iter()
            .enumerate()
            .map(|(e, &n)| if e == d { extra } else { n.saturating_sub(shrink[e]).max(1) })
            .collect();
        let n: usize = ishape.iter().product();
        let idx: Vec<i64> = (0..n as u64).map(|i| ((i * 31 + seed) % s[d] as u64) as i64).collect();
        let index = index_view(&idx, &ishape, index_kind);
        let out = t.gather(d as isize, &index);
        prop_assert_eq!(out.shape(), &ishape[..]);
        for (flat, i) in indices(&ishape).into_iter().enumerate() {
            let mut src = i.clone();
            src[d] = idx[flat] as usize;
            prop_assert_eq!(out.get(&i), t.get(&src));
        }
    }
}

proptest! {
    #![proptest_config(common::proptest_cases(200))]

    #[test]
    fn scatter_add_adds_at_the_indexed_positions(
        s in shape(1..=4, 1..4),
        dim_pick in 0usize..4,
        shrink in prop::collection::vec(0usize..3, 4),
        extra in 0usize..5,
        seed in 0u64..1000,
        kind in view_kind(),
        src_kind in view_kind(),
        index_kind in view_kind(),
    ) {
        let d = dim_pick % s.len();
        let t: DynTensor<i64> = make_view(&s, kind, 4);
        // The index: no larger than the input in every dim but `d` (any size there), and the
        // source at least as large as the index everywhere (one more in some dims).
        let ishape: Vec<usize> = s
            .iter()
            .enumerate()
            .map(|(e, &n)| if e == d { extra } else { n.saturating_sub(shrink[e]).max(1) })
            .collect();
        let sshape: Vec<usize> = ishape.iter().enumerate().map(|(e, &n)| n + shrink[e] % 2).collect();
        let src: DynTensor<i64> = make_view(&sshape, src_kind, 5);
        let n: usize = ishape.iter().product();
        let idx: Vec<i64> = (0..n as u64).map(|i| ((i * 7 + seed) % s[d] as u64) as i64).collect();
        let index = index_view(&idx, &ishape, index_kind);
        let before = t.to_vec();
        let out = t.scatter_add(d as isize, &index, &src);
        prop_assert_eq!(t.to_vec(), before.clone()); // out of place
        // The definition, one index at a time.
        let mut want: Vec<i64> = before;
        let at = |i: &[usize]| i.iter().zip(&s).fold(0, |acc, (&c, &n)| acc * n + c);
        for (flat, i) in indices(&ishape).into_iter().enumerate() {
            let mut to = i.clone();
            to[d] = idx[flat] as usize;
            want[at(&to)] += src.get(&i);
        }
        prop_assert_eq!(out.shape(), &s[..]);
        prop_assert_eq!(out.to_vec(), want.clone());
        // In place, through a view when the input is one.
        if kind != ViewKind::Expanded {
            t.scatter_add_(d as isize, &index, &src);
            prop_assert_eq!(t.to_vec(), want);
        }
    }

    #[test]
    fn index_add_adds_whole_slices(
        s in shape(1..=4, 1..4),
        dim_pick in 0usize..4,
        picks in prop::collection::vec(0usize..100, 0..6),
        kind in view_kind(),
        src_kind in view_kind(),
        index_kind in view_kind(),
    ) {
        let d = dim_pick % s.len();
        let t: DynTensor<f32> = make_view(&s, kind, 6);
        let idx: Vec<i64> = picks.iter().map(|&p| (p % s[d]) as i64).collect();
        let index = index_view(&idx, &[idx.len()], index_kind);
        let mut sshape = s.clone();
        sshape[d] = idx.len();
        let src: DynTensor<f32> = make_view(&sshape, src_kind, 7);
        let out = t.index_add(d as isize, &index, &src);
        // Small integers in f32: every sum is exact, whatever the order.
        let mut want: Vec<f64> = t.to_vec().iter().map(|&v| v as f64).collect();
        let at = |i: &[usize]| i.iter().zip(&s).fold(0, |acc, (&c, &n)| acc * n + c);
        for i in indices(&sshape) {
            let mut to = i.clone();
            to[d] = idx[i[d]] as usize;
            want[at(&to)] += src.get(&i) as f64;
        }
        let got: Vec<f64> = out.to_vec().iter().map(|&v| v as f64).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn scatter_add_does_not_depend_on_the_thread_count() {
    // Non-integer floats, many repeats per output element: the order of the additions shows
    // in the last bits, and it must be the index's order whatever the pool. (The output is
    // above the parallel threshold, so two threads split it.)
    let base = make_view::<f32>(&[64, 600], ViewKind::Transposed, 8);
    let src = DynTensor::from_vec(
        (0..64 * 500).map(|i| (i as f32 * 0.37).sin()).collect(),
        &[64, 500],
    );
    let index = DynTensor::from_vec(
        (0..64 * 500).map(|i| (i * 13 % 33) as i64).collect(),
        &[64, 500],
    );
    namedtensor::set_num_threads(1);
    let one = base.scatter_add(1, &index, &src).to_vec();
    namedtensor::set_num_threads(2);
    let two = base.scatter_add(1, &index, &src).to_vec();
    assert_eq!(one, two);
    // The sequential sum in index order, as a reference.
    let mut want = base.contiguous().to_vec();
    for r in 0..64 {
        for k in 0..500 {
            let c = (r * 500 + k) * 13 % 33;
            want[r * 600 + c] += src.get(&[r, k]);
        }
    }
    assert_eq!(one, want);
}

#[test]
fn scatter_add_bad_input_is_an_error_that_writes_nothing() {
    let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    let ones = DynTensor::<f32>::ones(&[2, 2]);
    let cases: Vec<(&str, namedtensor::Error, ErrorKind, &str)> = vec![
        (
            "index out of range",
            t.try_scatter_add_(1, &DynTensor::from_vec(vec![0i64, 2], &[1, 2]), &ones)
                .unwrap_err(),
            ErrorKind::IndexOutOfRange,
            "index 2 is out of range for dim 1 of size 2",
        ),
        (
            "index larger than the source",
            t.try_scatter_add(0, &DynTensor::zeros(&[3, 1]), &ones)
                .unwrap_err(),
            ErrorKind::ShapeMismatch,
            "got index shape [3, 1], source shape [2, 2], input shape [2, 2]",
        ),
        (
            "index of another rank",
            t.try_scatter_add(0, &DynTensor::zeros(&[2]), &ones)
                .unwrap_err(),
            ErrorKind::ShapeMismatch,
            "must have the rank of the input",
        ),
        (
            "index_add source of the wrong shape",
            t.try_index_add_(0, &DynTensor::from_vec(vec![1i64], &[1]), &ones)
                .unwrap_err(),
            ErrorKind::ShapeMismatch,
            "i.e. [1, 2]; got [2, 2]",
        ),
        (
            "index_add index of rank 2",
            t.try_index_add(0, &DynTensor::zeros(&[1, 1]), &ones)
                .unwrap_err(),
            ErrorKind::InvalidArgument,
            "must be 1-D",
        ),
        (
            "dim out of range",
            t.try_index_add(2, &DynTensor::zeros(&[1]), &ones)
                .unwrap_err(),
            ErrorKind::DimOutOfRange,
            "",
        ),
        (
            "into an expanded view",
            DynTensor::<f32>::zeros(&[1, 2])
                .expand(&[2, 2])
                .try_scatter_add_(0, &DynTensor::zeros(&[1, 1]), &ones)
                .unwrap_err(),
            ErrorKind::OverlappingWrite,
            "as made by expand",
        ),
    ];
    for (what, e, kind, fragment) in cases {
        assert_eq!(e.kind(), kind, "{what}: {e}");
        assert!(e.to_string().contains(fragment), "{what}: {e}");
        assert!(
            e.to_string().contains("index_add") || e.to_string().contains("scatter_add"),
            "{what}: {e}"
        );
    }
    assert_eq!(t.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(ones.to_vec(), vec![1.0; 4]);
}

#[test]
fn scatter_add_on_bool_is_a_logical_or_and_on_integers_wraps() {
    let t = DynTensor::from_vec(vec![false, true, false], &[3]);
    let src = DynTensor::from_vec(vec![true, true, false], &[3]);
    let idx = DynTensor::from_vec(vec![0i64, 0, 2], &[3]);
    assert_eq!(
        t.scatter_add(0, &idx, &src).to_vec(),
        vec![true, true, false]
    );
    let t = DynTensor::from_vec(vec![250u8], &[1]);
    let src = DynTensor::from_vec(vec![3u8, 4], &[2]);
    let idx = DynTensor::from_vec(vec![0i64, 0], &[2]);
    assert_eq!(t.scatter_add(0, &idx, &src).to_vec(), vec![1u8]);
}

#[test]
fn embedding_lookup_in_parallel() {
    namedtensor::set_num_threads(2);
    let table = make_view::<f32>(&[50, 64], ViewKind::Transposed, 3);
    let ids: Vec<i64> = (0..2000).map(|i| (i * 7 % 50) as i64).collect();
    let out = table.index_select(0, &DynTensor::from_slice(&ids));
    assert_eq!(out.shape(), &[2000, 64]);
    for (row, &id) in ids.iter().enumerate() {
        assert_eq!(
            out.select(0, row as isize).to_vec(),
            table.select(0, id as isize).to_vec()
        );
    }
    // A 0-d index keeps the dim, with size 1.
    let one = table.index_select(1, &DynTensor::scalar(5i64));
    assert_eq!(one.shape(), &[50, 1]);
    assert_eq!(one.to_vec(), table.select(1, 5).to_vec());
}

#[test]
fn out_of_range_indices_are_errors() {
    let t = DynTensor::<f32>::zeros(&[3, 4]);
    for bad in [4i64, -1, i64::MAX, i64::MIN] {
        let e = t
            .try_index_select(1, &DynTensor::from_slice(&[0, bad]))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IndexOutOfRange);
        assert_eq!(
            e.message(),
            format!("index {bad} is out of range for dim 1 of size 4 (shape [3, 4])")
        );
        let index = DynTensor::from_vec(vec![0, 1, bad], &[1, 3]);
        let e = t.try_gather(1, &index).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IndexOutOfRange);
    }
    // An out-of-range index hidden in a view's unused storage is not looked at.
    let storage = DynTensor::from_slice(&[0i64, 99, 2, 99]);
    let every_other = storage.slice(0, None, None, 2);
    assert_eq!(t.index_select(1, &every_other).shape(), &[3, 2]);

    let e = t
        .try_index_select(0, &DynTensor::zeros(&[1, 1]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        t.try_index_select(2, &every_other).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    let e = t.try_gather(0, &DynTensor::zeros(&[4])).unwrap_err(); // rank differs
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    let e = t.try_gather(0, &DynTensor::zeros(&[2, 5])).unwrap_err(); // larger in dim 1
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    // Gathering from an i64 tensor with itself as the index (one storage, locked once).
    let x = DynTensor::from_vec(vec![1i64, 0, 1, 1], &[2, 2]);
    assert_eq!(x.gather(1, &x).to_vec(), vec![0, 1, 1, 1]);
}

proptest! {
    #![proptest_config(common::proptest_cases(100))]

    /// `equal` against comparing the elements on the host: a view equals its contiguous copy,
    /// and stops being equal when one element of the copy changes or the shape differs.
    #[test]
    fn equal_compares_shapes_and_elements(
        s in shape(0..=4, 1..4),
        kind in view_kind(),
        at in 0usize..1000,
    ) {
        let t: DynTensor<i32> = make_view(&s, kind, 3);
        let copy = t.contiguous().clone();
        prop_assert!(t.equal(&copy) && copy.equal(&t));
        let flat = copy.reshape(&[-1]);
        let n = flat.numel();
        let i = at % n;
        flat.set(&[i], flat.get(&[i]).wrapping_add(1));
        prop_assert!(!t.equal(&copy));
        prop_assert_eq!(t.equal(&copy), t.to_vec() == copy.to_vec());
        if !s.is_empty() {
            prop_assert!(!t.equal(&t.reshape(&[-1]).unsqueeze(0)) || s.len() == 2 && s[0] == 1);
        }
    }
}
