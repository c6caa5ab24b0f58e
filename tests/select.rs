//! `index_select` and `gather` against their definitions, element by element, on every kind
//! of view of both the source and the index; out-of-range indices are errors.

mod common;

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
    #![proptest_config(ProptestConfig::with_cases(200))]

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
