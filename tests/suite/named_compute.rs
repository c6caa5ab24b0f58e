//! Named arithmetic, reductions and softmax against the positional computation and the
//! seeds' hand-computed values.

use namedtensor::{DynTensor, ErrorKind, Tensor, dims};

dims! { Batch, Channels, Rows, Cols, Seq, Hidden, Classes, Hidden2 }

#[test]
fn broadcasting_by_name_aligns_dims_whatever_their_order() {
    // (Rows, Cols) + (Cols, Rows): positional broadcasting would pair Rows with Cols.
    let a = Tensor::<f64, (Rows, Cols)>::from_vec((0..6).map(f64::from).collect(), [2, 3]);
    let b =
        Tensor::<f64, (Cols, Rows)>::from_vec((0..6).map(|x| 10.0 * x as f64).collect(), [3, 2]);
    let c = &a + &b;
    assert_eq!(c.names(), ["Rows", "Cols"]);
    let want = a.as_dyn() + &b.as_dyn().t();
    assert_eq!(c.to_vec(), want.to_vec());
    // union of dims: (Batch, Rows) * (Cols,) -> (Batch, Rows, Cols)
    let x = Tensor::<f32, (Batch, Rows)>::from_vec(vec![1., 2., 3., 4.], [2, 2]);
    let y = Tensor::<f32, (Cols,)>::from_vec(vec![1., 10., 100.], [3]);
    let z = &x * &y;
    assert_eq!(z.names(), ["Batch", "Rows", "Cols"]);
    assert_eq!(z.shape(), &[2, 2, 3]);
    assert_eq!(z.as_dyn().get(&[1, 0, 2]), 300.0);
    // mixed dtypes promote as positionally
    let i = Tensor::<i64, (Cols,)>::from_vec(vec![1, 2, 3], [3]);
    let q = x.div(&i);
    assert_eq!(q.as_dyn().get(&[0, 1, 2]), 2.0 / 3.0);
}

#[test]
fn by_name_size_mismatch_names_the_dim_and_sizes() {
    let a = Tensor::<f32, (Batch, Hidden)>::zeros([2, 4]);
    let b = Tensor::<f32, (Hidden,)>::zeros([5]);
    let e = a.try_add(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    let msg = e.to_string();
    assert!(
        msg.starts_with("add: dim `Hidden` has size 4 on the left and 5 on the right"),
        "{msg}"
    );
    assert_eq!(a.to_vec(), vec![0.0; 8]); // inputs untouched
}

#[test]
fn every_form_names_the_dim_whose_sizes_disagree() {
    let message = |e: namedtensor::Error| {
        assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
        e.to_string()
    };
    let a = Tensor::<f32, (Batch, Rows, Cols)>::zeros([2, 3, 4]);
    // The right operand needs a permuted view: (Cols, Batch) -> (Batch, 1, Cols).
    let w = Tensor::<f32, (Cols, Batch)>::zeros([4, 5]);
    let m = message(a.try_mul(&w).unwrap_err());
    assert!(
        m.starts_with("mul: dim `Batch` has size 2 on the left and 5 on the right"),
        "{m}"
    );
    // A trailing dim of the left operand that the right lacks: (Rows,) -> (1, Rows, 1).
    let r = Tensor::<f32, (Rows,)>::zeros([7]);
    let m = message(a.try_sub(&r).unwrap_err());
    assert!(
        m.starts_with("sub: dim `Rows` has size 3 on the left and 7"),
        "{m}"
    );
    // The right operand has dims the left lacks: they come last in the result.
    let s = Tensor::<f32, (Seq, Cols)>::zeros([6, 9]);
    let m = message(a.try_add(&s).unwrap_err());
    assert!(
        m.starts_with("add: dim `Cols` has size 4 on the left and 9"),
        "{m}"
    );
    assert!(
        m.contains(r#"result dims ["Batch", "Rows", "Cols", "Seq"]"#),
        "{m}"
    );
    // Strict and positional forms.
    let b = Tensor::<f32, (Cols, Batch, Rows)>::zeros([4, 2, 8]);
    let m = message(a.try_div_strict(&b).unwrap_err());
    assert!(
        m.starts_with("div: dim `Rows` has size 3 on the left and 8"),
        "{m}"
    );
    let c = Tensor::<f32, (Rows, Cols)>::zeros([3, 5]);
    let m = message(a.try_add_positional(&c).unwrap_err());
    assert!(
        m.starts_with("add: dim `Cols` has size 4 on the left and 5"),
        "{m}"
    );
    // A masked dim is named in the message even though code cannot name it.
    let masked = a.mask_to::<Batch>();
    let other = Tensor::<f32, (Rows,)>::zeros([3]);
    assert!(masked.try_add(&other).is_ok());
    let wide = Tensor::<f32, (Batch, Rows)>::zeros([6, 3]).mask_to::<Batch>();
    let m = message(masked.try_add(&wide).unwrap_err());
    assert!(
        m.starts_with("add: dim `Batch` has size 2 on the left and 6"),
        "{m}"
    );
    // dot: a batch dim and a contracted dim.
    let q = Tensor::<f32, (Batch, Rows, Hidden)>::zeros([2, 3, 4]);
    let k = Tensor::<f32, (Batch, Cols, Hidden)>::zeros([5, 3, 4]);
    let m = message(q.try_dot(Hidden, &k).unwrap_err());
    assert!(
        m.starts_with("dot: batch dim `Batch` has size 2 on the left and 5"),
        "{m}"
    );
    let k = Tensor::<f32, (Batch, Cols, Hidden)>::zeros([2, 3, 6]);
    let m = message(q.try_dot(Hidden, &k).unwrap_err());
    assert!(
        m.starts_with("dot: contracted dim `Hidden` has size 4 on the left and 6"),
        "{m}"
    );
    assert_eq!(a.to_vec(), vec![0.0; 24]); // inputs untouched
}

#[test]
fn strict_and_positional_forms() {
    let a = Tensor::<i32, (Rows, Cols)>::from_vec(vec![1, 2, 3, 4, 5, 6], [2, 3]);
    let b = Tensor::<i32, (Cols, Rows)>::from_vec(vec![1, 1, 1, 1, 1, 1], [3, 2]);
    assert_eq!(a.add_strict(&b).to_vec(), vec![2, 3, 4, 5, 6, 7]);
    let row = Tensor::<i32, (Cols,)>::from_vec(vec![10, 20, 30], [3]);
    let p = a.add_positional(&row);
    assert_eq!(p.names(), ["Rows", "Cols"]);
    assert_eq!(p.to_vec(), vec![11, 22, 33, 14, 25, 36]);
    assert!(
        a.try_sub_strict(&Tensor::<i32, (Cols, Rows)>::zeros([3, 3]))
            .is_err()
    );
}

#[test]
fn reductions_by_name_equal_the_positional_ones() {
    let t = Tensor::<f64, (Batch, Channels, Rows, Cols)>::randn([2, 3, 4, 5], 11);
    let d = t.as_dyn();
    assert_eq!(
        t.sum::<Channels>().to_vec(),
        d.sum_dims(&[1], false).to_vec()
    );
    assert_eq!(
        t.sum::<(Cols, Batch)>().to_vec(),
        d.sum_dims(&[0, 3], false).to_vec()
    );
    assert_eq!(t.sum::<(Cols, Batch)>().names(), ["Channels", "Rows"]);
    assert_eq!(t.mean_keepdim::<Rows>().shape(), &[2, 3, 1, 5]);
    assert_eq!(t.amax::<Rows>().to_vec(), d.amax_dims(&[2], false).to_vec());
    assert_eq!(
        t.var::<Cols>(1).to_vec(),
        d.var_dims(&[3], 1, false).to_vec()
    );
    assert_eq!(
        t.argmax::<Channels>().to_vec(),
        d.argmax_dim(1, false).to_vec()
    );
    let s = t.softmax::<Channels>();
    assert_eq!(s.to_vec(), d.softmax(1).to_vec());
    let sums = s.sum::<Channels>().to_vec();
    assert!(sums.iter().all(|x| (x - 1.0).abs() < 1e-12));
    // masked: reducing a visible dim keeps the private dims in front
    let m = t.mask_to::<Batch>();
    let r = m.sum::<Rows>();
    assert_eq!(r.shape(), &[2, 3, 5]);
    assert_eq!(r.to_vec(), d.sum_dims(&[2], false).to_vec());
}

#[test]
fn every_reduction_by_name_against_hand_values() {
    // (Rows, Cols) = [[1, 2, 3], [4, 5, 6]] (f64 so the sums are exact).
    let t = Tensor::<f64, (Rows, Cols)>::from_vec(vec![1., 2., 3., 4., 5., 6.], [2, 3]);
    assert_eq!(t.sum::<Cols>().to_vec(), vec![6., 15.]);
    assert_eq!(t.sum_keepdim::<Cols>().shape(), &[2, 1]);
    assert_eq!(t.prod::<Rows>().to_vec(), vec![4., 10., 18.]);
    assert_eq!(t.prod::<(Rows, Cols)>().item(), 720.);
    assert_eq!(t.amin::<Cols>().to_vec(), vec![1., 4.]);
    assert_eq!(t.amax_keepdim::<Rows>().to_vec(), vec![4., 5., 6.]);
    assert_eq!(t.mean::<Rows>().to_vec(), vec![2.5, 3.5, 4.5]);
    assert_eq!(t.mean::<(Cols, Rows)>().item(), 3.5);
    // var of [1, 2, 3] with correction 1 is 1; with 0 it is 2/3.
    assert_eq!(t.var::<Cols>(1).to_vec(), vec![1., 1.]);
    assert!((t.std::<Cols>(0).to_vec()[0] - (2.0f64 / 3.0).sqrt()).abs() < 1e-15);
    // 2-norm over Rows: sqrt(1 + 16), sqrt(4 + 25), sqrt(9 + 36); 1-norm of everything: 21.
    let n = t.norm::<Rows>(2.0).to_vec();
    for (got, want) in n.iter().zip([17f64.sqrt(), 29f64.sqrt(), 45f64.sqrt()]) {
        assert!((got - want).abs() < 1e-14, "{got} vs {want}");
    }
    assert_eq!(t.norm::<(Rows, Cols)>(1.0).item(), 21.);
    // logsumexp over Cols: ln(e^1 + e^2 + e^3) = 3 + ln(1 + e^-1 + e^-2).
    let lse = t.logsumexp::<Cols>().to_vec();
    let want = 3.0 + (1.0 + (-1.0f64).exp() + (-2.0f64).exp()).ln();
    assert!((lse[0] - want).abs() < 1e-14 && (lse[1] - (want + 3.0)).abs() < 1e-14);
    let (values, indices) = t.max::<Rows>();
    assert_eq!(
        (values.to_vec(), indices.to_vec()),
        (vec![4., 5., 6.], vec![1, 1, 1])
    );
    assert_eq!(t.cumsum::<Cols>().to_vec(), vec![1., 3., 6., 4., 9., 15.]);
    // Casts keep the names.
    let i = t.to_dtype::<i32>();
    assert_eq!((i.names(), i.to_vec()), (t.names(), vec![1, 2, 3, 4, 5, 6]));
}

/// Seed 000: grayscale weights aligned to the image, weighted sum over channels.
#[test]
fn grayscale_from_the_seed() {
    let img = Tensor::<f32, (Channels, Rows, Cols)>::from_vec(
        vec![
            1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0, 100.0, 200.0, 300.0, 400.0,
        ],
        [3, 2, 2],
    );
    let weights = Tensor::<f32, (Channels,)>::from_vec(vec![0.2126, 0.7152, 0.0722], [3]);
    let gray = (&img * &weights.align_as(&img)).sum::<Channels>();
    assert_eq!(gray.names(), ["Rows", "Cols"]);
    let want: Vec<f32> = (0..4)
        .map(|i| {
            0.2126 * [1., 2., 3., 4.][i]
                + 0.7152 * [10., 20., 30., 40.][i]
                + 0.0722 * [100., 200., 300., 400.][i]
        })
        .collect();
    for (g, w) in gray.to_vec().iter().zip(&want) {
        assert!((g - w).abs() < 1e-4, "{g} vs {w}");
    }
    // with a batch dim, the same code works unchanged: by-name broadcasting adds it
    let batch = Tensor::stack(Batch, &[&img, &img.map(|x| x * 2.0)]);
    let g2 = (&batch * &weights).sum::<Channels>();
    assert_eq!(g2.names(), ["Batch", "Rows", "Cols"]);
    for (g, w) in g2.select::<Batch>(1).to_vec().iter().zip(&want) {
        assert!((g - 2.0 * w).abs() < 1e-3);
    }
}

/// "Tensor Considered Harmful": attention with names against a positional implementation.
#[test]
fn attention_matches_the_positional_version() {
    dims! { Query, Key }
    let (b, q, k, h) = (2, 3, 4, 8);
    let query = Tensor::<f64, (Batch, Query, Hidden)>::randn([b, q, h], 1);
    let key = Tensor::<f64, (Batch, Key, Hidden)>::randn([b, k, h], 2);
    let value = Tensor::<f64, (Batch, Key, Hidden)>::randn([b, k, h], 3);
    let scores = query.dot(Hidden, &key).map(|x| x / (h as f64).sqrt());
    let attn = scores.softmax::<Key>();
    let out = attn.dot(Key, &value);
    assert_eq!(out.names(), ["Batch", "Query", "Hidden"]);
    // positional: softmax(Q K^T / sqrt(h)) V
    let (qd, kd, vd) = (query.as_dyn(), key.as_dyn(), value.as_dyn());
    let s = qd.matmul(&kd.transpose(1, 2)) / (h as f64).sqrt();
    let want = s.softmax(-1).matmul(vd);
    for (x, y) in out.to_vec().iter().zip(want.to_vec()) {
        assert!((x - y).abs() < 1e-12);
    }
}

#[test]
fn cumsum_log_softmax_and_max_by_name() {
    let t = Tensor::<f32, (Batch, Classes)>::from_vec(vec![1., 3., 2., 0., 5., 4.], [2, 3]);
    assert_eq!(t.cumsum::<Classes>().to_vec(), vec![1., 4., 6., 0., 5., 9.]);
    let (v, i) = t.max::<Classes>();
    assert_eq!((v.to_vec(), i.to_vec()), (vec![3., 5.], vec![1, 1]));
    let ls = t.log_softmax::<Classes>();
    assert_eq!(ls.to_vec(), t.as_dyn().log_softmax(1).to_vec());
    let _unused: Option<Tensor<f32, (Hidden2,)>> = None;
    assert!(
        DynTensor::<f32>::zeros(&[2])
            .try_refine_names::<(Hidden2,)>()
            .is_ok()
    );
}

#[test]
fn map_refuses_views_that_reorder_the_elements() {
    let square = Tensor::<f32, (Rows, Cols)>::from_vec((0..9).map(|x| x as f32).collect(), [3, 3]);
    let e = square.try_map(|x| x.t()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string().contains("strides [1, 3] instead of [3, 1]"),
        "{e}"
    );
    assert!(square.try_map(|x| x.relu()).is_ok());
    assert!(
        square
            .try_map(|x| x.as_strided(&[3, 3], &[3, 1], 0))
            .is_ok()
    ); // the same view
    assert!(
        square
            .try_map(|x| x.as_strided(&[3, 3], &[0, 1], 0))
            .is_err()
    ); // broadcast rows
    let row = Tensor::<f32, (Rows, Cols)>::ones([1, 4]);
    // Size-1 dims' strides are never read: a view that changes only those is the same tensor.
    assert!(row.try_map(|x| x.as_strided(&[1, 4], &[99, 1], 0)).is_ok());
    let one = Tensor::<f32, (Rows, Cols)>::from_vec(vec![1., 2.], [1, 2]);
    let shifted = one.try_map(|x| x.as_strided(&[1, 1], &[1, 1], 1).expand(&[1, 2]));
    assert!(shifted.is_err());
    assert_eq!(square.map(|x| x.to_dtype::<f64>() * 2.0).to_vec()[4], 8.0);
    assert_eq!(square.map(|x| x.shallow_clone()).to_vec()[5], 5.0);
}
