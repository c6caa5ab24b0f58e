//! The model writer's side of `nn` and `optim`: modules by dotted name, train/eval, the
//! parameter store's checks, layers on any leading dims, and every bad input the issue lists
//! giving a clear error that leaves the model untouched. (Numbers against PyTorch are in
//! `nn_torch.rs`.)

use namedtensor::nn::loss::{self, CrossEntropy};
use namedtensor::nn::{
    Along, Dropout, Embedding, Forward, LayerNorm, Linear, Module, Relu, Softmax, Tanh,
    TransformerBlock, TransformerConfig, Visitor, load_parameters, save_parameters,
};
use namedtensor::optim::{
    Adam, AdamConfig, LinearLr, Optimizer, Sgd, SgdConfig, StepLr, clip_grad_norm_,
};
use namedtensor::{DynTensor, ErrorKind, Tensor, dims};

dims! { Batch, Seq, In, Out, Model, Hidden, Vocab, Classes, Rows, Cols }

struct Block {
    up: Linear<Model, Hidden>,
    down: Linear<Hidden, Model>,
    norm: LayerNorm<Model>,
    drop: Dropout,
}

impl Module<f32> for Block {
    fn visit(&self, v: &mut Visitor<'_, f32>) {
        v.module("up", &self.up);
        v.module("down", &self.down);
        v.module("norm", &self.norm);
        v.module("drop", &self.drop);
    }
}

struct Net {
    embed: Embedding<Vocab, Model>,
    blocks: Vec<Block>,
    head: Linear<Model, Classes>,
}

impl Module<f32> for Net {
    fn visit(&self, v: &mut Visitor<'_, f32>) {
        v.module("embed", &self.embed);
        v.module("blocks", &self.blocks);
        v.module("head", &self.head);
    }
}

impl Net {
    fn new(seed: u64) -> Net {
        Net {
            embed: Embedding::seeded(11, 4, seed),
            blocks: (0..2)
                .map(|i| Block {
                    up: Linear::seeded(4, 6, seed + 10 + i),
                    down: Linear::seeded(6, 4, seed + 40 + i),
                    norm: LayerNorm::new(4),
                    drop: Dropout::seeded(0.5, seed + 20 + i),
                })
                .collect(),
            head: Linear::seeded(4, 3, seed + 30),
        }
    }

    fn forward(&self, ids: &Tensor<i64, (Batch, Seq)>) -> Tensor<f32, (Batch, Seq, Classes)> {
        let mut x = self.embed.forward(ids);
        for b in &self.blocks {
            x = b.drop.forward(
                &b.norm
                    .forward(&(b.down.forward(&b.up.forward(&x).relu()) + &x)),
            );
        }
        self.head.forward(&x)
    }
}

fn ids() -> Tensor<i64, (Batch, Seq)> {
    Tensor::from_vec(vec![1, 2, 3, 10, 0, 5], [2, 3])
}

#[test]
fn parameters_have_dotted_names_and_dims_in_visiting_order() {
    let net = Net::new(0);
    let params = net.parameters();
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "embed.weight",
            "blocks.0.up.weight",
            "blocks.0.up.bias",
            "blocks.0.down.weight",
            "blocks.0.down.bias",
            "blocks.0.norm.weight",
            "blocks.0.norm.bias",
            "blocks.1.up.weight",
            "blocks.1.up.bias",
            "blocks.1.down.weight",
            "blocks.1.down.bias",
            "blocks.1.norm.weight",
            "blocks.1.norm.bias",
            "head.weight",
            "head.bias",
        ]
    );
    assert_eq!(params[0].dims, ["Vocab", "Model"]);
    assert_eq!(params[13].dims, ["Classes", "Model"]);
    assert_eq!(
        net.num_parameters(),
        11 * 4 + 2 * (24 + 6 + 24 + 4 + 4 + 4) + 12 + 3
    );
    // Handles share the layer's storage: writing one changes the layer.
    namedtensor::autograd::no_grad(|| params[13].tensor.fill_(0.0));
    assert!(net.head.weight.to_vec().iter().all(|&w| w == 0.0));
}

#[test]
fn train_and_eval_switch_every_dropout() {
    let net = Net::new(1);
    let a = net.forward(&ids()).to_vec();
    let b = net.forward(&ids()).to_vec();
    assert_ne!(a, b, "training: each call draws a new mask");
    net.eval();
    let c = net.forward(&ids()).to_vec();
    assert_eq!(
        c,
        net.forward(&ids()).to_vec(),
        "evaluation is deterministic"
    );
    net.train();
    assert_ne!(net.forward(&ids()).to_vec(), c);
}

#[test]
fn dropout_keeps_the_expectation_and_its_gradient_follows_the_mask() {
    let drop = Dropout::seeded(0.25, 3);
    let x = Tensor::<f64, (Rows, Cols)>::ones([200, 100]).requires_grad_(true);
    let y = drop.forward(&x);
    let v = y.to_vec();
    let kept = v.iter().filter(|&&e| e != 0.0).count() as f64 / v.len() as f64;
    assert!((kept - 0.75).abs() < 0.01, "kept {kept}");
    assert!(
        v.iter()
            .all(|&e| e == 0.0 || (e - 1.0 / 0.75).abs() < 1e-15)
    );
    y.sum::<(Rows, Cols)>().backward();
    assert_eq!(x.grad().unwrap().to_vec(), v, "d(x·mask)/dx = mask");
    assert!(Dropout::try_seeded(1.5, 0).is_err());
    let all = Dropout::seeded(1.0, 0).forward(&x);
    assert!(all.to_vec().iter().all(|&e| e == 0.0));
}

#[test]
fn linear_works_on_any_leading_dims_and_any_position_of_its_input_dim() {
    let fc = Linear::<In, Out, f64>::seeded(3, 2, 5);
    let x = Tensor::<f64, (Batch, In)>::from_vec((0..12).map(f64::from).collect(), [4, 3]);
    let y = fc.forward(&x);
    // naive loop: y[b, o] = Σ_i x[b, i] W[o, i] + bias[o]
    let (w, bias) = (fc.weight.to_vec(), fc.bias.as_ref().unwrap().to_vec());
    let xs = x.to_vec();
    for b in 0..4 {
        for o in 0..2 {
            let want: f64 = (0..3).map(|i| xs[b * 3 + i] * w[o * 3 + i]).sum::<f64>() + bias[o];
            assert!((y.to_vec()[b * 2 + o] - want).abs() < 1e-12);
        }
    }
    // `In` first: the result is (Batch, Out) all the same, by name.
    let xt: Tensor<f64, (In, Batch)> = x.align_to::<(In, Batch)>();
    let yt = fc.forward(&xt);
    assert_eq!(yt.names(), ["Batch", "Out"]);
    assert_eq!(yt.to_vec(), y.to_vec());
    // A 0-d batch: (In,) -> (Out,)
    let one = fc.forward(&Tensor::<f64, (In,)>::ones([3]));
    assert_eq!(one.names(), ["Out"]);
    // Bad sizes and an input that already has `Out`.
    let err = fc
        .try_forward(&Tensor::<f64, (Batch, In)>::ones([2, 4]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(err.to_string().contains("In"), "{err}");
    let err = fc
        .try_forward(&Tensor::<f64, (Out, In)>::ones([2, 3]))
        .unwrap_err();
    assert!(
        err.to_string().contains("already has the output dim `Out`"),
        "{err}"
    );
    let err = Linear::<In, Out, f64>::try_from_parameters(
        Tensor::zeros([2, 3]),
        Some(Tensor::zeros([3])),
    )
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("bias has 3 entries along `Out`"),
        "{err}"
    );
}

#[test]
fn default_initialisation_is_seeded_and_within_pytorchs_bounds() {
    let a = Linear::<In, Out>::seeded(100, 50, 9);
    let b = Linear::<In, Out>::seeded(100, 50, 9);
    assert_eq!(a.weight.to_vec(), b.weight.to_vec());
    assert_ne!(
        a.weight.to_vec(),
        Linear::<In, Out>::seeded(100, 50, 10).weight.to_vec()
    );
    let w = a.weight.to_vec();
    assert!(w.iter().all(|x| x.abs() <= 0.1));
    // Uniform on [-0.1, 0.1]: variance 0.01/3.
    let var = w.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>() / w.len() as f64;
    assert!((var - 0.01 / 3.0).abs() < 3e-4, "variance {var}");
    assert!(a.weight.requires_grad() && a.weight.is_leaf());
}

#[test]
fn classification_losses_reject_bad_labels_clearly() {
    let logits = Tensor::<f32, (Batch, Classes)>::zeros([3, 4]);
    let ce = CrossEntropy::default();
    let out_of_range = Tensor::<i64, (Batch,)>::from_vec(vec![0, 4, 1], [3]);
    let err = ce.try_forward(&logits, Classes, &out_of_range).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
    assert!(
        err.to_string()
            .contains("label 4 is out of range for the 4 classes along `Classes`"),
        "{err}"
    );
    let negative = Tensor::<i64, (Batch,)>::from_vec(vec![0, -1, 1], [3]);
    assert!(ce.try_forward(&logits, Classes, &negative).is_err());
    let short = Tensor::<i64, (Batch,)>::from_vec(vec![0, 1], [2]);
    let err = ce.try_forward(&logits, Classes, &short).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(
        err.to_string().contains("[2]") && err.to_string().contains("[3, 4]"),
        "{err}"
    );
    let bad_smoothing = CrossEntropy {
        label_smoothing: 1.5,
        ..CrossEntropy::default()
    };
    assert!(bad_smoothing.try_forward(&logits, Classes, &short).is_err());
    // A float label tensor is a type error (labels are `i64` by type), so "wrong label
    // dtype" cannot reach run time.
    let err = loss::try_mse_loss(
        &Tensor::<f32, (Batch, Classes)>::zeros([3, 4]),
        &Tensor::<f32, (Batch, Classes)>::zeros([3, 5]),
        loss::Reduction::Mean,
    )
    .unwrap_err();
    assert!(err.to_string().contains("[3, 5]"), "{err}");
}

#[test]
fn optimisers_reject_bad_options_and_frozen_parameters() {
    let fc = Linear::<In, Out>::seeded(2, 2, 0);
    // A rate of 0 is allowed (as in PyTorch: where a cosine schedule to eta_min = 0 ends).
    let zero = SgdConfig {
        lr: 0.0,
        ..SgdConfig::default()
    };
    assert!(Sgd::try_new(fc.parameters(), zero).is_ok());
    for lr in [-1.0, f64::NAN, f64::INFINITY] {
        let err = Sgd::try_new(
            fc.parameters(),
            SgdConfig {
                lr,
                ..SgdConfig::default()
            },
        )
        .err()
        .unwrap();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("learning rate"), "{err}");
        assert!(
            Adam::try_new(
                fc.parameters(),
                AdamConfig {
                    lr,
                    ..AdamConfig::default()
                }
            )
            .is_err()
        );
    }
    let nesterov = SgdConfig {
        nesterov: true,
        ..SgdConfig::default()
    };
    assert!(Sgd::try_new(fc.parameters(), nesterov).is_err());
    let betas = AdamConfig {
        betas: (0.9, 1.0),
        ..AdamConfig::default()
    };
    assert!(Adam::try_new(fc.parameters(), betas).is_err());
    let mut params = fc.parameters();
    params[1].tensor = params[1].tensor.detach();
    let err = Sgd::try_new(params, SgdConfig::default()).err().unwrap();
    assert!(
        err.to_string().contains("`bias` does not require grad"),
        "{err}"
    );
    let mut opt = Sgd::new(fc.parameters(), SgdConfig::default());
    assert!(opt.set_lr(-0.5).is_err());
    assert_eq!(opt.lr(), 0.01);
    assert!(StepLr::new(&mut opt, 0, 0.5).is_err());
    assert!(LinearLr::new(&mut opt, 0.0, 1.0, 3).is_err());
    assert!(clip_grad_norm_(&fc.parameters(), -1.0).is_err());
}

#[test]
fn step_skips_parameters_without_gradients_and_clip_scales_broadcast_gradients() {
    let fc = Linear::<In, Out, f64>::seeded(2, 2, 0);
    let before = fc.weight.to_vec();
    let mut opt = Adam::new(fc.parameters(), AdamConfig::default());
    // Only the bias gets a gradient, and it is a broadcast one (d Σb / db = 1).
    fc.bias.as_ref().unwrap().sum::<Out>().backward();
    clip_grad_norm_(&fc.parameters(), 0.5).unwrap();
    let g = fc.bias.as_ref().unwrap().grad().unwrap().to_vec();
    let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((norm - 0.5).abs() < 1e-5, "clipped norm {norm}");
    let b0 = fc.bias.as_ref().unwrap().to_vec();
    opt.step().unwrap();
    assert_eq!(fc.weight.to_vec(), before, "no gradient, no update");
    let b1 = fc.bias.as_ref().unwrap().to_vec();
    // Adam's first step moves each entry by lr against the sign of its gradient.
    for (x, y) in b0.iter().zip(&b1) {
        assert!((x - y - 1e-3).abs() < 1e-9, "{x} -> {y}");
    }
    opt.zero_grad();
    assert!(fc.bias.as_ref().unwrap().grad().is_none());
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("nt-nn-api-{}-{name}", std::process::id()))
}

#[test]
fn the_parameter_store_round_trips_and_checks_names_shapes_and_dims() {
    let path = temp("net.safetensors");
    let a = Net::new(2);
    save_parameters(&a, &path).unwrap();
    let b = Net::new(3);
    let mut opt = Sgd::new(b.parameters(), SgdConfig::default());
    load_parameters(&b, &path).unwrap();
    for (p, q) in a.parameters().iter().zip(b.parameters()) {
        assert_eq!(p.tensor.to_vec(), q.tensor.to_vec(), "{}", p.name);
    }
    // The optimiser's handles see the loaded values (loading writes in place).
    b.forward(&ids()).sum::<(Batch, Seq, Classes)>().backward();
    opt.step().unwrap();
    assert_ne!(b.head.weight.to_vec(), a.head.weight.to_vec());

    // The file names the dims; PyTorch's reader sees plain tensors.
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = String::from_utf8_lossy(&bytes[8..8 + n]);
    assert!(
        header.contains(r#""dims.head.weight":"Classes,Model""#),
        "{header}"
    );

    // A module with other parameters, shapes or dims: refused, and left untouched.
    struct Small {
        head: Linear<Model, Classes>,
    }
    impl Module<f32> for Small {
        fn visit(&self, v: &mut Visitor<'_, f32>) {
            v.module("head", &self.head);
        }
    }
    let small = Small {
        head: Linear::seeded(4, 3, 0),
    };
    let untouched = small.head.weight.to_vec();
    let err = load_parameters(&small, &path).unwrap_err();
    assert!(
        err.to_string().contains("tensors the module does not"),
        "{err}"
    );
    assert_eq!(small.head.weight.to_vec(), untouched);

    let wide = Net {
        head: Linear::seeded(4, 5, 0),
        ..Net::new(4)
    };
    let err = load_parameters(&wide, &path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(
        err.to_string().contains("`head.weight` has shape [3, 4]"),
        "{err}"
    );

    // (Rows, Cols) data into a (Cols, Rows) parameter of the same shape: refused by name.
    struct Square<A: namedtensor::Dim, B: namedtensor::Dim>
    where
        (B, A): namedtensor::Shape,
    {
        fc: Linear<A, B>,
    }
    impl<A: namedtensor::Dim, B: namedtensor::Dim> Module<f32> for Square<A, B>
    where
        (B, A): namedtensor::Shape,
    {
        fn visit(&self, v: &mut Visitor<'_, f32>) {
            v.module("fc", &self.fc);
        }
    }
    let rc = Square::<Rows, Cols> {
        fc: Linear::seeded(3, 3, 0),
    };
    let cr = Square::<Cols, Rows> {
        fc: Linear::seeded(3, 3, 1),
    };
    let square = temp("square.safetensors");
    save_parameters(&rc, &square).unwrap();
    let err = load_parameters(&cr, &square).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(
        err.to_string().contains(
            "`fc.weight` was saved with dims (Cols,Rows) but the parameter has dims (Rows,Cols)"
        ),
        "{err}"
    );

    // A missing tensor, another dtype, no file.
    let partial = temp("partial.safetensors");
    namedtensor::save_tensors(
        &partial,
        &[("head.weight", &DynTensor::<f32>::zeros(&[3, 4]))],
    )
    .unwrap();
    let err = load_parameters(&small, &partial).unwrap_err();
    assert!(err.to_string().contains("no tensor `head.bias`"), "{err}");
    let doubles = temp("f64.safetensors");
    save_parameters(&Linear::<Model, Classes, f64>::seeded(4, 3, 0), &doubles).unwrap();
    assert_eq!(
        load_parameters(&small.head, &doubles).unwrap_err().kind(),
        ErrorKind::DTypeMismatch
    );
    assert_eq!(
        load_parameters(&small, temp("none.safetensors"))
            .unwrap_err()
            .kind(),
        ErrorKind::Io
    );
    for p in [path, square, partial, doubles] {
        std::fs::remove_file(p).unwrap();
    }
}

mod unfold_prop {
    use namedtensor::DynTensor;
    use namedtensor::ops::Window2d;
    use proptest::prelude::*;

    /// `unfold2d` by its definition, one entry at a time.
    fn naive(x: &[f64], h: usize, w: usize, win: Window2d, oh: usize, ow: usize) -> Vec<f64> {
        let mut out = Vec::new();
        for a in 0..win.kernel.0 {
            for b in 0..win.kernel.1 {
                for i in 0..oh {
                    for j in 0..ow {
                        let r = (i * win.stride.0 + a * win.dilation.0) as isize
                            - win.padding.0 as isize;
                        let c = (j * win.stride.1 + b * win.dilation.1) as isize
                            - win.padding.1 as isize;
                        let inside = r >= 0 && c >= 0 && (r as usize) < h && (c as usize) < w;
                        out.push(if inside {
                            x[r as usize * w + c as usize]
                        } else {
                            -7.0
                        });
                    }
                }
            }
        }
        out
    }

    /// The input coordinates tap `(a, b)` of window `(i, j)` reads, or `None` in the padding.
    fn source(
        win: Window2d,
        (h, w): (usize, usize),
        (a, b, i, j): (usize, usize, usize, usize),
    ) -> Option<usize> {
        let r = (i * win.stride.0 + a * win.dilation.0).checked_sub(win.padding.0)?;
        let c = (j * win.stride.1 + b * win.dilation.1).checked_sub(win.padding.1)?;
        (r < h && c < w).then_some(r * w + c)
    }

    /// Every `(a, b, i, j)` in row-major order of `[KH, KW, OH, OW]`.
    fn taps(win: Window2d, (oh, ow): (usize, usize)) -> Vec<(usize, usize, usize, usize)> {
        let (kh, kw) = win.kernel;
        let mut out = Vec::new();
        for a in 0..kh {
            for b in 0..kw {
                for i in 0..oh {
                    for j in 0..ow {
                        out.push((a, b, i, j));
                    }
                }
            }
        }
        out
    }

    /// Each plane of `cols` (`[planes, KH, KW, OH, OW]` row-major) added back onto its `h × w`
    /// input by the definition; `keep(plane, tap, (a, b, i, j))` says which taps count.
    fn naive_fold(
        cols: &[f64],
        planes: usize,
        win: Window2d,
        hw: (usize, usize),
        ohw: (usize, usize),
        keep: &dyn Fn(usize, (usize, usize, usize, usize)) -> bool,
    ) -> Vec<f64> {
        let all = taps(win, ohw);
        let mut out = vec![0.0; planes * hw.0 * hw.1];
        for p in 0..planes {
            for (k, &t) in all.iter().enumerate() {
                if let Some(at) = source(win, hw, t).filter(|_| keep(p, t)) {
                    out[p * hw.0 * hw.1 + at] += cols[p * all.len() + k];
                }
            }
        }
        out
    }

    /// Max pooling by the definition: per window, the first NaN or else the first largest tap
    /// (the padding is −∞) and the input position it read, if any.
    fn naive_max_pool(
        x: &[f64],
        planes: usize,
        win: Window2d,
        hw: (usize, usize),
        (oh, ow): (usize, usize),
    ) -> (Vec<f64>, Vec<Option<usize>>) {
        let (kh, kw) = win.kernel;
        let (mut values, mut at) = (Vec::new(), Vec::new());
        for p in 0..planes {
            for i in 0..oh {
                for j in 0..ow {
                    let mut best: (f64, Option<usize>) = (f64::NEG_INFINITY, None);
                    let mut first = true;
                    for a in 0..kh {
                        for b in 0..kw {
                            let src = source(win, hw, (a, b, i, j));
                            let v = src.map_or(f64::NEG_INFINITY, |s| x[p * hw.0 * hw.1 + s]);
                            // the first NaN wins, else the first maximum
                            if first || v > best.0 || (v.is_nan() && !best.0.is_nan()) {
                                best = (v, src);
                            }
                            first = false;
                        }
                    }
                    values.push(best.0);
                    at.push(best.1);
                }
            }
        }
        (values, at)
    }

    /// NaN wins a pooling window (the first NaN, which gets the gradient), with and without
    /// padding (two kernel paths); otherwise the first of equal maxima does.
    #[test]
    fn max_pool2d_takes_the_first_nan_then_the_first_maximum() {
        let nan = f32::NAN;
        let x = DynTensor::from_vec(
            vec![
                1.0, nan, 3.0, 3.0, nan, 2.0, 3.0, 3.0, 0.0, 0.0, 0.0, 0.0, 7.0, 1.0, 1.0, 7.0,
            ],
            &[1, 4, 4],
        );
        for win in [
            Window2d::new(2, 2).stride(2),
            Window2d::new(2, 2).stride(2).padding(1),
        ] {
            let x = x.detach().requires_grad_(true);
            let y = x.max_pool2d(win);
            y.sum().backward();
            let g = x.grad().unwrap().to_vec();
            let picked: Vec<usize> = (0..16).filter(|&i| g[i] != 0.0).collect();
            if win.padding == (0, 0) {
                let v = y.to_vec();
                assert!(
                    v[0].is_nan() && v[1] == 3.0 && v[2] == 7.0 && v[3] == 7.0,
                    "{v:?}"
                );
                // window 0 holds NaN at 1 and 4: the first; window 1 is four 3s: the first;
                // windows 2 and 3 have their 7 at 12 and 15
                assert_eq!(picked, vec![1, 2, 12, 15]);
            } else {
                // 3 × 3 windows of taps 2 × 2 over the padded input: corner windows see one
                // entry each
                assert_eq!(y.shape(), &[1, 3, 3]);
                assert!(
                    y.to_vec()[1].is_nan() && y.to_vec()[0] == 1.0,
                    "{:?}",
                    y.to_vec()
                );
            }
        }
    }

    proptest! {
        #![proptest_config(crate::common::proptest_cases(64))]
        /// 2×2 max pooling at stride 2 (its own vectorised kernels: rows of eight windows or
        /// more, shorter rows pooled a plane at a time) and its gradient against the
        /// definition, on inputs of odd and even sizes seen through every kind of view, with
        /// leading dims, in f32, f64 and bf16; with NaN in about one element in ten.
        #[test]
        fn halving_max_pool_matches_its_definition(
            lead in proptest::collection::vec(1usize..4, 0..3), h in 2usize..24, w in 2usize..40,
            kind in crate::common::view_kind(), nans in any::<bool>(), seed in 0u64..1000,
        ) {
            use crate::common::{make_view, to_f64};
            let win = Window2d::new(2, 2).stride(2);
            let (oh, ow) = (h / 2, w / 2);
            let planes: usize = lead.iter().product();
            let mut shape = lead.clone();
            shape.extend([h, w]);
            let x = make_view::<f64>(&shape, kind, seed);
            let x = if nans {
                let n = x.numel();
                let hits: Vec<bool> = (0..n as u64).map(|i| (i ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61 == 0).collect();
                x.masked_fill(&DynTensor::from_vec(hits, x.shape()), f64::NAN)
            } else {
                x
            };
            let xs = to_f64(&x);
            let (values, at) = naive_max_pool(&xs, planes, win, (h, w), (oh, ow));
            let mut oshape = lead.clone();
            oshape.extend([oh, ow]);
            let g = make_view::<f64>(&oshape, crate::common::ViewKind::Contiguous, seed + 1);
            let mut want_grad = vec![0.0; planes * h * w];
            for (k, a) in at.iter().enumerate() {
                want_grad[(k / (oh * ow)) * h * w + a.unwrap()] += g.to_vec()[k];
            }
            fn run<E: namedtensor::Float>(x: &DynTensor<f64>, g: &DynTensor<f64>, win: Window2d) -> (Vec<f64>, Vec<f64>) {
                let x = x.to_dtype::<E>().requires_grad_(true);
                let y = x.max_pool2d(win);
                (&y * &g.to_dtype::<E>()).sum().backward();
                (to_f64(&y), to_f64(&x.grad().unwrap()))
            }
            let same = |a: &[f64], b: &[f64]| a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
            for (dtype, (got, grad)) in [
                ("f64", run::<f64>(&x, &g, win)),
                ("f32", run::<f32>(&x, &g, win)),
                ("bf16", run::<namedtensor::bf16>(&x, &g, win)),
            ] {
                prop_assert!(same(&got, &values), "{} values {:?} {:?}: {:?} against {:?}", dtype, shape, kind, got, values);
                prop_assert!(same(&grad, &want_grad), "{} gradient {:?} {:?}", dtype, shape, kind);
            }
        }

        /// `unfold2d`, `fold2d` and `max_pool2d` (each a backend kernel) against their
        /// definitions, on inputs seen through every kind of view (strided, offset, transposed,
        /// expanded) with leading dims, in several dtypes; the gradients of `fold2d` (which is
        /// `unfold2d`) and of `max_pool2d` (the output's gradient at each window's winner).
        /// The values are small integers, so every sum is exact in every dtype.
        #[test]
        fn window_kernels_match_their_definitions_on_views(
            lead in proptest::collection::vec(0usize..3, 0..3), h in 1usize..7, w in 1usize..7,
            kh in 1usize..4, kw in 1usize..4, sh in 1usize..3, sw in 1usize..3,
            ph in 0usize..2, pw in 0usize..2, dh in 1usize..3, dw in 1usize..3,
            kind in crate::common::view_kind(), seed in 0u64..1000,
        ) {
            use crate::common::{make_view, to_f64};
            use namedtensor::{bf16, DType};
            let win = Window2d { kernel: (kh, kw), stride: (sh, sw), padding: (ph, pw), dilation: (dh, dw) };
            let Ok((oh, ow)) = win.output_size(h, w) else { return Ok(()) };
            let planes: usize = lead.iter().product();
            let mut shape = lead.clone();
            shape.extend([h, w]);
            let mut cshape = lead.clone();
            cshape.extend([kh, kw, oh, ow]);
            // unfold2d of every element type (a copy by element size), against the definition
            fn check_unfold<E: namedtensor::Element>(shape: &[usize], kind: crate::common::ViewKind, seed: u64, win: Window2d, planes: usize, hw: (usize, usize), ohw: (usize, usize)) -> Result<(), TestCaseError> {
                let x = make_view::<E>(shape, kind, seed);
                let xs = to_f64(&x);
                let cols = to_f64(&x.unfold2d(win, E::from_f64(7.0)));
                let all = taps(win, ohw);
                let want: Vec<f64> = (0..planes).flat_map(|p| all.iter().map(move |&t| (p, t)))
                    .map(|(p, t)| source(win, hw, t).map_or(7.0, |s| xs[p * hw.0 * hw.1 + s]))
                    .collect();
                prop_assert_eq!(cols, want, "unfold2d of {:?} {:?} ({:?})", shape, kind, E::DTYPE);
                Ok(())
            }
            check_unfold::<f32>(&shape, kind, seed, win, planes, (h, w), (oh, ow))?;
            check_unfold::<bf16>(&shape, kind, seed, win, planes, (h, w), (oh, ow))?;
            check_unfold::<i64>(&shape, kind, seed, win, planes, (h, w), (oh, ow))?;
            check_unfold::<u8>(&shape, kind, seed, win, planes, (h, w), (oh, ow))?;
            // fold2d of a viewed cols tensor, in f32, bf16 and i32
            let c = make_view::<f32>(&cshape, kind, seed + 1);
            let want = naive_fold(&to_f64(&c), planes, win, (h, w), (oh, ow), &|_, _| true);
            prop_assert_eq!(to_f64(&c.fold2d(win, (h, w))), want.clone(), "fold2d f32");
            let cb = make_view::<bf16>(&cshape, kind, seed + 1);
            prop_assert_eq!(to_f64(&cb.fold2d(win, (h, w))), want.clone(), "fold2d bf16");
            let ci = make_view::<i32>(&cshape, kind, seed + 1);
            prop_assert_eq!(to_f64(&ci.fold2d(win, (h, w))), want, "fold2d i32");
            // fold2d's gradient is unfold2d of the output's gradient
            let cg = c.detach().requires_grad_(true);
            let r = make_view::<f32>(&shape, crate::common::ViewKind::Contiguous, seed + 2);
            (&cg.fold2d(win, (h, w)) * &r).sum().backward();
            prop_assert_eq!(cg.grad().unwrap().to_vec(), r.unfold2d(win, 0.0).to_vec());
            // max_pool2d: values, and the gradient at each window's first maximum
            for dtype in [DType::F32, DType::F64] {
                let x = make_view::<f64>(&shape, kind, seed + 3);
                let xs = to_f64(&x);
                let (values, at) = naive_max_pool(&xs, planes, win, (h, w), (oh, ow));
                let g = make_view::<f64>(&{ let mut s = lead.clone(); s.extend([oh, ow]); s }, crate::common::ViewKind::Contiguous, seed + 4);
                let mut want_grad = vec![0.0; planes * h * w];
                for (k, a) in at.iter().enumerate() {
                    if let Some(a) = a {
                        want_grad[(k / (oh * ow)) * h * w + a] += g.to_vec()[k];
                    }
                }
                let (got, grad) = if dtype == DType::F32 {
                    let x = make_view::<f32>(&shape, kind, seed + 3).requires_grad_(true);
                    let y = x.max_pool2d(win);
                    (&y * &g.to_dtype::<f32>()).sum().backward();
                    (to_f64(&y), x.grad().map(|t| to_f64(&t)))
                } else {
                    let x = x.requires_grad_(true);
                    let y = x.max_pool2d(win);
                    (&y * &g).sum().backward();
                    (to_f64(&y), x.grad().map(|t| to_f64(&t)))
                };
                prop_assert_eq!(got, values, "max_pool2d {:?} values", dtype);
                if planes > 0 {
                    prop_assert_eq!(grad.unwrap(), want_grad, "max_pool2d {:?} gradient", dtype);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(crate::common::proptest_cases(64))]
        /// Forward against the definition on random sizes and geometries (and a transposed,
        /// non-contiguous input), and the gradient of a sum: each input entry gets the number
        /// of window taps that read it.
        #[test]
        fn unfold2d_matches_its_definition(
            h in 1usize..7, w in 1usize..7, kh in 1usize..4, kw in 1usize..4,
            sh in 1usize..3, sw in 1usize..3, ph in 0usize..2, pw in 0usize..2,
            dh in 1usize..3, dw in 1usize..3, seed in 0u64..1000,
        ) {
            let win = Window2d { kernel: (kh, kw), stride: (sh, sw), padding: (ph, pw), dilation: (dh, dw) };
            let x = DynTensor::<f64>::randn(&[w, h], seed).t().requires_grad_(true);
            match win.output_size(h, w) {
                Err(_) => prop_assert!(x.try_unfold2d(win, -7.0).is_err()),
                Ok((oh, ow)) => {
                    let y = x.unfold2d(win, -7.0);
                    prop_assert_eq!(y.shape(), &[kh, kw, oh, ow]);
                    prop_assert_eq!(y.to_vec(), naive(&x.to_vec(), h, w, win, oh, ow));
                    y.sum().backward();
                    let index: Vec<f64> = (0..h * w).map(|v| v as f64).collect();
                    let taps = naive(&index, h, w, win, oh, ow);
                    let counts: Vec<f64> = (0..h * w)
                        .map(|v| taps.iter().filter(|&&t| t == v as f64).count() as f64)
                        .collect();
                    prop_assert_eq!(x.grad().unwrap().to_vec(), counts);
                }
            }
        }

        /// `fold2d` of stride-1 windows as wide as the input (a "same" convolution's input
        /// gradient, folded a tap's rows at a time with the outside columns masked) against
        /// the same values laid out column-major (folded entry by entry): bitwise equal on
        /// random values, whose sums round, in f32 and bf16; so both paths add each element's
        /// taps in the same order.
        #[test]
        fn fold2d_of_same_width_windows_matches_the_strided_path(
            lead in proptest::collection::vec(1usize..4, 0..3), h in 1usize..20, w in 1usize..20,
            kh in 1usize..5, half_kw in 0usize..3, ph in 0usize..3, dh in 1usize..3, dw in 1usize..3,
            seed in 0u64..1000,
        ) {
            let (kw, pw) = (2 * half_kw + 1, dw * half_kw);
            let win = Window2d { kernel: (kh, kw), stride: (1, 1), padding: (ph, pw), dilation: (dh, dw) };
            let Ok((oh, ow)) = win.output_size(h, w) else { return Ok(()) };
            prop_assert_eq!(ow, w);
            let mut shape = lead.clone();
            shape.extend([kh, kw, oh, ow]);
            let cols = DynTensor::<f32>::randn(&shape, seed);
            let strided = cols.transpose(-1, -2).contiguous().transpose(-1, -2);
            prop_assert_eq!(cols.fold2d(win, (h, w)).to_vec(), strided.fold2d(win, (h, w)).to_vec());
            let (cb, sb) = (cols.to_dtype::<namedtensor::bf16>(), strided.to_dtype::<namedtensor::bf16>());
            prop_assert_eq!(cb.fold2d(win, (h, w)).to_vec(), sb.fold2d(win, (h, w)).to_vec());
        }

        /// `unfold2d` of stride-1 windows as wide as the input over contiguous planes (each
        /// tap's plane copied at once with the padding masked, where the shifted run lies
        /// inside the buffer; row by row at the buffer's ends) against the same values laid
        /// out column-major (copied entry by entry): equal, in f32 and u8 (copies by element
        /// size). The input is a slice of a larger tensor, so that the runs of its first and
        /// last planes read entries of the planes around it, which must not show.
        #[test]
        fn unfold2d_of_same_width_windows_matches_the_strided_path(
            lead in proptest::collection::vec(1usize..4, 0..3), h in 1usize..20, w in 1usize..20,
            kh in 1usize..5, half_kw in 0usize..3, ph in 0usize..3, dh in 1usize..3, dw in 1usize..3,
            before in 0usize..2, after in 0usize..2, seed in 0u64..1000,
        ) {
            let (kw, pw) = (2 * half_kw + 1, dw * half_kw);
            let win = Window2d { kernel: (kh, kw), stride: (1, 1), padding: (ph, pw), dilation: (dh, dw) };
            let Ok((_, ow)) = win.output_size(h, w) else { return Ok(()) };
            prop_assert_eq!(ow, w);
            let planes: usize = lead.iter().product();
            let all = DynTensor::<f32>::randn(&[before + planes + after, h, w], seed);
            let mut shape: Vec<isize> = lead.iter().map(|&s| s as isize).collect();
            shape.extend([h as isize, w as isize]);
            let x = all.narrow(0, before as isize, planes).reshape(&shape);
            let strided = x.transpose(-1, -2).contiguous().transpose(-1, -2);
            prop_assert_eq!(x.unfold2d(win, -7.0).to_vec(), strided.unfold2d(win, -7.0).to_vec());
            let (xb, sb) = (x.to_dtype::<u8>(), strided.to_dtype::<u8>());
            prop_assert_eq!(xb.unfold2d(win, 200).to_vec(), sb.unfold2d(win, 200).to_vec());
        }
    }
}

/// `conv2d` runs on the host a piece of images at a time with a node of its own (the windows
/// computed again in the backward pass); checked against the same convolution written with
/// the ops it is made of (`unfold2d`, one product over the whole batch, the bias added),
/// whose gradients come from those ops' own formulas.
mod conv_pieces {
    use namedtensor::DynTensor;
    use namedtensor::ops::Window2d;
    use proptest::prelude::*;

    /// `conv2d` by `unfold2d` and `matmul` over the whole batch.
    fn composed(
        x: &DynTensor<f64>,
        w: &DynTensor<f64>,
        b: Option<&DynTensor<f64>>,
        win: Window2d,
    ) -> DynTensor<f64> {
        let (n, o) = (x.shape()[0] as isize, w.shape()[0] as isize);
        let (oh, ow) = win.output_size(x.shape()[2], x.shape()[3]).unwrap();
        let taps = (w.numel() / w.shape()[0]) as isize;
        let cols = x.unfold2d(win, 0.0).reshape(&[n, taps, (oh * ow) as isize]);
        let y = w.reshape(&[o, taps]).matmul(&cols);
        let y = match b {
            Some(b) => &y + &b.reshape(&[o, 1]),
            None => y,
        };
        y.reshape(&[n, o, oh as isize, ow as isize])
    }

    fn close(a: &DynTensor<f64>, b: &DynTensor<f64>) -> Result<(), TestCaseError> {
        prop_assert_eq!(a.shape(), b.shape());
        for (x, y) in a.to_vec().into_iter().zip(b.to_vec()) {
            prop_assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{} vs {}", x, y);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Values and the gradients of input, weight and bias, on 1 to 4 threads (also more
        /// threads than pieces), for batches of several pieces (a piece holds at most 512 KiB of windows: one to a few
        /// images here), strided inputs, every window geometry and with or without a bias.
        #[test]
        fn conv2d_in_pieces_matches_the_composed_ops(
            n in 0usize..12, c in 1usize..12, o in 1usize..5, h in 1usize..24, w in 1usize..24,
            kernel in (1usize..4, 1usize..4), stride in (1usize..3, 1usize..3),
            padding in (0usize..2, 0usize..2), dilation in (1usize..3, 1usize..3),
            bias in any::<bool>(), transposed in any::<bool>(), threads in 1usize..5,
            seed in 0u64..1000,
        ) {
            let win = Window2d { kernel, stride, padding, dilation };
            let Ok((oh, ow)) = win.output_size(h, w) else { return Ok(()) };
            namedtensor::set_num_threads(threads);
            // A strided input: the rows and columns of a contiguous `[n, c, w, h]` swapped.
            let x = if transposed {
                DynTensor::<f64>::randn(&[n, c, w, h], seed).transpose(2, 3)
            } else {
                DynTensor::<f64>::randn(&[n, c, h, w], seed)
            };
            let wt = DynTensor::<f64>::randn(&[o, c, kernel.0, kernel.1], seed + 1);
            let b = bias.then(|| DynTensor::<f64>::randn(&[o], seed + 2));
            let g = DynTensor::<f64>::randn(&[n, o, oh, ow], seed + 3);
            // Untracked: the forward pass alone.
            close(&x.conv2d(&wt, b.as_ref(), win), &composed(&x, &wt, b.as_ref(), win))?;
            let leaves = |t: &DynTensor<f64>| t.detach().requires_grad_(true);
            let (xa, wa, ba) = (leaves(&x), leaves(&wt), b.as_ref().map(leaves));
            let (xb, wb, bb) = (leaves(&x), leaves(&wt), b.as_ref().map(leaves));
            let ya = xa.conv2d(&wa, ba.as_ref(), win);
            let yb = composed(&xb, &wb, bb.as_ref(), win);
            close(&ya, &yb)?;
            ya.backward_with(&g, Default::default()).unwrap();
            yb.backward_with(&g, Default::default()).unwrap();
            close(&xa.grad().unwrap(), &xb.grad().unwrap())?;
            close(&wa.grad().unwrap(), &wb.grad().unwrap())?;
            if let (Some(ba), Some(bb)) = (&ba, &bb) {
                close(&ba.grad().unwrap(), &bb.grad().unwrap())?;
            }
        }
    }

    /// Only the inputs that require grad get one, and the others are not saved: an input
    /// written in place after the forward pass does not stop the weight's gradient where the
    /// weight alone requires grad (it would, where the input's gradient needs the weight).
    #[test]
    fn conv2d_grads_only_what_requires_grad() {
        let win = Window2d::new(3, 3).padding(1);
        let x = DynTensor::<f32>::randn(&[20, 8, 16, 16], 0);
        let w = DynTensor::<f32>::randn(&[4, 8, 3, 3], 1).requires_grad_(true);
        let y = x.conv2d(&w, None, win);
        y.sum().backward();
        assert_eq!(w.grad().unwrap().shape(), &[4, 8, 3, 3]);
        let xg = x.detach().requires_grad_(true);
        let wd = w.detach();
        let y = xg.conv2d(&wd, None, win);
        y.sum().backward();
        assert_eq!(xg.grad().unwrap().shape(), &[20, 8, 16, 16]);
        assert!(wd.grad().is_none());
        // The weight, saved for the input's gradient, written after the forward pass.
        let wm = w.detach();
        let xg2 = x.detach().requires_grad_(true);
        let y = xg2.conv2d(&wm, None, win);
        wm.fill_(2.0);
        let err = y.sum().try_backward().unwrap_err();
        assert!(err.to_string().contains("conv2d"), "{err}");
    }

    /// A gradient computed with `create_graph` is itself differentiable: the weight's
    /// gradient of `Σ (∂L/∂x)²` through the recorded backward pass matches the composed ops'.
    #[test]
    fn conv2d_gradients_are_differentiable() {
        use namedtensor::autograd::{BackwardOptions, grad};
        let win = Window2d {
            kernel: (3, 3),
            stride: (2, 1),
            padding: (1, 1),
            dilation: (1, 1),
        };
        let x = DynTensor::<f64>::randn(&[9, 6, 20, 20], 4).requires_grad_(true);
        let w0 = DynTensor::<f64>::randn(&[3, 6, 3, 3], 5);
        let b0 = DynTensor::<f64>::randn(&[3], 6);
        type Conv<'a> =
            dyn Fn(&DynTensor<f64>, &DynTensor<f64>, &DynTensor<f64>) -> DynTensor<f64> + 'a;
        let second = |conv: &Conv| {
            let (w, b) = (
                w0.detach().requires_grad_(true),
                b0.detach().requires_grad_(true),
            );
            let y = conv(&x, &w, &b);
            let create = BackwardOptions::create_graph();
            let gx = grad(&[&y.square().sum()], None, &[&x], create)
                .unwrap()
                .remove(0);
            let gx = gx.unwrap();
            let gw = grad(
                &[&gx.square().sum()],
                None,
                &[&w],
                BackwardOptions::default(),
            );
            gw.unwrap().remove(0).unwrap()
        };
        let a = second(&|x, w, b| x.conv2d(w, Some(b), win));
        let b = second(&|x, w, b| composed(x, w, Some(b), win));
        for (p, q) in a.to_vec().into_iter().zip(b.to_vec()) {
            assert!((p - q).abs() <= 1e-8 * (1.0 + q.abs()), "{p} vs {q}");
        }
    }
}

#[test]
fn attention_checks_its_geometry_and_names_its_parameters() {
    dims! { Heads, HeadDim }
    use namedtensor::nn::MultiHeadAttention;
    let err = MultiHeadAttention::<Model, Heads, HeadDim>::try_seeded(10, 3, 0)
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("3 heads do not divide the model size 10"),
        "{err}"
    );
    let attn = MultiHeadAttention::<Model, Heads, HeadDim>::seeded(12, 3, 0);
    let p = attn.parameters();
    assert_eq!(
        p.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        [
            "q", "k", "v", "q_bias", "k_bias", "v_bias", "out", "out_bias"
        ]
    );
    assert_eq!(p[0].dims, ["Heads", "HeadDim", "Model"]);
    assert_eq!(p[0].tensor.shape(), &[3, 4, 12]);
    // PyTorch's Xavier bound over the [3·12, 12] in_proj_weight: sqrt(6 / 48).
    let bound = (6.0f64 / 48.0).sqrt() as f32;
    assert!(p[0].tensor.to_vec().iter().all(|w| w.abs() <= bound));
    let x = Tensor::<f32, (Batch, Seq, Model)>::ones([2, 3, 11]);
    assert_eq!(
        attn.try_forward(&x, Seq).unwrap_err().kind(),
        ErrorKind::ShapeMismatch
    );
}

#[test]
fn transformer_block_names_its_parts_checks_sizes_and_drops_only_in_training() {
    dims! { Heads, HeadDim }
    use namedtensor::nn::{TransformerBlock, TransformerConfig};
    let config = |model, heads, hidden, dropout| TransformerConfig {
        model,
        heads,
        hidden,
        dropout,
        causal: false,
    };
    let bad =
        TransformerBlock::<Model, Heads, HeadDim, Hidden>::try_seeded(config(10, 3, 8, 0.0), 0);
    assert!(
        bad.err()
            .unwrap()
            .to_string()
            .contains("3 heads do not divide")
    );
    let bad =
        TransformerBlock::<Model, Heads, HeadDim, Hidden>::try_seeded(config(8, 2, 8, 1.5), 0);
    assert!(bad.err().unwrap().to_string().contains("p = 1.5"));
    let block = TransformerBlock::<Model, Heads, HeadDim, Hidden>::seeded(config(8, 2, 16, 0.5), 0);
    let names: Vec<String> = block.parameters().into_iter().map(|p| p.name).collect();
    assert_eq!(names.len(), 16);
    assert_eq!(names[0], "norm1.weight");
    assert_eq!(names[2], "attn.q");
    assert_eq!(names[12], "ff1.weight");
    assert_eq!(block.parameters()[12].dims, ["Hidden", "Model"]);
    let x = Tensor::<f32, (Batch, Seq, Model)>::randn([2, 3, 8], 1);
    // The model dim's size is checked before anything runs, and the error names it.
    let wrong = Tensor::<f32, (Batch, Seq, Model)>::ones([2, 3, 7]);
    let err = block.try_forward(&wrong, Seq).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(err.to_string().contains("7 entries along `Model`"), "{err}");
    // Dropout at 0.5 makes two training passes differ; in evaluation they agree.
    assert_ne!(
        block.forward(&x, Seq).to_vec(),
        block.forward(&x, Seq).to_vec()
    );
    block.eval();
    assert_eq!(
        block.forward(&x, Seq).to_vec(),
        block.forward(&x, Seq).to_vec()
    );
}

#[test]
fn a_tuple_of_layers_applies_them_in_order() {
    let mlp = (
        Linear::<In, Hidden>::seeded(6, 5, 1),
        Relu,
        Linear::<Hidden, Classes>::seeded(5, 3, 2),
        Softmax::<Classes>::new(),
    );
    let x = Tensor::<f32, (Batch, Seq, In)>::randn([2, 4, 6], 3);
    let y: Tensor<f32, (Batch, Seq, Classes)> = mlp.forward(&x);
    let by_hand = mlp
        .2
        .forward(&mlp.0.forward(&x).relu())
        .softmax::<Classes>();
    assert_eq!(y.to_vec(), by_hand.to_vec());
    // Nested tuples and references chain too, and a layer's own method is the same function.
    let nested = ((&mlp.0, Tanh), &mlp.2);
    let z: Tensor<f32, (Batch, Seq, Classes)> = nested.forward(&x);
    assert_eq!(
        z.to_vec(),
        mlp.2.forward(&mlp.0.forward(&x).tanh()).to_vec()
    );
    assert_eq!(
        Forward::forward(&mlp.0, &x).to_vec(),
        mlp.0.forward(&x).to_vec()
    );
}

#[test]
fn a_tuple_of_layers_stops_at_the_first_error_and_names_its_layer() {
    let mlp = (
        Linear::<In, Hidden>::seeded(6, 5, 1),
        Relu,
        Linear::<Hidden, Classes>::seeded(4, 3, 2), // takes 4 `Hidden`, gets 5
    );
    let x = Tensor::<f32, (Batch, In)>::ones([2, 6]);
    let e = mlp.try_forward(&x).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(e.to_string().contains("Hidden"), "{e}");
    let wrong_input = Tensor::<f32, (Batch, In)>::ones([2, 7]);
    let e = mlp.try_forward(&wrong_input).unwrap_err();
    assert!(e.to_string().contains("In"), "{e}");
}

#[test]
fn a_stack_of_blocks_applies_each_once() {
    let config = TransformerConfig {
        model: 8,
        heads: 2,
        hidden: 16,
        dropout: 0.0,
        causal: true,
    };
    type Block = TransformerBlock<Model, Rows, Cols, Hidden>;
    let blocks: Vec<Along<Seq, Block>> = (0..3)
        .map(|i| Along::new(Block::seeded(config, i)))
        .collect();
    let x = Tensor::<f32, (Batch, Seq, Model)>::randn([2, 5, 8], 4);
    let y = blocks.forward(&x);
    let mut by_hand = x.clone();
    for b in &blocks {
        by_hand = b.layer.forward(&by_hand, Seq);
    }
    assert_eq!(y.to_vec(), by_hand.to_vec());
    // Parameters keep the blocks' own names, one level per index.
    let names: Vec<String> = blocks.parameters().iter().map(|p| p.name.clone()).collect();
    assert!(names.contains(&"2.ff1.weight".to_string()), "{names:?}");
    let none: Vec<Along<Seq, Block>> = Vec::new();
    assert_eq!(none.forward(&x).to_vec(), x.to_vec());
}

#[test]
fn layers_built_without_a_seed_draw_distinct_seeds_from_the_process_generator() {
    // Other tests of this binary draw from the same generator concurrently, so only what
    // holds under any interleaving is asserted here; the sequence after `manual_seed` is
    // checked in `namedtensor::random`'s doctests, each its own process.
    let a = Linear::<In, Out>::new(4, 3);
    let b = Linear::<In, Out>::new(4, 3);
    assert_ne!(a.weight.to_vec(), b.weight.to_vec());
    let (c, d) = (
        Linear::<In, Out>::seeded(4, 3, 9),
        Linear::<In, Out>::seeded(4, 3, 9),
    );
    assert_eq!(c.weight.to_vec(), d.weight.to_vec());
    let bound = 0.5; // 1 / sqrt(4)
    assert!(a.weight.to_vec().iter().all(|w| w.abs() <= bound));
}

#[test]
fn copy_state_from_casts_by_name_and_refuses_a_mismatch() {
    // f32 into f64 is exact; into bf16 each value rounds to nearest.
    let source = Linear::<In, Out>::seeded(3, 2, 0);
    let wide = Linear::<In, Out, f64>::seeded(3, 2, 1);
    wide.copy_state_from(&source).unwrap();
    for (p, q) in wide.parameters().iter().zip(source.parameters()) {
        let want: Vec<f64> = q.tensor.to_vec().into_iter().map(f64::from).collect();
        assert_eq!(p.tensor.to_vec(), want, "{}", p.name);
        assert!(p.tensor.requires_grad(), "{} stays a parameter", p.name);
    }
    let half = Linear::<In, Out, namedtensor::bf16>::seeded(3, 2, 1);
    half.copy_state_from(&wide).unwrap();
    let got: Vec<f32> = half
        .weight
        .as_dyn()
        .to_vec()
        .into_iter()
        .map(f32::from)
        .collect();
    let want: Vec<f32> = source
        .weight
        .as_dyn()
        .to_vec()
        .into_iter()
        .map(|x| f32::from(namedtensor::bf16::from_f32(x)))
        .collect();
    assert_eq!(got, want);

    // Each refusal names the parameter and writes nothing.
    let target = Linear::<In, Out>::seeded(3, 2, 5);
    let before = target.weight.as_dyn().to_vec();
    let cases = [
        (
            "the parameter `weight` is (Out=2, In=3) here and the source's parameter is (Out=2, In=4)",
            target.copy_state_from(&Linear::<In, Out>::seeded(4, 2, 0)),
        ),
        (
            "the source has no parameter `bias`",
            target.copy_state_from(&Linear::<In, Out>::seeded(3, 2, 0).without_bias()),
        ),
        (
            "the source's parameter `bias` has no parameter of that name to go to",
            Linear::<In, Out>::seeded(3, 2, 0)
                .without_bias()
                .copy_state_from(&Linear::<In, Out>::seeded(3, 2, 0)),
        ),
        (
            "the parameter `weight` is (Out=2, In=3) here and the source's parameter is (Hidden=2, In=3)",
            target.copy_state_from(&Linear::<In, Hidden>::seeded(3, 2, 0)),
        ),
    ];
    for (want, result) in cases {
        let e = result.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("Module::copy_state_from"), "{e}");
        assert!(e.to_string().contains(want), "{e}\nwant: {want}");
        assert_eq!(target.weight.as_dyn().to_vec(), before);
    }
}

#[test]
fn to_device_keeps_the_model_where_it_was_when_the_device_is_unavailable() {
    // Without a usable GPU the move fails up front; with one, an ordinal past the last does.
    let net = Linear::<In, Out>::seeded(3, 2, 0);
    let weight = net.weight.as_dyn().shallow_clone();
    let mut opt = Sgd::new(
        net.parameters(),
        SgdConfig {
            lr: 0.1,
            ..SgdConfig::default()
        },
    );
    let e = net
        .to_device(namedtensor::Device::Cuda(usize::MAX))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device, "{e}");
    assert!(
        net.parameters()
            .iter()
            .all(|p| p.tensor.device() == namedtensor::Device::Cpu)
    );
    // Moving to where the model is does nothing: the optimiser made before still steps it.
    net.cpu().unwrap();
    let x = Tensor::<f32, (Batch, In)>::ones([2, 3]);
    net.forward(&x).sum::<(Batch, Out)>().backward();
    let before = weight.to_vec();
    opt.step().unwrap();
    assert_ne!(weight.to_vec(), before);
}

#[test]
fn batch_norm_buffers_are_saved_loaded_and_copied_under_pytorchs_names() {
    use namedtensor::nn::{BatchNorm, BufferTensor};
    use namedtensor::{DType, SafetensorsFile};
    type Norm = BatchNorm<Model, f64>;
    let norm = Norm::new(3);
    let x = Tensor::<f64, (Batch, Seq, Model)>::randn([2, 4, 3], 0);
    norm.forward(&x);
    norm.forward(&Tensor::<f64, (Batch, Seq, Model)>::randn([2, 4, 3], 1));
    let names: Vec<String> = norm.buffers().into_iter().map(|b| b.name).collect();
    assert_eq!(
        names,
        ["running_mean", "running_var", "num_batches_tracked"]
    );
    assert!(matches!(&norm.buffers()[2].tensor, BufferTensor::Count(t) if t.item() == 2));

    // Saved as PyTorch's state_dict has them: the count as int64.
    let path = std::env::temp_dir().join(format!("nt-bn-{}.safetensors", std::process::id()));
    save_parameters(&norm, &path).unwrap();
    let file = SafetensorsFile::open(&path).unwrap();
    let mut saved = file.names();
    saved.sort_unstable();
    assert_eq!(
        saved,
        [
            "bias",
            "num_batches_tracked",
            "running_mean",
            "running_var",
            "weight"
        ]
    );
    assert_eq!(file.dtype("num_batches_tracked"), Some(DType::I64));
    let fresh = Norm::new(3);
    load_parameters(&fresh, &path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(fresh.running_var.to_vec(), norm.running_var.to_vec());
    assert_eq!(fresh.num_batches_tracked.as_dyn().item(), 2);
    // In evaluation both normalise with the same running statistics.
    fresh.eval();
    norm.eval();
    assert_eq!(fresh.forward(&x).to_vec(), norm.forward(&x).to_vec());

    // copy_state_from carries buffers too, cast to the target's type.
    let single = BatchNorm::<Model, f32>::new(3);
    single.copy_state_from(&norm).unwrap();
    let want: Vec<f32> = norm
        .running_mean
        .to_vec()
        .iter()
        .map(|&v| v as f32)
        .collect();
    assert_eq!(single.running_mean.to_vec(), want);
    assert_eq!(single.num_batches_tracked.as_dyn().item(), 2);
    let e = BatchNorm::<Model, f32>::new(3)
        .momentum(None)
        .without_affine()
        .copy_state_from(&norm)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the source's parameter `weight` has no parameter"),
        "{e}"
    );
}

#[test]
fn batch_norm_refuses_bad_input_and_leaves_its_statistics() {
    use namedtensor::nn::BatchNorm;
    let norm = BatchNorm::<Model>::new(3);
    let wrong = Tensor::<f32, (Batch, Model)>::ones([2, 4]);
    let e = norm.try_forward(&wrong).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string()
            .contains("4 entries along the channel dim Model but the layer has 3"),
        "{e}"
    );
    let single = Tensor::<f32, (Batch, Model)>::ones([1, 3]);
    let e = norm.try_forward(&single).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("more than one value"), "{e}");
    assert_eq!(norm.running_mean.to_vec(), vec![0.0; 3]);
    assert_eq!(norm.num_batches_tracked.as_dyn().item(), 0);
    // In evaluation one value per channel is fine (PyTorch's rule too).
    norm.eval();
    assert_eq!(
        norm.forward(&single).to_vec(),
        vec![1.0 / (1.0f32 + 1e-5).sqrt(); 3]
    );
}

#[test]
fn an_lstm_chains_in_a_tuple_along_its_sequence_dim() {
    use namedtensor::nn::Lstm;
    let model = (
        Embedding::<Vocab, Model>::seeded(10, 4, 0),
        Along::<Seq, _>::new(Lstm::<Model, Hidden>::seeded(4, 6, 1)),
        Linear::<Hidden, Classes>::seeded(6, 3, 2),
    );
    let names: Vec<String> = model.parameters().into_iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "0.weight",
            "1.weight_ih_l0",
            "1.weight_hh_l0",
            "1.bias_ih_l0",
            "1.bias_hh_l0",
            "2.weight",
            "2.bias"
        ]
    );
    let ids = Tensor::<i64, (Batch, Seq)>::from_vec(vec![1, 2, 3, 4, 5, 6], [2, 3]);
    let y: Tensor<f32, (Batch, Seq, Classes)> = model.forward(&ids);
    assert_eq!(y.shape(), &[2, 3, 3]);
    // Each step sees only the past: changing the last token leaves earlier outputs alone.
    let ids2 = Tensor::<i64, (Batch, Seq)>::from_vec(vec![1, 2, 9, 4, 5, 9], [2, 3]);
    let y2 = model.forward(&ids2);
    let (a, b) = (y.as_dyn().narrow(1, 0, 2), y2.as_dyn().narrow(1, 0, 2));
    assert_eq!(a.to_vec(), b.to_vec());
    assert_ne!(y.to_vec(), y2.to_vec());
    let e = Lstm::<Model, Hidden>::seeded(5, 6, 1)
        .try_forward(&Tensor::<f32, (Batch, Seq, Model)>::ones([2, 3, 4]), Seq)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
    assert!(
        e.to_string().contains("needs 5 entries along `Model`"),
        "{e}"
    );
}

/// Adam steps with `config` on one parameter of `shape` holding `init`, its gradient at step
/// `k` holding `grads[k]`; the parameter a transposed view (`strided`: the op-by-op update)
/// or contiguous (the backend's fused step); its values after each step.
fn adam_run<E: namedtensor::Float>(
    config: AdamConfig,
    init: &[f64],
    grads: &[Vec<f64>],
    shape: [usize; 2],
    strided: bool,
) -> Vec<Vec<f64>> {
    use namedtensor::nn::Parameter;
    let of = |v: &[f64]| DynTensor::from_vec(v.iter().map(|&x| E::from_f64(x)).collect(), &shape);
    let p = if strided {
        of(init).t().contiguous().t()
    } else {
        of(init)
    };
    assert_eq!(p.is_contiguous(), !strided || shape.iter().any(|&s| s < 2));
    let p = p.requires_grad_(true);
    let param = Parameter {
        name: "p".into(),
        tensor: p.shallow_clone(),
        dims: &["A", "B"],
    };
    let mut opt = Adam::new(vec![param], config);
    let mut out = Vec::new();
    for g in grads {
        p.set_grad(Some(of(g))).unwrap();
        opt.step().unwrap();
        out.push(
            p.detach()
                .to_vec()
                .into_iter()
                .map(|x| x.to_f64())
                .collect(),
        );
    }
    out
}

mod adam_prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::common::proptest_cases(48))]

        /// The backend's fused Adam step against the op-by-op update (a strided parameter
        /// takes it): bit for bit in f32 and f64, over random shapes, values and options
        /// (L2 or decoupled weight decay or none, AMSGrad), for up to four steps; and a bf16
        /// step as the f32 step rounded.
        #[test]
        fn prop_fused_adam_is_the_op_by_op_update(
            rows in 1usize..9, cols in 1usize..40, steps in 1usize..5,
            decay in 0usize..3, amsgrad in any::<bool>(), lr in 1e-4f64..0.3,
            seed in any::<u64>(),
        ) {
            let n = rows * cols;
            let init = crate::common::floats(n, seed, -2.0, 2.0);
            let grads: Vec<Vec<f64>> = (0..steps as u64)
                .map(|k| crate::common::floats(n, seed ^ ((k + 1) * 0x9e37), -1.0, 1.0))
                .collect();
            let config = AdamConfig {
                lr,
                weight_decay: [0.0, 0.05, 0.3][decay],
                decoupled_weight_decay: decay == 2,
                amsgrad,
                ..AdamConfig::default()
            };
            let shape = [rows, cols];
            let f32s = (
                adam_run::<f32>(config, &init, &grads, shape, false),
                adam_run::<f32>(config, &init, &grads, shape, true),
            );
            prop_assert_eq!(f32s.0, f32s.1, "f32 {:?}", config);
            let f64s = (
                adam_run::<f64>(config, &init, &grads, shape, false),
                adam_run::<f64>(config, &init, &grads, shape, true),
            );
            prop_assert_eq!(f64s.0, f64s.1, "f64 {:?}", config);
            // bf16 is computed in f32 and rounded once per stored value: its first step is
            // the f32 step on the same (bf16) values, rounded. (Against the op-by-op update,
            // which rounds every intermediate to bf16, a gradient plus L2 penalty near 0 can
            // round to 0 on one side and step by lr·sign on the other.)
            // The library's rounding (`Element::from_f64`, once to nearest), not `half`'s
            // `bf16::from_f64`, which rounds some values just above a tie down
            // (-0.18603524565696716 to -0.185546875).
            let round = |v: &[f64]| {
                v.iter().map(|&x| namedtensor::Element::to_f64(<half::bf16 as namedtensor::Element>::from_f64(x))).collect::<Vec<_>>()
            };
            let (init, g0) = (round(&init), vec![round(&grads[0])]);
            let want = round(&adam_run::<f32>(config, &init, &g0, shape, false)[0]);
            prop_assert_eq!(&adam_run::<half::bf16>(config, &init, &g0, shape, false)[0], &want);
        }
    }
}
