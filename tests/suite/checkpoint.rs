//! Checkpoints: a run stopped after k steps, saved, loaded into freshly built objects and
//! continued ends with the parameters of the uninterrupted run, bit for bit; a bad
//! checkpoint is an error naming the entry and changes nothing.

use namedtensor::nn::loss::{Reduction, mse_loss};
use namedtensor::nn::{Linear, Module, Relu, save_parameters};
use namedtensor::optim::{
    Adam, AdamConfig, CosineAnnealingLr, LinearLr, LrScheduler, Optimizer, Sgd, SgdConfig, StepLr,
    load_checkpoint, save_checkpoint,
};
use namedtensor::{ErrorKind, Tensor, dims};
use std::path::PathBuf;

dims! { Batch, In, Hidden, Out }

type Mlp = (Linear<In, Hidden, f64>, Relu, Linear<Hidden, Out, f64>);

fn mlp(seed: u64, hidden: usize) -> Mlp {
    (
        Linear::seeded(3, hidden, seed),
        Relu,
        Linear::seeded(hidden, 2, seed + 1),
    )
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nt-ckpt-{name}-{}.safetensors", std::process::id()))
}

fn params(m: &Mlp) -> Vec<Vec<f64>> {
    m.parameters().iter().map(|p| p.tensor.to_vec()).collect()
}

type Make = fn(&Mlp) -> (Box<dyn Optimizer>, Box<dyn LrScheduler>);

/// One training step of `m` on a fixed batch that depends on the step number.
fn train_step(m: &Mlp, opt: &mut dyn Optimizer, sched: &mut dyn LrScheduler, step: usize) {
    use namedtensor::nn::Forward;
    let x = Tensor::<f64, (Batch, In)>::randn([4, 3], 100 + step as u64);
    let y = Tensor::<f64, (Batch, Out)>::randn([4, 2], 200 + step as u64);
    opt.zero_grad();
    mse_loss(&m.forward(&x), &y, Reduction::Mean).backward();
    opt.step().unwrap();
    sched.step(opt).unwrap();
}

fn adam_amsgrad_step_lr(m: &Mlp) -> (Box<dyn Optimizer>, Box<dyn LrScheduler>) {
    let config = AdamConfig {
        lr: 0.05,
        weight_decay: 0.1,
        amsgrad: true,
        ..AdamConfig::default()
    };
    let mut opt = Adam::new(m.parameters(), config);
    let sched = StepLr::new(&mut opt, 2, 0.5).unwrap();
    (Box::new(opt), Box::new(sched))
}

fn adamw_cosine(m: &Mlp) -> (Box<dyn Optimizer>, Box<dyn LrScheduler>) {
    let mut opt = Adam::new(m.parameters(), AdamConfig::adamw());
    let sched = CosineAnnealingLr::new(&mut opt, 5, 1e-4).unwrap();
    (Box::new(opt), Box::new(sched))
}

fn sgd_nesterov_linear(m: &Mlp) -> (Box<dyn Optimizer>, Box<dyn LrScheduler>) {
    let config = SgdConfig {
        lr: 0.1,
        momentum: 0.9,
        nesterov: true,
        weight_decay: 1e-3,
        ..SgdConfig::default()
    };
    let mut opt = Sgd::new(m.parameters(), config);
    let sched = LinearLr::new(&mut opt, 0.5, 1.0, 4).unwrap();
    (Box::new(opt), Box::new(sched))
}

#[test]
fn a_resumed_run_ends_bit_for_bit_where_the_uninterrupted_one_does() {
    let cases: [(&str, Make); 3] = [
        ("adam_amsgrad_step_lr", adam_amsgrad_step_lr),
        ("adamw_cosine", adamw_cosine),
        ("sgd_nesterov_linear", sgd_nesterov_linear),
    ];
    for (name, make) in cases {
        let (total, stop) = (7, 3);
        let whole = mlp(0, 5);
        let (mut opt, mut sched) = make(&whole);
        for step in 0..total {
            train_step(&whole, opt.as_mut(), sched.as_mut(), step);
        }

        let first = mlp(0, 5);
        let (mut opt1, mut sched1) = make(&first);
        for step in 0..stop {
            train_step(&first, opt1.as_mut(), sched1.as_mut(), step);
        }
        let path = temp(name);
        save_checkpoint(&path, &first, opt1.as_ref(), Some(sched1.as_ref())).unwrap();

        // Fresh objects, built from another seed: everything comes from the file.
        let resumed = mlp(9, 5);
        let (mut opt2, mut sched2) = make(&resumed);
        load_checkpoint(&path, &resumed, opt2.as_mut(), Some(sched2.as_mut())).unwrap();
        assert_eq!(
            params(&resumed),
            params(&first),
            "{name}: loaded parameters"
        );
        assert_eq!(opt2.lr(), opt1.lr(), "{name}: loaded learning rate");
        assert_eq!(sched2.last_epoch(), stop, "{name}: loaded epoch");
        for step in stop..total {
            train_step(&resumed, opt2.as_mut(), sched2.as_mut(), step);
        }
        assert_eq!(params(&resumed), params(&whole), "{name}: after resuming");
        assert_eq!(opt2.lr(), opt.lr(), "{name}: final learning rate");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_run_resumed_without_the_optimiser_state_differs() {
    // The check above could pass if state did not matter; it does: reloading only the
    // parameters into a fresh Adam gives other values after the next step.
    let whole = mlp(0, 5);
    let (mut opt, mut sched) = adamw_cosine(&whole);
    for step in 0..4 {
        train_step(&whole, opt.as_mut(), sched.as_mut(), step);
    }
    let first = mlp(0, 5);
    let (mut opt1, mut sched1) = adamw_cosine(&first);
    for step in 0..3 {
        train_step(&first, opt1.as_mut(), sched1.as_mut(), step);
    }
    let (mut fresh_opt, mut fresh_sched) = adamw_cosine(&first);
    train_step(&first, fresh_opt.as_mut(), fresh_sched.as_mut(), 3);
    assert_ne!(params(&first), params(&whole));
}

/// A checkpoint of a model with `hidden` units after two Adam steps, with a StepLR schedule.
fn saved(name: &str, hidden: usize) -> PathBuf {
    let m = mlp(0, hidden);
    let (mut opt, mut sched) = adam_amsgrad_step_lr(&m);
    for step in 0..2 {
        train_step(&m, opt.as_mut(), sched.as_mut(), step);
    }
    let path = temp(name);
    save_checkpoint(&path, &m, opt.as_ref(), Some(sched.as_ref())).unwrap();
    path
}

/// Loads `path` into a fresh model and optimiser (built by `make` with `hidden` units),
/// expecting an error of `kind` whose message contains `needle`, and checks that nothing
/// changed: the parameters, and the next step, which equals an untouched twin's.
fn refused(path: &PathBuf, hidden: usize, make: Make, kind: ErrorKind, needle: &str) {
    let m = mlp(4, hidden);
    let (mut opt, mut sched) = make(&m);
    let before = params(&m);
    let e = load_checkpoint(path, &m, opt.as_mut(), Some(sched.as_mut())).unwrap_err();
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.to_string().contains(needle), "{e}");
    assert_eq!(params(&m), before);
    let twin = mlp(4, hidden);
    let (mut twin_opt, mut twin_sched) = make(&twin);
    train_step(&m, opt.as_mut(), sched.as_mut(), 0);
    train_step(&twin, twin_opt.as_mut(), twin_sched.as_mut(), 0);
    assert_eq!(params(&m), params(&twin));
    assert_eq!(opt.lr(), twin_opt.lr());
}

#[test]
fn a_bad_checkpoint_is_an_error_naming_the_entry_and_changes_nothing() {
    let path = saved("bad", 5);
    // Another hidden size: the first layer's weight has another shape.
    refused(
        &path,
        6,
        adam_amsgrad_step_lr,
        ErrorKind::ShapeMismatch,
        "0.weight",
    );
    // Saved with AMSGrad, loaded into Adam without it: a buffer this optimiser lacks.
    refused(
        &path,
        5,
        adamw_cosine,
        ErrorKind::InvalidArgument,
        "max_exp_avg_sq",
    );
    // Into SGD: Adam's state is no state of it.
    refused(
        &path,
        5,
        sgd_nesterov_linear,
        ErrorKind::InvalidArgument,
        "exp_avg",
    );

    // A file of parameters only: no optimiser state to resume from.
    let params_only = temp("params-only");
    save_parameters(&mlp(0, 5), &params_only).unwrap();
    let m = mlp(4, 5);
    let (mut opt, _) = adam_amsgrad_step_lr(&m);
    let before = params(&m);
    let e = load_checkpoint(&params_only, &m, opt.as_mut(), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("no state"), "{e}");
    assert_eq!(params(&m), before);

    // Truncated: the header promises more bytes than the file has.
    let bytes = std::fs::read(&path).unwrap();
    let truncated = temp("truncated");
    std::fs::write(&truncated, &bytes[..bytes.len() - 40]).unwrap();
    let (mut opt, mut sched) = adam_amsgrad_step_lr(&m);
    assert!(load_checkpoint(&truncated, &m, opt.as_mut(), Some(sched.as_mut())).is_err());
    assert_eq!(params(&m), before);

    // A schedule saved but none given.
    let e = load_checkpoint(&path, &m, opt.as_mut(), None).unwrap_err();
    assert!(e.to_string().contains("schedule"), "{e}");
    assert_eq!(params(&m), before);

    for p in [path, params_only, truncated] {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn a_checkpoint_refuses_parameters_of_other_dims() {
    // The same sizes, the dims swapped: (Out, In) data is not loaded into an (In, Out) slot.
    type Swapped = (Linear<Hidden, In, f64>, Relu, Linear<In, Out, f64>);
    let path = temp("dims");
    let saved_model: Swapped = (Linear::seeded(3, 5, 0), Relu, Linear::seeded(5, 2, 1));
    let opt = Sgd::new(saved_model.parameters(), SgdConfig::default());
    save_checkpoint(&path, &saved_model, &opt, None).unwrap();
    let m = mlp(4, 5);
    let before = params(&m);
    let mut opt2 = Sgd::new(m.parameters(), SgdConfig::default());
    let e = load_checkpoint(&path, &m, &mut opt2, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    assert!(e.to_string().contains("dims"), "{e}");
    assert_eq!(params(&m), before);
    std::fs::remove_file(&path).unwrap();
}

/// An f32 model trained in f16 under autocast with a gradient scaler whose first scale
/// overflows the gradients (steps are skipped and the scale backs off, then grows every 2
/// good steps): the scaler's state decides which later steps are taken.
mod scaled {
    use super::*;
    use namedtensor::amp::{self, GradScaler, GradScalerConfig};
    use namedtensor::f16;
    use namedtensor::optim::{TrainingState, load_training_state, save_training_state};

    type Net = (Linear<In, Hidden>, Relu, Linear<Hidden, Out>);

    fn net(seed: u64) -> Net {
        (
            Linear::seeded(3, 8, seed),
            Relu,
            Linear::seeded(8, 2, seed + 1),
        )
    }

    fn scaler() -> GradScaler {
        let config = GradScalerConfig {
            init_scale: 2f64.powi(20),
            growth_interval: 2,
            ..GradScalerConfig::default()
        };
        GradScaler::from_config(config).unwrap()
    }

    /// One step; whether it was taken.
    fn step(m: &Net, opt: &mut dyn Optimizer, scaler: &mut GradScaler, i: usize) -> bool {
        use namedtensor::nn::Forward;
        let x = Tensor::<f32, (Batch, In)>::randn([16, 3], 300 + i as u64);
        let y = Tensor::<f32, (Batch, Out)>::randn([16, 2], 400 + i as u64);
        opt.zero_grad();
        let l = amp::autocast::<f16, _>(|| mse_loss(&m.forward(&x), &y, Reduction::Mean));
        scaler.scale(&l).backward();
        let taken = scaler.step(opt).unwrap();
        scaler.update().unwrap();
        taken
    }

    fn weights(m: &Net) -> Vec<Vec<f32>> {
        m.parameters().iter().map(|p| p.tensor.to_vec()).collect()
    }

    #[test]
    fn a_scaled_run_resumes_with_its_scaler_bit_for_bit() {
        let (total, stop) = (12, 5);
        let whole = net(0);
        let mut opt = Adam::new(whole.parameters(), AdamConfig::adamw());
        let mut s = scaler();
        let taken: Vec<bool> = (0..total)
            .map(|i| step(&whole, &mut opt, &mut s, i))
            .collect();
        // The run skips its first steps; after the stop it takes steps and, its scale grown
        // every 2 good steps, skips some again (measured: taken from step 3 on, every third
        // skipped).
        assert!(!taken[0], "{taken:?}");
        assert!(
            taken[stop..].contains(&true) && taken[stop..].contains(&false),
            "{taken:?}"
        );

        let first = net(0);
        let mut opt1 = Adam::new(first.parameters(), AdamConfig::adamw());
        let mut s1 = scaler();
        for i in 0..stop {
            step(&first, &mut opt1, &mut s1, i);
        }
        let path = temp("scaled");
        save_training_state(&path, &first, &[("optimizer", &opt1), ("scaler", &s1)]).unwrap();

        let resumed = net(7);
        let mut opt2 = Adam::new(resumed.parameters(), AdamConfig::adamw());
        let mut s2 = scaler();
        load_training_state(
            &path,
            &resumed,
            &mut [("optimizer", &mut opt2), ("scaler", &mut s2)],
        )
        .unwrap();
        assert_eq!(s2.get_scale(), s1.get_scale());
        let rest: Vec<bool> = (stop..total)
            .map(|i| step(&resumed, &mut opt2, &mut s2, i))
            .collect();
        assert_eq!(rest, taken[stop..]);
        assert_eq!(weights(&resumed), weights(&whole));
        assert_eq!(s2.get_scale(), s.get_scale());

        // A file with a scaler's state, loaded without a scaler: an error, nothing loaded.
        let again = net(7);
        let mut o = Adam::new(again.parameters(), AdamConfig::adamw());
        let e = load_training_state(&path, &again, &mut [("optimizer", &mut o)]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("gradient scaler"), "{e}");
        assert_ne!(weights(&again), weights(&first));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn scaler_state_follows_pytorch_names_and_bad_parts_are_errors() {
        let m = net(0);
        let opt = Adam::new(m.parameters(), AdamConfig::adamw());
        let s = scaler();
        let path = temp("scaler-names");
        save_training_state(&path, &m, &[("optimizer", &opt), ("scaler", &s)]).unwrap();
        let file = namedtensor::SafetensorsFile::open(&path).unwrap();
        let mut scaler_keys: Vec<&str> = file
            .names()
            .into_iter()
            .filter(|n| n.starts_with("scaler."))
            .collect();
        scaler_keys.sort_unstable();
        assert_eq!(
            scaler_keys,
            [
                "scaler._growth_tracker",
                "scaler.backoff_factor",
                "scaler.growth_factor",
                "scaler.growth_interval",
                "scaler.scale"
            ]
        );
        assert_eq!(
            file.get::<f64>("scaler.scale").unwrap().item(),
            2f64.powi(20)
        );
        // A scaler given where none was saved.
        let plain = temp("no-scaler");
        save_checkpoint(&plain, &m, &opt, None).unwrap();
        let mut o = Adam::new(m.parameters(), AdamConfig::adamw());
        let mut s2 = scaler();
        let e = load_training_state(
            &plain,
            &m,
            &mut [("optimizer", &mut o), ("scaler", &mut s2)],
        )
        .unwrap_err();
        assert!(e.to_string().contains("no state"), "{e}");
        // Part names that cannot be told from parameters or each other.
        for name in ["", "a.b", "0", "optimizer"] {
            let parts: Vec<(&str, &dyn TrainingState)> = if name == "optimizer" {
                vec![("optimizer", &opt), ("optimizer", &s)]
            } else {
                vec![("optimizer", &opt), (name, &s)]
            };
            let e = save_training_state(temp("bad-part"), &m, &parts).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name}: {e}");
        }
        for p in [path, plain] {
            std::fs::remove_file(p).unwrap();
        }
    }
}
