//! Models moved to a device in place with `Module::to_device` train there as on the CPU: the
//! layers keep their tensors, an optimiser made before the move stays right (its state follows
//! the parameters at the next step), and a checkpoint written on one device resumes on another.

use super::common;

use common::assert_close_all;
use namedtensor::nn::Module;
use namedtensor::nn::loss::CrossEntropy;
use namedtensor::optim::{
    Adam, AdamConfig, LinearLr, LrScheduler, Optimizer, clip_grad_norm_, load_checkpoint,
    save_checkpoint,
};
use namedtensor::{Device, DynTensor, ErrorKind, Tensor};

// The example's encoder and sampler are not used here.
#[allow(dead_code)]
#[path = "../../examples/char_transformer/model.rs"]
mod char_model;

use char_model::{Batch, CharTransformer, Seq, Sizes, VOCAB, Vocab};

namedtensor::dims! { Samples, Channels, Length }

const SIZES: Sizes = Sizes {
    model: 16,
    heads: 2,
    hidden: 32,
    context: 12,
    layers: 2,
};
const STEPS: usize = 30;

/// 30 batches of 4 windows of 13 tokens: inputs are the first 12, targets the last 12.
fn windows() -> DynTensor<i64> {
    DynTensor::<i64>::randint(0, VOCAB as i64, &[STEPS, 4, 13], 7)
}

/// The example's training loop (AdamW, gradient clipping, a linear warm-up) for steps
/// `steps` of `windows`, on the model's device; the losses.
fn train(
    model: &CharTransformer<f32>,
    opt: &mut Adam<f32>,
    warm: &mut LinearLr,
    windows: &DynTensor<i64>,
    steps: std::ops::Range<usize>,
) -> Vec<f64> {
    let dev = model.head.weight.as_dyn().device();
    let ce = CrossEntropy::default();
    steps
        .map(|step| {
            let w = windows.select(0, step as isize).to_device(dev).unwrap();
            let x: Tensor<i64, (Batch, Seq)> = w.narrow(1, 0, 12).refine_names();
            let y: Tensor<i64, (Batch, Seq)> = w.narrow(1, 1, 12).refine_names();
            opt.zero_grad();
            let loss = ce.forward(&model.forward(&x), Vocab, &y);
            loss.backward();
            clip_grad_norm_(&model.parameters(), 1.0).unwrap();
            opt.step().unwrap();
            warm.step(opt).unwrap();
            loss.item() as f64
        })
        .collect()
}

fn adamw(model: &CharTransformer<f32>) -> (Adam<f32>, LinearLr) {
    let config = AdamConfig {
        lr: 1e-2,
        weight_decay: 0.01,
        ..AdamConfig::adamw()
    };
    let mut opt = Adam::new(model.parameters(), config);
    let warm = LinearLr::new(&mut opt, 0.1, 1.0, 5).unwrap();
    (opt, warm)
}

fn values(t: &DynTensor<f32>) -> Vec<f64> {
    t.to_vec().into_iter().map(f64::from).collect()
}

device_tests! {
    /// The fused Adam step on the device (every option: L2 or decoupled weight decay,
    /// AMSGrad) against the same steps on the CPU, for f32 and bf16 parameters, one of them
    /// a view at an offset into its storage.
    fn fused_adam_steps_match_the_cpu(dev: Device) {
        use namedtensor::nn::Parameter;
        for (weight_decay, decoupled, amsgrad) in
            [(0.0, false, false), (0.1, false, true), (0.05, true, false), (0.05, true, true)]
        {
            let config = AdamConfig {
                lr: 0.05,
                weight_decay,
                decoupled_weight_decay: decoupled,
                amsgrad,
                ..AdamConfig::default()
            };
            let vals: Vec<f32> = (0..40).map(|i| ((i * 17 % 13) as f32 - 6.0) * 0.3).collect();
            let run = |dev: Device| {
                let base = DynTensor::from_vec(vals.clone(), &[40]).to_device(dev).unwrap();
                // a contiguous view at offset 4: the kernel reads and writes from there
                let p = base.narrow(0, 4, 30).reshape(&[5, 6]).detach().requires_grad_(true);
                let q = base.to_dtype::<half::bf16>().requires_grad_(true);
                let mut opt = Adam::new(
                    vec![Parameter { name: "p".into(), tensor: p.shallow_clone(), dims: &["A", "B"] }],
                    config,
                );
                let mut opt16 = Adam::new(
                    vec![Parameter { name: "q".into(), tensor: q.shallow_clone(), dims: &["A"] }],
                    config,
                );
                for k in 0..4 {
                    let g: Vec<f32> = (0..30).map(|i| ((i * 7 + k * 3) % 11) as f32 * 0.2 - 1.0).collect();
                    let g = DynTensor::from_vec(g, &[5, 6]).to_device(dev).unwrap();
                    p.set_grad(Some(g.shallow_clone())).unwrap();
                    opt.step().unwrap();
                    let g16 = g.reshape(&[30]).to_dtype::<half::bf16>();
                    q.set_grad(Some(namedtensor::DynTensor::cat(&[&g16, &g16.narrow(0, 0, 10)], 0))).unwrap();
                    opt16.step().unwrap();
                }
                assert_eq!(p.device(), dev);
                (p.detach().to_vec(), q.detach().to_dtype::<f32>().to_vec())
            };
            let ((p, q), (pc, qc)) = (run(dev), run(Device::Cpu));
            let f = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
            let what = format!("wd {weight_decay} decoupled {decoupled} amsgrad {amsgrad}");
            assert_close_all(&f(p), &f(pc), 1e-6, 1e-6, &format!("f32 {what}"));
            assert_close_all(&f(q), &f(qc), 1e-2, 1e-2, &format!("bf16 {what}"));
        }
    }

    /// The `char_transformer` example's model (small sizes) takes one step on the CPU, moves
    /// to the device with its gradients and optimiser state in place, and takes 29 more: its
    /// losses and parameters are the CPU run's. The CPU instance checks the same on the CPU,
    /// where the move does nothing and the runs agree bit for bit.
    fn the_char_transformer_moves_and_trains_as_on_the_cpu(dev: Device) {
        let windows = windows();
        let reference = CharTransformer::<f32>::new(SIZES);
        let moved = CharTransformer::<f32>::new(SIZES);
        moved.copy_state_from(&reference).unwrap();
        // Handles made before the move: they follow the layer's tensors.
        let head = moved.head.weight.as_dyn().shallow_clone();
        let (mut opt, mut warm) = adamw(&reference);
        let want = train(&reference, &mut opt, &mut warm, &windows, 0..STEPS);
        let (mut opt, mut warm) = adamw(&moved);
        let mut got = train(&moved, &mut opt, &mut warm, &windows, 0..1);
        moved.to_device(dev).unwrap();
        assert_eq!(head.device(), dev);
        for p in moved.parameters() {
            assert_eq!(p.tensor.device(), dev, "{}", p.name);
            assert_eq!(p.tensor.grad().unwrap().device(), dev, "the gradient of {}", p.name);
        }
        got.extend(train(&moved, &mut opt, &mut warm, &windows, 1..STEPS));
        compare(dev, &reference, &moved, &got, &want);
    }

    /// A checkpoint written after 6 CPU steps, loaded into a fresh model already on the
    /// device (parameters, Adam's moments and the warm-up land there), trains 6 more steps
    /// as the uninterrupted CPU run does.
    fn a_cpu_checkpoint_resumes_on_the_device(dev: Device) {
        let windows = windows();
        let reference = CharTransformer::<f32>::new(SIZES);
        let first = CharTransformer::<f32>::new(SIZES);
        first.copy_state_from(&reference).unwrap();
        let (mut opt, mut warm) = adamw(&reference);
        let want = train(&reference, &mut opt, &mut warm, &windows, 0..12);
        let (mut opt, mut warm) = adamw(&first);
        let mut got = train(&first, &mut opt, &mut warm, &windows, 0..6);
        let path = std::env::temp_dir().join(format!(
            "nt-move-{dev}-{}.safetensors",
            std::process::id()
        ));
        save_checkpoint(&path, &first, &opt, Some(&warm)).unwrap();
        let resumed = CharTransformer::<f32>::new(SIZES);
        resumed.to_device(dev).unwrap();
        let (mut opt, mut warm) = adamw(&resumed);
        load_checkpoint(&path, &resumed, &mut opt, Some(&mut warm)).unwrap();
        std::fs::remove_file(&path).unwrap();
        got.extend(train(&resumed, &mut opt, &mut warm, &windows, 6..12));
        compare(dev, &reference, &resumed, &got, &want);
    }

    /// A batch norm moved to the device takes its buffers along: two training steps and an
    /// evaluation give the CPU's outputs, and the running statistics and count agree.
    fn a_batch_norm_moves_with_its_buffers(dev: Device) {
        use namedtensor::nn::BatchNorm;
        let cpu = BatchNorm::<Channels, f64>::new(3);
        let moved = BatchNorm::<Channels, f64>::new(3);
        moved.to_device(dev).unwrap();
        assert!(moved.buffers().iter().all(|b| b.tensor.device() == dev));
        for seed in 0..3 {
            if seed == 2 {
                cpu.eval();
                moved.eval();
            }
            let x = Tensor::<f64, (Samples, Channels, Length)>::randn([4, 3, 5], seed);
            let xd: Tensor<f64, (Samples, Channels, Length)> =
                x.as_dyn().to_device(dev).unwrap().refine_names();
            let (y, yd) = (cpu.forward(&x), moved.forward(&xd));
            let yd: Vec<f64> = yd.as_dyn().to_vec();
            assert_close_all(&yd, &y.to_vec(), 1e-12, 1e-12, "output");
        }
        moved.cpu().unwrap();
        assert_close_all(&moved.running_var.to_vec(), &cpu.running_var.to_vec(), 1e-12, 1e-12, "running_var");
        assert_eq!(moved.num_batches_tracked.as_dyn().item(), 2);
    }

    /// Moving is a write: a graph recorded before a move refuses to run backward, naming the
    /// version check, rather than mixing devices.
    fn a_graph_recorded_before_a_move_refuses_backward(dev: Device) {
        let model = CharTransformer::<f32>::new(SIZES);
        let w = windows().select(0, 0);
        let x: Tensor<i64, (Batch, Seq)> = w.narrow(1, 0, 12).refine_names();
        let y: Tensor<i64, (Batch, Seq)> = w.narrow(1, 1, 12).refine_names();
        let loss = CrossEntropy::default().forward(&model.forward(&x), Vocab, &y);
        model.to_device(dev).unwrap();
        let result = loss.as_dyn().try_backward();
        if dev == Device::Cpu {
            result.unwrap(); // nothing moved
        } else {
            let e = result.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Autograd, "{e}");
            assert!(e.to_string().contains("modified in place or moved to another device"), "{e}");
        }
    }
}

/// `got` and `want` (losses) and the parameters of `moved` (moved back to the CPU) and
/// `reference` agree: exactly on the CPU, within rounding after the device's kernels.
fn compare(
    dev: Device,
    reference: &CharTransformer<f32>,
    moved: &CharTransformer<f32>,
    got: &[f64],
    want: &[f64],
) {
    let (rtol, atol) = if dev == Device::Cpu {
        (0.0, 0.0)
    } else {
        (2e-4, 1e-5)
    };
    assert_close_all(got, want, rtol, atol, "losses");
    moved.cpu().unwrap();
    for (p, q) in reference.parameters().iter().zip(moved.parameters()) {
        assert_eq!(q.tensor.device(), Device::Cpu);
        // A key bias adds one number to all of a query's scores, which softmax ignores:
        // its gradient is 0 but for rounding, which Adam scales to steps of size lr, so
        // its values follow rounding noise on each device (PyTorch's too).
        if dev != Device::Cpu && p.name.ends_with("k_bias") {
            continue;
        }
        assert_close_all(
            &values(&q.tensor),
            &values(&p.tensor),
            rtol,
            10.0 * atol,
            &p.name,
        );
    }
}
