//! A small model's forward pass, so the binary links what a user's first program does.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{VarBuilder, VarMap, linear};

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let map = VarMap::new();
    let vb = VarBuilder::from_varmap(&map, DType::F32, &dev);
    let x = Tensor::randn(0f32, 1.0, (4, 8), &dev)?;
    let l1 = linear(8, 16, vb.pp("l1"))?;
    let l2 = linear(16, 3, vb.pp("l2"))?;
    let y = candle_nn::ops::softmax_last_dim(&l2.forward(&l1.forward(&x)?.relu()?)?)?;
    println!("{y}");
    Ok(())
}
