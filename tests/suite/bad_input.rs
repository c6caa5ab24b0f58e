//! Bad and extreme input through the public API: each case is an error of the right kind (or
//! the right result), never a panic in a `try_` form, an overflow, or a silently wrong value.

use namedtensor::{DynTensor, ErrorKind, Layout, Storage};

#[test]
fn empty_tensors_with_huge_dims_do_not_overflow() {
    // Element count 0 whatever the other dims are; the fuzzer found such headers in
    // safetensors files. Products of the sizes overflow usize.
    let huge = 1usize << 63;
    let mut built = 0;
    for (sizes, strides) in [
        (vec![0, huge, 4], vec![4, 4, 1]),
        (vec![huge, 0, 4], vec![4, 4, 1]),
        (vec![huge, 4, 0], vec![0, 0, 1]),
        (vec![3, huge, huge, 0], vec![1, 1, 1, 1]),
    ] {
        let layout = match Layout::new(&sizes, &strides, 0) {
            Ok(l) => l,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Overflow, "{sizes:?}");
                continue;
            }
        };
        assert!(layout.is_contiguous(), "{sizes:?}");
        let t = DynTensor::try_from_parts(Storage::from_vec(Vec::<f32>::new()), layout).unwrap();
        assert_eq!(t.numel(), 0);
        assert!(t.try_to_vec().unwrap().is_empty());
        assert_eq!(t.try_sum_dims(&[], false).unwrap().item(), 0.0);
        assert_eq!(t.try_contiguous().unwrap().numel(), 0);
        assert_eq!(t.exp().numel(), 0);
        let c = namedtensor::layout::Coalesced::new(&sizes, [&strides[..]], [0]);
        assert_eq!(c.rows(), 0);
        built += 1;
    }
    assert!(built >= 2, "only {built} of the layouts were accepted");
}

#[test]
fn tril_and_triu_with_extreme_diagonals() {
    let t = DynTensor::<i32>::ones(&[3, 4]);
    for k in [isize::MAX, isize::MAX - 1, 1 << 40] {
        assert_eq!(t.try_tril(k).unwrap().to_vec(), vec![1; 12], "tril({k})");
        assert_eq!(t.try_triu(k).unwrap().to_vec(), vec![0; 12], "triu({k})");
    }
    for k in [isize::MIN, isize::MIN + 1, -(1 << 40)] {
        assert_eq!(t.try_tril(k).unwrap().to_vec(), vec![0; 12], "tril({k})");
        assert_eq!(t.try_triu(k).unwrap().to_vec(), vec![1; 12], "triu({k})");
    }
    // The edges of the clamp itself: k = n keeps everything in tril, k = -m clears it.
    assert_eq!(t.tril(4).to_vec(), vec![1; 12]);
    assert_eq!(t.tril(-3).to_vec(), vec![0; 12]);
    assert_eq!(t.triu(-2).to_vec(), vec![1; 12]);
    assert_eq!(t.triu(4).to_vec(), vec![0; 12]);
}

#[test]
fn indices_beyond_isize_are_out_of_range_not_wrapped() {
    let t = DynTensor::<i64>::arange(0, 5, 1);
    let e = t.try_i(usize::MAX).unwrap_err(); // not the last element
    assert_eq!(e.kind(), ErrorKind::IndexOutOfRange);
    assert_eq!(
        t.try_i(0isize..=isize::MAX).unwrap().to_vec(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        t.try_i(..=isize::MAX).unwrap().to_vec(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(t.try_i(usize::MAX..).unwrap().numel(), 0);
    assert_eq!(t.try_i(2..usize::MAX).unwrap().to_vec(), vec![2, 3, 4]);
}

#[test]
fn integer_pow_with_a_negative_exponent_is_an_error() {
    let a = DynTensor::from_vec(vec![2i64, 3], &[2]);
    for r in [
        a.try_pow_scalar(-1i64),
        a.try_pow(&DynTensor::from_vec(vec![1i64, -2], &[2])),
        DynTensor::<i64>::scalar(2).try_pow(&a.neg()),
    ] {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("negative integer powers"), "{e}");
    }
    assert!(a.try_pow_scalar_(-1i64).is_err());
    assert_eq!(a.to_vec(), vec![2, 3]); // untouched
    // Float results take negative exponents.
    assert_eq!(
        a.to_dtype::<f64>().pow_scalar(-1.0).to_vec(),
        vec![0.5, 1.0 / 3.0]
    );
}

#[test]
fn allocations_that_cannot_be_made_are_errors_not_aborts() {
    // Terabytes: more than any CI machine's memory (and its overcommit allowance), so the
    // allocator refuses; a `try_` form reports it instead of aborting the process.
    let huge = 1usize << 42;
    let oom = |what: &str, r: namedtensor::Result<DynTensor<f32>>| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{what}: {e}");
        assert!(e.to_string().contains("cannot allocate"), "{what}: {e}");
    };
    oom("full", DynTensor::try_full(&[huge], 1.0));
    oom("zeros 2-D", DynTensor::try_full(&[1 << 21, 1 << 21], 0.0));
    oom("arange", DynTensor::try_arange(0.0, huge as f32, 1.0));
    oom("normal", DynTensor::try_normal(&[huge], 0.0, 1.0, 7));
    let one = DynTensor::<f32>::ones(&[1]);
    let wide = one.try_expand(&[huge as isize]).unwrap(); // a view: nothing allocated
    oom("contiguous of an expanded view", wide.try_contiguous());
    oom("repeat", one.try_repeat(&[huge]));
    oom("clamp of an expanded view", wide.try_clamp(0.0f32, 0.5f32));
    oom("add of expanded views", wide.try_add(&wide));
    oom(
        "cast",
        wide.try_to_dtype::<f64>().map(|t| t.to_dtype::<f32>()),
    );
    let col = one.try_expand(&[1 << 21, 1]).unwrap();
    let row = one.try_expand(&[1, 1 << 21]).unwrap();
    oom("matmul", col.try_matmul(&row));
    // i64::MAX elements: the byte count itself overflows.
    let e = DynTensor::<i64>::try_arange(0, i64::MAX, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
    // The failed attempts left nothing behind, and ordinary allocations still work.
    assert!(namedtensor::storage::buffer_pool_bytes() < 1 << 30);
    assert_eq!(
        DynTensor::<f32>::full(&[1 << 20], 2.0).sum().item(),
        (1 << 21) as f32
    );
}
