//! The worked examples of the seeds (storage, offset, stride, transpose, contiguity, view),
//! with the seeds' own numbers.

use namedtensor::{DynTensor, ErrorKind, tensor};

fn points() -> DynTensor {
    tensor!([[4., 1.], [5., 3.], [2., 1.]])
}

#[test]
fn points_are_stored_row_by_row() {
    let p = points();
    assert_eq!(p.shape(), &[3, 2]);
    assert_eq!(p.stride(), &[2, 1]);
    assert_eq!(p.storage_offset(), 0);
    assert_eq!(p.storage().to_vec(), vec![4., 1., 5., 3., 2., 1.]);
    assert!(p.is_contiguous());
    // element (i, j) is at storage_offset + stride[0] * i + stride[1] * j
    for i in 0..3 {
        for j in 0..2 {
            assert_eq!(p.get(&[i, j]), p.storage().get(2 * i + j).unwrap());
        }
    }
}

#[test]
fn second_point_is_a_view_with_offset_two() {
    let p = points();
    let second = p.i(1);
    assert_eq!(second.shape(), &[2]);
    assert_eq!(second.stride(), &[1]);
    assert_eq!(second.storage_offset(), 2);
    assert!(second.shares_storage(&p));
    assert_eq!(second.to_vec(), vec![5., 3.]);
}

#[test]
fn writing_through_a_view_changes_the_original_but_not_through_a_clone() {
    let p = points();
    let second = p.i(1);
    second.set(&[0], 10.0);
    assert_eq!(p.to_vec(), vec![4., 1., 10., 3., 2., 1.]);

    let p = points();
    let second = p.i(1).clone();
    assert!(!second.shares_storage(&p));
    assert_eq!(second.storage_offset(), 0);
    second.set(&[0], 10.0);
    assert_eq!(p.to_vec(), vec![4., 1., 5., 3., 2., 1.]);
}

#[test]
fn transpose_shares_storage_and_swaps_strides() {
    let p = points();
    let pt = p.t();
    assert!(pt.shares_storage(&p));
    assert_eq!(pt.shape(), &[2, 3]);
    assert_eq!(pt.stride(), &[1, 2]);
    assert_eq!(pt.storage_offset(), 0);
    assert!(!pt.is_contiguous());
    assert_eq!(pt.get(&[0, 1]), p.get(&[1, 0]));
}

#[test]
fn transposing_a_3d_tensor_swaps_outer_strides() {
    let some = DynTensor::<f32>::ones(&[3, 4, 5]);
    assert_eq!(some.stride(), &[20, 5, 1]);
    let t = some.transpose(0, 2);
    assert_eq!(t.shape(), &[5, 4, 3]);
    assert_eq!(t.stride(), &[1, 5, 20]);
}

#[test]
fn contiguous_copies_a_transposed_view_into_row_major_order() {
    let p = points();
    let c = p.t().contiguous();
    assert_eq!(c.stride(), &[3, 1]);
    assert_eq!(c.storage().to_vec(), vec![4., 5., 2., 1., 3., 1.]);
    assert!(c.is_contiguous());
    assert!(!c.shares_storage(&p));
    // On a contiguous tensor it is a no-op that returns the same storage.
    let same = p.contiguous();
    assert!(same.shares_storage(&p));
    assert_eq!(same.stride(), p.stride());
}

#[test]
fn the_3x3_example_has_offset_one_and_strides_one_three() {
    // The seed's picture: a 3×3 tensor starting at storage index 1, strides (1, 3).
    let storage: Vec<f32> = (0..10).map(|v| v as f32).collect();
    let base = DynTensor::from_vec(storage, &[10]);
    let t = base.as_strided(&[3, 3], &[1, 3], 1);
    assert_eq!(t.storage_offset(), 1);
    assert_eq!(t.stride(), &[1, 3]);
    for i in 0..3 {
        for j in 0..3 {
            assert_eq!(t.get(&[i, j]), (1 + i + 3 * j) as f32);
        }
    }
    let m = tensor!([[5., 7., 4.], [1., 3., 2.], [7., 3., 8.]]);
    assert_eq!(m.stride(), &[3, 1]);
}

#[test]
fn view_after_transpose_is_an_error_that_suggests_reshape() {
    let x = DynTensor::<i64>::arange(0, 9, 1).reshape(&[3, 3]);
    assert_eq!(x.stride(), &[3, 1]);
    let xt = x.t();
    assert_eq!(xt.stride(), &[1, 3]);
    let err = xt.try_view(&[1, -1]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotViewable);
    let msg = err.to_string();
    assert!(msg.starts_with("view:"), "{msg}");
    assert!(msg.contains("reshape"), "{msg}");
    assert!(msg.contains("[1, 3]"), "names the strides: {msg}");
    // reshape copies and gives the transposed order.
    let r = xt.reshape(&[1, -1]);
    assert_eq!(r.shape(), &[1, 9]);
    assert_eq!(r.to_vec(), vec![0, 3, 6, 1, 4, 7, 2, 5, 8]);
    assert!(!r.shares_storage(&x));
    // x itself is untouched
    assert_eq!(x.to_vec(), (0..9).collect::<Vec<i64>>());
}

#[test]
#[should_panic(expected = "use reshape()")]
fn panicking_view_says_why() {
    let x = DynTensor::<i64>::arange(0, 9, 1).reshape(&[3, 3]);
    let _ = x.t().view(&[1, -1]);
}
