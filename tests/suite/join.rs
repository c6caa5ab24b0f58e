//! `cat`, `stack`, `split`, `split_with_sizes`, `chunk` and `unbind` against their definitions,
//! element by element, on every kind of view.

use crate::common;

use common::{ViewKind, indices, make_view, shape, view_kind};
use namedtensor::{DynTensor, ErrorKind};
use proptest::prelude::*;

proptest! {
    #![proptest_config(common::proptest_cases(200))]

    #[test]
    fn cat_places_each_tensor_after_the_previous_ones(
        base in shape(1..=4, 0..4),
        dim_pick in 0usize..4,
        parts in prop::collection::vec((0usize..4, view_kind()), 1..4),
        seed in 0u64..100,
    ) {
        let d = dim_pick % base.len();
        let tensors: Vec<DynTensor<f32>> = parts
            .iter()
            .enumerate()
            .map(|(i, &(size, kind))| {
                let mut s = base.clone();
                s[d] = size;
                make_view(&s, kind, seed + i as u64)
            })
            .collect();
        let refs: Vec<&DynTensor<f32>> = tensors.iter().collect();
        let out = DynTensor::cat(&refs, d as isize);
        let mut want_shape = base.clone();
        want_shape[d] = parts.iter().map(|p| p.0).sum();
        prop_assert_eq!(out.shape(), &want_shape[..]);
        prop_assert!(out.is_contiguous());
        for idx in indices(out.shape()) {
            // The tensor holding entry idx[d] of the concatenated dim, and its own index.
            let (mut t, mut local) = (0, idx.clone());
            while local[d] >= tensors[t].shape()[d] {
                local[d] -= tensors[t].shape()[d];
                t += 1;
            }
            prop_assert_eq!(out.get(&idx), tensors[t].get(&local));
        }
    }

    #[test]
    fn stack_puts_each_tensor_at_its_index_of_the_new_dim(
        s in shape(0..=3, 0..4),
        dim_pick in 0usize..4,
        kinds in prop::collection::vec(view_kind(), 1..4),
    ) {
        let d = dim_pick % (s.len() + 1);
        let tensors: Vec<DynTensor<i64>> = kinds
            .iter()
            .enumerate()
            .map(|(i, &k)| make_view(&s, k, i as u64))
            .collect();
        let refs: Vec<&DynTensor<i64>> = tensors.iter().collect();
        let out = DynTensor::stack(&refs, d as isize);
        let mut want_shape = s.clone();
        want_shape.insert(d, tensors.len());
        prop_assert_eq!(out.shape(), &want_shape[..]);
        for idx in indices(out.shape()) {
            let mut local = idx.clone();
            let t = local.remove(d);
            prop_assert_eq!(out.get(&idx), tensors[t].get(&local));
        }
    }

    #[test]
    fn split_chunk_and_unbind_are_views_that_tile_the_dim(
        s in shape(1..=3, 0..7),
        dim_pick in 0usize..3,
        size in 1usize..5,
        kind in view_kind(),
    ) {
        let d = dim_pick % s.len();
        let t: DynTensor<f64> = make_view(&s, kind, 3);
        let check = |pieces: &[DynTensor<f64>]| -> Result<(), TestCaseError> {
            let mut start = 0;
            for p in pieces {
                prop_assert!(p.shares_storage(&t));
                let len = p.shape()[d];
                prop_assert_eq!(p.to_vec(), t.narrow(d as isize, start as isize, len).to_vec());
                start += len;
            }
            prop_assert_eq!(start, s[d]);
            Ok(())
        };
        let pieces = t.split(size, d as isize);
        prop_assert!(pieces[..pieces.len() - 1].iter().all(|p| p.shape()[d] == size));
        check(&pieces)?;
        let chunks = t.chunk(size, d as isize);
        prop_assert!(chunks.len() <= size);
        check(&chunks)?;
        let mut sizes = vec![s[d] / 2, 0];
        sizes.push(s[d] - s[d] / 2);
        check(&t.split_with_sizes(&sizes, d as isize))?;
        let rows = t.unbind(d as isize);
        prop_assert_eq!(rows.len(), s[d]);
        for (i, r) in rows.iter().enumerate() {
            prop_assert!(r.shares_storage(&t));
            prop_assert_eq!(r.to_vec(), t.select(d as isize, i as isize).to_vec());
        }
    }
}

#[test]
fn cat_of_transposed_and_expanded_views() {
    let a = DynTensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]);
    let b = DynTensor::from_vec(vec![9, 8], &[2, 1]).expand(&[2, 2]);
    let c = DynTensor::cat(&[&a, &b, &a.t().narrow(0, 0, 2).t()], 1);
    assert_eq!(c.shape(), &[2, 7]);
    assert_eq!(c.to_vec(), vec![0, 1, 2, 9, 9, 0, 1, 3, 4, 5, 8, 8, 3, 4]);
    // The same tensor twice, and a single tensor (a copy).
    let twice = DynTensor::cat(&[&a, &a], 0);
    assert_eq!(twice.to_vec(), [a.to_vec(), a.to_vec()].concat());
    let once = DynTensor::cat(&[&a.t()], 0);
    assert!(!once.shares_storage(&a) && once.is_contiguous());
}

#[test]
fn large_cat_and_stack_split_across_threads() {
    namedtensor::set_num_threads(2);
    let a = make_view::<f32>(&[300, 200], ViewKind::Transposed, 1);
    let b = make_view::<f32>(&[300, 100], ViewKind::Stepped, 2);
    let c = DynTensor::cat(&[&a, &b], 1);
    assert_eq!(c.narrow(1, 0, 200).to_vec(), a.to_vec());
    assert_eq!(c.narrow(1, 200, 100).to_vec(), b.to_vec());
    let s = DynTensor::stack(&[&a, &a], 2);
    assert_eq!(s.select(2, 1).to_vec(), a.to_vec());
    // Along the outermost dim (one output row): the parts are copied in parallel, each
    // strided view into its own range.
    let d = make_view::<f32>(&[120, 200], ViewKind::Stepped, 3);
    let c = DynTensor::cat(&[&a, &d, &a.narrow(0, 0, 7)], 0);
    assert_eq!(c.shape(), &[427, 200]);
    assert_eq!(c.narrow(0, 0, 300).to_vec(), a.to_vec());
    assert_eq!(c.narrow(0, 300, 120).to_vec(), d.to_vec());
    assert_eq!(c.narrow(0, 420, 7).to_vec(), a.narrow(0, 0, 7).to_vec());
}

#[test]
fn errors() {
    let a = DynTensor::<f32>::zeros(&[2, 3]);
    let b = DynTensor::<f32>::zeros(&[3, 3]);
    let e = DynTensor::try_cat(&[&a, &b], 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert_eq!(
        e.message(),
        "tensors must have the same shape except in dim 1, but tensor 0 has shape [2, 3] and \
         tensor 1 has shape [3, 3]"
    );
    assert!(DynTensor::try_cat(&[&a, &b], 0).is_ok());
    let e = DynTensor::try_cat(&[&a, &DynTensor::zeros(&[6])], 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert_eq!(
        DynTensor::<f32>::try_cat(&[], 0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        DynTensor::try_cat(&[&a], 2).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    let e = DynTensor::try_stack(&[&a, &b], 0).unwrap_err();
    assert!(e.message().contains("tensor 1 has shape [3, 3]"), "{e}");
    assert_eq!(
        DynTensor::try_stack(&[&a], 3).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert!(a.try_split(0, 1).is_err());
    assert_eq!(
        a.try_split_with_sizes(&[1, 1], 1).unwrap_err().kind(),
        ErrorKind::ShapeMismatch
    );
    assert!(a.try_chunk(0, 0).is_err());
    assert!(a.try_unbind(2).is_err());
    let r = std::panic::catch_unwind(|| DynTensor::cat(&[&a, &b], 1));
    assert!(r.is_err());
}
