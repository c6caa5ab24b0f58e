//! Autograd behaviour: accumulation, retain_graph, no_grad, detach, retain_grad, in-place
//! refusals, version checks, errors, threads. Values are worked out by hand.

use namedtensor::autograd::{BackwardOptions, grad, no_grad};
use namedtensor::{DynTensor, ErrorKind};

fn leaf(v: Vec<f64>, shape: &[usize]) -> DynTensor<f64> {
    DynTensor::from_vec(v, shape).requires_grad_(true)
}

#[test]
fn gradients_accumulate_across_backward_calls() {
    let w = leaf(vec![1.0, 2.0], &[2]);
    (&w * &w).sum().backward(); // 2w
    (&w * 3.0).sum().backward(); // + 3
    assert_eq!(w.grad().unwrap().to_vec(), vec![5.0, 7.0]);
    w.zero_grad();
    assert!(w.grad().is_none());
}

#[test]
fn a_second_backward_without_retain_graph_is_an_error() {
    let w = leaf(vec![1.0, 2.0], &[2]);
    let y = w.exp().sum();
    y.backward();
    let e = y.try_backward().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Autograd);
    assert!(e.to_string().contains("second time"), "{e}");
    // With retain_graph the second pass works and accumulates.
    let w = leaf(vec![0.0], &[1]);
    let y = w.exp().sum();
    y.backward_with(&DynTensor::scalar(1.0), BackwardOptions::retain_graph())
        .unwrap();
    y.backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![2.0]);
}

#[test]
fn no_grad_and_detach_cut_the_graph() {
    let w = leaf(vec![1.0], &[1]);
    let y = no_grad(|| w.exp());
    assert!(!y.requires_grad());
    let d = w.detach();
    assert!(!d.requires_grad() && d.shares_storage(&w));
    assert!((&d * 2.0).sum().try_backward().is_err());
    // Parameters update in place under no_grad.
    no_grad(|| w.sub_scalar_(0.5));
    assert_eq!(w.to_vec(), vec![0.5]);
}

#[test]
fn retain_grad_keeps_a_non_leaf_gradient() {
    let x = leaf(vec![1.0, -2.0], &[2]);
    let h = x.tanh();
    h.retain_grad();
    let y = (&h * &h).sum();
    y.backward();
    let hv = h.to_vec();
    let hg = h.grad().unwrap().to_vec();
    assert!((hg[0] - 2.0 * hv[0]).abs() < 1e-12 && (hg[1] - 2.0 * hv[1]).abs() < 1e-12);
    let xg = x.grad().unwrap().to_vec();
    for i in 0..2 {
        assert!((xg[i] - 2.0 * hv[i] * (1.0 - hv[i] * hv[i])).abs() < 1e-12);
    }
}

#[test]
fn a_saved_tensor_modified_in_place_is_an_error_naming_the_op() {
    let w = leaf(vec![1.0, 2.0], &[2]);
    let y = w.exp(); // saves its output
    let loss = y.sum();
    y.detach().fill_(0.0); // writes the saved storage behind autograd's back
    let e = loss.try_backward().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Autograd);
    let msg = e.to_string();
    assert!(
        msg.contains("`exp`") && msg.contains("modified in place"),
        "{msg}"
    );
}

#[test]
fn bad_input_is_an_error() {
    assert_eq!(
        DynTensor::<i32>::zeros(&[2])
            .try_requires_grad_(true)
            .unwrap_err()
            .kind(),
        ErrorKind::Autograd
    );
    let w = leaf(vec![1.0, 2.0], &[2]);
    // Non-scalar without a gradient.
    assert_eq!(
        w.exp().try_backward().unwrap_err().kind(),
        ErrorKind::Autograd
    );
    // A gradient of the wrong shape.
    let e = w
        .exp()
        .backward_with(&DynTensor::zeros(&[3]), BackwardOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    // Nothing to differentiate.
    assert!(DynTensor::<f64>::ones(&[1]).try_backward().is_err());
    // In-place adds at indices into a leaf, or from a tracked source, are refused.
    let idx = DynTensor::from_vec(vec![0i64], &[1]);
    assert_eq!(
        w.try_index_add_(0, &idx, &DynTensor::ones(&[1]))
            .unwrap_err()
            .kind(),
        ErrorKind::Autograd
    );
    let plain = DynTensor::<f64>::zeros(&[2]);
    assert_eq!(
        plain
            .try_scatter_add_(0, &idx, &w.i(0..1))
            .unwrap_err()
            .kind(),
        ErrorKind::Autograd
    );
    assert_eq!(plain.to_vec(), vec![0.0, 0.0]);
    assert!(no_grad(|| plain.try_scatter_add_(0, &idx, &w.i(0..1))).is_ok());
    assert_eq!(plain.to_vec(), vec![1.0, 0.0]);
    // Stopping a non-leaf from requiring grad.
    assert!(w.exp().try_requires_grad_(false).is_err());
}

#[test]
fn grad_function_leaves_dot_grad_alone_and_gives_second_derivatives() {
    let x = leaf(vec![0.5], &[1]);
    let y = x.sin().sum();
    let g = grad(&[&y], None, &[&x], BackwardOptions::create_graph()).unwrap();
    let g = g[0].as_ref().unwrap();
    assert!((g.item() - 0.5f64.cos()).abs() < 1e-12);
    assert!(g.requires_grad());
    let g2 = grad(&[&g.sum()], None, &[&x], BackwardOptions::default()).unwrap();
    assert!((g2[0].as_ref().unwrap().item() + 0.5f64.sin()).abs() < 1e-12);
    assert!(x.grad().is_none());
    // An input the output does not depend on gets None.
    let z = leaf(vec![1.0], &[1]);
    let r = grad(
        &[&x.exp().sum()],
        None,
        &[&x, &z],
        BackwardOptions::default(),
    )
    .unwrap();
    assert!(r[0].is_some() && r[1].is_none());
}

#[test]
fn saved_tensors_are_freed_after_backward() {
    let w = leaf(vec![1.0; 1000], &[1000]);
    let y = w.exp(); // saves its output
    let s = y.storage().clone();
    let loss = y.sum();
    drop(y);
    assert_eq!(s.handle_count(), 2); // `s` and exp's node
    loss.backward();
    assert_eq!(s.handle_count(), 1); // the node dropped what it saved
    // With retain_graph it stays until the graph goes.
    let y = w.exp();
    let s = y.storage().clone();
    let loss = y.sum();
    drop(y);
    loss.backward_with(&DynTensor::scalar(1.0), BackwardOptions::retain_graph())
        .unwrap();
    assert_eq!(s.handle_count(), 2);
    drop(loss);
    assert_eq!(s.handle_count(), 1);
}

#[test]
fn tracked_tensors_are_send_and_sync_and_graphs_run_on_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<DynTensor<f32>>();
    let handles: Vec<_> = (0..2)
        .map(|k| {
            std::thread::spawn(move || {
                let w = leaf(vec![k as f64 + 1.0; 4], &[4]);
                for _ in 0..50 {
                    (&w * &w).sum().backward();
                }
                w.grad().unwrap().to_vec()
            })
        })
        .collect();
    for (k, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), vec![100.0 * (k as f64 + 1.0); 4]);
    }
}

/// Every op with a float result on a float input: it tracks gradients exactly when its input
/// does (and grad mode is on), or refuses with an `Autograd` error if it has no formula yet.
/// No op may silently return an untracked result from a tracked input.
#[test]
fn every_op_tracks_iff_an_input_does() {
    type T = DynTensor<f64>;
    type R = namedtensor::Result<T>;
    type Op<'a> = (&'a str, Box<dyn Fn(&T) -> R>);
    let m = |x: &T| x.reshape(&[2, 3]);
    let ops: Vec<Op<'_>> = vec![
        ("exp", Box::new(|x| Ok(x.exp()))),
        ("log", Box::new(|x| Ok(x.log()))),
        ("log1p", Box::new(|x| Ok(x.log1p()))),
        ("expm1", Box::new(|x| Ok(x.expm1()))),
        ("sqrt", Box::new(|x| Ok(x.sqrt()))),
        ("rsqrt", Box::new(|x| Ok(x.rsqrt()))),
        ("sin", Box::new(|x| Ok(x.sin()))),
        ("cos", Box::new(|x| Ok(x.cos()))),
        ("tan", Box::new(|x| Ok(x.tan()))),
        ("tanh", Box::new(|x| Ok(x.tanh()))),
        ("erf", Box::new(|x| Ok(x.erf()))),
        ("sigmoid", Box::new(|x| Ok(x.sigmoid()))),
        ("gelu", Box::new(|x| Ok(x.gelu()))),
        ("gelu_tanh", Box::new(|x| Ok(x.gelu_tanh()))),
        ("silu", Box::new(|x| Ok(x.silu()))),
        ("floor", Box::new(|x| Ok(x.floor()))),
        ("ceil", Box::new(|x| Ok(x.ceil()))),
        ("round", Box::new(|x| Ok(x.round()))),
        ("trunc", Box::new(|x| Ok(x.trunc()))),
        ("recip", Box::new(|x| Ok(x.recip()))),
        ("neg", Box::new(|x| Ok(x.neg()))),
        ("abs", Box::new(|x| Ok(x.abs()))),
        ("sign", Box::new(|x| Ok(x.sign()))),
        ("square", Box::new(|x| Ok(x.square()))),
        ("relu", Box::new(|x| Ok(x.relu()))),
        ("clamp", Box::new(|x| x.try_clamp(0.1, 0.5))),
        ("clamp_min", Box::new(|x| x.try_clamp_min(0.1))),
        ("clamp_max", Box::new(|x| x.try_clamp_max(0.5))),
        ("powf", Box::new(|x| Ok(x.powf(1.5)))),
        ("add", Box::new(|x| x.try_add(x))),
        ("sub", Box::new(|x| x.try_sub(&x.exp()))),
        ("mul", Box::new(|x| x.try_mul(x))),
        ("div", Box::new(|x| x.try_div(&x.exp()))),
        ("pow", Box::new(|x| x.try_pow(x))),
        ("maximum", Box::new(|x| x.try_maximum(&x.sin()))),
        ("minimum", Box::new(|x| x.try_minimum(&x.sin()))),
        ("remainder", Box::new(|x| x.try_remainder(&x.exp()))),
        ("fmod", Box::new(|x| x.try_fmod(&x.exp()))),
        ("add_scalar", Box::new(|x| x.try_add_scalar(1.0))),
        ("rsub", Box::new(|x| Ok(1.0 - x))),
        ("mul_scalar", Box::new(|x| x.try_mul_scalar(2.0))),
        ("div_scalar", Box::new(|x| Ok(x.div_scalar(2.0)))),
        ("pow_scalar", Box::new(|x| x.try_pow_scalar(2.0))),
        ("sum", Box::new(|x| Ok(x.sum()))),
        ("sum_dim", Box::new(|x| x.try_sum_dim(0, true))),
        ("sum_dims", Box::new(|x| x.try_sum_dims(&[0], false))),
        ("prod", Box::new(|x| x.try_prod_dims(&[], false))),
        ("prod_dim", Box::new(|x| x.try_prod_dim(0, false))),
        ("mean", Box::new(|x| Ok(x.mean()))),
        ("mean_dim", Box::new(|x| x.try_mean_dim(0, false))),
        ("amax", Box::new(|x| x.try_amax_dim(0, false))),
        ("amin", Box::new(|x| x.try_amin_dim(0, false))),
        ("max", Box::new(|x| x.try_max())),
        ("min", Box::new(|x| x.try_min())),
        ("max_dim", Box::new(|x| Ok(x.try_max_dim(0, false)?.0))),
        ("min_dim", Box::new(|x| Ok(x.try_min_dim(0, false)?.0))),
        ("var", Box::new(|x| Ok(x.var(1)))),
        ("var_dims", Box::new(|x| x.try_var_dims(&[0], 1, false))),
        ("std", Box::new(|x| Ok(x.std(1)))),
        ("std_dims", Box::new(|x| x.try_std_dims(&[0], 1, false))),
        ("norm", Box::new(|x| Ok(x.norm(2.0)))),
        ("norm_dims", Box::new(|x| x.try_norm_dims(1.0, &[0], false))),
        ("logsumexp", Box::new(|x| x.try_logsumexp_dims(&[0], false))),
        ("softmax", Box::new(|x| x.try_softmax(0))),
        ("log_softmax", Box::new(|x| x.try_log_softmax(0))),
        ("cumsum", Box::new(|x| x.try_cumsum(0))),
        ("cumprod", Box::new(|x| x.try_cumprod(0))),
        ("matmul", Box::new(move |x| m(x).try_matmul(&m(x).t()))),
        (
            "einsum",
            Box::new(move |x| namedtensor::try_einsum("ij,kj->ik", &[&m(x), &m(x)])),
        ),
        (
            "einsum_diagonal",
            Box::new(move |x| namedtensor::try_einsum("ii->i", &[&m(x).narrow(1, 0, 2)])),
        ),
        ("mm", Box::new(move |x| m(x).try_mm(&m(x).t()))),
        (
            "bmm",
            Box::new(move |x| m(x).unsqueeze(0).try_bmm(&m(x).t().unsqueeze(0))),
        ),
        ("mv", Box::new(move |x| m(x).try_mv(&m(x).select(0, 0)))),
        ("dot", Box::new(|x| x.try_dot(x))),
        ("select", Box::new(|x| x.try_select(0, 1))),
        ("narrow", Box::new(|x| x.try_narrow(0, 1, 2))),
        ("slice", Box::new(|x| x.try_slice(0, Some(0), None, 2))),
        ("index", Box::new(|x| x.try_i(1..))),
        ("transpose", Box::new(move |x| m(x).try_transpose(0, 1))),
        ("t", Box::new(move |x| m(x).try_t())),
        ("permute", Box::new(move |x| m(x).try_permute(&[1, 0]))),
        ("expand", Box::new(|x| x.try_expand(&[2, 6]))),
        (
            "expand_as",
            Box::new(move |x| {
                x.try_expand_as(
                    &m(x)
                        .t()
                        .t()
                        .reshape(&[1, 2, 3])
                        .expand(&[2, 2, 3])
                        .reshape(&[2, 6]),
                )
            }),
        ),
        ("squeeze", Box::new(|x| Ok(x.unsqueeze(0).squeeze()))),
        (
            "squeeze_dim",
            Box::new(|x| x.unsqueeze(0).try_squeeze_dim(0)),
        ),
        ("unsqueeze", Box::new(|x| x.try_unsqueeze(0))),
        ("view", Box::new(|x| x.try_view(&[3, 2]))),
        ("reshape", Box::new(move |x| m(x).t().try_reshape(&[6]))),
        ("flatten", Box::new(move |x| m(x).t().try_flatten(0, 1))),
        ("as_strided", Box::new(|x| x.try_as_strided(&[2], &[2], 0))),
        ("contiguous", Box::new(move |x| m(x).t().try_contiguous())),
        ("clone", Box::new(|x| Ok(x.clone()))),
        (
            "to_dtype",
            Box::new(|x| Ok(x.to_dtype::<f32>().to_dtype::<f64>())),
        ),
        (
            "to_device",
            Box::new(|x| x.to_device(namedtensor::Device::Cpu)),
        ),
        ("cat", Box::new(|x| DynTensor::try_cat(&[x, x], 0))),
        ("stack", Box::new(|x| DynTensor::try_stack(&[x, x], 0))),
        ("split", Box::new(|x| Ok(x.try_split(2, 0)?.remove(1)))),
        ("chunk", Box::new(|x| Ok(x.try_chunk(2, 0)?.remove(0)))),
        ("unbind", Box::new(|x| Ok(x.try_unbind(0)?.remove(2)))),
        ("flip", Box::new(|x| x.try_flip(&[0]))),
        ("repeat", Box::new(|x| x.try_repeat(&[2, 1]))),
        ("tril", Box::new(move |x| m(x).try_tril(0))),
        ("triu", Box::new(move |x| m(x).try_triu(1))),
        (
            "index_select",
            Box::new(|x| x.try_index_select(0, &DynTensor::from_vec(vec![1i64, 0], &[2]))),
        ),
        (
            "gather",
            Box::new(|x| x.try_gather(0, &DynTensor::from_vec(vec![1i64, 0], &[2]))),
        ),
        (
            "scatter_add (base)",
            Box::new(|x| {
                let idx = DynTensor::from_vec(vec![5i64, 5], &[2]);
                x.try_scatter_add(0, &idx, &DynTensor::ones(&[3]))
            }),
        ),
        (
            "scatter_add (source)",
            Box::new(|x| {
                let idx = DynTensor::from_vec(vec![1i64, 1, 0], &[3]);
                DynTensor::zeros(&[2]).try_scatter_add(0, &idx, x)
            }),
        ),
        (
            "index_add (base)",
            Box::new(|x| {
                let idx = DynTensor::from_vec(vec![2i64], &[1]);
                x.try_index_add(0, &idx, &DynTensor::ones(&[1]))
            }),
        ),
        (
            "index_add (source)",
            Box::new(|x| {
                let idx = DynTensor::from_vec(vec![0i64, 0, 1, 2, 2, 2], &[6]);
                DynTensor::zeros(&[3]).try_index_add(0, &idx, x)
            }),
        ),
        (
            "where",
            Box::new(|x| Ok(x.where_(&x.gt_scalar(0.5), &x.exp()))),
        ),
        (
            "masked_fill",
            Box::new(|x| x.try_masked_fill(&x.gt_scalar(0.5), 0.0)),
        ),
    ];
    let refused: [&str; 0] = [];
    let values = vec![0.2, 0.4, 0.9, 0.3, 0.7, 0.5];
    for (name, f) in &ops {
        let plain = DynTensor::from_vec(values.clone(), &[6]);
        assert!(
            !f(&plain).unwrap().requires_grad(),
            "{name}: untracked input"
        );
        let x = DynTensor::from_vec(values.clone(), &[6]).requires_grad_(true);
        // `to_device` to the tensor's own device returns the tensor itself, as in PyTorch.
        if *name != "to_device" {
            let y = no_grad(|| f(&x)).unwrap();
            assert!(!y.requires_grad(), "{name}: under no_grad");
        }
        match f(&x) {
            Ok(y) => {
                assert!(!refused.contains(name), "{name}: expected a refusal");
                assert!(y.requires_grad(), "{name}: the graph was cut");
                // And the pass runs.
                y.sum().backward();
                assert!(x.grad().is_some(), "{name}: no gradient reached the input");
            }
            Err(e) => {
                assert!(refused.contains(name), "{name}: unexpected error {e}");
                assert_eq!(e.kind(), ErrorKind::Autograd, "{name}");
            }
        }
    }
}

#[test]
fn grad_runs_only_the_part_of_the_graph_that_leads_to_its_inputs() {
    let x = leaf(vec![0.5, 1.0], &[2]);
    let h = x.exp();
    let loss = h.sin().sum();
    let gh = grad(&[&loss], None, &[&h], BackwardOptions::default()).unwrap();
    let hv = h.to_vec();
    let ghv = gh[0].as_ref().unwrap().to_vec();
    for i in 0..2 {
        assert!((ghv[i] - hv[i].cos()).abs() < 1e-12);
    }
    // exp's node lies below the input: it neither ran nor was freed, and x got nothing.
    assert!(x.grad().is_none());
    h.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), hv);
}

#[test]
fn deep_graphs_are_built_differentiated_and_freed_without_deep_recursion() {
    // 100 000 chained ops on a 512 KiB stack: dropping the graph, with or without a backward
    // pass, must not recurse once per node.
    std::thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(|| {
            let chain = |x: &DynTensor<f64>| {
                let mut y = x.shallow_clone();
                for _ in 0..50_000 {
                    y = &y.sin() * 1.0; // sin saves its input (a tracked tensor)
                }
                y
            };
            let x = leaf(vec![0.5], &[1]);
            drop(chain(&x)); // never differentiated
            let y = chain(&x);
            y.sum().backward();
            let g = x.grad().unwrap().item();
            assert!(g.is_finite() && g > 0.0, "{g}");
            drop(y);
            // and a retained graph freed after two passes
            x.zero_grad();
            let y = chain(&x).sum();
            y.backward_with(&DynTensor::scalar(1.0), BackwardOptions::retain_graph())
                .unwrap();
            y.backward();
            assert!((x.grad().unwrap().item() - 2.0 * g).abs() <= 1e-12 * g);
        })
        .unwrap()
        .join()
        .unwrap();
}
