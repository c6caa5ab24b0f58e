//! Gradients against torch.autograd: `tests/fixtures/grads.safetensors`, written by
//! `tests/fixtures/make_grads.py` (PyTorch 2.15, float64), holds each case's inputs, the
//! weights `r` of its loss `Σ f(inputs) ⊙ r`, and PyTorch's gradients. The same functions
//! are written here with this library's ops, by position and, for seed 004's attention, by
//! names.

use namedtensor::{DynTensor, Tensor, dims, load_tensors};
use std::collections::HashMap;

type T = DynTensor<f64>;
/// A named function of one tensor.
type Unary<'a> = (&'a str, &'a dyn Fn(&T) -> T);
/// A named function of two tensors.
type Binary<'a> = (&'a str, &'a dyn Fn(&T, &T) -> T);

/// `t` with the names `S`.
fn named<S: namedtensor::Shape>(t: T) -> Tensor<f64, S> {
    t.refine_names::<S>()
}

fn fixtures() -> HashMap<String, T> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grads.safetensors"
    );
    load_tensors::<f64>(path).unwrap().into_iter().collect()
}

fn close(case: &str, what: &str, ours: &T, torch: &T) {
    assert_eq!(ours.shape(), torch.shape(), "{case} {what}: shape");
    for (i, (a, b)) in ours.to_vec().iter().zip(torch.to_vec()).enumerate() {
        assert!(
            (a - b).abs() <= 1e-10 * (1.0 + b.abs()),
            "{case} {what}[{i}]: ours {a}, PyTorch {b}"
        );
    }
}

/// Runs case `name`: leaves from `name/in/*` (in `inputs` order), loss `Σ f ⊙ r`, and
/// compares every gradient with PyTorch's.
fn run(fx: &HashMap<String, T>, name: &str, inputs: &[&str], f: &dyn Fn(&[T]) -> T) {
    let leaves: Vec<T> = inputs
        .iter()
        .map(|k| fx[&format!("{name}/in/{k}")].detach().requires_grad_(true))
        .collect();
    let y = f(&leaves);
    (&y * &fx[&format!("{name}/r")]).sum().backward();
    for (k, leaf) in inputs.iter().zip(&leaves) {
        close(
            name,
            k,
            &leaf.grad().unwrap(),
            &fx[&format!("{name}/grad/{k}")],
        );
    }
}

#[test]
fn pointwise_and_reductions() {
    let fx = fixtures();
    let unary: Vec<Unary<'_>> = vec![
        ("exp", &|x| x.exp()),
        ("log", &|x| x.log()),
        ("sqrt", &|x| x.sqrt()),
        ("rsqrt", &|x| x.rsqrt()),
        ("tanh", &|x| x.tanh()),
        ("sigmoid", &|x| x.sigmoid()),
        ("relu", &|x| x.relu()),
        ("gelu", &|x| x.gelu()),
        ("gelu_tanh", &|x| x.gelu_tanh()),
        ("silu", &|x| x.silu()),
        ("abs", &|x| x.abs()),
        ("sin", &|x| x.sin()),
        ("cos", &|x| x.cos()),
        ("erf", &|x| x.erf()),
        ("clamp", &|x| x.clamp(-0.5, 0.5)),
        ("powf", &|x| x.powf(1.7)),
        ("square", &|x| x.square()),
        ("recip", &|x| x.recip()),
    ];
    for (op, f) in unary {
        run(&fx, &format!("unary.{op}"), &["x"], &|xs| f(&xs[0]));
    }
    let binary: Vec<Binary<'_>> = vec![
        ("add", &|a, b| a + b),
        ("sub", &|a, b| a - b),
        ("mul", &|a, b| a * b),
        ("div", &|a, b| a / b),
        ("pow", &|a, b| (a.abs() + 0.5).pow(b)),
        ("maximum", &|a, b| a.maximum(b)),
        ("minimum", &|a, b| a.minimum(b)),
    ];
    for (op, f) in binary {
        run(&fx, &format!("binary.{op}"), &["a", "b"], &|xs| {
            f(&xs[0], &xs[1])
        });
    }
    let reduce: Vec<Unary<'_>> = vec![
        ("sum", &|x| x.sum_dim(1, false)),
        ("mean", &|x| x.mean_dim(1, true)),
        ("var", &|x| x.var_dims(&[1], 1, false)),
        ("std", &|x| x.std_dims(&[1], 1, false)),
        ("norm", &|x| x.norm_dims(2.0, &[1], false)),
        ("logsumexp", &|x| x.logsumexp_dim(1, false)),
        ("amax", &|x| x.amax_dim(1, false)),
        ("max_dim", &|x| x.max_dim(1, false).0),
        ("softmax", &|x| x.softmax(1)),
        ("log_softmax", &|x| x.log_softmax(0)),
        ("cumsum", &|x| x.cumsum(1)),
    ];
    for (op, f) in reduce {
        run(&fx, &format!("reduce.{op}"), &["x"], &|xs| f(&xs[0]));
    }
}

#[test]
fn matmul_and_views() {
    let fx = fixtures();
    for op in ["vv", "mm", "vm", "mv", "bcast", "vb"] {
        run(&fx, &format!("matmul.{op}"), &["a", "b"], &|xs| {
            xs[0].matmul(&xs[1])
        });
    }
    let views: Vec<Unary<'_>> = vec![
        ("t", &|x| x.select(0, 0).t()),
        ("permute", &|x| x.permute(&[2, 0, 1])),
        ("narrow", &|x| x.narrow(2, 1, 2)),
        ("select", &|x| x.select(1, 2)),
        ("slice_step", &|x| {
            x.i((.., namedtensor::Idx::step(.., 2), 1..))
        }),
        ("expand", &|x| x.narrow(1, 0, 1).expand(&[2, 5, 4])),
        ("reshape", &|x| x.transpose(0, 2).reshape(&[6, 4])),
        ("flip", &|x| x.flip(&[0, 2])),
        ("repeat", &|x| x.repeat(&[2, 1, 1, 2])),
        ("tril", &|x| x.tril(1)),
        ("cat", &|x| DynTensor::cat(&[x, &(x * x)], 1)),
        ("stack", &|x| DynTensor::stack(&[x, &x.exp()], 2)),
        ("where", &|x| x.where_(&x.gt_scalar(0.0), &(x * 3.0))),
        ("masked_fill", &|x| {
            x.masked_fill(&x.lt_scalar(0.0), 0.5) * x
        }),
    ];
    for (op, f) in views {
        run(&fx, &format!("view.{op}"), &["x"], &|xs| f(&xs[0]));
    }
}

#[test]
fn indexed_ops_cumprod_and_zero_rules() {
    let fx = fixtures();
    let index = |name: &str| -> DynTensor<i64> {
        let t = &fx[&format!("index.{name}/index")];
        DynTensor::from_vec(t.to_vec().iter().map(|&v| v as i64).collect(), t.shape())
    };
    let (sel, gat, sca, add) = (
        index("index_select"),
        index("gather"),
        index("scatter_add"),
        index("index_add"),
    );
    run(&fx, "index.index_select", &["x"], &|xs| {
        xs[0].index_select(0, &sel)
    });
    run(&fx, "index.gather", &["x"], &|xs| xs[0].gather(1, &gat));
    run(&fx, "index.scatter_add", &["x", "src"], &|xs| {
        xs[0].scatter_add(0, &sca, &xs[1])
    });
    run(&fx, "index.index_add", &["x", "src"], &|xs| {
        xs[0].index_add(0, &add, &xs[1])
    });
    run(&fx, "reduce.cumprod", &["x"], &|xs| xs[0].cumprod(1));
    run(&fx, "reduce.cumprod_zeros", &["x"], &|xs| xs[0].cumprod(1));
    run(&fx, "reduce.cumprod_zeros_dim0", &["x"], &|xs| {
        xs[0].cumprod(0)
    });
}

/// In-place ops on tensors of the graph, through views and on views whose base was written
/// after them: the same code as `make_grads.py`'s `inplace.*` cases.
#[test]
fn in_place_ops_in_a_graph_match_pytorch() {
    let fx = fixtures();
    let xz = &["x", "z"];
    run(&fx, "inplace.view_add", xz, &|v| {
        let h = &v[0] * 2.0;
        h.narrow(0, 1, 2).add_(&v[1]);
        h
    });
    run(&fx, "inplace.view_mul_transposed", xz, &|v| {
        let h = v[0].sin();
        h.t().narrow(0, 1, 2).mul_(&v[1]);
        h
    });
    run(&fx, "inplace.relu_chain", &["x"], &|v| {
        let h = &v[0] * 3.0;
        h.relu_();
        &h * &v[0]
    });
    run(&fx, "inplace.stale_view", xz, &|v| {
        let h = &v[0] + 0.0;
        let view = h.select(1, 2);
        view.mul_scalar_(3.0).add_scalar_(1.0);
        h.mul_(&v[1]);
        &h + &view.unsqueeze(1)
    });
    run(&fx, "inplace.copy_into_view", xz, &|v| {
        let h = &v[0] * 1.5;
        h.narrow(1, 0, 2).copy_(&v[1]);
        &h * &h
    });
    let mask = DynTensor::from_vec(
        vec![
            true, false, false, false, true, false, false, false, false, true, true, false,
        ],
        &[4, 3],
    );
    run(&fx, "inplace.masked_clamp", &["x"], &|v| {
        let h = &v[0] * &v[0];
        h.masked_fill_(&mask, 0.5);
        h.clamp_(0.1, 1.0);
        h
    });
    run(&fx, "inplace.fill_row", &["x"], &|v| {
        let h = v[0].sin();
        h.select(0, 1).fill_(2.0);
        &h * &v[0]
    });
    let index = DynTensor::from_vec(vec![3i64, 0, 3], &[3]);
    run(&fx, "inplace.index_add", xz, &|v| {
        let h = &v[0] * 2.0;
        h.index_add_(0, &index, &v[1]);
        h.tanh()
    });
    run(&fx, "inplace.view_of_view", xz, &|v| {
        let h = &v[0].tanh() * 1.0;
        h.t().narrow(0, 1, 2).narrow(1, 1, 2).sub_(&v[1]);
        &h * &v[0]
    });
}

#[test]
fn mlp_with_cross_entropy() {
    let fx = fixtures();
    let get = |k: &str| fx[&format!("mlp/in/{k}")].detach().requires_grad_(true);
    let (x, w1, b1, w2, b2) = (get("x"), get("w1"), get("b1"), get("w2"), get("b2"));
    let labels = fx["mlp/labels"].to_dtype::<i64>();
    let logits = (&x.matmul(&w1) + &b1).relu().matmul(&w2) + &b2; // [8, 5]
    // Cross-entropy as PyTorch defines it: the mean over the batch of -log p[label].
    let classes = DynTensor::<i64>::arange(0, 5, 1);
    let one_hot = classes.eq(&labels.unsqueeze(1)).to_dtype::<f64>();
    let loss = -(&logits.log_softmax(1) * &one_hot).sum() / 8.0;
    close("mlp", "loss", &loss.reshape(&[1]), &fx["mlp/loss"]);
    loss.backward();
    for (k, t) in [
        ("x", &x),
        ("w1", &w1),
        ("b1", &b1),
        ("w2", &w2),
        ("b2", &b2),
    ] {
        close("mlp", k, &t.grad().unwrap(), &fx[&format!("mlp/grad/{k}")]);
    }
}

dims! { Batch, SeqLen, InHid, OutHid }

#[test]
fn seed_004_attention_by_names() {
    let fx = fixtures();
    let raw = |k: &str| fx[&format!("attention/in/{k}")].detach();
    let w = |k: &str| named::<(InHid, OutHid)>(raw(k)).requires_grad_(true);
    let v = |k: &str| named::<(OutHid,)>(raw(k)).requires_grad_(true);
    let (wy, wh, wr, wt) = (w("WY"), w("Wh"), w("Wr"), w("Wt"));
    let (bm, br, ww) = (v("bM"), v("br"), v("w"));
    let y = named::<(Batch, SeqLen, InHid)>(raw("Y")).requires_grad_(true);
    let ht = named::<(Batch, InHid)>(raw("ht")).requires_grad_(true);
    let rt1 = named::<(Batch, InHid)>(raw("rt1")).requires_grad_(true);

    // The namedtensor version of the seed, by names.
    let tmp = &ht.dot(InHid, &wh) + &rt1.dot(InHid, &wr); // (Batch, OutHid)
    let at = (&(&y.dot(InHid, &wy) + &tmp) + &bm) // (Batch, SeqLen, OutHid)
        .map(|t| t.tanh())
        .dot(OutHid, &ww) // (Batch, SeqLen)
        .softmax::<SeqLen>();
    let rt = &y.dot(SeqLen, &at).rename::<InHid, OutHid>()
        + &(&rt1.dot(InHid, &wt) + &br).map(|t| t.tanh()); // (Batch, OutHid)
    close("attention", "rt", rt.as_dyn(), &fx["attention/rt"]);
    close("attention", "at", at.as_dyn(), &fx["attention/at"]);

    let r_rt = named::<(Batch, OutHid)>(fx["attention/r_rt"].detach());
    let r_at = named::<(Batch, SeqLen)>(fx["attention/r_at"].detach());
    let loss = &(&rt * &r_rt).sum::<(Batch, OutHid)>() + &(&at * &r_at).sum::<(Batch, SeqLen)>();
    loss.backward();
    let grads: [(&str, DynTensor<f64>); 10] = [
        ("WY", wy.grad().unwrap().into_dyn()),
        ("Wh", wh.grad().unwrap().into_dyn()),
        ("Wr", wr.grad().unwrap().into_dyn()),
        ("Wt", wt.grad().unwrap().into_dyn()),
        ("bM", bm.grad().unwrap().into_dyn()),
        ("br", br.grad().unwrap().into_dyn()),
        ("w", ww.grad().unwrap().into_dyn()),
        ("Y", y.grad().unwrap().into_dyn()),
        ("ht", ht.grad().unwrap().into_dyn()),
        ("rt1", rt1.grad().unwrap().into_dyn()),
    ];
    for (k, g) in &grads {
        close("attention", k, g, &fx[&format!("attention/grad/{k}")]);
    }
}
