//! `matmul` and its convenience forms against a triple loop in `f64` written here, on every
//! kind of view (contiguous, transposed, permuted, offset, step-sliced, expanded with
//! stride-0 batch dims) and every 1-D/2-D/N-D combination of `torch.matmul`'s rules.

use crate::common;

use common::{VIEW_KINDS, ViewKind, make_view, to_f64, values};
use half::{bf16, f16};
use namedtensor::{DynTensor, Element, ErrorKind};
use proptest::prelude::*;

/// `torch.matmul` of two row-major operands, by definition: vectors are promoted to
/// matrices, batch dims broadcast (right-aligned, a size of 1 repeats), and every output
/// element is a sum over the contracted dim. Returns the result's shape and elements.
fn reference(sa: &[usize], a: &[f64], sb: &[usize], b: &[f64]) -> (Vec<usize>, Vec<f64>) {
    let (mut sa2, mut sb2) = (sa.to_vec(), sb.to_vec());
    if sa.len() == 1 {
        sa2.insert(0, 1);
    }
    if sb.len() == 1 {
        sb2.push(1);
    }
    let (ra, rb) = (sa2.len(), sb2.len());
    let (m, k, n) = (sa2[ra - 2], sa2[ra - 1], sb2[rb - 1]);
    assert_eq!(k, sb2[rb - 2]);
    let (ba, bb) = (&sa2[..ra - 2], &sb2[..rb - 2]);
    let rank = ba.len().max(bb.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (pa, pb) = (pad(ba), pad(bb));
    let batch: Vec<usize> = pa
        .iter()
        .zip(&pb)
        .map(|(&x, &y)| if x == 1 { y } else { x })
        .collect();
    let nbatch: usize = batch.iter().product();
    let mut out = Vec::new();
    for flat in 0..nbatch {
        // Multi-index of this batch, then the flat batch index of each operand.
        let mut idx = vec![0; rank];
        let mut rem = flat;
        for d in (0..rank).rev() {
            idx[d] = rem % batch[d];
            rem /= batch[d];
        }
        let (mut fa, mut fb) = (0, 0);
        for d in 0..rank {
            fa = fa * pa[d] + if pa[d] == 1 { 0 } else { idx[d] };
            fb = fb * pb[d] + if pb[d] == 1 { 0 } else { idx[d] };
        }
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for l in 0..k {
                    s += a[fa * m * k + i * k + l] * b[fb * k * n + l * n + j];
                }
                out.push(s);
            }
        }
    }
    let mut shape = batch;
    if sa.len() > 1 {
        shape.push(m);
    }
    if sb.len() > 1 {
        shape.push(n);
    }
    (shape, out)
}

/// Checks `a.matmul(b)` against [`reference`] exactly (the test values are small integers,
/// exact in every type; integer results wrap like the element type).
fn check_exact<E: Element>(a: &DynTensor<E>, b: &DynTensor<E>) {
    let got = a.matmul(b);
    let (shape, want) = reference(a.shape(), &to_f64(a), b.shape(), &to_f64(b));
    assert_eq!(got.shape(), &shape[..], "{:?} @ {:?}", a.shape(), b.shape());
    assert!(got.is_contiguous());
    let want: Vec<E> = want.iter().map(|&x| E::from_i64(x as i64)).collect();
    assert_eq!(
        got.to_vec(),
        want,
        "{:?} (strides {:?}) @ {:?} (strides {:?})",
        a.shape(),
        a.stride(),
        b.shape(),
        b.stride()
    );
}

/// Shapes of a matmul: the broadcast batch, each operand's batch (a suffix of it with some
/// sizes replaced by 1) or a vector, and m, k, n (0 included).
fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (
        prop::collection::vec(0usize..4, 0..3),
        any::<u32>(),
        0usize..6,
        0usize..6,
        0usize..6,
        0u8..5,
        0u8..5,
    )
        .prop_map(|(batch, bits, m, k, n, va, vb)| {
            let operand = |shift: u32, last: [usize; 2], vector: bool| -> Vec<usize> {
                if vector {
                    return vec![last[1 - usize::from(shift > 0)]];
                }
                let drop = (bits >> shift) as usize % (batch.len() + 1);
                let mut s: Vec<usize> = batch[drop..]
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| {
                        if bits >> (shift + 4 + i as u32) & 1 == 1 {
                            1
                        } else {
                            x
                        }
                    })
                    .collect();
                s.extend_from_slice(&last);
                s
            };
            // A vector is the k side of its operand: (k) on the left, (k) on the right.
            (operand(0, [m, k], va == 0), operand(12, [k, n], vb == 0))
        })
}

fn view_kind() -> impl Strategy<Value = ViewKind> {
    prop::sample::select(VIEW_KINDS.to_vec())
}

proptest! {
    #![proptest_config(common::proptest_cases(400))]

    #[test]
    fn matmul_matches_the_definition_on_every_view(
        (sa, sb) in shapes(),
        ka in view_kind(),
        kb in view_kind(),
        seed in 0u64..1000,
    ) {
        let a = make_view::<f64>(&sa, ka, seed);
        let b = make_view::<f64>(&sb, kb, seed + 1);
        check_exact(&a, &b);
        let a = make_view::<f32>(&sa, ka, seed);
        let b = make_view::<f32>(&sb, kb, seed + 1);
        check_exact(&a, &b);
        let a = make_view::<i32>(&sa, ka, seed);
        let b = make_view::<i32>(&sb, kb, seed + 1);
        check_exact(&a, &b);
    }
}

#[test]
fn every_rank_combination_on_every_view() {
    let cases: [(&[usize], &[usize]); 12] = [
        (&[4], &[4]),
        (&[3, 4], &[4, 5]),
        (&[4], &[4, 5]),
        (&[3, 4], &[4]),
        (&[2, 3, 4], &[4]),
        (&[4], &[2, 4, 5]),
        (&[2, 3, 4], &[4, 5]),
        (&[3, 4], &[2, 4, 5]),
        (&[2, 3, 4], &[2, 4, 5]),
        (&[2, 1, 3, 4], &[3, 4, 5]),
        (&[1, 3, 4], &[2, 4, 5]),
        (&[2, 2, 3, 4], &[2, 1, 4, 5]),
    ];
    for (sa, sb) in cases {
        for ka in VIEW_KINDS {
            for kb in VIEW_KINDS {
                check_exact(&make_view::<f64>(sa, ka, 1), &make_view::<f64>(sb, kb, 2));
            }
        }
    }
}

#[test]
fn integer_types_accumulate_exactly_and_wrap_like_the_type() {
    for ka in VIEW_KINDS {
        check_exact(
            &make_view::<i64>(&[2, 5, 7], ka, 3),
            &make_view::<i64>(&[7, 3], ka, 4),
        );
        check_exact(
            &make_view::<i16>(&[5, 7], ka, 3),
            &make_view::<i16>(&[7, 3], ka, 4),
        );
        check_exact(
            &make_view::<u8>(&[5, 7], ka, 3),
            &make_view::<u8>(&[7, 3], ka, 4),
        );
    }
    // i8: sums of 40 products of up to 64 overflow, and wrap.
    let a = DynTensor::from_vec(vec![10i8; 40], &[1, 40]);
    let b = DynTensor::from_vec(vec![10i8; 40], &[40, 1]);
    assert_eq!(a.matmul(&b).item(), 4000i64 as i8);
    let a = DynTensor::from_vec(vec![i64::MAX, 2], &[2]);
    assert_eq!(
        a.dot(&DynTensor::from_vec(vec![2i64, 1], &[2])).item(),
        i64::MAX.wrapping_mul(2) + 2
    );
}

/// Larger products on 2 and 3 threads: bands of output rows, one per thread, that start and
/// end inside products (67-row products cut at rows 208 or 144), gemm's own split for a product
/// with too few rows to band, the sequential path for many small products, and the folded
/// path (a batch over one shared right operand).
#[test]
fn large_and_many_products_on_strided_operands() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[130, 70], &[70, 129]),
        (&[2, 1, 67, 70], &[3, 70, 65]),
        (&[8, 600], &[600, 200]),
        (&[63, 25, 40], &[63, 40, 24]),
        (&[64, 8, 9], &[64, 9, 8]),
        (&[3, 50, 40], &[40, 33]),
    ];
    for threads in [2, 3] {
        namedtensor::set_num_threads(threads);
        for (sa, sb) in cases {
            for (ka, kb) in [
                (ViewKind::Contiguous, ViewKind::Contiguous),
                (ViewKind::Transposed, ViewKind::Reversed),
                (ViewKind::Stepped, ViewKind::Expanded),
                (ViewKind::Offset, ViewKind::Transposed),
            ] {
                check_exact(&make_view::<f32>(sa, ka, 5), &make_view::<f32>(sb, kb, 6));
                check_exact(&make_view::<f64>(sa, ka, 5), &make_view::<f64>(sb, kb, 6));
            }
        }
    }
}

proptest! {
    #![proptest_config(common::proptest_cases(48))]

    /// Products whose operands both run along a long contraction with few outputs (A's rows
    /// and B's columns contiguous, k ≥ 256, at least 16 rows and columns, at most 64²
    /// outputs: a convolution's weight gradient, which the CPU computes as unpacked dot
    /// products where it has AVX-512), exactly: contractions that are not a multiple of the vector width, blocks cut at the
    /// last row and column, an offset left operand, a batch-shared right one, bands of rows
    /// split between two threads.
    #[test]
    fn long_contractions_with_few_outputs(
        batch in 1usize..4, m in 16usize..70, n in 16usize..70, k in 256usize..700,
        offset in 0usize..3, shared in any::<bool>(), threads in 1usize..3, seed in 0u64..1000,
    ) {
        prop_assume!(m * n <= 64 * 64);
        namedtensor::set_num_threads(threads);
        let rows = batch * m + offset;
        let a = DynTensor::<f32>::from_vec(values(rows * k, seed), &[rows, k])
            .narrow(0, offset as isize, batch * m)
            .reshape(&[batch as isize, m as isize, k as isize]);
        let b_batch = if shared { 1 } else { batch };
        let b = DynTensor::<f32>::from_vec(values(b_batch * n * k, seed + 1), &[b_batch, n, k])
            .transpose(1, 2)
            .expand(&[batch as isize, k as isize, n as isize]);
        check_exact(&a, &b);
        // The weight gradient's form: a batch of products summed, through autograd.
        let w = DynTensor::<f32>::from_vec(values(m * k, seed + 2), &[m, k]).requires_grad_(true);
        let g = DynTensor::<f32>::from_vec(values(m * n, seed + 3), &[m, n]);
        (&w.matmul(&b.select(0, 0)) * &g).sum().backward();
        let want = g.matmul(&b.select(0, 0).t());
        prop_assert_eq!(w.grad().unwrap().to_vec(), want.to_vec());
    }
}

#[test]
fn stride_zero_batches_give_the_product_of_the_repeated_matrix() {
    // candle #3744: a batch expanded from one matrix must give that matrix's product in every
    // batch entry, not products of the elements after it.
    let a = DynTensor::<f32>::from_vec(values(6, 1), &[1, 2, 3]).expand(&[4, 2, 3]);
    let b = DynTensor::<f32>::from_vec(values(4 * 3 * 2, 2), &[4, 3, 2]);
    let c = a.matmul(&b);
    for i in 0..4 {
        let single = a
            .select(0, i)
            .contiguous()
            .matmul(&b.select(0, i).contiguous());
        assert_eq!(c.select(0, i).to_vec(), single.to_vec());
    }
    let b0 = DynTensor::<f64>::from_vec(values(6, 3), &[3, 2]).expand(&[5, 3, 2]);
    let a0 = DynTensor::<f64>::from_vec(values(5 * 2 * 3, 4), &[5, 2, 3]);
    check_exact(&a0, &b0);
    check_exact(&b0.transpose(1, 2), &a0.transpose(1, 2));
}

#[test]
fn seed_examples() {
    // (3, 4, 1, 2) @ (1, 2, 3) → (3, 4, 1, 3), equal to the seed's loop over the batch.
    let a = DynTensor::<f64>::randn(&[3, 4, 1, 2], 1);
    let b = DynTensor::<f64>::randn(&[1, 2, 3], 2);
    let c = a.matmul(&b);
    assert_eq!(c.shape(), &[3, 4, 1, 3]);
    for i in 0..3 {
        for j in 0..4 {
            let slice = a.select(0, i).select(0, j).matmul(&b.select(0, 0));
            assert_eq!(c.select(0, i).select(0, j).to_vec(), slice.to_vec());
        }
    }
    // (j, 1, n, m) @ (k, m, p) → (j, k, n, p)
    let (j, k, n, m, p) = (2, 3, 4, 5, 6);
    let a = DynTensor::<f32>::ones(&[j, 1, n, m]);
    let b = DynTensor::<f32>::ones(&[k, m, p]);
    let c = a.matmul(&b);
    assert_eq!(c.shape(), &[j, k, n, p]);
    assert!(c.to_vec().iter().all(|&x| x == m as f32));
}

/// Every output element of a product of values in [-1, 1) accumulates `k` products; the
/// error is measured against `Σ|a||b|` (the scale of the rounding errors) of the exact `f64`
/// product of the same (already rounded) inputs.
fn max_scaled_error<E: Element>(a: &DynTensor<E>, b: &DynTensor<E>) -> f64 {
    let got = to_f64(&a.matmul(b));
    let (fa, fb) = (to_f64(a), to_f64(b));
    let (_, want) = reference(a.shape(), &fa, b.shape(), &fb);
    let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
    let (_, scale) = reference(a.shape(), &abs(&fa), b.shape(), &abs(&fb));
    got.iter()
        .zip(&want)
        .zip(&scale)
        .map(|((g, w), s)| (g - w).abs() / s.max(f64::MIN_POSITIVE))
        .fold(0.0, f64::max)
}

#[test]
fn half_precision_against_f64() {
    // f16: products accumulate in f32, the result rounds once to f16 (unit roundoff 2^-11);
    // allowed: 2^-10 of Σ|a||b|. bf16: computed in f32, rounded once to bf16 (unit roundoff
    // 2^-8); allowed: 2^-7.
    // Uniform in [-1, 1).
    let uniform = |shape: &[usize], seed| {
        let t = DynTensor::<f64>::rand(shape, seed);
        DynTensor::from_vec(t.to_vec().iter().map(|v| 2.0 * v - 1.0).collect(), shape)
    };
    let (x, y) = (uniform(&[3, 40, 96], 1), uniform(&[96, 50], 2));
    let (x16, y16) = (x.to_dtype::<f16>(), y.to_dtype::<f16>());
    let (xb, yb) = (x.to_dtype::<bf16>(), y.to_dtype::<bf16>());
    assert!(max_scaled_error(&x16, &y16) <= 2f64.powi(-10));
    assert!(
        max_scaled_error(
            &x16.transpose(1, 2).contiguous().transpose(1, 2),
            &y16.t().contiguous().t()
        ) <= 2f64.powi(-10)
    );
    assert!(max_scaled_error(&xb, &yb) <= 2f64.powi(-7));
    assert!(max_scaled_error(&xb.select(0, 1), &yb.t().contiguous().t()) <= 2f64.powi(-7));
    // Exact small-integer products on every view.
    for kind in VIEW_KINDS {
        check_exact(
            &make_view::<f16>(&[2, 3, 4], kind, 1),
            &make_view::<f16>(&[4, 5], kind, 2),
        );
        let a = make_view::<bf16>(&[2, 3, 2], kind, 1);
        check_exact(&a, &make_view::<bf16>(&[2, 5], kind, 2));
    }
}

#[test]
fn convenience_forms() {
    let a = make_view::<f64>(&[3, 4], ViewKind::Transposed, 1);
    let b = make_view::<f64>(&[4, 5], ViewKind::Stepped, 2);
    assert_eq!(a.mm(&b).to_vec(), a.matmul(&b).to_vec());
    let v = make_view::<f64>(&[4], ViewKind::Stepped, 3);
    assert_eq!(a.mv(&v).to_vec(), a.matmul(&v).to_vec());
    assert_eq!(v.dot(&v).shape(), &[] as &[usize]);
    assert_eq!(
        v.dot(&v).item(),
        to_f64(&v).iter().map(|x| x * x).sum::<f64>()
    );
    let x = make_view::<f32>(&[2, 3, 4], ViewKind::Reversed, 4);
    let y = make_view::<f32>(&[2, 4, 5], ViewKind::Expanded, 5);
    assert_eq!(x.bmm(&y).to_vec(), x.matmul(&y).to_vec());

    for (r, kind) in [
        (a.try_mm(&v), ErrorKind::InvalidArgument),
        (v.try_mv(&v), ErrorKind::InvalidArgument),
        (a.try_dot(&v), ErrorKind::InvalidArgument),
        (
            v.try_dot(&make_view(&[3], ViewKind::Contiguous, 1)),
            ErrorKind::ShapeMismatch,
        ),
    ] {
        assert_eq!(r.unwrap_err().kind(), kind);
    }
    let e = x
        .try_bmm(&make_view(&[1, 4, 5], ViewKind::Contiguous, 1))
        .unwrap_err();
    assert!(e.to_string().contains("bmm does not broadcast"), "{e}");
}

#[test]
fn errors() {
    let a = DynTensor::<f32>::zeros(&[2, 3]);
    let e = a.try_matmul(&DynTensor::zeros(&[4, 5])).unwrap_err();
    assert_eq!((e.kind(), e.op()), (ErrorKind::ShapeMismatch, "matmul"));
    assert_eq!(
        e.message(),
        "cannot multiply shape [2, 3] by shape [4, 5]: the first's dim 1 has size 3 but the \
         second's dim 0 has size 4 (the contracted sizes must be equal)"
    );
    let e = DynTensor::<f32>::zeros(&[7, 2, 3])
        .try_matmul(&DynTensor::zeros(&[5, 3, 4]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.message()
            .contains("batch dims [7] and [5] do not broadcast"),
        "{e}"
    );
    let e = DynTensor::<f32>::zeros(&[3])
        .try_matmul(&DynTensor::zeros(&[4]))
        .unwrap_err();
    assert!(e.message().contains("dim 0 has size 3") && e.message().contains("dim 0 has size 4"));
    let e = DynTensor::scalar(1.0f32).try_matmul(&a).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("at least 1 dim"), "{e}");
    let t = DynTensor::<bool>::ones(&[2, 2]);
    assert_eq!(
        t.try_matmul(&t).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let r = std::panic::catch_unwind(|| a.matmul(&a));
    assert!(r.is_err());
}

/// Products are written into recycled (pooled) buffers without zeroing them first: every
/// element must still come from the product, never from the buffer's previous owner.
#[test]
fn products_in_recycled_buffers_overwrite_every_element() {
    for threads in [1, 2] {
        namedtensor::set_num_threads(threads);
        // One 512 x 512 product (1 MiB of f32, a pooled size) and a batch of 64 products of
        // 64 x 64 (the same byte size, the batch-parallel path).
        for (a_shape, b_shape, k) in [
            (vec![512, 3], vec![3, 512], 3.0),
            (vec![64, 64, 5], vec![64, 5, 64], 5.0),
        ] {
            for _ in 0..3 {
                // Freed just before the product: its buffer is the one the product reuses.
                drop(DynTensor::<f32>::full(&[512, 512], f32::NAN));
                let a = DynTensor::<f32>::ones(&a_shape);
                let b = DynTensor::<f32>::ones(&b_shape);
                let c = a.matmul(&b);
                assert_eq!(c.numel(), 512 * 512);
                assert!(
                    c.to_vec().iter().all(|&x| x == k),
                    "{a_shape:?} @ {b_shape:?}"
                );
            }
        }
    }
}
