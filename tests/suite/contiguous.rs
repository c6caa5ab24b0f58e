//! `contiguous()` / `to_dtype()` / `copy_` of permuted, transposed and sliced views (the
//! tiled copy path) against a naive index loop.

use crate::common;

use namedtensor::DynTensor;
use proptest::prelude::*;

/// Row-major element `flat` of `t`, found through its strides one index at a time.
fn naive<E: namedtensor::Element>(t: &DynTensor<E>, storage: &[E]) -> Vec<E> {
    let n = t.numel();
    let mut out = Vec::with_capacity(n);
    for flat in 0..n {
        let mut rem = flat;
        let mut pos = t.storage_offset();
        for d in (0..t.dim()).rev() {
            pos += (rem % t.shape()[d]) * t.stride()[d];
            rem /= t.shape()[d];
        }
        out.push(storage[pos]);
    }
    out
}

/// Sizes 0 and 1 and sizes around the 16-element tile (15, 17, 33).
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        2usize..6,
        Just(15),
        Just(17),
        Just(33)
    ]
}

fn permuted_view() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, usize)> {
    prop::collection::vec(size(), 2..=5)
        // At most ~36k elements, to keep the suite fast.
        .prop_filter("large", |s| s.iter().product::<usize>() <= 33 * 33 * 33)
        .prop_flat_map(|shape| {
            let rank = shape.len();
            (
                Just(shape),
                Just((0..rank).collect::<Vec<usize>>()).prop_shuffle(),
                0usize..3,
            )
        })
}

/// `view` (a permutation of `base`, maybe step-sliced) gathered by `contiguous()` equals the
/// naive index loop; so does `to_dtype` (the same walk, converting on the way).
fn check_permuted<E: namedtensor::Element>(
    shape: &[usize],
    order: &[usize],
    step: usize,
) -> Result<(), TestCaseError> {
    let n: usize = shape.iter().product();
    let base = DynTensor::<i64>::arange(0, n as i64, 1)
        .to_dtype::<E>()
        .reshape(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>());
    let order: Vec<isize> = order.iter().map(|&d| d as isize).collect();
    let mut view = base.permute(&order);
    // Sometimes also step-slice the first dim, or take every second element of the last.
    if step == 1 {
        view = view.slice(0, None, None, 2);
    } else if step == 2 {
        view = view.slice(-1, Some(1), None, 2);
    }
    let want = naive(&view, &base.storage().to_vec());
    let got = view.contiguous();
    prop_assert!(got.is_contiguous());
    prop_assert_eq!(got.shape(), view.shape());
    prop_assert_eq!(got.to_vec(), want.clone());
    let as_f64: Vec<f64> = want.iter().map(|x| x.to_f64()).collect();
    prop_assert_eq!(view.to_dtype::<f64>().to_vec(), as_f64.clone());
    // copy_ into a contiguous destination that starts inside a larger storage (offset 3),
    // of the same type (register transposes) and of another one (converting tiles).
    let dims: Vec<isize> = view.shape().iter().map(|&s| s as isize).collect();
    let m = view.numel();
    let same = DynTensor::<E>::zeros(&[m + 5])
        .narrow(0, 3, m)
        .reshape(&dims);
    same.copy_(&view);
    prop_assert_eq!(same.to_vec(), want);
    let other = DynTensor::<f64>::full(&[m + 5], -1.0);
    let inner = other.narrow(0, 3, m).reshape(&dims);
    inner.copy_(&view);
    let all = other.to_vec();
    prop_assert_eq!(&all[3..3 + m], &as_f64[..]);
    prop_assert!(all[..3].iter().chain(&all[3 + m..]).all(|&x| x == -1.0));
    Ok(())
}

proptest! {
    #![proptest_config(common::proptest_cases(300))]

    #[test]
    fn contiguous_of_a_permutation_matches_the_index_loop(
        (shape, order, step) in permuted_view(),
    ) {
        check_permuted::<i32>(&shape, &order, step)?; // 4-byte register transposes
        check_permuted::<f64>(&shape, &order, step)?; // 8-byte register transposes
        check_permuted::<i16>(&shape, &order, step)?; // scalar tiles
    }
}

#[test]
fn large_transpose_in_parallel() {
    namedtensor::set_num_threads(2);
    for (r, c) in [(1000, 333), (17, 5000), (4096, 3)] {
        let t = DynTensor::<f32>::arange(0.0, (r * c) as f32, 1.0).view(&[r as isize, c as isize]);
        let got = t.t().contiguous().to_vec();
        for (i, row) in got.chunks(r).enumerate() {
            for (j, &x) in row.iter().enumerate() {
                assert_eq!(x, (j * c + i) as f32);
            }
        }
    }
    // 8-byte and 1-byte elements.
    let t = DynTensor::<f64>::arange(0.0, 6000.0, 1.0).view(&[60, 100]);
    assert_eq!(
        t.t().contiguous().to_vec(),
        naive(&t.t(), &t.storage().to_vec())
    );
    let b = DynTensor::<u8>::from_vec((0..6000).map(|i| i as u8).collect(), &[100, 60]);
    let want: Vec<u8> = (0..60)
        .flat_map(|j| (0..100).map(move |i| (i * 60 + j) as u8))
        .collect();
    assert_eq!(b.t().contiguous().to_vec(), want);
    // copy_ of a large transposed source runs the tiled copy on both threads.
    let t = DynTensor::<f32>::arange(0.0, 700.0 * 900.0, 1.0).view(&[700, 900]);
    let dst = DynTensor::<f32>::zeros(&[900, 700]);
    dst.copy_(&t.t());
    assert_eq!(dst.to_vec(), naive(&t.t(), &t.storage().to_vec()));
    let dst = DynTensor::<f64>::zeros(&[900, 700]);
    dst.copy_(&t.t());
    let want: Vec<f64> = naive(&t.t(), &t.storage().to_vec())
        .iter()
        .map(|&x| x as f64)
        .collect();
    assert_eq!(dst.to_vec(), want);
}

/// Transposed copies from `streaming_threshold()` bytes up (8 MiB by default) write whole
/// aligned output lines with non-temporal stores, with the columns before the first aligned
/// line copied on their own: every element still lands where the index loop puts it, on one
/// and two threads, into a fresh buffer and through `copy_` into an offset destination.
#[test]
fn large_streamed_transposes_match_the_index_loop() {
    // Output rows of 2064 f32 (129 lines), enough rows to pass the threshold (1024 by default).
    let r = 2064usize;
    let c = namedtensor::streaming_threshold().div_ceil(4 * r) + 7;
    let src = DynTensor::<f32>::arange(0.0, (r * c + 7) as f32, 1.0);
    let t = src.narrow(0, 7, r * c).view(&[r as isize, c as isize]);
    let want = naive(&t.t(), &src.to_vec());
    for threads in [1, 2] {
        namedtensor::set_num_threads(threads);
        assert_eq!(t.t().contiguous().to_vec(), want, "{threads} threads");
        // A destination starting 5 elements into its storage: a different alignment.
        let storage = DynTensor::<f32>::zeros(&[c * r + 5]);
        let dst = storage.narrow(0, 5, c * r).view(&[c as isize, r as isize]);
        dst.copy_(&t.t());
        assert_eq!(dst.to_vec(), want, "copy_ on {threads} threads");
        assert_eq!(&storage.to_vec()[..5], &[0.0; 5]);
    }
    namedtensor::set_num_threads(2);
}

/// Outputs of 64 KiB and more come from the buffer pool, whose allocations start on a
/// 64-byte cache line (as PyTorch's allocator aligns), whatever op made them; a `Vec` handed
/// to `from_vec` is kept where it is, without a copy.
#[test]
fn large_outputs_start_on_a_cache_line_and_user_vectors_are_not_copied() {
    use namedtensor::storage::POOLED_ALIGN;
    let line = |t: &DynTensor<f32>| t.as_slice().unwrap().as_ptr() as usize % POOLED_ALIGN;
    let a = DynTensor::<f32>::randn(&[256, 257], 1);
    let b = DynTensor::<f32>::randn(&[256, 257], 2);
    for (what, t) in [
        ("randn", a.clone()),
        ("add", &a + &b),
        ("exp", a.exp()),
        ("transpose copy", a.t().contiguous()),
        ("matmul", a.matmul(&b.t())),
        (
            "sum over a dim",
            a.unsqueeze(0).expand(&[2, 256, 257]).sum_dim(0, false),
        ),
        ("cast", a.to_dtype::<f64>().to_dtype::<f32>()),
    ] {
        assert!(t.numel() * 4 >= 1 << 16, "{what}: small");
        assert_eq!(line(&t), 0, "{what}: not on a cache line");
    }
    let v: Vec<f32> = (0..1 << 15).map(|i| i as f32).collect();
    let p = v.as_ptr();
    let t = DynTensor::from_vec(v, &[1 << 15]);
    assert_eq!(t.as_slice().unwrap().as_ptr(), p);
    assert_eq!(t.to_vec()[12345], 12345.0);
    assert_eq!((&t + 1.0).to_vec()[7], 8.0);
}
