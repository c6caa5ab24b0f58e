//! A first look at namedtensor's strided core: storage, views, writes through views.
//!
//! Run with `cargo run --release --example quickstart`.

use namedtensor::{DynTensor, Idx, tensor};

fn main() -> Result<(), namedtensor::Error> {
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
