//! Layers, losses, optimisers, schedules and training against PyTorch:
//! `tests/fixtures/nn.safetensors`, written by `tests/fixtures/make_nn.py` (PyTorch 2.15,
//! CPU), holds PyTorch's inputs, parameters, outputs and gradients; the same computations are
//! written here by names and compared (float64: relative 1e-9; float32: 1e-4).

use namedtensor::named::HasDim;
use namedtensor::nn::loss::{self, CrossEntropy, Reduction};
use namedtensor::nn::{
    AdaptiveAvgPool2d, AttentionMasks, AvgPool2d, BatchNorm, Conv1d, Conv2d, Embedding, Forward,
    Gelu, GroupNorm, Gru, LayerNorm, Linear, LogSoftmax, Lstm, MaxPool2d, Module,
    MultiHeadAttention, RmsNorm, TransformerBlock, TransformerConfig,
};
use namedtensor::ops::Window2d;
use namedtensor::optim::{
    Adam, AdamConfig, CosineAnnealingLr, LinearLr, LrScheduler, Optimizer, Sgd, SgdConfig, StepLr,
    clip_grad_norm_,
};
use namedtensor::{DynTensor, Float, Shape, Tensor, dims};
use std::collections::HashMap;
use std::sync::OnceLock;

dims! { Batch, Seq, In, Out, Model, Vocab, Classes, Pixels, Hidden, Channels, Features, Rows, Cols, Flat, Heads, HeadDim, Key }

type T = DynTensor<f64>;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/nn.safetensors");

/// The float64 tensors of the fixture file (integer ones are read with [`ints`]).
fn fx() -> &'static HashMap<String, T> {
    static FX: OnceLock<HashMap<String, T>> = OnceLock::new();
    FX.get_or_init(|| {
        let bytes = std::fs::read(FIXTURES).unwrap();
        all_keys(&bytes)
            .into_iter()
            // Integer tensors (labels, indices) are refused here and read with `ints`.
            .filter_map(|key| {
                Some((
                    key.clone(),
                    DynTensor::<f64>::load_named(FIXTURES, &key).ok()?,
                ))
            })
            .collect()
    })
}

/// The tensor names in a safetensors header: the keys followed by `{"dtype"`.
fn all_keys(bytes: &[u8]) -> Vec<String> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    header
        .split("\":{\"dtype\"")
        .filter_map(|part| part.rsplit_once('"').map(|(_, k)| k.to_string()))
        .filter(|k| !k.is_empty())
        .collect()
}

fn ints(key: &str) -> DynTensor<i64> {
    DynTensor::<i64>::load_named(FIXTURES, key).unwrap()
}

fn get(key: &str) -> T {
    fx().get(key)
        .unwrap_or_else(|| panic!("fixture {key} missing"))
        .shallow_clone()
}

/// A leaf with the fixture's values.
fn leaf(key: &str) -> T {
    get(key).detach().requires_grad_(true)
}

fn close_vec(what: &str, ours: &[f64], torch: &[f64], rtol: f64) {
    assert_eq!(ours.len(), torch.len(), "{what}: length");
    for (i, (a, b)) in ours.iter().zip(torch).enumerate() {
        assert!(
            (a - b).abs() <= rtol * (1.0 + b.abs()),
            "{what}[{i}]: ours {a}, PyTorch {b}"
        );
    }
}

fn close<E: Float>(what: &str, ours: &DynTensor<E>, torch: &T, rtol: f64) {
    assert_eq!(ours.shape(), torch.shape(), "{what}: shape");
    let ours: Vec<f64> = ours.to_vec().iter().map(|x| x.to_f64()).collect();
    close_vec(what, &ours, &torch.to_vec(), rtol);
}

fn named<S: Shape>(t: T) -> Tensor<f64, S> {
    t.refine_names()
}

#[test]
fn layers_forward_and_backward() {
    // Linear on (Batch, Seq, In) -> (Batch, Seq, Out)
    let fc = Linear::<In, Out, f64>::from_parameters(
        named(get("linear/param/weight")),
        Some(named(get("linear/param/bias"))),
    );
    let x = named::<(Batch, Seq, In)>(leaf("linear/x"));
    let y = fc.forward(&x);
    close("linear y", y.as_dyn(), &get("linear/y"), 1e-12);
    (y.as_dyn() * &get("linear/r")).sum().backward();
    close(
        "linear dx",
        &x.grad().unwrap().into_dyn(),
        &get("linear/grad/x"),
        1e-12,
    );
    close(
        "linear dW",
        &fc.weight.grad().unwrap().into_dyn(),
        &get("linear/grad/weight"),
        1e-12,
    );
    close(
        "linear db",
        &fc.bias.as_ref().unwrap().grad().unwrap().into_dyn(),
        &get("linear/grad/bias"),
        1e-12,
    );

    let fc =
        Linear::<In, Out, f64>::from_parameters(named(get("linear_nobias/param/weight")), None);
    let x = named::<(Batch, In)>(leaf("linear_nobias/x"));
    let y = fc.forward(&x);
    close(
        "linear_nobias y",
        y.as_dyn(),
        &get("linear_nobias/y"),
        1e-12,
    );
    (y.as_dyn() * &get("linear_nobias/r")).sum().backward();
    close(
        "linear_nobias dW",
        &fc.weight.grad().unwrap().into_dyn(),
        &get("linear_nobias/grad/weight"),
        1e-12,
    );
    assert_eq!(fc.parameters().len(), 1);

    // LayerNorm over the last dim of (Batch, Seq, Model)
    let mut ln = LayerNorm::<Model, f64>::new(6);
    ln.weight = named(leaf("layer_norm/param/weight"));
    ln.bias = named(leaf("layer_norm/param/bias"));
    let x = named::<(Batch, Seq, Model)>(leaf("layer_norm/x"));
    let y = ln.forward(&x);
    close("layer_norm y", y.as_dyn(), &get("layer_norm/y"), 1e-10);
    (y.as_dyn() * &get("layer_norm/r")).sum().backward();
    close(
        "layer_norm dx",
        &x.grad().unwrap().into_dyn(),
        &get("layer_norm/grad/x"),
        1e-10,
    );
    close(
        "layer_norm dw",
        &ln.weight.grad().unwrap().into_dyn(),
        &get("layer_norm/grad/weight"),
        1e-10,
    );
    close(
        "layer_norm db",
        &ln.bias.grad().unwrap().into_dyn(),
        &get("layer_norm/grad/bias"),
        1e-10,
    );

    // The same LayerNorm applied to a tensor whose Model dim comes first: names, not positions.
    let xt = named::<(Model, Batch, Seq)>(get("layer_norm/x").permute(&[2, 0, 1]));
    let yt = ln.forward(&xt).align_to::<(Batch, Seq, Model)>();
    close(
        "layer_norm by name",
        &yt.as_dyn().contiguous(),
        &get("layer_norm/y"),
        1e-10,
    );

    let mut rms = RmsNorm::<Model, f64>::new(6);
    rms.weight = named(leaf("rms_norm/param/weight"));
    let x = named::<(Batch, Model)>(leaf("rms_norm/x"));
    let y = rms.forward(&x);
    close("rms_norm y", y.as_dyn(), &get("rms_norm/y"), 1e-10);
    (y.as_dyn() * &get("rms_norm/r")).sum().backward();
    close(
        "rms_norm dx",
        &x.grad().unwrap().into_dyn(),
        &get("rms_norm/grad/x"),
        1e-10,
    );
    close(
        "rms_norm dw",
        &rms.weight.grad().unwrap().into_dyn(),
        &get("rms_norm/grad/weight"),
        1e-10,
    );

    let emb = Embedding::<Vocab, Model, f64>::from_weight(named(get("embedding/param/weight")));
    let ids: Tensor<i64, (Batch, Seq)> = ints("embedding/ids").refine_names();
    let y = emb.forward(&ids);
    assert_eq!(y.names(), ["Batch", "Seq", "Model"]);
    close("embedding y", y.as_dyn(), &get("embedding/y"), 0.0);
    (y.as_dyn() * &get("embedding/r")).sum().backward();
    close(
        "embedding dW",
        &emb.weight.grad().unwrap().into_dyn(),
        &get("embedding/grad/weight"),
        1e-12,
    );
}

#[test]
fn convolutions_pools_and_unfold_forward_and_backward() {
    for (case, window) in [
        ("conv2d", Window2d::new(3, 3).padding(1)),
        (
            "conv2d_strided",
            Window2d {
                kernel: (3, 2),
                stride: (2, 1),
                padding: (1, 0),
                dilation: (1, 2),
            },
        ),
    ] {
        let conv = Conv2d::<Channels, Features, Rows, Cols, f64>::try_from_parameters(
            named(get(&format!("{case}/param/weight"))),
            Some(named(get(&format!("{case}/param/bias")))),
            window,
        )
        .unwrap();
        let x = named::<(Batch, Channels, Rows, Cols)>(leaf(&format!("{case}/x")));
        let y = conv.forward(&x);
        assert_eq!(y.names(), ["Batch", "Features", "Rows", "Cols"]);
        close(case, y.as_dyn(), &get(&format!("{case}/y")), 1e-12);
        (y.as_dyn() * &get(&format!("{case}/r"))).sum().backward();
        close(
            case,
            &x.grad().unwrap().into_dyn(),
            &get(&format!("{case}/grad/x")),
            1e-12,
        );
        close(
            case,
            &conv.weight.grad().unwrap().into_dyn(),
            &get(&format!("{case}/grad/weight")),
            1e-12,
        );
        let db = conv.bias.as_ref().unwrap().grad().unwrap().into_dyn();
        close(case, &db, &get(&format!("{case}/grad/bias")), 1e-12);
        // Channels last: the same numbers, found by name.
        let hwc = x.detach().align_to::<(Rows, Cols, Batch, Channels)>();
        let y2 = conv
            .forward(&hwc)
            .align_to::<(Batch, Features, Rows, Cols)>();
        close(
            case,
            &y2.as_dyn().contiguous(),
            &get(&format!("{case}/y")),
            1e-12,
        );
    }

    let x = named::<(Batch, Channels, Rows, Cols)>(leaf("max_pool/x"));
    let y =
        MaxPool2d::<Rows, Cols>::with_window(Window2d::new(3, 3).stride(2).padding(1)).forward(&x);
    close("max_pool", y.as_dyn(), &get("max_pool/y"), 0.0);
    (y.as_dyn() * &get("max_pool/r")).sum().backward();
    close(
        "max_pool grad",
        &x.grad().unwrap().into_dyn(),
        &get("max_pool/grad/x"),
        1e-12,
    );

    let x = named::<(Batch, Channels, Rows, Cols)>(leaf("avg_pool/x"));
    let y = AvgPool2d::<Rows, Cols>::new(2).forward(&x);
    close("avg_pool", y.as_dyn(), &get("avg_pool/y"), 1e-12);
    (y.as_dyn() * &get("avg_pool/r")).sum().backward();
    close(
        "avg_pool grad",
        &x.grad().unwrap().into_dyn(),
        &get("avg_pool/grad/x"),
        1e-12,
    );

    // F.unfold is unfold2d's windows seen as [N, C·KH·KW, L].
    let x = leaf("unfold/x");
    let w = Window2d {
        kernel: (2, 3),
        stride: (1, 2),
        padding: (1, 1),
        dilation: (2, 1),
    };
    let cols = x.unfold2d(w, 0.0);
    let (n, c, k) = (2, 3, 6);
    let l = cols.shape()[4] * cols.shape()[5];
    let y = cols.reshape(&[n, c * k, l as isize]);
    close("unfold", &y, &get("unfold/y"), 0.0);
    (&y * &get("unfold/r")).sum().backward();
    close(
        "unfold grad (overlaps add up)",
        &x.grad().unwrap(),
        &get("unfold/grad/x"),
        1e-12,
    );
}

#[test]
fn multi_head_attention_matches_pytorch_causal_or_not() {
    for (case, causal) in [("mha", false), ("mha_causal", true)] {
        let attn = attention_from_fixture(case).causal(causal);
        let x = named::<(Batch, Seq, Model)>(leaf(&format!("{case}/x")));
        let y = attn.forward(&x, Seq);
        check_attention_gradients(case, &attn, &x, &y);
        // Sequence first: the same numbers, found by name.
        let sbm = x.detach().align_to::<(Seq, Batch, Model)>();
        let y2 = attn.forward(&sbm, Seq).align_to::<(Batch, Seq, Model)>();
        close(
            case,
            &y2.as_dyn().contiguous(),
            &get(&format!("{case}/y")),
            1e-12,
        );
    }
}

fn labels(case: &str) -> DynTensor<i64> {
    ints(&format!("{case}/in1"))
}

#[test]
fn losses_and_their_gradients() {
    let cases: [(&str, CrossEntropy); 3] = [
        ("ce_mean", CrossEntropy::default()),
        (
            "ce_smooth_sum",
            CrossEntropy {
                label_smoothing: 0.2,
                reduction: Reduction::Sum,
                ..CrossEntropy::default()
            },
        ),
        (
            "ce_smooth_mean",
            CrossEntropy {
                label_smoothing: 0.1,
                ..CrossEntropy::default()
            },
        ),
    ];
    for (case, ce) in cases {
        let x = named::<(Batch, Classes)>(leaf(&format!("{case}/in0")));
        let y: Tensor<i64, (Batch,)> = labels(case).refine_names();
        let l = ce.forward(&x, Classes, &y);
        close(case, l.as_dyn(), &get(&format!("{case}/loss")), 1e-12);
        l.backward();
        close(
            case,
            &x.grad().unwrap().into_dyn(),
            &get(&format!("{case}/grad0")),
            1e-12,
        );
    }

    // The class dim in the middle, (Batch, Classes, Seq): named, not "dim 1 by convention".
    let x = named::<(Batch, Classes, Seq)>(leaf("ce_middle/in0"));
    let y: Tensor<i64, (Batch, Seq)> = labels("ce_middle").refine_names();
    let ce = CrossEntropy {
        label_smoothing: 0.05,
        ..CrossEntropy::default()
    };
    let l = ce.forward(&x, Classes, &y);
    close("ce_middle", l.as_dyn(), &get("ce_middle/loss"), 1e-12);
    l.backward();
    close(
        "ce_middle grad",
        &x.grad().unwrap().into_dyn(),
        &get("ce_middle/grad0"),
        1e-12,
    );

    let x = named::<(Batch, Classes)>(leaf("nll_mean/in0"));
    let y: Tensor<i64, (Batch,)> = labels("nll_mean").refine_names();
    let l = loss::nll_loss(&x, Classes, &y);
    close("nll", l.as_dyn(), &get("nll_mean/loss"), 1e-12);
    l.backward();
    close(
        "nll grad",
        &x.grad().unwrap().into_dyn(),
        &get("nll_mean/grad0"),
        1e-12,
    );

    for (case, red) in [("mse_mean", Reduction::Mean), ("mse_sum", Reduction::Sum)] {
        let x = named::<(Batch, Out)>(leaf(&format!("{case}/in0")));
        let t = named::<(Batch, Out)>(get(&format!("{case}/in1")));
        let l = loss::mse_loss(&x, &t, red);
        close(case, l.as_dyn(), &get(&format!("{case}/loss")), 1e-12);
        l.backward();
        close(
            case,
            &x.grad().unwrap().into_dyn(),
            &get(&format!("{case}/grad0")),
            1e-12,
        );
    }

    let x = named::<(Batch, Out)>(leaf("bce_mean/in0"));
    let t = named::<(Batch, Out)>(get("bce_mean/in1"));
    let l = loss::bce_with_logits(&x, &t, Reduction::Mean);
    close("bce", l.as_dyn(), &get("bce_mean/loss"), 1e-12);
    l.backward();
    // Includes logits 0 (where a max(x, 0) formulation has the wrong one-sided gradient) and ±60.
    close(
        "bce grad",
        &x.grad().unwrap().into_dyn(),
        &get("bce_mean/grad0"),
        1e-12,
    );
}

/// The fixture's toy problem: 6 steps on `tanh(x W + b)²` plus `0.1 Σ W³`.
struct Toy {
    w: Tensor<f64, (In, Out)>,
    b: Tensor<f64, (Out,)>,
}

impl Module<f64> for Toy {
    fn visit(&self, v: &mut namedtensor::nn::Visitor<'_, f64>) {
        v.param("w", &self.w);
        v.param("b", &self.b);
    }
}

fn run_toy(case: &str, make: impl FnOnce(&Toy) -> Box<dyn Optimizer>) {
    let toy = Toy {
        w: named(leaf(&format!("{case}/init/w"))),
        b: named(leaf(&format!("{case}/init/b"))),
    };
    let mut opt = make(&toy);
    let xs = get(&format!("{case}/xs"));
    for step in 0..6 {
        opt.zero_grad();
        let x = named::<(Batch, In)>(xs.select(0, step));
        let y = (x.matmul(&toy.w) + &toy.b).tanh();
        let loss = y.square().sum::<(Batch, Out)>() + toy.w.powf(3.0).sum::<(In, Out)>() * 0.1;
        loss.backward();
        opt.step().unwrap();
    }
    close(
        case,
        toy.w.as_dyn(),
        &get(&format!("{case}/final/w")),
        1e-11,
    );
    close(
        case,
        toy.b.as_dyn(),
        &get(&format!("{case}/final/b")),
        1e-11,
    );
}

#[test]
fn optimisers_match_pytorch_step_for_step() {
    let sgd =
        |c: SgdConfig| move |t: &Toy| Box::new(Sgd::new(t.parameters(), c)) as Box<dyn Optimizer>;
    let adam =
        |c: AdamConfig| move |t: &Toy| Box::new(Adam::new(t.parameters(), c)) as Box<dyn Optimizer>;
    run_toy(
        "sgd",
        sgd(SgdConfig {
            lr: 0.1,
            ..SgdConfig::default()
        }),
    );
    run_toy(
        "sgd_momentum",
        sgd(SgdConfig {
            lr: 0.05,
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            nesterov: false,
        }),
    );
    run_toy(
        "sgd_nesterov",
        sgd(SgdConfig {
            lr: 0.05,
            momentum: 0.8,
            dampening: 0.0,
            weight_decay: 0.001,
            nesterov: true,
        }),
    );
    run_toy(
        "adam",
        adam(AdamConfig {
            lr: 0.03,
            weight_decay: 0.02,
            ..AdamConfig::default()
        }),
    );
    run_toy(
        "adam_amsgrad",
        adam(AdamConfig {
            lr: 0.03,
            betas: (0.8, 0.99),
            amsgrad: true,
            ..AdamConfig::default()
        }),
    );
    run_toy(
        "adamw",
        adam(AdamConfig {
            lr: 0.03,
            weight_decay: 0.1,
            eps: 1e-6,
            ..AdamConfig::adamw()
        }),
    );
}

#[test]
fn schedules_match_pytorch_bit_for_bit() {
    let fc = Linear::<In, Out>::seeded(2, 2, 0);
    let run = |make: &dyn Fn(&mut dyn Optimizer) -> Box<dyn LrScheduler>, key: &str| {
        let mut opt = Sgd::new(
            fc.parameters(),
            SgdConfig {
                lr: 0.7,
                ..SgdConfig::default()
            },
        );
        let mut s = make(&mut opt);
        let mut rates = vec![opt.lr()];
        for _ in 0..12 {
            s.step(&mut opt).unwrap();
            rates.push(opt.lr());
        }
        assert_eq!(rates, get(&format!("schedule/{key}")).to_vec(), "{key}");
    };
    run(&|o| Box::new(StepLr::new(o, 3, 0.3).unwrap()), "step");
    run(
        &|o| Box::new(CosineAnnealingLr::new(o, 5, 0.01).unwrap()),
        "cosine",
    );
    run(
        &|o| Box::new(LinearLr::new(o, 0.1, 0.9, 4).unwrap()),
        "linear",
    );
}

#[test]
fn clip_grad_norm_matches_pytorch() {
    let p1 = DynTensor::<f64>::zeros(&[3, 4]).requires_grad_(true);
    let p2 = DynTensor::<f64>::zeros(&[5]).requires_grad_(true);
    p1.set_grad(Some(get("clip/g1").clone())).unwrap();
    p2.set_grad(Some(get("clip/g2").clone())).unwrap();
    let params = vec![
        namedtensor::nn::Parameter {
            name: "p1".into(),
            tensor: p1.shallow_clone(),
            dims: &["A", "B"],
        },
        namedtensor::nn::Parameter {
            name: "p2".into(),
            tensor: p2.shallow_clone(),
            dims: &["C"],
        },
    ];
    let total = clip_grad_norm_(&params, 2.5).unwrap();
    close_vec("total", &[total], &get("clip/total").to_vec(), 1e-12);
    close("clip 1", &p1.grad().unwrap(), &get("clip/after1"), 1e-12);
    close("clip 2", &p2.grad().unwrap(), &get("clip/after2"), 1e-12);
}

/// The MLP of the fixture, written by names.
struct Mlp<E: Float> {
    fc1: Linear<Pixels, Hidden, E>,
    fc2: Linear<Hidden, Classes, E>,
}

impl<E: Float> Module<E> for Mlp<E> {
    fn visit(&self, v: &mut namedtensor::nn::Visitor<'_, E>) {
        v.module("fc1", &self.fc1);
        v.module("fc2", &self.fc2);
    }
}

/// A model of the fixture's training runs.
trait Classifier<E: Float>: Module<E> + Sized {
    fn from_fixture(case: &str) -> Self;
    fn forward(&self, x: &Tensor<E, (Batch, Pixels)>) -> Tensor<E, (Batch, Classes)>;
}

impl<E: Float> Classifier<E> for Mlp<E> {
    fn from_fixture(case: &str) -> Self {
        let p = |k: &str| get(&format!("{case}/init/{k}")).to_dtype::<E>();
        Mlp {
            fc1: Linear::from_parameters(
                p("fc1.weight").refine_names(),
                Some(p("fc1.bias").refine_names()),
            ),
            fc2: Linear::from_parameters(
                p("fc2.weight").refine_names(),
                Some(p("fc2.bias").refine_names()),
            ),
        }
    }

    fn forward(&self, x: &Tensor<E, (Batch, Pixels)>) -> Tensor<E, (Batch, Classes)> {
        self.fc2.forward(&self.fc1.forward(x).relu())
    }
}

/// The CNN of the fixture: two 3×3 convolutions with ReLU and 2×2 max pooling, then a
/// linear layer over the flattened features.
struct Cnn<E: Float> {
    conv1: Conv2d<Channels, Features, Rows, Cols, E>,
    conv2: Conv2d<Features, Hidden, Rows, Cols, E>,
    fc: Linear<Flat, Classes, E>,
}

impl<E: Float> Module<E> for Cnn<E> {
    fn visit(&self, v: &mut namedtensor::nn::Visitor<'_, E>) {
        v.module("conv1", &self.conv1);
        v.module("conv2", &self.conv2);
        v.module("fc", &self.fc);
    }
}

impl<E: Float> Classifier<E> for Cnn<E> {
    fn from_fixture(case: &str) -> Self {
        let p = |k: &str| get(&format!("{case}/init/{k}")).to_dtype::<E>();
        let w = Window2d::new(3, 3).padding(1);
        Cnn {
            conv1: Conv2d::try_from_parameters(
                p("conv1.weight").refine_names(),
                Some(p("conv1.bias").refine_names()),
                w,
            )
            .unwrap(),
            conv2: Conv2d::try_from_parameters(
                p("conv2.weight").refine_names(),
                Some(p("conv2.bias").refine_names()),
                w,
            )
            .unwrap(),
            fc: Linear::from_parameters(
                p("fc.weight").refine_names(),
                Some(p("fc.bias").refine_names()),
            ),
        }
    }

    fn forward(&self, x: &Tensor<E, (Batch, Pixels)>) -> Tensor<E, (Batch, Classes)> {
        let pool = MaxPool2d::<Rows, Cols>::new(2);
        let img = x
            .split::<Pixels, (Rows, Cols)>(&[8, 8])
            .as_dyn()
            .unsqueeze(1)
            .refine_names::<(Batch, Channels, Rows, Cols)>();
        let h = pool.forward(&self.conv1.forward(&img).relu());
        let h = pool.forward(&self.conv2.forward(&h).relu());
        self.fc.forward(&h.merge::<(Hidden, Rows, Cols), Flat>())
    }
}

fn digits<E: Float>() -> (DynTensor<E>, DynTensor<i64>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits.safetensors"
    );
    let images = DynTensor::<u8>::load_named(path, "images").unwrap();
    let labels = DynTensor::<i64>::load_named(path, "labels").unwrap();
    (
        images.to_dtype::<f64>().div_scalar(16.0).to_dtype::<E>(),
        labels,
    )
}

/// How a training run makes its optimiser from the model's parameters.
type MakeOptimizer<E> = Box<dyn FnOnce(Vec<namedtensor::nn::Parameter<E>>) -> Box<dyn Optimizer>>;

/// AdamW with PyTorch's defaults but the learning rate.
fn adamw<E: Float>(lr: f64) -> MakeOptimizer<E> {
    Box::new(move |p| {
        Box::new(Adam::new(
            p,
            AdamConfig {
                lr,
                ..AdamConfig::adamw()
            },
        ))
    })
}

/// SGD with momentum 0.9.
fn sgd_momentum<E: Float>(lr: f64) -> MakeOptimizer<E> {
    Box::new(move |p| {
        Box::new(Sgd::new(
            p,
            SgdConfig {
                lr,
                momentum: 0.9,
                ..SgdConfig::default()
            },
        ))
    })
}

/// Trains a classifier of the fixture for 30 steps on its digit batches and compares every
/// loss and the final weights.
fn train<E: Float, M: Classifier<E>>(
    case: &str,
    make: MakeOptimizer<E>,
    clip: Option<f64>,
    smoothing: f64,
    rtol: f64,
) {
    let (images, targets) = digits::<E>();
    let batches = ints("mlp/batches");
    let ce = CrossEntropy {
        label_smoothing: smoothing,
        ..CrossEntropy::default()
    };
    let model = M::from_fixture(case);
    train_and_compare(case, &model, make, clip, rtol, |model, step| {
        let idx = batches.select(0, step as isize);
        let x: Tensor<E, (Batch, Pixels)> = images.index_select(0, &idx).refine_names();
        let y: Tensor<i64, (Batch,)> = targets.index_select(0, &idx).refine_names();
        ce.forward(&model.forward(&x), Classes, &y)
    });
}

/// 30 steps of `model` (zero the gradients, `loss(model, step)`, backward, clip, step), then
/// every loss and the final parameters compared with the fixture's `case`.
fn train_and_compare<E: Float, M: Module<E>>(
    case: &str,
    model: &M,
    make: MakeOptimizer<E>,
    clip: Option<f64>,
    rtol: f64,
    loss: impl Fn(&M, usize) -> Tensor<E, ()>,
) {
    let mut opt = make(model.parameters());
    let mut losses = Vec::new();
    for step in 0..30 {
        opt.zero_grad();
        let loss = loss(model, step);
        loss.backward();
        if let Some(max) = clip {
            clip_grad_norm_(&model.parameters(), max).unwrap();
        }
        opt.step().unwrap();
        losses.push(loss.item().to_f64());
    }
    close_vec(
        &format!("{case} losses"),
        &losses,
        &get(&format!("{case}/losses")).to_vec(),
        rtol,
    );
    for p in model.parameters() {
        // An attention layer's key bias has no effect (it adds the same score to every key of
        // a query, which the softmax cancels), so its gradient is rounding noise, of the size
        // of Adam's eps in float32: Adam turns that noise into steps of the learning rate's
        // size, which no two libraries take alike. In float64 the noise is far below eps.
        if E::DTYPE == namedtensor::DType::F32 && p.name.ends_with("k_bias") {
            continue;
        }
        close(
            &format!("{case} final {}", p.name),
            &p.tensor,
            &get(&format!("{case}/final/{}", p.name)),
            rtol,
        );
    }
}

#[test]
fn mlp_trains_like_pytorch_with_adamw() {
    train::<f64, Mlp<f64>>("mlp_adamw", adamw(1e-2), None, 0.0, 1e-9);
    train::<f32, Mlp<f32>>("mlp_adamw_f32", adamw(1e-2), None, 0.0, 1e-4);
}

#[test]
fn cnn_trains_like_pytorch_with_adamw() {
    train::<f64, Cnn<f64>>("cnn_adamw", adamw(1e-2), None, 0.0, 1e-9);
    train::<f32, Cnn<f32>>("cnn_adamw_f32", adamw(1e-2), None, 0.0, 1e-4);
}

#[test]
fn cnn_trains_like_pytorch_with_sgd_momentum_clipping_and_smoothing() {
    train::<f64, Cnn<f64>>("cnn_sgd", sgd_momentum(0.05), Some(1.0), 0.1, 1e-9);
}

#[test]
fn mlp_trains_like_pytorch_with_sgd_momentum_clipping_and_smoothing() {
    train::<f64, Mlp<f64>>("mlp_sgd", sgd_momentum(0.1), Some(1.0), 0.1, 1e-9);
    train::<f32, Mlp<f32>>("mlp_sgd_f32", sgd_momentum(0.1), Some(1.0), 0.1, 1e-4);
}

#[test]
fn a_pytorch_state_dict_loads_by_name() {
    let model = Mlp::<f32>::from_fixture("mlp_sgd_f32");
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mlp_state_dict.safetensors"
    );
    namedtensor::nn::load_parameters(&model, path).unwrap();
    let (images, _) = digits::<f32>();
    let x: Tensor<f32, (Batch, Pixels)> = images.narrow(0, 0, 5).refine_names();
    close(
        "logits",
        model.forward(&x).as_dyn(),
        &get("state_dict/logits_f32"),
        1e-5,
    );
}

/// The fixtures' key padding mask `(Batch, Seq)`: batch entry 1 has two padded keys, entry 2
/// is all padding (make_nn.py's `KEY_PADDING`).
fn key_padding() -> Tensor<bool, (Batch, Seq)> {
    let mut m = vec![false; 15];
    m[8] = true;
    m[9] = true;
    m[10..].fill(true);
    Tensor::from_vec(m, [3, 5])
}

/// PyTorch's `nn.MultiheadAttention(8, 2)` of the fixture `case` as our layer.
fn attention_from_fixture(case: &str) -> MultiHeadAttention<Model, Heads, HeadDim, f64> {
    let p = |k: &str| get(&format!("{case}/param/{k}"));
    // PyTorch's in_proj rows are q, k, v; each [8, 8] is (Heads, HeadDim) × Model.
    let rows = |t: &T, i: isize| t.narrow(0, 8 * i, 8).contiguous();
    let (w, b) = (p("in_proj_weight"), p("in_proj_bias"));
    MultiHeadAttention::try_from_parameters(
        [0, 1, 2].map(|i| rows(&w, i).reshape(&[2, 4, 8]).refine_names()),
        [0, 1, 2].map(|i| rows(&b, i).reshape(&[2, 4]).refine_names()),
        p("out_proj.weight").reshape(&[8, 2, 4]).refine_names(),
        p("out_proj.bias").refine_names(),
    )
    .unwrap()
}

/// Output and every gradient of `attn` on the fixture `case` against PyTorch's.
fn check_attention_gradients(
    case: &str,
    attn: &MultiHeadAttention<Model, Heads, HeadDim, f64>,
    x: &Tensor<f64, (Batch, Seq, Model)>,
    y: &Tensor<f64, (Batch, Seq, Model)>,
) {
    let g = |k: &str| get(&format!("{case}/grad/{k}"));
    close(case, y.as_dyn(), &get(&format!("{case}/y")), 1e-12);
    (y.as_dyn() * &get(&format!("{case}/r"))).sum().backward();
    close(case, &x.grad().unwrap().into_dyn(), &g("x"), 1e-12);
    let cat = |ts: [&Tensor<f64, (Heads, HeadDim, Model)>; 3]| {
        let flat = ts.map(|t| t.grad().unwrap().into_dyn().reshape(&[8, 8]));
        DynTensor::cat(&flat.iter().collect::<Vec<_>>(), 0)
    };
    close(
        case,
        &cat([&attn.q, &attn.k, &attn.v]),
        &g("in_proj_weight"),
        1e-12,
    );
    let biases = [&attn.q_bias, &attn.k_bias, &attn.v_bias]
        .map(|t| t.grad().unwrap().into_dyn().reshape(&[8]));
    close(
        case,
        &DynTensor::cat(&biases.iter().collect::<Vec<_>>(), 0),
        &g("in_proj_bias"),
        1e-12,
    );
    let out = attn.out.grad().unwrap().into_dyn().reshape(&[8, 8]);
    close(case, &out, &g("out_proj.weight"), 1e-12);
    let out_bias = attn.out_bias.grad().unwrap().into_dyn();
    close(case, &out_bias, &g("out_proj.bias"), 1e-12);
}

#[test]
fn attention_masks_match_pytorch_key_padding_and_attn_mask() {
    // Query 1 may not see key 3; query 4 sees only key 4 (make_nn.py's `PAIRS`).
    let mut pairs = vec![false; 25];
    pairs[5 + 3] = true;
    pairs[20..24].fill(true);
    let pairs = Tensor::<bool, (Seq, Key)>::from_vec(pairs, [5, 5]);
    let pad = key_padding();
    let additive = named::<(Seq, Key)>(get("mha_masked_additive/attn_mask"));
    for case in ["mha_masked", "mha_masked_causal", "mha_masked_additive"] {
        let attn = attention_from_fixture(case).causal(case == "mha_masked_causal");
        let x = named::<(Batch, Seq, Model)>(leaf(&format!("{case}/x")));
        let masks = AttentionMasks::new().key_padding(&pad);
        let y = match case {
            "mha_masked" => attn.forward_masked(&x, Seq, &masks.attn(&pairs)),
            "mha_masked_additive" => attn.forward_masked(&x, Seq, &masks.attn(&additive)),
            _ => attn.forward_masked(&x, Seq, &masks),
        };
        // The all-padding batch entry: zero weights, so the output is the output bias.
        let empty = y.as_dyn().narrow(0, 2, 1).contiguous();
        let bias = attn.out_bias.as_dyn().expand(&[1, 5, 8]).contiguous();
        close(case, &empty, &bias, 0.0);
        check_attention_gradients(case, &attn, &x, &y);
        // Sequence first and the mask's dims in the other order: the same numbers, by name.
        let pad_sb = pad.align_to::<(Seq, Batch)>();
        let masks = AttentionMasks::new().key_padding(&pad_sb);
        let xs = x.detach().align_to::<(Seq, Batch, Model)>();
        let y2 = match case {
            "mha_masked" => attn.forward_masked(&xs, Seq, &masks.attn(&pairs)),
            "mha_masked_additive" => attn.forward_masked(&xs, Seq, &masks.attn(&additive)),
            _ => attn.forward_masked(&xs, Seq, &masks),
        };
        let y2 = y2.align_to::<(Batch, Seq, Model)>();
        close(
            case,
            &y2.as_dyn().contiguous(),
            &get(&format!("{case}/y")),
            1e-12,
        );
    }
}

#[test]
fn attention_masks_that_do_not_fit_are_errors_naming_the_dim() {
    let attn = MultiHeadAttention::<Model, Heads, HeadDim, f64>::seeded(8, 2, 0);
    let x = Tensor::<f64, (Batch, Seq, Model)>::randn([3, 5, 8], 1);
    let pad = Tensor::<bool, (Batch, Seq)>::zeros([3, 4]);
    let e = attn
        .try_forward_masked(&x, Seq, &AttentionMasks::new().key_padding(&pad))
        .unwrap_err();
    assert!(e.to_string().contains("4 entries along `Seq`"), "{e}");
    let pairs = Tensor::<bool, (Seq, Key)>::zeros([5, 4]);
    let e = attn
        .try_forward_masked(&x, Seq, &AttentionMasks::new().attn(&pairs))
        .unwrap_err();
    assert!(e.to_string().contains("5 × 4 along (`Seq`, `Key`)"), "{e}");
    // A mask over the sequence only broadcasts over the batch; no mask is the plain forward.
    let keys = Tensor::<bool, (Seq,)>::from_vec(vec![false, false, true, false, false], [5]);
    let per_batch = keys
        .align_to::<(Batch, Seq)>()
        .as_dyn()
        .expand(&[3, 5])
        .contiguous();
    let a = attn.forward_masked(&x, Seq, &AttentionMasks::new().key_padding(&keys));
    let b = attn.forward_masked(
        &x,
        Seq,
        &AttentionMasks::new().key_padding(&per_batch.refine_names::<(Batch, Seq)>()),
    );
    close("broadcast mask", a.as_dyn(), b.as_dyn(), 0.0);
    let plain = attn.forward(&x, Seq);
    let unmasked = attn.forward_masked(&x, Seq, &AttentionMasks::new());
    close("no masks", plain.as_dyn(), unmasked.as_dyn(), 0.0);
}

#[test]
fn transformer_block_key_padding_matches_pytorch() {
    let block =
        TransformerBlock::<Model, Heads, HeadDim, Hidden, f64>::seeded(torch_layer(false), 0);
    set_parameters(&block, "block_masked", "param");
    let x = named::<(Batch, Seq, Model)>(leaf("block_masked/x"));
    let y = block.forward_masked(&x, Seq, &AttentionMasks::new().key_padding(&key_padding()));
    check_block_gradients("block_masked", &block, &x, &y);
}

/// The fixtures' `TransformerEncoderLayer(8, 2, 16, dropout=0.0)`.
fn torch_layer(causal: bool) -> TransformerConfig {
    TransformerConfig {
        model: 8,
        heads: 2,
        hidden: 16,
        dropout: 0.0,
        causal,
    }
}

/// Output and every gradient of `block` on the fixture `case` against PyTorch's.
fn check_block_gradients(
    case: &str,
    block: &TransformerBlock<Model, Heads, HeadDim, Hidden, f64>,
    x: &Tensor<f64, (Batch, Seq, Model)>,
    y: &Tensor<f64, (Batch, Seq, Model)>,
) {
    close(case, y.as_dyn(), &get(&format!("{case}/y")), 1e-12);
    (y.as_dyn() * &get(&format!("{case}/r"))).sum().backward();
    let x_grad = x.grad().unwrap().into_dyn();
    close(case, &x_grad, &get(&format!("{case}/grad/x")), 1e-12);
    for p in block.parameters() {
        close(
            &format!("{case} {}", p.name),
            &p.tensor.grad().unwrap(),
            &get(&format!("{case}/grad/{}", p.name)),
            1e-12,
        );
    }
}

/// Copies the fixture's `{case}/{what}/{name}` into each parameter of `model`, by name.
fn set_parameters<E: Float>(model: &impl Module<E>, case: &str, what: &str) {
    namedtensor::autograd::no_grad(|| {
        for p in model.parameters() {
            let value = get(&format!("{case}/{what}/{}", p.name));
            p.tensor.try_copy_(&value).unwrap();
        }
    });
}

#[test]
fn transformer_block_matches_pytorch_encoder_layer() {
    let block =
        TransformerBlock::<Model, Heads, HeadDim, Hidden, f64>::seeded(torch_layer(true), 0);
    set_parameters(&block, "block", "param");
    let x = named::<(Batch, Seq, Model)>(leaf("block/x"));
    let y = block.forward(&x, Seq);
    check_block_gradients("block", &block, &x, &y);
    // Sequence first: the same numbers, found by name.
    let y2 = block
        .forward(&x.detach().align_to::<(Seq, Batch, Model)>(), Seq)
        .align_to::<(Batch, Seq, Model)>();
    close("block", &y2.as_dyn().contiguous(), &get("block/y"), 1e-12);
}

// The example's encoder and sampler are not used here.
#[allow(dead_code)]
#[path = "../../examples/char_transformer/model.rs"]
mod char_model;

/// Trains the example's character transformer (small sizes) for the fixture's 30 steps and
/// compares every loss and the final weights.
fn train_char<E: Float>(case: &str, make: MakeOptimizer<E>, rtol: f64) {
    use char_model::{CharTransformer, Sizes, Vocab};
    let sizes = Sizes {
        model: 16,
        heads: 2,
        hidden: 32,
        context: 12,
        layers: 2,
    };
    let model = CharTransformer::<E>::new(sizes); // every parameter is then set from PyTorch's
    set_parameters(&model, case, "init");
    let windows = ints("char/windows");
    let ce = CrossEntropy::default();
    train_and_compare(case, &model, make, None, rtol, |model, step| {
        let w = windows.select(0, step as isize);
        let x = w.narrow(1, 0, 12).refine_names();
        let y = w.narrow(1, 1, 12).refine_names();
        ce.forward(&model.forward(&x), Vocab, &y)
    });
}

/// 10 AdamW steps of the example's character transformer in f32 from the fixture's initial
/// weights, under `autocast::<bf16>` or not: the model and its losses.
fn train_char_amp(autocast: bool) -> (char_model::CharTransformer<f32>, Vec<f64>) {
    use char_model::{CharTransformer, Sizes, Vocab};
    let model = CharTransformer::<f32>::new(Sizes {
        model: 16,
        heads: 2,
        hidden: 32,
        context: 12,
        layers: 2,
    });
    set_parameters(&model, "char_amp_bf16", "init");
    let windows = ints("char/windows");
    let ce = CrossEntropy::default();
    let mut opt = adamw(1e-2)(model.parameters());
    let mut losses = Vec::new();
    for step in 0..10 {
        let w = windows.select(0, step);
        let x = w.narrow(1, 0, 12).refine_names();
        let y = w.narrow(1, 1, 12).refine_names();
        opt.zero_grad();
        let run = || ce.forward(&model.forward(&x), Vocab, &y);
        let loss = if autocast {
            namedtensor::amp::autocast::<namedtensor::bf16, _>(run)
        } else {
            run()
        };
        loss.backward();
        opt.step().unwrap();
        losses.push(f64::from(loss.item()));
    }
    (model, losses)
}

/// The largest deviation of `model`'s parameters from the fixture's `{case}/final/*`, the
/// attention key biases left out (their gradient is rounding noise; see
/// `train_and_compare`).
fn char_deviation(case: &str, model: &char_model::CharTransformer<f32>) -> f64 {
    model
        .parameters()
        .iter()
        .filter(|p| !p.name.ends_with("k_bias"))
        .map(|p| {
            let ours: Vec<f64> = p.tensor.to_vec().iter().map(|&v| f64::from(v)).collect();
            deviation(&ours, &get(&format!("{case}/final/{}", p.name)).to_vec())
        })
        .fold(0.0, f64::max)
}

#[test]
fn char_transformer_trains_like_pytorch_under_bf16_autocast() {
    // PyTorch's CPU autocast keeps a layer's output in bf16 and runs layer norm, softmax and
    // the residual adds on it; this library rounds the products' operands to bf16 and keeps
    // every result in f32. So the runs agree to bf16's noise, whose size PyTorch's own f32
    // and bf16 runs show.
    let (model, losses) = train_char_amp(true);
    let torch_gap = (
        deviation(
            &get("char_amp_bf16/losses").to_vec(),
            &get("char_amp_f32/losses").to_vec(),
        ),
        model
            .parameters()
            .iter()
            .filter(|p| !p.name.ends_with("k_bias"))
            .map(|p| {
                let final_of = |case: &str| get(&format!("{case}/final/{}", p.name)).to_vec();
                deviation(&final_of("char_amp_bf16"), &final_of("char_amp_f32"))
            })
            .fold(0.0, f64::max),
    );
    let ours = (
        deviation(&losses, &get("char_amp_bf16/losses").to_vec()),
        char_deviation("char_amp_bf16", &model),
    );
    eprintln!(
        "bf16 autocast transformer: losses within {:.2e}, parameters within {:.2e} of \
         PyTorch's (PyTorch's f32 and bf16 runs: {:.2e}, {:.2e})",
        ours.0, ours.1, torch_gap.0, torch_gap.1
    );
    assert!(
        ours.0 < 2.0 * torch_gap.0 + 1e-3 && ours.1 < 2.0 * torch_gap.1,
        "ours {ours:?}, PyTorch's own gap {torch_gap:?}"
    );
    // The f32 run follows PyTorch's f32 run closely, and autocast changed the numbers.
    let (f32_model, f32_losses) = train_char_amp(false);
    close_vec(
        "char f32 losses",
        &f32_losses,
        &get("char_amp_f32/losses").to_vec(),
        1e-4,
    );
    assert!(char_deviation("char_amp_f32", &f32_model) < 1e-3);
    assert!(deviation(&losses, &f32_losses) > 1e-6);
}

#[test]
fn char_transformer_trains_like_pytorch() {
    train_char::<f64>("char_adamw", adamw(1e-2), 1e-9);
    train_char::<f32>("char_adamw_f32", adamw(1e-2), 1e-4);
    train_char::<f64>("char_sgd", sgd_momentum(0.1), 1e-9);
}

#[test]
fn a_tuple_of_layers_matches_pytorch_sequential() {
    // nn.Sequential(Linear(5, 4), GELU(), Linear(4, 3), LogSoftmax(-1)) as a tuple: the dims
    // chain In -> Hidden -> Out, and the parameter names are PyTorch's state_dict keys.
    let seq = (
        Linear::<In, Hidden, f64>::seeded(5, 4, 0),
        Gelu,
        Linear::<Hidden, Out, f64>::seeded(4, 3, 1),
        LogSoftmax::<Out>::new(),
    );
    let names: Vec<String> = seq.parameters().iter().map(|p| p.name.clone()).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    set_parameters(&seq, "sequential", "param");
    let x = named::<(Batch, Seq, In)>(leaf("sequential/x"));
    let y: Tensor<f64, (Batch, Seq, Out)> = seq.forward(&x);
    close("sequential y", y.as_dyn(), &get("sequential/y"), 1e-12);
    let r = named::<(Batch, Seq, Out)>(get("sequential/r"));
    y.mul_strict(&r).sum::<(Batch, Seq, Out)>().backward();
    close(
        "sequential grad x",
        &x.grad().unwrap().into_dyn(),
        &get("sequential/grad/x"),
        1e-10,
    );
    for p in seq.parameters() {
        let want = get(&format!("sequential/grad/{}", p.name));
        close(&p.name, &p.tensor.grad().unwrap(), &want, 1e-10);
    }
}

/// Runs the fixture's batch-norm steps of `case` (`train` in training, then one in
/// evaluation) through `norm`, with each input laid out as `S` by `to_s` and read back in
/// PyTorch's layout by `from_s`: outputs, gradients and the buffers after each step.
fn batch_norm_steps<S: HasDim<Channels>>(
    case: &str,
    norm: &BatchNorm<Channels, f64>,
    train: usize,
    to_s: impl Fn(T) -> Tensor<f64, S>,
    from_s: impl Fn(&Tensor<f64, S>) -> T,
) {
    for step in 0..=train {
        if step == train {
            norm.eval();
        }
        norm.zero_grad();
        let key = |k: &str| format!("{case}/{step}/{k}");
        let at = |k: &str| format!("{case} step {step}: {k}");
        let x = to_s(get(&key("x"))).detach().requires_grad_(true);
        let y = norm.forward(&x);
        (y.as_dyn() * to_s(get(&key("r"))).as_dyn())
            .sum()
            .backward();
        close(&at("y"), &from_s(&y), &get(&key("y")), 1e-10);
        close(
            &at("grad x"),
            &from_s(&x.grad().unwrap()),
            &get(&key("grad/x")),
            1e-9,
        );
        for p in norm.parameters() {
            let want = get(&key(&format!("grad/{}", p.name)));
            close(&at(&p.name), &p.tensor.grad().unwrap(), &want, 1e-10);
        }
        close(
            &at("running_mean"),
            norm.running_mean.as_dyn(),
            &get(&key("running_mean")),
            1e-12,
        );
        close(
            &at("running_var"),
            norm.running_var.as_dyn(),
            &get(&key("running_var")),
            1e-12,
        );
        assert_eq!(
            norm.num_batches_tracked.as_dyn().to_vec(),
            ints(&key("num_batches_tracked")).to_vec(),
            "{}",
            at("num_batches_tracked")
        );
    }
}

/// A batch norm with the parameters of `case`'s fixture.
fn batch_norm(case: &str, channels: usize) -> BatchNorm<Channels, f64> {
    let norm = BatchNorm::new(channels);
    let norm = if fx().contains_key(&format!("{case}/param/weight")) {
        norm
    } else {
        norm.without_affine()
    };
    set_parameters(&norm, case, "param");
    norm
}

#[test]
fn batch_norm_matches_pytorch_in_training_and_evaluation() {
    type Nchw = (Batch, Channels, Rows, Cols);
    type Nhwc = (Batch, Rows, Cols, Channels);
    // BatchNorm2d: channels second, as PyTorch lays them out ...
    let norm = batch_norm("batch_norm2d", 3);
    batch_norm_steps("batch_norm2d", &norm, 2, named::<Nchw>, |t| {
        t.as_dyn().contiguous()
    });
    // ... and last: the same layer finds Channels by name, the numbers are the same.
    let norm = batch_norm("batch_norm2d", 3);
    batch_norm_steps(
        "batch_norm2d",
        &norm,
        2,
        |t| named::<Nchw>(t).align_to::<Nhwc>(),
        |t| t.align_to::<Nchw>().into_dyn().contiguous(),
    );
    // BatchNorm1d on (Batch, Channels) with a cumulative average (momentum None) over three
    // batches of different sizes.
    let norm = batch_norm("batch_norm1d_cumulative", 4).momentum(None);
    batch_norm_steps(
        "batch_norm1d_cumulative",
        &norm,
        3,
        named::<(Batch, Channels)>,
        |t| t.as_dyn().contiguous(),
    );
    // BatchNorm1d on (Batch, Channels, Seq) without weight and bias.
    let norm = batch_norm("batch_norm1d_plain", 3);
    assert_eq!(norm.parameters().len(), 0);
    batch_norm_steps(
        "batch_norm1d_plain",
        &norm,
        1,
        named::<(Batch, Channels, Seq)>,
        |t| t.as_dyn().contiguous(),
    );
}

/// Sets `layer`'s parameters from `case`, runs `forward` on the fixture's input and compares
/// the output and, against the fixture's weighting, the gradients of the input and of every
/// parameter (whose names are PyTorch's `state_dict` keys, or the fixture lookup fails).
/// Every input layout is PyTorch's; `forward` names it.
fn check_layer<M: Module<f64>>(case: &str, layer: &M, forward: impl Fn(&T) -> T) {
    set_parameters(layer, case, "param");
    let x = leaf(&format!("{case}/x"));
    let y = forward(&x);
    close(&format!("{case} y"), &y, &get(&format!("{case}/y")), 1e-10);
    (&y * &get(&format!("{case}/r"))).sum().backward();
    let gx = x.grad().unwrap();
    close(
        &format!("{case} grad x"),
        &gx,
        &get(&format!("{case}/grad/x")),
        1e-9,
    );
    for p in layer.parameters() {
        let want = get(&format!("{case}/grad/{}", p.name));
        close(
            &format!("{case} grad {}", p.name),
            &p.tensor.grad().unwrap(),
            &want,
            1e-9,
        );
    }
}

#[test]
fn lstm_and_gru_match_pytorch() {
    let lstm = Lstm::<In, Hidden, f64>::seeded(3, 5, 0);
    check_layer("lstm", &lstm, |x| {
        lstm.forward(&named::<(Batch, Seq, In)>(x.shallow_clone()), Seq)
            .into_dyn()
    });
    let lstm = Lstm::<In, Hidden, f64>::seeded(2, 3, 0).without_bias();
    check_layer("lstm_nobias", &lstm, |x| {
        lstm.forward(&named::<(Batch, Seq, In)>(x.shallow_clone()), Seq)
            .into_dyn()
    });
    let gru = Gru::<In, Hidden, f64>::seeded(3, 4, 0);
    check_layer("gru", &gru, |x| {
        gru.forward(&named::<(Batch, Seq, In)>(x.shallow_clone()), Seq)
            .into_dyn()
    });
    // PyTorch's default layout, sequence first: the same layer, found by name.
    let gru = Gru::<In, Hidden, f64>::seeded(3, 4, 0);
    check_layer("gru_seq_first", &gru, |x| {
        let y = gru.forward(&named::<(Seq, Batch, In)>(x.shallow_clone()), Seq);
        assert_eq!(y.names(), ["Seq", "Batch", "Hidden"]);
        y.into_dyn()
    });
}

#[test]
fn group_norm_conv1d_and_adaptive_pooling_match_pytorch() {
    type Ncl = (Batch, Channels, Seq);
    let norm = GroupNorm::<Batch, Channels, f64>::new(2, 6);
    check_layer("group_norm", &norm, |x| {
        norm.forward(&named::<Ncl>(x.shallow_clone())).into_dyn()
    });
    // Channels last and the sequence first: the layer finds both dims by name.
    let norm = GroupNorm::<Batch, Channels, f64>::new(2, 6);
    check_layer("group_norm", &norm, |x| {
        let moved = named::<Ncl>(x.shallow_clone()).align_to::<(Seq, Batch, Channels)>();
        norm.forward(&moved).align_to::<Ncl>().into_dyn()
    });
    let norm = GroupNorm::<Batch, Channels, f64>::new(3, 6).without_affine();
    check_layer("group_norm_plain", &norm, |x| {
        let x = named::<(Batch, Channels, Rows, Cols)>(x.shallow_clone());
        norm.forward(&x).into_dyn()
    });
    let conv = Conv1d::<Channels, Features, Seq, f64>::seeded(3, 4, 3, 0).padding(1);
    check_layer("conv1d", &conv, |x| {
        let y = conv.forward(&named::<Ncl>(x.shallow_clone()));
        assert_eq!(y.names(), ["Batch", "Features", "Seq"]);
        y.into_dyn()
    });
    let conv = Conv1d::<Channels, Features, Seq, f64>::seeded(2, 3, 3, 0)
        .stride(2)
        .dilation(2)
        .without_bias();
    check_layer("conv1d_strided", &conv, |x| {
        let moved = named::<Ncl>(x.shallow_clone()).align_to::<(Seq, Channels, Batch)>();
        conv.forward(&moved)
            .align_to::<(Batch, Features, Seq)>()
            .into_dyn()
    });
    for (case, bins) in [
        ("adaptive_avg_pool", (3, 2)),
        ("adaptive_avg_pool_global", (1, 1)),
    ] {
        let pool = AdaptiveAvgPool2d::<Rows, Cols>::new(bins.0, bins.1);
        check_layer(case, &pool, |x| {
            let x = named::<(Batch, Channels, Rows, Cols)>(x.shallow_clone());
            pool.forward(&x).into_dyn()
        });
    }
}

/// The largest of `|ours − theirs| / (1 + |theirs|)` over the elements.
fn deviation(ours: &[f64], theirs: &[f64]) -> f64 {
    assert_eq!(ours.len(), theirs.len());
    ours.iter()
        .zip(theirs)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f64::max)
}

/// One mixed-precision run of the fixture's MLP on its digit batches: the losses, and per
/// step the scaler's scale after its update and whether the step was taken.
fn train_amp<L: namedtensor::amp::LowPrecision>(
    case: &str,
    mut scaler: Option<namedtensor::amp::GradScaler>,
) -> (Mlp<f32>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (images, targets) = digits::<f32>();
    let batches = ints("mlp/batches");
    let model = Mlp::<f32>::from_fixture(case);
    let mut opt = adamw(1e-2)(model.parameters());
    let (mut losses, mut scales, mut taken) = (Vec::new(), Vec::new(), Vec::new());
    for step in 0..30 {
        let idx = batches.select(0, step);
        let x: Tensor<f32, (Batch, Pixels)> = images.index_select(0, &idx).refine_names();
        let y: Tensor<i64, (Batch,)> = targets.index_select(0, &idx).refine_names();
        opt.zero_grad();
        let loss = namedtensor::amp::autocast::<L, _>(|| {
            CrossEntropy::default().forward(&model.forward(&x), Classes, &y)
        });
        match &mut scaler {
            None => {
                loss.backward();
                opt.step().unwrap();
            }
            Some(scaler) => {
                scaler.scale(&loss).backward();
                taken.push(f64::from(u8::from(scaler.step(opt.as_mut()).unwrap())));
                scaler.update().unwrap();
                scales.push(scaler.get_scale());
            }
        }
        losses.push(loss.item() as f64);
    }
    (model, losses, scales, taken)
}

/// The final parameters' deviation from the fixture's.
fn final_deviation(case: &str, model: &Mlp<f32>) -> f64 {
    model
        .parameters()
        .iter()
        .map(|p| {
            let ours: Vec<f64> = p.tensor.to_vec().iter().map(|&v| v as f64).collect();
            deviation(&ours, &get(&format!("{case}/final/{}", p.name)).to_vec())
        })
        .fold(0.0, f64::max)
}

#[test]
fn mlp_trains_like_pytorch_under_autocast_and_grad_scaling() {
    use namedtensor::amp::{GradScaler, GradScalerConfig};
    use namedtensor::{bf16, f16};
    // bf16 products, f32 master weights, AdamW: PyTorch rounds a layer's output (bias
    // included) to bf16 where this library rounds the product and adds the bias in f32, so
    // the runs agree to bf16's precision (2⁻⁸ ≈ 4e-3), not bit for bit. After 30 Adam steps
    // the parameters' rounding noise has grown: PyTorch's own f32 and bf16 runs end 3.5e-2
    // apart on them.
    let (model, losses, _, _) = train_amp::<bf16>("mlp_amp_bf16", None);
    let (dl, dp) = (
        deviation(&losses, &get("mlp_amp_bf16/losses").to_vec()),
        final_deviation("mlp_amp_bf16", &model),
    );
    eprintln!("bf16 autocast: losses within {dl:.2e}, final parameters within {dp:.2e}");
    assert!(
        dl < 1e-2 && dp < 6e-2,
        "bf16 autocast: losses {dl}, parameters {dp}"
    );
    // Autocast changed the numbers: f32 products would give the f32 run's losses.
    assert!(deviation(&losses, &get("mlp_adamw_f32/losses").to_vec()) > 1e-4);

    // f16 products with a scaler whose first scale (2²²) overflows the gradients: the same
    // steps are skipped, the scale follows PyTorch's, and with f16's 11 bits the run stays
    // close to PyTorch's (measured 4.9e-5 on the losses, 1.2e-4 on the parameters).
    let config = GradScalerConfig {
        init_scale: 4194304.0,
        growth_interval: 4,
        ..GradScalerConfig::default()
    };
    let scaler = GradScaler::from_config(config).unwrap();
    let case = "mlp_amp_f16_scaled";
    let (model, losses, scales, taken) = train_amp::<f16>(case, Some(scaler));
    let (dl, dp) = (
        deviation(&losses, &get(&format!("{case}/losses")).to_vec()),
        final_deviation(case, &model),
    );
    eprintln!("f16 autocast + scaler: losses within {dl:.2e}, final parameters within {dp:.2e}");
    assert_eq!(taken, get(&format!("{case}/taken")).to_vec(), "steps taken");
    assert_eq!(scales, get(&format!("{case}/scales")).to_vec(), "scales");
    assert!(
        dl < 1e-3 && dp < 1e-3,
        "f16 autocast: losses {dl}, parameters {dp}"
    );
}
