//! `Display` against the text PyTorch 2.x prints for the same tensors.

use half::{bf16, f16};
use namedtensor::{DynTensor, tensor};

#[test]
fn floats_with_integer_values_print_with_a_trailing_dot() {
    let points = tensor!([[4., 1.], [5., 3.], [2., 1.]]);
    assert_eq!(
        points.to_string(),
        "tensor([[4., 1.],\n        [5., 3.],\n        [2., 1.]])"
    );
    assert_eq!(DynTensor::scalar(3.0f32).to_string(), "tensor(3.)");
}

#[test]
fn fractional_values_use_four_decimals_aligned_to_one_width() {
    assert_eq!(tensor!([1.5, 2.25]).to_string(), "tensor([1.5000, 2.2500])");
    assert_eq!(
        tensor!([-1.5, 2.0]).to_string(),
        "tensor([-1.5000,  2.0000])"
    );
}

#[test]
fn wide_ranges_switch_to_scientific_notation() {
    assert_eq!(
        tensor!([1e-5, 1.0]).to_string(),
        "tensor([1.0000e-05, 1.0000e+00])"
    );
    assert_eq!(
        tensor!([1e10, 1.0]).to_string(),
        "tensor([1.0000e+10, 1.0000e+00])"
    );
}

#[test]
fn non_default_dtypes_are_named() {
    let d = DynTensor::<f64>::arange(0.0, 10.0, 1.0);
    assert_eq!(
        d.to_string(),
        "tensor([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.], dtype=torch.float64)"
    );
    let h = DynTensor::from_vec(vec![f16::from_f32(1.0), f16::from_f32(2.0)], &[2]);
    assert_eq!(h.to_string(), "tensor([1., 2.], dtype=torch.float16)");
    let b = DynTensor::from_vec(vec![bf16::from_f32(0.5)], &[1]);
    assert_eq!(b.to_string(), "tensor([0.5000], dtype=torch.bfloat16)");
    assert_eq!(
        DynTensor::<i64>::arange(0, 3, 1).to_string(),
        "tensor([0, 1, 2])"
    );
    assert_eq!(
        DynTensor::<u8>::ones(&[2]).to_string(),
        "tensor([1, 1], dtype=torch.uint8)"
    );
    assert_eq!(
        DynTensor::from_vec(vec![true, false], &[2]).to_string(),
        "tensor([ True, False])"
    );
}

#[test]
fn empty_tensors_show_their_size() {
    assert_eq!(
        DynTensor::<f32>::zeros(&[2, 0]).to_string(),
        "tensor([], size=(2, 0))"
    );
    assert_eq!(DynTensor::<f32>::zeros(&[0]).to_string(), "tensor([])");
    assert_eq!(
        DynTensor::<i32>::zeros(&[0]).to_string(),
        "tensor([], dtype=torch.int32)"
    );
    // PyTorch 2.x: `torch.zeros(0, dtype=torch.int64)` and `torch.zeros(2, 0, dtype=torch.bool)`;
    // non-empty int64 and bool tensors leave their dtype unnamed (above).
    assert_eq!(
        DynTensor::<i64>::zeros(&[0]).to_string(),
        "tensor([], dtype=torch.int64)"
    );
    assert_eq!(
        DynTensor::<bool>::zeros(&[2, 0]).to_string(),
        "tensor([], size=(2, 0), dtype=torch.bool)"
    );
}

#[test]
fn three_dims_separate_matrices_by_a_blank_line() {
    let t = DynTensor::<i64>::arange(0, 8, 1).view(&[2, 2, 2]);
    assert_eq!(
        t.to_string(),
        "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])"
    );
}

#[test]
fn long_tensors_are_summarised_and_wrapped() {
    let t = DynTensor::<i64>::arange(0, 1001, 1);
    assert_eq!(
        t.to_string(),
        "tensor([   0,    1,    2,  ...,  998,  999, 1000])"
    );
    let f = DynTensor::<f32>::arange(0.0, 2000.0, 1.0);
    assert_eq!(
        f.to_string(),
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
    );
    let m = DynTensor::<f32>::zeros(&[100, 100]);
    let expected = "tensor([[0., 0., 0.,  ..., 0., 0., 0.],
        [0., 0., 0.,  ..., 0., 0., 0.],
        [0., 0., 0.,  ..., 0., 0., 0.],
        ...,
        [0., 0., 0.,  ..., 0., 0., 0.],
        [0., 0., 0.,  ..., 0., 0., 0.],
        [0., 0., 0.,  ..., 0., 0., 0.]])";
    assert_eq!(m.to_string(), expected);
}

#[test]
fn rows_longer_than_the_line_wrap() {
    let t = DynTensor::<f32>::arange(0.0, 30.0, 1.0).mul_into_fraction();
    // 30 values of width 7 ("29.5000"): (80 - 8) / 9 = 8 per line
    let s = t.to_string();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 4, "{s}");
    assert!(lines[0].starts_with("tensor([ 0.5000,  1.5000,"), "{s}");
    assert!(lines[1].starts_with("         8.5000,"), "{s}");
}

trait Fraction {
    fn mul_into_fraction(&self) -> DynTensor;
}
impl Fraction for DynTensor {
    fn mul_into_fraction(&self) -> DynTensor {
        DynTensor::from_vec(
            self.to_vec().iter().map(|v| v + 0.5).collect(),
            self.shape(),
        )
    }
}

#[test]
fn nan_and_infinity_print_like_python() {
    assert_eq!(
        tensor!([f32::NAN, 1.0, f32::NEG_INFINITY]).to_string(),
        "tensor([nan, 1., -inf])"
    );
}

#[test]
fn views_print_their_own_elements() {
    let p = tensor!([[4., 1.], [5., 3.], [2., 1.]]);
    assert_eq!(
        p.t().to_string(),
        "tensor([[4., 5., 2.],\n        [1., 3., 1.]])"
    );
}

#[test]
fn debug_shows_the_layout() {
    let p = tensor!([[4., 1.], [5., 3.], [2., 1.]]).i(1);
    assert_eq!(
        format!("{p:?}"),
        "DynTensor { shape: [2], strides: [1], offset: 2, dtype: float32, device: cpu }"
    );
}
