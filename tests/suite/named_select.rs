//! Selection by name (comparisons, where_, masked_fill, gather, take_along) against the
//! positional ops on hand-aligned operands, hand-computed values and a naive loop.

use crate::common;
use namedtensor::{DynTensor, ErrorKind, Tensor, dims};
use proptest::prelude::*;

dims! { Batch, Seq, Vocab, Height, Width, Channels, Rows, Cols }

fn f64s(n: usize, seed: u64) -> Vec<f64> {
    common::floats(n, seed, -2.0, 2.0)
}

#[test]
fn comparisons_align_by_name_and_broadcast() {
    let a = Tensor::<f64, (Rows, Cols)>::from_vec(f64s(6, 1), [2, 3]);
    let b = Tensor::<f64, (Cols, Rows)>::from_vec(f64s(6, 2), [3, 2]);
    let bt = b.as_dyn().t();
    // Each comparison equals the positional one on the hand-transposed operand.
    type Named = Tensor<bool, (Rows, Cols)>;
    let pairs: [(Named, DynTensor<bool>); 6] = [
        (a.eq(&b), a.as_dyn().eq(&bt)),
        (a.ne(&b), a.as_dyn().ne(&bt)),
        (a.lt(&b), a.as_dyn().lt(&bt)),
        (a.le(&b), a.as_dyn().le(&bt)),
        (a.gt(&b), a.as_dyn().gt(&bt)),
        (a.ge(&b), a.as_dyn().ge(&bt)),
    ];
    for (named, positional) in &pairs {
        assert_eq!(named.names(), ["Rows", "Cols"]);
        assert_eq!(named.to_vec(), positional.to_vec());
    }
    // a.lt(b) and a.ge(b) are complements (no NaN here).
    let lt = pairs[2].0.to_vec();
    let ge = pairs[5].0.to_vec();
    assert!(lt.iter().zip(&ge).all(|(x, y)| x != y));

    // The union of dims, mixed dtypes: (Batch,) i32 against (Cols,) f32 -> (Batch, Cols).
    let x = Tensor::<i32, (Batch,)>::from_vec(vec![0, 2], [2]);
    let y = Tensor::<f32, (Cols,)>::from_vec(vec![-0.5, 1.5, 2.0], [3]);
    let c = x.gt(&y);
    assert_eq!(c.names(), ["Batch", "Cols"]);
    assert_eq!(c.to_vec(), vec![true, false, false, true, true, false]);
}

#[test]
fn scalar_comparisons_keep_the_names() {
    let t = Tensor::<f32, (Rows, Cols)>::from_vec(vec![-1.0, 0.0, 0.5, 2.0], [2, 2]);
    assert_eq!(t.gt_scalar(0.0).to_vec(), vec![false, false, true, true]);
    assert_eq!(t.le_scalar(0).to_vec(), vec![true, true, false, false]);
    assert_eq!(t.eq_scalar(0.5).to_vec(), vec![false, false, true, false]);
    assert_eq!(t.ne_scalar(0.5).names(), ["Rows", "Cols"]);
    let i = Tensor::<i64, (Rows,)>::from_vec(vec![1, 2, 3], [3]);
    // An integer tensor against a float scalar compares as f32: 2 < 2.5.
    assert_eq!(i.lt_scalar(2.5).to_vec(), vec![true, true, false]);
    assert_eq!(i.ge_scalar(2).to_vec(), vec![false, true, true]);
}

#[test]
fn a_comparison_size_mismatch_names_the_dim() {
    let a = Tensor::<f32, (Batch, Cols)>::zeros([2, 3]);
    let b = Tensor::<f32, (Cols,)>::zeros([4]);
    let e = a.try_lt(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string()
            .starts_with("lt: dim `Cols` has size 3 on the left and 4 on the right"),
        "{e}"
    );
}

/// Seed 004's example: a `(Height, Width)` mask on a `(Height, Width, Channels)` image.
#[test]
fn a_pixel_mask_fills_every_channel() {
    let img = Tensor::<f32, (Height, Width, Channels)>::from_vec(
        (0..12).map(|x| x as f32).collect(),
        [2, 2, 3],
    );
    let mask = Tensor::<bool, (Height, Width)>::from_vec(vec![false, true, true, false], [2, 2]);
    let filled = img.masked_fill(&mask, -1.0);
    assert_eq!(filled.names(), ["Height", "Width", "Channels"]);
    let want = [0., 1., 2., -1., -1., -1., -1., -1., -1., 9., 10., 11.];
    assert_eq!(filled.to_vec(), want);
    // The mask's dims in the other order select the transposed pixels.
    let flipped = mask.permute::<(Width, Height)>();
    assert_eq!(img.masked_fill(&flipped, -1.0).to_vec(), want);
    let rows_only = Tensor::<bool, (Height,)>::from_vec(vec![true, false], [2]);
    let by_row = img.masked_fill(&rows_only, 0.0).to_vec();
    assert_eq!(&by_row[..6], &[0.0; 6]);
    assert_eq!(&by_row[6..], &[6., 7., 8., 9., 10., 11.]);
    // The input is untouched.
    assert_eq!(img.to_vec(), (0..12).map(|x| x as f32).collect::<Vec<_>>());
}

#[test]
fn masked_fill_equals_the_positional_op_on_the_aligned_mask() {
    let t = Tensor::<f64, (Batch, Rows, Cols)>::from_vec(f64s(24, 3), [2, 3, 4]);
    let m = Tensor::<f64, (Cols, Batch)>::from_vec(f64s(8, 4), [4, 2]).gt_scalar(0.0);
    let got = t.masked_fill(&m, 7.0);
    // (Cols, Batch) -> (Batch, 1, Cols) by hand.
    let aligned = m.as_dyn().t().unsqueeze(1);
    assert_eq!(got.to_vec(), t.as_dyn().masked_fill(&aligned, 7.0).to_vec());
}

#[test]
fn a_mask_of_the_wrong_size_is_an_error_naming_the_dim() {
    let img = Tensor::<f32, (Height, Width, Channels)>::zeros([2, 3, 4]);
    let mask = Tensor::<bool, (Width,)>::from_vec(vec![true; 2], [2]);
    let e = img.try_masked_fill(&mask, 1.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    let msg = e.to_string();
    assert!(
        msg.starts_with("masked_fill: dim `Width` has size 2 in the mask and 3 in the tensor"),
        "{msg}"
    );
    // A mask of size 1 in a dim broadcasts.
    let one = Tensor::<bool, (Width,)>::from_vec(vec![true], [1]);
    assert!(
        img.masked_fill(&one, 1.0)
            .to_vec()
            .iter()
            .all(|&x| x == 1.0)
    );
}

#[test]
fn where_selects_by_name_and_promotes() {
    // scores (Seq, Vocab) f32 where keep (Vocab,) else a per-row i64 fallback (Seq,).
    let scores = Tensor::<f32, (Seq, Vocab)>::from_vec(vec![1., 2., 3., 4., 5., 6.], [2, 3]);
    let keep = Tensor::<bool, (Vocab,)>::from_vec(vec![true, false, true], [3]);
    let fallback = Tensor::<i64, (Seq,)>::from_vec(vec![-1, -2], [2]);
    let out = scores.where_(&keep, &fallback);
    assert_eq!(out.names(), ["Seq", "Vocab"]);
    assert_eq!(out.to_vec(), vec![1., -1., 3., 4., -2., 6.]);
    // The other's extra dims join the result (self's dims first, then the other's).
    let row = Tensor::<f32, (Vocab,)>::from_vec(vec![1., 2., 3.], [3]);
    let cond = Tensor::<bool, (Batch,)>::from_vec(vec![true, false], [2]);
    let zeros = Tensor::<f32, (Batch,)>::zeros([2]);
    let picked = row.where_(&cond, &zeros);
    assert_eq!(picked.names(), ["Vocab", "Batch"]);
    assert_eq!(picked.to_vec(), vec![1., 0., 2., 0., 3., 0.]);
    // Against the positional where_ with everything aligned by hand.
    let cond2 =
        Tensor::<bool, (Vocab, Seq)>::from_vec(vec![true, false, false, true, true, true], [3, 2]);
    let got = scores.where_(&cond2, &fallback);
    let want = namedtensor::where_(
        &cond2.as_dyn().t(),
        scores.as_dyn(),
        &fallback.as_dyn().unsqueeze(1),
    );
    assert_eq!(got.to_vec(), want.to_vec());
}

#[test]
fn where_size_mismatches_name_the_dim() {
    let a = Tensor::<f32, (Rows, Cols)>::zeros([2, 3]);
    let b = Tensor::<f32, (Rows,)>::zeros([5]);
    let cond = Tensor::<bool, (Cols,)>::from_vec(vec![true; 3], [3]);
    let e = a.try_where_(&cond, &b).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("where_: dim `Rows` has size 2 on the left and 5 on the right"),
        "{e}"
    );
    let bad = Tensor::<bool, (Rows,)>::from_vec(vec![true; 3], [3]);
    let e = a.try_where_(&bad, &a).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string()
            .starts_with("where_: dim `Rows` has size 3 in the condition and 2 in the tensor"),
        "{e}"
    );
}

#[test]
fn masks_broadcast_over_private_dims() {
    let x = Tensor::<f32, (Batch, Seq, Vocab)>::ones([2, 3, 2]);
    let inner = x.mask_to::<Batch>();
    let m = Tensor::<bool, (Seq,)>::from_vec(vec![false, true, false], [3]);
    let filled = inner.masked_fill(&m, 0.0).unmask();
    assert_eq!(filled.names(), ["Batch", "Seq", "Vocab"]);
    let want: Vec<f32> = (0..12)
        .map(|i| if (i / 2) % 3 == 1 { 0.0 } else { 1.0 })
        .collect();
    assert_eq!(filled.to_vec(), want);
    let picked = inner.where_(&m, &Tensor::<f32, ()>::from_vec(vec![5.0], []));
    assert_eq!(picked.shape(), &[2, 3, 2]);
    // Where the condition holds, self (1); elsewhere the other (5).
    assert_eq!(picked.as_dyn().get(&[1, 1, 0]), 1.0);
    assert_eq!(picked.as_dyn().get(&[1, 2, 0]), 5.0);
}

#[test]
fn gather_by_name_permutes_the_index() {
    let t = Tensor::<f64, (Rows, Cols)>::from_vec(f64s(12, 5), [3, 4]);
    let idx = Tensor::<i64, (Cols, Rows)>::from_vec(vec![2, 0, 1, 1, 0, 2], [2, 3]);
    let got = t.gather(Rows, &idx);
    assert_eq!(got.names(), ["Rows", "Cols"]);
    assert_eq!(got.shape(), &[3, 2]);
    let want = t.as_dyn().gather(0, &idx.as_dyn().t());
    assert_eq!(got.to_vec(), want.to_vec());
    // Out of range: an error, inputs untouched.
    let bad = Tensor::<i64, (Rows, Cols)>::from_vec(vec![3], [1, 1]);
    assert_eq!(
        t.try_gather(Rows, &bad).unwrap_err().kind(),
        ErrorKind::IndexOutOfRange
    );
}

/// `out[i] = t[i with D replaced by index[i]]`, the index broadcast from `ishape` (right
/// aligned with the result's shape, size 1 or missing dims repeated).
fn take_along_naive(
    t: &[f64],
    shape: &[usize],
    axis: usize,
    index: &[i64],
    ishape: &[usize],
) -> Vec<f64> {
    let mut out_shape = shape.to_vec();
    out_shape.remove(axis);
    common::indices(&out_shape)
        .iter()
        .map(|ix| {
            let k = index[common::bcast_flat(ix, ishape)] as usize;
            let mut full = ix.clone();
            full.insert(axis, k);
            let flat = full.iter().zip(shape).fold(0, |acc, (&i, &s)| acc * s + i);
            t[flat]
        })
        .collect()
}

#[test]
fn take_along_picks_cross_entropy_labels_and_differentiates() {
    let logp = Tensor::<f64, (Batch, Vocab)>::from_vec(f64s(8, 6), [2, 4]).requires_grad_(true);
    let labels = Tensor::<i64, (Batch,)>::from_vec(vec![3, 1], [2]);
    let picked = logp.take_along(Vocab, &labels);
    assert_eq!(picked.names(), ["Batch"]);
    let v = logp.to_vec();
    assert_eq!(picked.to_vec(), vec![v[3], v[4 + 1]]);
    // loss = -(2 * picked[0] + 3 * picked[1]): the gradient is one-hot, scaled.
    let w = Tensor::<f64, (Batch,)>::from_vec(vec![-2.0, -3.0], [2]);
    (&picked * &w).sum::<Batch>().backward();
    let g = logp.grad().unwrap();
    assert_eq!(g.names(), ["Batch", "Vocab"]);
    assert_eq!(g.to_vec(), vec![0., 0., 0., -2., 0., -3., 0., 0.]);
}

#[test]
fn a_broadcast_index_accumulates_its_gradient_where_picks_repeat() {
    // x (Seq, Vocab) and one index per Batch: each Seq row is picked twice (once per batch
    // element) where both labels agree.
    let x = Tensor::<f64, (Seq, Vocab)>::from_vec(f64s(6, 7), [2, 3]).requires_grad_(true);
    let x3 = x
        .align_to::<(Batch, Seq, Vocab)>()
        .as_dyn()
        .expand(&[2, 2, 3]);
    let x3 = x3.refine_names::<(Batch, Seq, Vocab)>();
    let labels = Tensor::<i64, (Batch,)>::from_vec(vec![2, 2], [2]);
    let picked = x3.take_along(Vocab, &labels);
    assert_eq!(picked.names(), ["Batch", "Seq"]);
    picked.sum::<(Batch, Seq)>().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0., 0., 2., 0., 0., 2.]);
}

#[test]
fn take_along_index_errors_name_the_dim() {
    let t = Tensor::<f32, (Batch, Seq, Vocab)>::zeros([2, 3, 4]);
    let idx = Tensor::<i64, (Seq,)>::zeros([2]);
    let e = t.try_take_along(Vocab, &idx).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string()
            .starts_with("take_along: dim `Seq` has size 2 in the index and 3 in the tensor"),
        "{e}"
    );
    let neg = Tensor::<i64, (Seq,)>::from_vec(vec![0, -1, 0], [3]);
    assert_eq!(
        t.try_take_along(Vocab, &neg).unwrap_err().kind(),
        ErrorKind::IndexOutOfRange
    );
}

#[test]
fn take_along_over_private_dims() {
    let x = Tensor::<f64, (Batch, Seq, Vocab)>::from_vec(f64s(12, 8), [2, 2, 3]);
    let labels = Tensor::<i64, (Seq,)>::from_vec(vec![1, 2], [2]);
    let picked = x.mask_to::<Batch>().take_along(Vocab, &labels).unmask();
    assert_eq!(picked.names(), ["Batch", "Seq"]);
    let want = take_along_naive(&x.to_vec(), &[2, 2, 3], 2, &[1, 2], &[1, 2]);
    assert_eq!(picked.to_vec(), want);
}

proptest! {
    #![proptest_config(common::proptest_cases(48))]

    /// Random sizes, an index with dims missing or of size 1, a transposed input: the same
    /// as the naive loop.
    #[test]
    fn take_along_matches_the_naive_loop(
        b in 1usize..4, s in 1usize..4, v in 1usize..5,
        index_has_batch in any::<bool>(), index_has_seq in any::<bool>(),
        transposed in any::<bool>(), seed in 0u64..1000,
    ) {
        let vals = f64s(b * s * v, seed);
        let x = if transposed {
            // The same logical tensor stored (Vocab, Seq, Batch)-major.
            let mut t = vec![0.0; vals.len()];
            for (i, ix) in common::indices(&[b, s, v]).iter().enumerate() {
                t[(ix[2] * s + ix[1]) * b + ix[0]] = vals[i];
            }
            Tensor::<f64, (Vocab, Seq, Batch)>::from_vec(t, [v, s, b]).permute::<(Batch, Seq, Vocab)>()
        } else {
            Tensor::<f64, (Batch, Seq, Vocab)>::from_vec(vals.clone(), [b, s, v])
        };
        let (ib, is) = (if index_has_batch { b } else { 1 }, if index_has_seq { s } else { 1 });
        let idx: Vec<i64> = (0..ib * is).map(|k| ((k as u64 * 7 + seed) % v as u64) as i64).collect();
        let index = Tensor::<i64, (Batch, Seq)>::from_vec(idx.clone(), [ib, is]);
        let got = x.take_along(Vocab, &index);
        prop_assert_eq!(got.shape(), &[b, s]);
        prop_assert_eq!(got.to_vec(), take_along_naive(&vals, &[b, s, v], 2, &idx, &[ib, is]));
    }
}

/// `|a − b| ≤ atol + rtol·|b|`, NaN close to NaN only if `equal_nan`, infinities only to
/// themselves: PyTorch's rule, written out.
fn close_by_hand(a: f64, b: f64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    if a.is_nan() || b.is_nan() {
        return equal_nan && a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= atol + rtol * b.abs()
}

proptest! {
    #![proptest_config(common::proptest_cases(48))]

    /// isclose lines the operands up by name (here a transposed right operand, broadcast
    /// over a dim it lacks) and applies PyTorch's rule to each pair.
    #[test]
    fn isclose_by_name_matches_the_rule(
        r in 1usize..4, c in 1usize..4, b in 1usize..3, seed in 0u64..1000,
        rtol in prop_oneof![Just(0.0), Just(1e-3), Just(0.5)],
        atol in prop_oneof![Just(0.0), Just(1e-2)],
        equal_nan in any::<bool>(),
    ) {
        let specials = [f64::NAN, f64::INFINITY, -f64::INFINITY, 0.0];
        let mut av = f64s(b * r * c, seed);
        // Every fifth entry special; some right-hand entries a tiny step from the left's.
        for (i, v) in av.iter_mut().enumerate() {
            if i % 5 == 3 {
                *v = specials[(i / 5) % 4];
            }
        }
        let bvals: Vec<f64> = (0..c * r)
            .map(|k| {
                let (j, i) = (k / r, k % r); // (Cols j, Rows i), of batch entry 0
                let base = av[i * c + j];
                match k % 3 {
                    0 => base,
                    1 => base * (1.0 + 1e-4),
                    _ => f64s(1, seed + k as u64)[0],
                }
            })
            .collect();
        let a = Tensor::<f64, (Batch, Rows, Cols)>::from_vec(av.clone(), [b, r, c]);
        let other = Tensor::<f64, (Cols, Rows)>::from_vec(bvals.clone(), [c, r]);
        let got = a.isclose(&other, rtol, atol, equal_nan);
        prop_assert_eq!(got.names(), ["Batch", "Rows", "Cols"]);
        let want = |nan: bool| -> Vec<bool> {
            let mut out = Vec::new();
            for n in 0..b {
                for i in 0..r {
                    for j in 0..c {
                        let x = av[(n * r + i) * c + j];
                        out.push(close_by_hand(x, bvals[j * r + i], rtol, atol, nan));
                    }
                }
            }
            out
        };
        prop_assert_eq!(got.to_vec(), want(equal_nan));
        // allclose: isclose without equal NaNs, everywhere.
        prop_assert_eq!(a.allclose(&other, rtol, atol), want(false).iter().all(|&w| w));
    }
}

#[test]
fn allclose_is_false_and_isclose_an_error_naming_the_dim_on_other_sizes() {
    let a = Tensor::<f32, (Rows, Cols)>::ones([2, 3]);
    let b = Tensor::<f32, (Cols,)>::ones([4]);
    assert!(!a.allclose(&b, 1e-5, 1e-8));
    let e = a.try_isclose(&b, 1e-5, 1e-8, false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(e.to_string().contains("`Cols`"), "{e}");
    assert!(a.allclose(&Tensor::<f32, (Cols, Rows)>::ones([3, 2]), 0.0, 0.0));
}

#[test]
fn topk_by_name_is_the_positional_topk_along_its_axis_and_refuses_a_large_k() {
    let x = Tensor::<f64, (Rows, Cols)>::from_vec(f64s(12, 9), [3, 4]);
    for largest in [true, false] {
        let (v, i) = x.try_topk::<Rows>(2, largest).unwrap();
        let (pv, pi) = x.as_dyn().topk(2, 0, largest);
        assert_eq!(v.names(), ["Rows", "Cols"]);
        assert_eq!((v.to_vec(), i.to_vec()), (pv.to_vec(), pi.to_vec()));
    }
    let before = x.to_vec();
    let e = x.try_topk::<Cols>(5, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string().contains("`Cols`") && e.to_string().contains("k = 5"),
        "{e}"
    );
    assert_eq!(x.to_vec(), before);
}

#[test]
fn randint_by_name_is_the_positional_draw_with_names() {
    let ids = Tensor::<i64, (Batch, Seq)>::randint(-2, 7, [3, 5], 11);
    assert_eq!(ids.names(), ["Batch", "Seq"]);
    assert_eq!(
        ids.to_vec(),
        DynTensor::<i64>::randint(-2, 7, &[3, 5], 11).to_vec()
    );
    assert_eq!(
        Tensor::<u8, (Seq,)>::try_randint(0, 300, [4], 0)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
}
