//! Named views, products and joins, checked against the equivalent positional calls and
//! hand-computed values.

use namedtensor::{DynTensor, ErrorKind, Tensor, dims};

dims! { Batch, Channels, Rows, Cols, Hidden, Query, Key, Pixels, Frames, Vocab, Seq, Crop }

fn arange_f(n: usize) -> Vec<f64> {
    (0..n).map(|x| x as f64).collect()
}

#[test]
fn refine_names_checks_the_rank_and_into_dyn_drops_names() {
    let raw = DynTensor::<f32>::zeros(&[2, 3]);
    let e = raw
        .shallow_clone()
        .try_refine_names::<(Batch, Rows, Cols)>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string().contains("rank 2") && e.to_string().contains("Cols"),
        "{e}"
    );
    let t: Tensor<f32, (Rows, Cols)> = raw.shallow_clone().refine_names();
    assert_eq!((t.size::<Rows>(), t.size::<Cols>()), (2, 3));
    assert!(t.into_dyn().shares_storage(&raw));
}

#[test]
fn permute_and_align_are_views_with_the_positional_layout() {
    let img = Tensor::<f64, (Batch, Channels, Rows, Cols)>::from_vec(arange_f(120), [2, 3, 4, 5]);
    let nhwc = img.permute::<(Batch, Rows, Cols, Channels)>();
    let pos = img.as_dyn().permute(&[0, 2, 3, 1]);
    assert_eq!(nhwc.shape(), pos.shape());
    assert_eq!(nhwc.stride(), pos.stride());
    assert_eq!(nhwc.to_vec(), pos.to_vec());
    assert!(nhwc.as_dyn().shares_storage(img.as_dyn()));

    let w = Tensor::<f64, (Cols, Channels)>::from_vec(arange_f(15), [5, 3]);
    let a = w.align_as(&img); // (Batch, Channels, Rows, Cols) = [1, 3, 1, 5]
    assert_eq!(a.shape(), &[1, 3, 1, 5]);
    for c in 0..3 {
        for x in 0..5 {
            assert_eq!(a.as_dyn().get(&[0, c, 0, x]), w.as_dyn().get(&[x, c]));
        }
    }
}

#[test]
fn rename_split_merge_select_narrow() {
    let t = Tensor::<i64, (Batch, Pixels)>::from_vec((0..24).collect(), [2, 12]);
    let s = t.split::<Pixels, (Rows, Cols)>(&[3, 4]);
    assert_eq!(s.names(), ["Batch", "Rows", "Cols"]);
    assert_eq!(s.as_dyn().get(&[1, 2, 3]), 12 + 2 * 4 + 3);
    let m = s.merge::<(Rows, Cols), Pixels>();
    assert_eq!(m.to_vec(), t.to_vec());
    // merging transposed dims copies, and gives the transposed order
    let tr = s
        .permute::<(Batch, Cols, Rows)>()
        .merge::<(Cols, Rows), Pixels>();
    assert_eq!(
        tr.as_dyn().select(0, 0).to_vec(),
        vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
    );
    let r = s.rename::<Rows, Crop>();
    assert_eq!(r.names(), ["Batch", "Crop", "Cols"]);
    assert_eq!(
        s.select::<Rows>(1).to_vec(),
        s.as_dyn().select(1, 1).to_vec()
    );
    assert_eq!(s.get::<Batch>(1).names(), ["Rows", "Cols"]);
    let u = s.unbind::<Cols>();
    assert_eq!(u.len(), 4);
    assert_eq!(u[3].to_vec(), s.as_dyn().select(2, 3).to_vec());
    assert_eq!(
        s.narrow::<Cols>(1, 2).to_vec(),
        s.as_dyn().narrow(2, 1, 2).to_vec()
    );
    let w = s.narrow_as::<Rows, Crop>(1, 2);
    assert_eq!(
        (w.names(), w.size::<Crop>()),
        (["Batch", "Crop", "Cols"].as_slice(), 2)
    );
    assert!(s.try_split::<Rows, (Query, Key)>(&[2, 2]).is_err()); // 3 rows do not split as 2×2
    assert!(s.try_narrow::<Rows>(2, 5).is_err());
}

#[test]
fn masked_tensors_keep_their_data_and_unmask_restores_the_names() {
    let x = Tensor::<f32, (Batch, Seq, Hidden)>::randn([2, 3, 4], 0);
    let inner = x.shallow_clone().mask_to::<Batch>();
    assert_eq!(inner.names(), ["Seq", "Hidden"]);
    assert_eq!(inner.size::<Hidden>(), 4);
    let summed_seq = inner.select::<Seq>(0);
    assert_eq!(summed_seq.shape(), &[2, 4]); // Batch still there, privately
    let back = summed_seq.unmask();
    assert_eq!(back.names(), ["Batch", "Hidden"]);
    assert_eq!(back.to_vec(), x.as_dyn().select(1, 0).to_vec());
}

#[test]
fn mask_hides_any_dims_as_a_permuted_view() {
    let x = Tensor::<f64, (Batch, Seq, Hidden)>::from_vec(arange_f(24), [2, 3, 4]);
    // A middle dim: `Seq` moves to the front, privately.
    let per_pos = x.mask::<Seq>();
    assert_eq!(per_pos.names(), ["Batch", "Hidden"]);
    assert_eq!(per_pos.shape(), &[3, 2, 4]);
    assert_eq!(per_pos.to_vec(), x.as_dyn().permute(&[1, 0, 2]).to_vec());
    // Named ops on the rest broadcast over it: a sum over Hidden per (Seq, Batch).
    let sums = per_pos.sum::<Hidden>().unmask();
    assert_eq!(sums.names(), ["Seq", "Batch"]);
    let want = x.as_dyn().sum_dims(&[2], false).t();
    assert_eq!(sums.to_vec(), want.to_vec());
    // Several dims, in the order written; masking a masked tensor hides more.
    let two = x.mask::<(Hidden, Batch)>();
    assert_eq!(two.names(), ["Seq"]);
    assert_eq!(two.unmask().names(), ["Hidden", "Batch", "Seq"]);
    assert_eq!(two.to_vec(), x.as_dyn().permute(&[2, 0, 1]).to_vec());
    let more = x.mask_to::<Batch>().mask::<Hidden>();
    assert_eq!(more.names(), ["Seq"]);
    assert_eq!(more.unmask().names(), ["Batch", "Hidden", "Seq"]);
    assert_eq!(more.to_vec(), x.as_dyn().permute(&[0, 2, 1]).to_vec());
    // A masked dim broadcasts in arithmetic with a tensor that has it privately too.
    let scale = Tensor::<f64, (Hidden,)>::from_vec(vec![1., 2., 3., 4.], [4]);
    let scaled = (&per_pos * &scale).unmask();
    assert_eq!(scaled.names(), ["Seq", "Batch", "Hidden"]);
    assert_eq!(
        scaled.as_dyn().get(&[2, 1, 3]),
        x.as_dyn().get(&[1, 2, 3]) * 4.0
    );
}

#[test]
fn mask_writes_through_and_differentiates() {
    let x = Tensor::<f64, (Batch, Seq)>::from_vec(arange_f(6), [2, 3]).requires_grad_(true);
    let m = x.mask::<Seq>(); // (Seq | Batch)
    let y = m.map(|t| t * t).sum::<Batch>().unmask(); // (Seq,)
    y.sum::<Seq>().backward();
    assert_eq!(
        x.grad().unwrap().to_vec(),
        arange_f(6).iter().map(|v| 2.0 * v).collect::<Vec<_>>()
    );
    let plain = Tensor::<f32, (Batch, Seq)>::zeros([2, 3]);
    plain.mask::<Seq>().as_dyn().set(&[2, 1], 7.0); // (Seq 2, Batch 1)
    assert_eq!(plain.as_dyn().get(&[1, 2]), 7.0);
}

#[test]
fn refine_names_trailing_hides_the_leading_dims_in_one() {
    use namedtensor::Leading;
    let raw = DynTensor::from_vec(arange_f(24), &[2, 3, 2, 2]);
    let t: Tensor<f64, (Rows, Cols), (Leading,)> = raw.shallow_clone().refine_names_trailing();
    assert_eq!(t.names(), ["Rows", "Cols"]);
    assert_eq!(t.shape(), &[6, 2, 2]);
    assert_eq!(t.to_vec(), arange_f(24)); // a view of the same elements
    let back = t.sum::<Cols>().unmask();
    assert_eq!(back.names(), ["Leading", "Rows"]);
    assert_eq!(
        back.to_vec(),
        raw.sum_dims(&[3], false).reshape(&[6, 2]).to_vec()
    );
    // No leading dims: `Leading` has size 1.
    let one = DynTensor::<f32>::zeros(&[4, 5]).refine_names_trailing::<(Rows, Cols)>();
    assert_eq!(one.shape(), &[1, 4, 5]);
    // Leading dims that cannot merge as a view are copied, in row-major order.
    let swapped = raw.transpose(0, 1); // [3, 2, 2, 2]
    let merged = swapped
        .shallow_clone()
        .refine_names_trailing::<(Rows, Cols)>();
    assert_eq!(merged.to_vec(), swapped.contiguous().to_vec());
    // Too few dims: an error naming the names.
    let e = DynTensor::<f32>::zeros(&[3])
        .try_refine_names_trailing::<(Rows, Cols)>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(e.to_string().contains("[\"Rows\", \"Cols\"]"), "{e}");
    // Gradients flow back through the merge.
    let x = DynTensor::from_vec(arange_f(12), &[2, 2, 3]).requires_grad_(true);
    let named = x.shallow_clone().refine_names_trailing::<(Cols,)>();
    named
        .map(|t| t * 3.0)
        .sum::<Cols>()
        .unmask()
        .sum::<Leading>()
        .backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![3.0; 12]);
}

/// `dot` against explicit loops over the named axes.
#[test]
fn dot_contracts_by_name_with_shared_dims_as_batch() {
    let (b, q, k, h) = (2, 3, 4, 5);
    let qt = Tensor::<f64, (Batch, Query, Hidden)>::randn([b, q, h], 1);
    // the key tensor in another dim order
    let kt = Tensor::<f64, (Hidden, Batch, Key)>::randn([h, b, k], 2);
    let s = qt.dot(Hidden, &kt);
    assert_eq!(s.names(), ["Batch", "Query", "Key"]);
    assert_eq!(s.shape(), &[b, q, k]);
    let (qd, kd, sd) = (qt.as_dyn(), kt.as_dyn(), s.as_dyn());
    for bi in 0..b {
        for qi in 0..q {
            for ki in 0..k {
                let want: f64 = (0..h)
                    .map(|hi| qd.get(&[bi, qi, hi]) * kd.get(&[hi, bi, ki]))
                    .sum();
                assert!((sd.get(&[bi, qi, ki]) - want).abs() < 1e-12);
            }
        }
    }
    // contracting two dims at once; no batch dims
    let a = Tensor::<f64, (Rows, Cols, Channels)>::randn([2, 3, 4], 3);
    let c = Tensor::<f64, (Cols, Query, Rows)>::randn([3, 5, 2], 4);
    let d = a.dot((Rows, Cols), &c);
    assert_eq!(d.names(), ["Channels", "Query"]);
    for ch in 0..4 {
        for qi in 0..5 {
            let mut want = 0.0;
            for r in 0..2 {
                for co in 0..3 {
                    want += a.as_dyn().get(&[r, co, ch]) * c.as_dyn().get(&[co, qi, r]);
                }
            }
            assert!((d.as_dyn().get(&[ch, qi]) - want).abs() < 1e-12);
        }
    }
    // a full contraction gives a 0-d tensor
    let v = Tensor::<f64, (Hidden,)>::from_vec(vec![1., 2., 3.], [3]);
    assert_eq!(v.dot(Hidden, &v).item(), 14.0);
}

#[test]
fn dot_with_sizes_that_disagree_names_the_dim() {
    let q = Tensor::<f32, (Batch, Hidden)>::zeros([2, 5]);
    let k = Tensor::<f32, (Batch, Hidden)>::zeros([2, 6]);
    let e = q.try_dot(Hidden, &k).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string().contains("`Hidden`")
            && e.to_string().contains("5")
            && e.to_string().contains("6"),
        "{e}"
    );
    let k2 = Tensor::<f32, (Batch, Hidden)>::zeros([3, 5]);
    let e = q.try_dot(Hidden, &k2).unwrap_err();
    assert!(e.to_string().contains("`Batch`"), "{e}");
}

#[test]
fn matmul_with_names_aligns_batch_dims_by_name() {
    let a = Tensor::<f64, (Batch, Rows, Hidden)>::randn([2, 3, 4], 5);
    let b = Tensor::<f64, (Hidden, Cols)>::randn([4, 5], 6);
    let c = a.matmul(&b);
    assert_eq!(c.names(), ["Batch", "Rows", "Cols"]);
    assert_eq!(c.to_vec(), a.as_dyn().matmul(b.as_dyn()).to_vec());
}

#[test]
fn cat_stack_and_index_select_by_name() {
    let a = Tensor::<i32, (Seq, Hidden)>::from_vec((0..6).collect(), [3, 2]);
    let b = Tensor::<i32, (Seq, Hidden)>::from_vec((6..10).collect(), [2, 2]);
    let c = Tensor::cat(Seq, &[&a, &b]);
    assert_eq!(c.to_vec(), (0..10).collect::<Vec<_>>());
    let h = Tensor::cat(Hidden, &[&a, &a]);
    assert_eq!(h.shape(), &[3, 4]);
    assert!(Tensor::try_cat(Hidden, &[&a, &b]).is_err());
    let s = Tensor::stack(Frames, &[&a, &a]);
    assert_eq!(s.names(), ["Frames", "Seq", "Hidden"]);
    assert_eq!(s.to_vec(), [a.to_vec(), a.to_vec()].concat());
    let table =
        Tensor::<f32, (Vocab, Hidden)>::from_vec((0..10).map(|x| x as f32).collect(), [5, 2]);
    let ids = Tensor::<i64, (Batch, Seq)>::from_vec(vec![4, 0, 2, 2, 1, 3], [2, 3]);
    let emb = table.index_select(Vocab, &ids);
    assert_eq!(emb.names(), ["Batch", "Seq", "Hidden"]);
    assert_eq!(emb.as_dyn().get(&[1, 2, 1]), 7.0);
    let bad = Tensor::<i64, (Batch,)>::from_vec(vec![5], [1]);
    assert!(table.try_index_select(Vocab, &bad).is_err());
}

#[test]
fn display_shows_the_names() {
    let t = Tensor::<f32, (Rows, Cols)>::ones([1, 2]);
    assert_eq!(t.to_string(), "tensor([[1., 1.]], names=('Rows', 'Cols'))");
    let m = Tensor::<i64, (Batch, Rows)>::zeros([1, 1]).mask_to::<Batch>();
    assert_eq!(m.to_string(), "tensor([[0]], names=(<Batch>, 'Rows'))");
}
