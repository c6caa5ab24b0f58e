//! Mixed precision: what `amp::autocast` computes in the low dtype and what it leaves alone,
//! its gradients, its scope, and `GradScaler`'s rules and refusals. (Training against
//! PyTorch's autocast and GradScaler is in `nn_torch.rs`.)

use namedtensor::amp::{self, GradScaler, GradScalerConfig};
use namedtensor::nn::{Linear, Module};
use namedtensor::optim::{Sgd, SgdConfig};
use namedtensor::{DType, DynTensor, ErrorKind, Tensor, bf16, dims, f16};

dims! { Batch, In, Out }

/// `t` rounded to `L` and back.
fn rounded<L: namedtensor::Float>(t: &DynTensor<f32>) -> DynTensor<f32> {
    t.to_dtype::<L>().to_dtype::<f32>()
}

#[test]
fn autocast_runs_products_in_the_low_dtype_and_their_gradients_too() {
    let a = DynTensor::<f32>::randn(&[3, 5], 0).requires_grad_(true);
    let b = DynTensor::<f32>::randn(&[5, 4], 1).requires_grad_(true);
    let g = DynTensor::<f32>::randn(&[3, 4], 2);
    let y = amp::autocast::<bf16, _>(|| a.matmul(&b));
    // The product of the rounded operands, rounded: what a bf16 matmul gives.
    let want = rounded::<bf16>(
        &rounded::<bf16>(&a)
            .detach()
            .matmul(&rounded::<bf16>(&b).detach()),
    );
    assert_eq!(y.to_vec(), want.to_vec());
    assert_ne!(y.to_vec(), a.matmul(&b).to_vec(), "f32 outside the region");
    // The backward pass runs the product's gradients in bf16 as well: dA = round(g) · round(B)ᵀ.
    (&y * &g).sum().backward();
    let ga = rounded::<bf16>(&rounded::<bf16>(&g).matmul(&rounded::<bf16>(&b).detach().t()));
    assert_eq!(a.grad().unwrap().to_vec(), ga.to_vec());
    // Other ops stay f32 inside the region; f64 products are not cast (as PyTorch).
    let e = amp::autocast::<bf16, _>(|| a.detach().exp());
    assert_eq!(e.to_vec(), a.detach().exp().to_vec());
    let w = DynTensor::<f64>::randn(&[3, 3], 3);
    assert_eq!(
        amp::autocast::<f16, _>(|| w.matmul(&w)).to_vec(),
        w.matmul(&w).to_vec()
    );
}

#[test]
fn a_layer_under_autocast_adds_its_bias_in_the_low_dtype() {
    // PyTorch runs linear whole in the low dtype: the product plus the bias, rounded.
    let fc = Linear::<In, Out>::seeded(6, 3, 0);
    let x = Tensor::<f32, (Batch, In)>::randn([4, 6], 1);
    let y = amp::autocast::<f16, _>(|| fc.forward(&x));
    let product = rounded::<f16>(
        &rounded::<f16>(x.as_dyn()).matmul(&rounded::<f16>(fc.weight.as_dyn()).detach().t()),
    );
    let bias = rounded::<f16>(&fc.bias.as_ref().unwrap().as_dyn().detach());
    assert_eq!(y.to_vec(), rounded::<f16>(&(&product + &bias)).to_vec());
}

#[test]
fn autocast_is_scoped_per_thread_and_can_be_switched_off_inside() {
    amp::autocast::<bf16, _>(|| {
        assert_eq!(amp::autocast_dtype(), Some(DType::BF16));
        let other = std::thread::spawn(amp::autocast_dtype).join().unwrap();
        assert_eq!(other, None, "another thread is not in the region");
        amp::full_precision(|| assert_eq!(amp::autocast_dtype(), None));
        amp::autocast::<f16, _>(|| assert_eq!(amp::autocast_dtype(), Some(DType::F16)));
        assert_eq!(amp::autocast_dtype(), Some(DType::BF16));
    });
    // A panic inside the region restores the switch.
    let caught = std::panic::catch_unwind(|| amp::autocast::<bf16, _>(|| panic!("inside")));
    assert!(caught.is_err());
    assert_eq!(amp::autocast_dtype(), None);
}

/// A one-parameter model whose gradient is set by hand, and SGD with lr 1 over it.
fn one_parameter(grad: f32) -> (DynTensor<f32>, Sgd<f32>) {
    let w = DynTensor::<f32>::ones(&[2]).requires_grad_(true);
    let model = Linear::<In, Out>::from_parameters(w.view(&[1, 2]).detach().refine_names(), None);
    let p = model.parameters();
    let w = p[0].tensor.shallow_clone();
    w.set_grad(Some(DynTensor::full(&[1, 2], grad))).unwrap();
    let opt = Sgd::new(
        p,
        SgdConfig {
            lr: 1.0,
            ..SgdConfig::default()
        },
    );
    (w, opt)
}

#[test]
fn grad_scaler_skips_overflowing_steps_and_adapts_its_scale() {
    let config = GradScalerConfig {
        init_scale: 8.0,
        growth_interval: 2,
        ..Default::default()
    };
    let mut scaler = GradScaler::from_config(config).unwrap();
    // A finite gradient: unscaled (16 / 8 = 2), the step taken.
    let (w, mut opt) = one_parameter(16.0);
    assert!(scaler.step(&mut opt).unwrap());
    assert_eq!(w.to_vec(), vec![-1.0, -1.0]);
    scaler.update().unwrap();
    assert_eq!(scaler.get_scale(), 8.0);
    // An infinite one: no step, the scale halved, the good-step count reset.
    let (w, mut opt) = one_parameter(f32::INFINITY);
    assert!(!scaler.step(&mut opt).unwrap());
    assert_eq!(w.to_vec(), vec![1.0, 1.0]);
    scaler.update().unwrap();
    assert_eq!(scaler.get_scale(), 4.0);
    // Two good steps in a row double it.
    for _ in 0..2 {
        let (_, mut opt) = one_parameter(1.0);
        scaler.unscale_(&mut opt).unwrap();
        assert!(scaler.step(&mut opt).unwrap());
        scaler.update().unwrap();
    }
    assert_eq!(scaler.get_scale(), 8.0);
    // The loss is multiplied by the scale, as a recorded op.
    let loss = Tensor::<f32, ()>::full([], 0.5).requires_grad_(true);
    assert_eq!(scaler.scale(&loss).item(), 4.0);
}

#[test]
fn grad_scaler_refuses_misuse() {
    let (_, mut opt) = one_parameter(1.0);
    let mut scaler = GradScaler::new();
    let e = scaler.update().unwrap_err();
    assert!(e.to_string().contains("call step() first"), "{e}");
    scaler.unscale_(&mut opt).unwrap();
    let e = scaler.unscale_(&mut opt).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("already unscaled"), "{e}");
    for bad in [
        GradScalerConfig {
            init_scale: 0.0,
            ..Default::default()
        },
        GradScalerConfig {
            growth_factor: 1.0,
            ..Default::default()
        },
        GradScalerConfig {
            backoff_factor: 1.0,
            ..Default::default()
        },
        GradScalerConfig {
            growth_interval: 0,
            ..Default::default()
        },
        GradScalerConfig {
            init_scale: f64::INFINITY,
            ..Default::default()
        },
    ] {
        assert!(GradScaler::from_config(bad).is_err(), "{bad:?}");
    }
}
