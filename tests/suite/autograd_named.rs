//! Autograd through named ops: gradients keep their names, and equal those of the same
//! computation written positionally.

use namedtensor::{DynTensor, Tensor, dims};

dims! { Batch, Query, Key, Hidden, In, Out }

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn attention_by_names_has_the_positional_gradients() {
    let (b, q, k, h) = (2, 3, 4, 5);
    let query = Tensor::<f64, (Batch, Query, Hidden)>::randn([b, q, h], 1).requires_grad_(true);
    let key = Tensor::<f64, (Batch, Key, Hidden)>::randn([b, k, h], 2).requires_grad_(true);
    let value = Tensor::<f64, (Batch, Key, Hidden)>::randn([b, k, h], 3).requires_grad_(true);
    let scale = (h as f64).sqrt();
    let out = query
        .dot(Hidden, &key)
        .map(|s| s / scale)
        .softmax::<Key>()
        .dot(Key, &value); // (Batch, Query, Hidden)
    let w = Tensor::<f64, (Batch, Query, Hidden)>::randn([b, q, h], 4);
    (&out * &w).sum::<(Batch, Query, Hidden)>().backward();
    let gq: Tensor<f64, (Batch, Query, Hidden)> = query.grad().unwrap();
    let gk: Tensor<f64, (Batch, Key, Hidden)> = key.grad().unwrap();
    let gv: Tensor<f64, (Batch, Key, Hidden)> = value.grad().unwrap();

    let (qd, kd, vd) = (
        query.as_dyn().detach().requires_grad_(true),
        key.as_dyn().detach().requires_grad_(true),
        value.as_dyn().detach().requires_grad_(true),
    );
    let pos = (qd.matmul(&kd.transpose(1, 2)) / scale)
        .softmax(-1)
        .matmul(&vd);
    (&pos * w.as_dyn()).sum().backward();
    close(&gq.to_vec(), &qd.grad().unwrap().to_vec());
    close(&gk.to_vec(), &kd.grad().unwrap().to_vec());
    close(&gv.to_vec(), &vd.grad().unwrap().to_vec());
}

#[test]
fn a_linear_layer_by_names_matches_the_hand_derived_gradient() {
    // y = x·W + b over In; loss = Σ y². ∂W = xᵀ (2y), ∂b = Σ_batch 2y.
    let x = Tensor::<f64, (Batch, In)>::randn([4, 3], 5);
    let w = Tensor::<f64, (In, Out)>::randn([3, 2], 6).requires_grad_(true);
    let bias = Tensor::<f64, (Out,)>::randn([2], 7).requires_grad_(true);
    let y = &x.dot(In, &w) + &bias; // (Batch, Out)
    (&y * &y).sum::<(Batch, Out)>().backward();
    let two_y = y.as_dyn().detach() * 2.0;
    let gw = x.as_dyn().t().matmul(&two_y);
    let gb = two_y.sum_dim(0, false);
    close(&w.grad().unwrap().to_vec(), &gw.to_vec());
    close(&bias.grad().unwrap().to_vec(), &gb.to_vec());
    assert_eq!(w.grad().unwrap().names(), ["In", "Out"]);
}

#[test]
fn masked_dims_and_alignment_differentiate() {
    // Σ over a masked batch of (x aligned to (Batch, Hidden)) · v
    let x = Tensor::<f64, (Hidden, Batch)>::randn([3, 2], 8).requires_grad_(true);
    let v = Tensor::<f64, (Batch, Hidden)>::randn([2, 3], 9);
    let aligned = x.align_as(&v);
    let masked = (&aligned * &v).mask_to::<Batch>();
    let s = masked.sum::<Hidden>(); // (), Batch private
    s.as_dyn().sum().backward();
    // ∂/∂x[h, b] = v[b, h]
    let expected = DynTensor::from_vec(v.to_vec(), &[2, 3]).t().contiguous();
    close(&x.grad().unwrap().to_vec(), &expected.to_vec());
}
