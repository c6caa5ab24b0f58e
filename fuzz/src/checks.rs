//! What each fuzz target checks of one input, shared with the stable test suite, which replays
//! every seed and every reproducer through the same functions (`tests/suite/serialize.rs`):
//! each loader returns an error or usable tensors, never panics, overflows, aborts or reads
//! out of bounds, and a failed load leaves the model it loads into as it was.

use namedtensor::nn::{Linear, Module, load_parameters};
use namedtensor::optim::{Adam, AdamConfig, Optimizer, StepLr, load_checkpoint};
use namedtensor::{DynTensor, Element, NpzFile, load_tensors_from_bytes};

/// A loaded tensor is usable: read back, copied, reduced, printed.
fn exercise<E: Element>(t: &DynTensor<E>) {
    assert_eq!(t.to_vec().len(), t.numel());
    let _ = t.try_contiguous().expect("a loaded tensor copies");
    let _ = t.try_sum_dims(&[], false);
    let _ = format!("{t}");
}

/// Calls `f` with each element type the loaders read, as a generic function.
macro_rules! for_each_dtype {
    ($f:ident($($arg:expr),*)) => {
        $f::<f32>($($arg),*);
        $f::<f64>($($arg),*);
        $f::<half::f16>($($arg),*);
        $f::<half::bf16>($($arg),*);
        $f::<i64>($($arg),*);
        $f::<i32>($($arg),*);
        $f::<i16>($($arg),*);
        $f::<i8>($($arg),*);
        $f::<u8>($($arg),*);
        $f::<bool>($($arg),*);
    };
}

/// A safetensors file in memory (`load_tensors_from_bytes`); returns the tensors loaded.
pub fn load_safetensors(data: &[u8]) -> usize {
    fn one<E: Element>(data: &[u8], loaded: &mut usize) {
        if let Ok(tensors) = load_tensors_from_bytes::<E>(data) {
            tensors.iter().for_each(|(_, t)| exercise(t));
            *loaded += tensors.len();
        }
    }
    let mut loaded = 0;
    for_each_dtype!(one(data, &mut loaded));
    loaded
}

/// A `.npy` file in memory (`DynTensor::from_npy_bytes`); returns the tensors loaded.
pub fn load_npy(data: &[u8]) -> usize {
    fn one<E: Element>(data: &[u8], loaded: &mut usize) {
        if let Ok(t) = DynTensor::<E>::from_npy_bytes(data) {
            exercise(&t);
            *loaded += 1;
        }
    }
    let mut loaded = 0;
    for_each_dtype!(one(data, &mut loaded));
    loaded
}

/// A `.npz` archive in memory (`NpzFile`): every member read as every dtype; returns the
/// arrays loaded.
pub fn load_npz(data: &[u8]) -> usize {
    fn one<E: Element>(file: &NpzFile, name: &str, loaded: &mut usize) {
        if let Ok(t) = file.get::<E>(name) {
            exercise(&t);
            *loaded += 1;
        }
    }
    let Ok(file) = NpzFile::from_bytes(data.to_vec()) else {
        return 0;
    };
    let mut loaded = 0;
    for name in file.names() {
        for_each_dtype!(one(&file, name, &mut loaded));
    }
    loaded
}

namedtensor::dims!(Pixels, Hidden, Classes);

/// The two-layer model of `tests/fixtures/mlp_state_dict.safetensors` (PyTorch's
/// `fc1.weight`, `fc1.bias`, …).
struct Mlp {
    fc1: Linear<Pixels, Hidden>,
    fc2: Linear<Hidden, Classes>,
}

impl Module<f32> for Mlp {
    fn visit(&self, v: &mut namedtensor::nn::Visitor<'_, f32>) {
        v.module("fc1", &self.fc1);
        v.module("fc2", &self.fc2);
    }
}

/// A parameter file (`load_parameters`, from a file written into `dir`) loaded into that
/// model: on error every parameter is as it was; returns whether it loaded.
pub fn load_parameters_into_mlp(data: &[u8], dir: &std::path::Path) -> bool {
    let model = Mlp {
        fc1: Linear::seeded(64, 32, 0),
        fc2: Linear::seeded(32, 10, 1),
    };
    let values =
        |m: &Mlp| -> Vec<Vec<f32>> { m.parameters().iter().map(|p| p.tensor.to_vec()).collect() };
    let before = values(&model);
    let path = dir.join("parameters.safetensors");
    std::fs::write(&path, data).expect("the scratch directory is writable");
    let loaded = match load_parameters(&model, &path) {
        Ok(()) => {
            model.parameters().iter().for_each(|p| exercise(&p.tensor));
            true
        }
        Err(_) => {
            assert!(before == values(&model), "a failed load changed the model");
            false
        }
    };
    load_checkpoint_into_mlp(&path, &values) || loaded
}

/// The same file as a checkpoint (`load_checkpoint`) for that model, an AdamW optimiser and
/// a StepLR schedule: on error the parameters are as they were, and on success the loaded
/// state takes a step.
fn load_checkpoint_into_mlp(
    path: &std::path::Path,
    values: &dyn Fn(&Mlp) -> Vec<Vec<f32>>,
) -> bool {
    let model = Mlp {
        fc1: Linear::seeded(64, 32, 0),
        fc2: Linear::seeded(32, 10, 1),
    };
    let before = values(&model);
    let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
    let mut sched = StepLr::new(&mut opt, 2, 0.5).expect("a valid schedule");
    match load_checkpoint(path, &model, &mut opt, Some(&mut sched)) {
        Ok(()) => {
            model.parameters().iter().for_each(|p| {
                exercise(&p.tensor);
                let _ = p
                    .tensor
                    .set_grad(Some(DynTensor::<f32>::ones_like(&p.tensor)));
            });
            let _ = opt.step();
            true
        }
        Err(_) => {
            assert!(
                before == values(&model),
                "a failed checkpoint load changed the model"
            );
            false
        }
    }
}
