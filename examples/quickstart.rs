//! A first look at namedtensor: dims the compiler checks, a layer trained by gradient descent
//! with gradients that keep their names, then the strided core underneath (storage, views,
//! writes through views).
//!
//! Run with `cargo run --release --example quickstart`.

use namedtensor::nn::{Linear, Module, loss};
use namedtensor::optim::{Optimizer, Sgd, SgdConfig};
use namedtensor::{DynTensor, Idx, Tensor, dims, tensor};

dims! { Batch, Channels, Rows, Cols, Features, Classes }

fn main() -> Result<(), namedtensor::Error> {
    named()?;
    strided()
}

/// Named tensors: every op says which dims it works on, and the compiler checks the names.
fn named() -> Result<(), namedtensor::Error> {
    // Two 3-channel 4×4 images; channel c of image b holds b + c.
    let img = Tensor::<f32, (Batch, Channels, Rows, Cols)>::from_vec(
        (0..96).map(|i| (i / 48 + (i / 16) % 3) as f32).collect(),
        [2, 3, 4, 4],
    );
    // Luma weights meet the image along `Channels`, wherever that dim is.
    let luma = Tensor::<f32, (Channels,)>::from_vec(vec![0.2126, 0.7152, 0.0722], [3]);
    let gray = (&img * &luma.align_as(&img)).sum::<Channels>();
    println!("gray: dims {:?}, shape {:?}", gray.names(), gray.shape());
    println!("mean brightness per image: {}", gray.mean::<(Rows, Cols)>());
    // `img.sum::<Features>()` would not compile: "dimension `Features` is not in tensor of
    // dims `(Batch, Channels, Rows, Cols)`".

    // A linear classifier over the flattened pixels, trained a few steps with SGD. Its type
    // says what it does to names: (…, Features) -> (…, Classes).
    let x = img.merge::<(Channels, Rows, Cols), Features>(); // (Batch, Features)
    let labels = Tensor::<i64, (Batch,)>::from_vec(vec![0, 2], [2]);
    let fc = Linear::<Features, Classes, f32>::new(48, 3);
    let config = SgdConfig {
        lr: 0.01,
        momentum: 0.9,
        ..SgdConfig::default()
    };
    let mut opt = Sgd::new(fc.parameters(), config);
    for step in 0..8 {
        opt.zero_grad();
        let logits = fc.forward(&x); // (Batch, Classes)
        let loss = loss::cross_entropy(&logits, Classes, &labels);
        loss.backward();
        println!("step {step}: cross-entropy {:.4}", loss.item());
        opt.step()?;
    }
    // Gradients keep their tensors' names (the weight is (Out, In), as in PyTorch): binding
    // this as (Features, Classes) would not compile.
    let g: Tensor<f32, (Classes, Features)> = fc.weight.grad().expect("a gradient");
    println!(
        "weight gradient: dims {:?}, shape {:?}",
        g.names(),
        g.shape()
    );
    Ok(())
}

/// The positional tensor underneath, in PyTorch's strided model.
fn strided() -> Result<(), namedtensor::Error> {
    // A tensor is a view of a flat storage through sizes, strides and an offset.
    let points = tensor!([[4., 1.], [5., 3.], [2., 1.]]);
    println!("points = {points}");
    println!(
        "storage {:?}, stride {:?}",
        points.storage().to_vec(),
        points.stride()
    );

    // Indexing makes views: no element is copied.
    let second = points.i(1);
    println!(
        "points[1] = {second}: offset {}, stride {:?}, same storage: {}",
        second.storage_offset(),
        second.stride(),
        second.shares_storage(&points)
    );

    // Writing through a view is visible through every view of the storage.
    second.set(&[0], 10.0);
    println!("after points[1][0] = 10: {points}");

    // Transposing swaps strides; contiguous() copies into row-major order.
    let pt = points.t();
    println!(
        "points.t() stride {:?}, contiguous: {}",
        pt.stride(),
        pt.is_contiguous()
    );
    let c = pt.contiguous();
    println!("points.t().contiguous() storage {:?}", c.storage().to_vec());

    // view() refuses strides it cannot express; reshape() copies instead.
    let x = DynTensor::<i64>::arange(0, 9, 1).reshape(&[3, 3]);
    match x.t().try_view(&[1, -1]) {
        Ok(_) => unreachable!("a transposed 3x3 cannot be viewed as 1x9"),
        Err(e) => println!("x.t().view(1, -1) -> error: {e}"),
    }
    println!("x.t().reshape(1, -1) = {}", x.t().reshape(&[1, -1]));

    // Slicing with steps, new axes, broadcasting views.
    let r = DynTensor::<f32>::arange(0.0, 10.0, 1.0);
    println!("r[1::3] = {}", r.i(Idx::step(1.., 3)));
    println!(
        "r[:3, None].expand(3, 2) = {}",
        r.i(..3).unsqueeze(1).expand(&[3, 2])
    );

    // Seeded random numbers are the same on every machine.
    println!(
        "randn(2, 3, seed 0) = {}",
        DynTensor::<f32>::randn(&[2, 3], 0)
    );
    Ok(())
}
