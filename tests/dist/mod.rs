//! The collectives of `namedtensor::dist` across real MPI processes.
//!
//! One test, because MPI starts once per process and ends with the last communicator: CI
//! runs it under `mpirun --oversubscribe -np 2` and `-np 3` (the unit-test binary with the
//! `mpi` feature, filter `dist_tests::`); in a plain `cargo test` it runs as a world of one.
//! Every rank fills its tensors from its rank and the element's position, so each rank
//! computes the expected result of every collective on its own, in `i64`/`f64`, and compares.

use namedtensor::dist::{self, Communicator, ReduceOp};
use namedtensor::{DType, Device, DynTensor, Element, ErrorKind, Tensor, dims};

dims! { Batch, Hidden }

/// The `ddp_digits` example, whose `train` the test runs across the ranks.
#[path = "../../examples/ddp_digits.rs"]
#[allow(dead_code)]
mod ddp_digits_example;

/// Rank `r`'s element `i`: a small integer, exact in every dtype (bool: every third).
fn value(r: usize, i: usize) -> i64 {
    ((r * 7 + i * 3) % 11) as i64
}

fn elem<E: Element>(v: i64) -> E {
    if E::DTYPE == DType::Bool {
        E::from_i64(i64::from(v % 3 == 0))
    } else {
        E::from_i64(v)
    }
}

/// Rank `r`'s data for `n` elements.
fn data<E: Element>(r: usize, n: usize) -> Vec<E> {
    (0..n).map(|i| elem::<E>(value(r, i))).collect()
}

/// What `op` over every rank's element `i` is, computed here as the wire does it.
fn expected<E: Element>(op: ReduceOp, size: usize, i: usize) -> E {
    let vals: Vec<i64> = (0..size)
        .map(|r| {
            let e: E = elem(value(r, i));
            e.to_i64()
        })
        .collect();
    let sum: i64 = vals.iter().sum();
    match op {
        ReduceOp::Sum if E::DTYPE == DType::Bool => E::from_i64(i64::from(sum > 0)),
        ReduceOp::Sum => E::from_i64(sum),
        ReduceOp::Max => E::from_i64(*vals.iter().max().unwrap()),
        ReduceOp::Min => E::from_i64(*vals.iter().min().unwrap()),
        // Halves and f32 divide in f32, f64 in f64; one rounding to E after.
        ReduceOp::Mean if E::DTYPE == DType::F64 => E::from_f64(sum as f64 / size as f64),
        ReduceOp::Mean => E::from_f64(f64::from(sum as f32 / size as f32)),
    }
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
}

/// all_reduce_ with each op on a contiguous tensor, a transposed view and an offset narrow
/// of it (the rest of the storage unchanged), blocking and non-blocking.
fn all_reduce_every_op<E: Element>(world: &Communicator, dev: Device) {
    let (me, size) = (world.rank(), world.size());
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean] {
        let want: Vec<E> = (0..12).map(|i| expected::<E>(op, size, i)).collect();
        let t = DynTensor::from_vec(data::<E>(me, 12), &[3, 4])
            .to_device(dev)
            .unwrap();
        let r = world.all_reduce_(&t, op);
        if op == ReduceOp::Mean && !is_float(E::DTYPE) {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            assert!(e.to_string().contains("Mean needs a float dtype"), "{e}");
            assert_eq!(t.to_vec(), data::<E>(me, 12), "unchanged after the error");
            continue;
        }
        r.unwrap();
        assert_eq!(t.to_vec(), want, "{op:?} of {} on {dev}", E::DTYPE);

        // A transposed view: the storage holds the logical [3, 4] tensor column-major.
        let base = DynTensor::from_vec(data::<E>(me, 12), &[3, 4])
            .transpose(0, 1)
            .contiguous()
            .to_device(dev)
            .unwrap();
        let view = base.transpose(0, 1);
        let pending = world.all_reduce_start(&view, op).unwrap();
        assert_eq!(view.to_vec(), data::<E>(me, 12), "written only in wait");
        pending.wait().unwrap();
        assert_eq!(view.to_vec(), want, "{op:?} through a transposed view");

        // Rows 1..3 of a fresh tensor: row 0 keeps this rank's own values.
        let t = DynTensor::from_vec(data::<E>(me, 12), &[3, 4])
            .to_device(dev)
            .unwrap();
        world.all_reduce_(&t.narrow(0, 1, 2), op).unwrap();
        let mut whole = data::<E>(me, 4);
        whole.extend_from_slice(&want[4..]);
        assert_eq!(t.to_vec(), whole, "{op:?} through an offset view");
    }
}

/// Writes that one rank refuses. A leaf that requires grad is refused before the exchange, so
/// every rank gets an error and no tensor changes. A borrowed storage is found only when the
/// call's turn comes (a contiguous host tensor is reduced within its storage): that rank
/// still sends its elements and gets the error with its tensor unchanged, and the others get
/// the whole sum.
fn refused_writes(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    let mine = vec![me as f32 + 1.0; 4];
    let t = DynTensor::from_vec(mine.clone(), &[4]).requires_grad_(me == 0);
    let e = world.all_reduce_(&t, ReduceOp::Sum).unwrap_err();
    if me == 0 {
        assert_eq!(e.kind(), ErrorKind::Autograd, "{e}");
    } else {
        assert_eq!(e.kind(), ErrorKind::Distributed, "{e}");
        assert!(e.to_string().contains("rank(s) 0"), "{e}");
    }
    assert_eq!(t.to_vec(), mine);

    let t = DynTensor::from_vec(mine.clone(), &[4]);
    let borrowed = (me == 0).then(|| t.as_slice().unwrap());
    let r = world.all_reduce_(&t, ReduceOp::Sum);
    if me == 0 {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Borrowed, "{e}");
        assert_eq!(&*borrowed.unwrap(), mine.as_slice());
    } else {
        r.unwrap();
        assert_eq!(t.to_vec(), vec![(size * (size + 1) / 2) as f32; 4]);
    }
}

/// Ranks that hold their tensors differently (contiguous on even ranks: reduced from the
/// storage; a transposed view on odd ones: through a wire buffer) still make the same MPI
/// calls, over more than one 4 MiB piece.
fn mixed_layouts(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    let n = 1100; // 1100² f32: 4.6 MiB, two pieces
    let t = DynTensor::<f32>::full(&[n, n], me as f32 + 1.0);
    let t = if me % 2 == 0 {
        t
    } else {
        t.transpose(0, 1).contiguous().transpose(0, 1)
    };
    assert_eq!(t.is_contiguous(), me % 2 == 0);
    world.all_reduce_(&t, ReduceOp::Sum).unwrap();
    let want = (size * (size + 1) / 2) as f32;
    assert!(t.to_vec().iter().all(|&x| x == want));
    world.all_reduce_(&t, ReduceOp::Mean).unwrap();
    assert!(t.to_vec().iter().all(|&x| x == want));
}

/// broadcast_ from every root, into a view.
fn broadcast_from_every_root<E: Element>(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    for root in 0..size {
        let t = DynTensor::from_vec(data::<E>(me, 6), &[2, 3]);
        let view = t.transpose(0, 1);
        world.broadcast_(&view, root).unwrap();
        assert_eq!(
            t.to_vec(),
            data::<E>(root, 6),
            "{} from root {root}",
            E::DTYPE
        );
    }
}

/// all_gather with sizes that differ by rank along the dim, positional and named.
fn all_gather_uneven<E: Element>(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    // Rank r holds r + 1 rows of 3.
    let t = DynTensor::from_vec(data::<E>(me, 3 * (me + 1)), &[me + 1, 3]);
    let all = world.all_gather(&t, 0).unwrap();
    let want: Vec<E> = (0..size).flat_map(|r| data::<E>(r, 3 * (r + 1))).collect();
    assert_eq!(all.shape(), &[size * (size + 1) / 2, 3]);
    assert_eq!(all.to_vec(), want);

    // Along the last dim of a named tensor: rank r holds 2 rows of r + 1.
    let t = Tensor::<E, (Batch, Hidden)>::from_vec(data::<E>(me, 2 * (me + 1)), [2, me + 1]);
    let all = world.all_gather(&t, Hidden).unwrap();
    assert_eq!(all.names(), ["Batch", "Hidden"]);
    assert_eq!(all.shape(), &[2, size * (size + 1) / 2]);
    for row in 0..2 {
        let got = all.as_dyn().select(0, row as isize).to_vec();
        let want: Vec<E> = (0..size)
            .flat_map(|r| data::<E>(r, 2 * (r + 1))[row * (r + 1)..(row + 1) * (r + 1)].to_vec())
            .collect();
        assert_eq!(got, want, "row {row}");
    }
}

/// reduce_scatter along each dim, with parts that divide evenly and parts that do not.
fn reduce_scatter_parts<E: Element>(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    for rows in [2 * size, 2 * size + 1, 1] {
        let t = DynTensor::from_vec(data::<E>(me, rows * 3), &[rows, 3]);
        let part = world.reduce_scatter(&t, 0, ReduceOp::Sum).unwrap();
        let sizes: Vec<usize> = (0..size)
            .map(|r| rows / size + usize::from(r < rows % size))
            .collect();
        let start: usize = sizes[..me].iter().sum();
        let want: Vec<E> = (start * 3..(start + sizes[me]) * 3)
            .map(|i| expected::<E>(ReduceOp::Sum, size, i))
            .collect();
        assert_eq!(part.shape(), &[sizes[me], 3], "{rows} rows");
        assert_eq!(part.to_vec(), want, "{rows} rows");

        // The same along dim 1 of the transposed tensor, named.
        let named = Tensor::<E, (Hidden, Batch)>::from_vec(data::<E>(me, rows * 3), [rows, 3]);
        let tr = named.as_dyn().transpose(0, 1).contiguous();
        let named_t = Tensor::<E, (Batch, Hidden)>::from_vec(tr.to_vec(), [3, rows]);
        let part = world
            .reduce_scatter(&named_t, Hidden, ReduceOp::Max)
            .unwrap();
        assert_eq!(part.shape(), &[3, sizes[me]]);
        let want: Vec<E> = (0..3)
            .flat_map(|c| {
                (start..start + sizes[me])
                    .map(move |row| expected::<E>(ReduceOp::Max, size, row * 3 + c))
            })
            .collect();
        assert_eq!(part.to_vec(), want, "{rows} rows, named, along Hidden");
    }
}

fn every_dtype(world: &Communicator, dev: Device) {
    macro_rules! each {
        ($($t:ty)*) => {$(
            all_reduce_every_op::<$t>(world, dev);
            if dev == Device::Cpu {
                broadcast_from_every_root::<$t>(world);
                all_gather_uneven::<$t>(world);
                reduce_scatter_parts::<$t>(world);
            }
        )*};
    }
    each! { bool u8 i8 i16 i32 i64 half::f16 half::bf16 f32 f64 }
}

/// Ranks that disagree all get an error, and no tensor changes; the next call works.
fn mismatches_are_errors_on_every_rank(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    if size < 2 {
        return;
    }
    // Rank 0 has another shape.
    let t = DynTensor::<f32>::full(if me == 0 { &[2, 3] } else { &[3, 2] }, 1.0);
    let e = world.all_reduce_(&t, ReduceOp::Sum).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    assert!(
        e.to_string().contains("rank 0 [2, 3], rank 1 [3, 2]"),
        "{e}"
    );
    assert_eq!(t.to_vec(), vec![1.0; 6]);

    // Rank 1 has another dtype: the other ranks' f32 against its f64.
    let e = if me == 1 {
        world.all_reduce_(&DynTensor::<f64>::ones(&[2]), ReduceOp::Sum)
    } else {
        world.all_reduce_(&DynTensor::<f32>::ones(&[2]), ReduceOp::Sum)
    }
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DTypeMismatch, "{e}");
    assert!(e.to_string().contains("rank 1 float64"), "{e}");

    // Rank 0 calls a barrier where the others reduce.
    let t = DynTensor::<i32>::ones(&[4]);
    let e = if me == 0 {
        world.barrier()
    } else {
        world.all_reduce_(&t, ReduceOp::Sum)
    }
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Distributed, "{e}");
    assert!(
        e.to_string().contains("rank 0 barrier, rank 1 all_reduce_"),
        "{e}"
    );
    assert_eq!(t.to_vec(), vec![1; 4]);

    // Ranks name different roots.
    let e = world.broadcast_(&t, me % 2).unwrap_err();
    assert!(e.to_string().contains("different roots"), "{e}");

    // The last rank's dim is out of range: it gets its own error, the others say where.
    let t = DynTensor::<f32>::ones(&[2, 2]);
    let dim = if me == size - 1 { 5 } else { 0 };
    let e = world.all_gather(&t, dim).unwrap_err();
    if me == size - 1 {
        assert_eq!(e.kind(), ErrorKind::DimOutOfRange, "{e}");
    } else {
        assert_eq!(e.kind(), ErrorKind::Distributed, "{e}");
        assert!(
            e.to_string()
                .contains(&format!("failed on rank(s) {}", size - 1)),
            "{e}"
        );
    }

    // Rank 0's root is outside the group.
    let root = if me == 0 { size } else { 0 };
    assert!(world.broadcast_(&t, root).is_err());

    // And the group still works.
    let t = DynTensor::<i64>::ones(&[3]);
    world.all_reduce_(&t, ReduceOp::Sum).unwrap();
    assert_eq!(t.to_vec(), vec![size as i64; 3]);
}

/// Sub-communicators: even and odd ranks reduce among themselves; a rank left out gets None.
fn split_groups(world: &Communicator) {
    let (me, size) = (world.rank(), world.size());
    let half = world.split(Some((me % 2) as u32), 0).unwrap().unwrap();
    let members: Vec<usize> = (0..size).filter(|r| r % 2 == me % 2).collect();
    assert_eq!(half.size(), members.len());
    assert_eq!(half.rank(), me / 2);
    let t = DynTensor::<i64>::from_vec(vec![me as i64], &[1]);
    half.all_reduce_(&t, ReduceOp::Sum).unwrap();
    assert_eq!(t.item(), members.iter().sum::<usize>() as i64);
    // Reversed order by key.
    let rev = world.split(Some(0), -(me as i32)).unwrap().unwrap();
    assert_eq!(rev.rank(), size - 1 - me);
    // The last rank's color is out of MPI's range: it gets its own error, every rank an
    // error, and no rank waits.
    let color = if me == size - 1 { u32::MAX } else { 0 };
    let e = world.split(Some(color), 0).unwrap_err();
    if me == size - 1 {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    } else {
        assert_eq!(e.kind(), ErrorKind::Distributed, "{e}");
    }
    let only_zero = world.split((me == 0).then_some(0), 0).unwrap();
    assert_eq!(only_zero.map(|c| c.size()), (me == 0).then_some(1));
    world.barrier().unwrap();
}

/// Several calls in flight at once complete in order.
fn overlapping_calls(world: &Communicator) {
    let size = world.size() as f32;
    let a = DynTensor::<f32>::ones(&[1000]);
    let b = DynTensor::<f32>::full(&[10], 2.0);
    let pa = world.all_reduce_start(&a, ReduceOp::Sum).unwrap();
    let pb = world.all_reduce_start(&b, ReduceOp::Mean).unwrap();
    let pg = world.all_gather_start(&b, 0).unwrap();
    let barrier = world.barrier_start().unwrap();
    // Waited in another order than started.
    let g = pg.wait().unwrap();
    pb.wait().unwrap();
    barrier.wait().unwrap();
    pa.wait().unwrap();
    assert_eq!(a.to_vec(), vec![size; 1000]);
    assert_eq!(b.to_vec(), vec![2.0; 10]);
    assert_eq!(g.shape(), &[10 * world.size()]);
}

/// Run by `.ci/mpi test` at 2 ranks, expecting the job to fail: rank 1 panics while rank 0
/// waits for it in a collective. mpirun then ends rank 0 (the bound is the CI's timeout).
#[test]
#[ignore = "run under mpirun by .ci/mpi, which expects it to fail"]
fn a_rank_that_panics() {
    let world = dist::init().unwrap();
    if world.rank() == 1 {
        panic!("rank 1 fails before the collective");
    }
    let t = DynTensor::<f32>::ones(&[4]);
    world.all_reduce_(&t, ReduceOp::Sum).unwrap();
    unreachable!("rank 0 cannot finish a collective that rank 1 never joins");
}

/// Run by `.ci/mpi test` at 2 ranks, expecting the job to fail: rank 1's process is killed
/// (SIGKILL: no unwinding, no MPI call of its own) while rank 0 waits for it in a collective.
#[test]
#[ignore = "run under mpirun by .ci/mpi, which expects it to fail"]
fn a_rank_that_is_killed() {
    let world = dist::init().unwrap();
    if world.rank() == 1 {
        let pid = std::process::id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid])
            .status();
        unreachable!("rank 1 was killed");
    }
    let t = DynTensor::<f32>::ones(&[4]);
    world.all_reduce_(&t, ReduceOp::Sum).unwrap();
    unreachable!("rank 0 cannot finish a collective that rank 1 never joins");
}

#[test]
fn collectives_across_ranks() {
    let world = dist::init().unwrap();
    let again = dist::init().unwrap();
    assert_eq!((again.rank(), again.size()), (world.rank(), world.size()));
    drop(again);
    every_dtype(&world, Device::Cpu);
    #[cfg(feature = "cuda")]
    if Device::Cuda(0).check_available().is_ok() {
        all_reduce_every_op::<f32>(&world, Device::Cuda(0));
        all_reduce_every_op::<half::bf16>(&world, Device::Cuda(0));
    }
    mismatches_are_errors_on_every_rank(&world);
    refused_writes(&world);
    mixed_layouts(&world);
    split_groups(&world);
    overlapping_calls(&world);
    ddp::steps_match_one_process(&world);
    ddp::transformer_steps_match_one_process(&world);
    ddp::digits_f32_steps_match_one_process(&world);
    ddp::no_sync_accumulates(&world);
    ddp::unused_parameters_without_sync_are_an_error(&world);
    // The example, three epochs: the loss falls and the ranks agree on a good model.
    let run = ddp_digits_example::train(&world, 3, &std::env::temp_dir(), true).unwrap();
    assert!(run.losses[2] < run.losses[0], "{:?}", run.losses);
    assert!(run.accuracy > 0.9, "{}", run.accuracy);
    drop(world);
    // MPI was finalised with the last communicator and cannot start again.
    let e = dist::init().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Distributed);
    assert!(e.to_string().contains("cannot start twice"), "{e}");
}

mod ddp {
    use namedtensor::dist::{Communicator, DistributedDataParallel};
    use namedtensor::nn::loss::cross_entropy;
    use namedtensor::nn::{Linear, Module, Visitor};
    use namedtensor::optim::{Adam, AdamConfig, Optimizer};
    use namedtensor::{ErrorKind, Tensor, dims};

    dims! { Batch, Features, Hidden, Classes }

    /// A two-layer perceptron, with a layer that forward passes may leave out.
    struct Mlp {
        fc1: Linear<Features, Hidden, f64>,
        fc2: Linear<Hidden, Classes, f64>,
        spare: Linear<Hidden, Classes, f64>,
    }

    impl Module<f64> for Mlp {
        fn visit(&self, v: &mut Visitor<'_, f64>) {
            v.module("fc1", &self.fc1);
            v.module("fc2", &self.fc2);
            v.module("spare", &self.spare);
        }
    }

    impl Mlp {
        fn new(seed: u64) -> Mlp {
            Mlp {
                fc1: Linear::seeded(6, 16, seed),
                fc2: Linear::seeded(16, 3, seed + 100),
                spare: Linear::seeded(16, 3, seed + 200),
            }
        }

        fn forward(
            &self,
            x: &Tensor<f64, (Batch, Features)>,
            spare: bool,
        ) -> Tensor<f64, (Batch, Classes)> {
            let h = self.fc1.forward(x).relu();
            if spare {
                self.fc2.forward(&h) + self.spare.forward(&h)
            } else {
                self.fc2.forward(&h)
            }
        }
    }

    const BATCH: usize = 12;

    /// Inputs and labels.
    type Examples = (Tensor<f64, (Batch, Features)>, Tensor<i64, (Batch,)>);

    /// Rows `rows` of the global batch.
    fn batch(rows: std::ops::Range<usize>) -> Examples {
        let n = rows.len();
        let x: Vec<f64> = rows
            .clone()
            .flat_map(|i| (0..6).map(move |j| ((i * 6 + j) as f64 * 0.7).sin()))
            .collect();
        let y: Vec<i64> = rows.map(|i| (i % 3) as i64).collect();
        (Tensor::from_vec(x, [n, 6]), Tensor::from_vec(y, [n]))
    }

    /// This rank's rows: an equal part of the global batch.
    fn shard(world: &Communicator) -> std::ops::Range<usize> {
        let per = BATCH / world.size();
        world.rank() * per..(world.rank() + 1) * per
    }

    fn params(m: &impl Module<f64>) -> Vec<(String, Vec<f64>)> {
        m.parameters()
            .into_iter()
            .map(|p| (p.name, p.tensor.to_vec()))
            .collect()
    }

    /// `model`'s gradients equal `reference`'s within 1e-12.
    fn assert_grads_match(model: &impl Module<f64>, reference: &impl Module<f64>) {
        for (p, r) in model.parameters().iter().zip(reference.parameters()) {
            let (g, rg) = (
                p.tensor.grad().unwrap().to_vec(),
                r.tensor.grad().unwrap().to_vec(),
            );
            for (a, b) in g.iter().zip(&rg) {
                assert!((a - b).abs() < 1e-12, "{}: {a} vs {b}", p.name);
            }
        }
    }

    /// Every rank holds the same parameters, bit for bit.
    fn assert_identical_across_ranks(world: &Communicator, m: &impl Module<f64>) {
        // The bits of every value, as i64 (MPI moves them unchanged).
        let mine: Vec<i64> = params(m)
            .iter()
            .flat_map(|(_, v)| v.iter().map(|x| x.to_bits() as i64))
            .collect();
        let n = mine.len();
        let all = world
            .all_gather(&namedtensor::DynTensor::from_vec(mine.clone(), &[1, n]), 0)
            .unwrap()
            .to_vec();
        for (r, row) in all.chunks(n).enumerate() {
            assert!(
                row == mine.as_slice(),
                "rank {r}'s parameters differ from this rank's"
            );
        }
    }

    /// Within 1e-12 relative (f64), values below 0.1 compared as if they were 0.1. The
    /// attention's key bias is the exception: its gradient is zero analytically (softmax
    /// ignores a shift every key shares), so its values are rounding noise (1e-14 to 1e-12)
    /// on both sides, compared absolutely.
    fn assert_close(a: &[(String, Vec<f64>)], b: &[(String, Vec<f64>)], what: &str) {
        assert_eq!(a.len(), b.len());
        for ((na, va), (nb, vb)) in a.iter().zip(b) {
            assert_eq!(na, nb);
            for (x, y) in va.iter().zip(vb) {
                assert!(
                    (x - y).abs()
                        <= if na.ends_with("k_bias") {
                            1e-10
                        } else {
                            1e-12 * y.abs().max(0.1)
                        },
                    "{what}: {na} {x} vs {y}"
                );
            }
        }
    }

    /// N AdamW steps on each rank's part equal N steps of one process on the whole batch,
    /// and every bucket was reduced during backward.
    pub fn steps_match_one_process(world: &Communicator) {
        let reference = Mlp::new(1);
        let mut ref_opt = Adam::new(reference.parameters(), AdamConfig::adamw());
        // Every rank but 0 starts elsewhere: the broadcast makes them equal.
        let model =
            DistributedDataParallel::with_bucket_cap(Mlp::new(1 + world.rank() as u64), world, 600)
                .unwrap();
        assert!(model.num_buckets() > 1, "several buckets");
        assert_close(&params(&model), &params(&reference), "after the broadcast");
        let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
        let (x, y) = batch(shard(world));
        let (fx, fy) = batch(0..BATCH);
        for step in 0..5 {
            opt.zero_grad();
            cross_entropy(&model.forward(&x, false), Classes, &y).backward();
            model.sync_gradients().unwrap(); // the spare layer got no gradient
            opt.step().unwrap();
            ref_opt.zero_grad();
            cross_entropy(&reference.forward(&fx, false), Classes, &fy).backward();
            for p in reference.spare.parameters() {
                // sync_gradients gives unused parameters the mean of zeros.
                p.tensor
                    .set_grad(Some(namedtensor::DynTensor::zeros_like(&p.tensor)))
                    .unwrap();
            }
            ref_opt.step().unwrap();
            assert_close(
                &params(&model),
                &params(&reference),
                &format!("step {step}"),
            );
            assert_identical_across_ranks(world, &model);
        }
        // The spare layer, registered last, fills the first bucket: buckets launch in
        // order, so every step's reduction waited for sync_gradients.
        assert_eq!(model.launch_counts(), (0, 5 * model.num_buckets()));

        // With every layer used, backward alone averages: no bucket waits for sync.
        let before = model.launch_counts();
        opt.zero_grad();
        cross_entropy(&model.forward(&x, true), Classes, &y).backward();
        let after = model.launch_counts();
        assert_eq!(after.0 - before.0, model.num_buckets());
        assert_eq!(after.1, before.1);
        model.sync_gradients().unwrap(); // nothing left: a no-op
        assert_eq!(model.launch_counts(), after);
        ref_opt.zero_grad();
        cross_entropy(&reference.forward(&fx, true), Classes, &fy).backward();
        assert_grads_match(&model, &reference);
    }

    dims! { Seq, Vocab, Model, Heads, HeadDim, Ffn }

    /// A small transformer classifier: embedding, one block, the mean over `Seq`, a linear
    /// head (no dropout, so that the shards and the whole batch see the same function).
    struct Classifier {
        embed: namedtensor::nn::Embedding<Vocab, Model, f64>,
        block: namedtensor::nn::TransformerBlock<Model, Heads, HeadDim, Ffn, f64>,
        head: Linear<Model, Classes, f64>,
    }

    impl Module<f64> for Classifier {
        fn visit(&self, v: &mut Visitor<'_, f64>) {
            v.module("embed", &self.embed);
            v.module("block", &self.block);
            v.module("head", &self.head);
        }
    }

    impl Classifier {
        fn new(seed: u64) -> Classifier {
            Classifier {
                embed: namedtensor::nn::Embedding::seeded(11, 8, seed),
                block: namedtensor::nn::TransformerBlock::seeded(
                    namedtensor::nn::TransformerConfig {
                        model: 8,
                        heads: 2,
                        hidden: 16,
                        dropout: 0.0,
                        causal: false,
                    },
                    seed + 1,
                ),
                head: Linear::seeded(8, 3, seed + 2),
            }
        }

        fn forward(&self, ids: &Tensor<i64, (Batch, Seq)>) -> Tensor<f64, (Batch, Classes)> {
            let h = self.block.forward(&self.embed.forward(ids), Seq);
            self.head.forward(&h.mean::<Seq>())
        }
    }

    /// Token ids and labels.
    type Sequences = (Tensor<i64, (Batch, Seq)>, Tensor<i64, (Batch,)>);

    /// Sequences of 5 token ids, labelled by their first token.
    fn sequences(rows: std::ops::Range<usize>) -> Sequences {
        let n = rows.len();
        let ids: Vec<i64> = rows
            .clone()
            .flat_map(|i| (0..5).map(move |j| ((i * 5 + j * 3) % 11) as i64))
            .collect();
        let y: Vec<i64> = ids.chunks(5).map(|s| s[0] % 3).collect();
        (Tensor::from_vec(ids, [n, 5]), Tensor::from_vec(y, [n]))
    }

    /// N AdamW steps of the transformer on each rank's part equal N steps of one process on
    /// the whole batch.
    pub fn transformer_steps_match_one_process(world: &Communicator) {
        let reference = Classifier::new(5);
        let mut ref_opt = Adam::new(reference.parameters(), AdamConfig::adamw());
        let model = DistributedDataParallel::with_bucket_cap(
            Classifier::new(5 + 10 * world.rank() as u64),
            world,
            2048,
        )
        .unwrap();
        let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
        let (x, y) = sequences(shard(world));
        let (fx, fy) = sequences(0..BATCH);
        for step in 0..4 {
            opt.zero_grad();
            cross_entropy(&model.forward(&x), Classes, &y).backward();
            opt.step().unwrap();
            ref_opt.zero_grad();
            cross_entropy(&reference.forward(&fx), Classes, &fy).backward();
            ref_opt.step().unwrap();
            assert_close(
                &params(&model),
                &params(&reference),
                &format!("transformer step {step}"),
            );
            assert_identical_across_ranks(world, &model);
        }
        // Every parameter is used: every bucket went out during backward.
        assert_eq!(model.launch_counts(), (4 * model.num_buckets(), 0));
        assert!(model.num_buckets() > 2);
    }

    /// The digits MLP in f32 (dropout off, the examples' AdamW recipe): N steps on each rank's
    /// part of a global batch of 48 equal N steps of one process on the whole batch within
    /// 1e-5 relative (values below 0.1 as if 0.1), and the ranks stay bit-identical. The
    /// difference is f32 rounding: a sum over 48 rows in one process, two or three partial
    /// means averaged across the ranks.
    pub fn digits_f32_steps_match_one_process(world: &Communicator) {
        use super::ddp_digits_example::digits::{self, Batch, Classifier, Mlp};
        const GLOBAL: usize = 48;
        let ((images, labels), _) = digits::digits();
        let per = GLOBAL / world.size();
        let start = (world.rank() * per) as isize;
        let (x, y) = (
            images.narrow::<Batch>(start, per),
            labels.narrow::<Batch>(start, per),
        );
        let (fx, fy) = (
            images.narrow::<Batch>(0, GLOBAL),
            labels.narrow::<Batch>(0, GLOBAL),
        );
        let reference = Mlp::new(11);
        reference.eval();
        let (mut ref_opt, _, loss_fn) = digits::recipe(&reference, 1).unwrap();
        let model =
            DistributedDataParallel::new(Mlp::new(11 + world.rank() as u64), world).unwrap();
        model.eval();
        let (mut opt, _, _) = digits::recipe(&model, 1).unwrap();
        let values = |m: &dyn Module<f32>| -> Vec<(String, Vec<f32>)> {
            m.parameters()
                .into_iter()
                .map(|p| (p.name, p.tensor.to_vec()))
                .collect()
        };
        for step in 0..5 {
            opt.zero_grad();
            loss_fn
                .forward(&model.forward(&x), digits::Classes, &y)
                .backward();
            opt.step().unwrap();
            ref_opt.zero_grad();
            loss_fn
                .forward(&reference.forward(&fx), digits::Classes, &fy)
                .backward();
            ref_opt.step().unwrap();
            let (ours, theirs) = (values(&*model), values(&reference));
            for ((name, a), (_, b)) in ours.iter().zip(&theirs) {
                for (p, q) in a.iter().zip(b) {
                    let err = (p - q).abs() / q.abs().max(0.1);
                    assert!(err <= 1e-5, "step {step}: {name} {p} vs {q}");
                }
            }
            let bits: Vec<i64> = ours
                .iter()
                .flat_map(|(_, v)| v.iter().map(|x| i64::from(x.to_bits())))
                .collect();
            let n = bits.len();
            let all = world
                .all_gather(&namedtensor::DynTensor::from_vec(bits.clone(), &[1, n]), 0)
                .unwrap()
                .to_vec();
            assert!(all.chunks(n).all(|row| row == bits.as_slice()));
        }
    }

    /// Two micro-batches, the first inside no_sync, give the full batch's gradient.
    pub fn no_sync_accumulates(world: &Communicator) {
        let reference = Mlp::new(7);
        let model = DistributedDataParallel::new(Mlp::new(7), world).unwrap();
        let rows = shard(world);
        let half = rows.start + rows.len() / 2;
        let (x1, y1) = batch(rows.start..half);
        let (x2, y2) = batch(half..rows.end);
        model.no_sync(|| {
            (cross_entropy(&model.forward(&x1, true), Classes, &y1) * 0.5).backward();
        });
        let (in_backward, _) = model.launch_counts();
        assert_eq!(in_backward, 0, "nothing reduced inside no_sync");
        (cross_entropy(&model.forward(&x2, true), Classes, &y2) * 0.5).backward();
        let (fx, fy) = batch(0..BATCH);
        cross_entropy(&reference.forward(&fx, true), Classes, &fy).backward();
        assert_grads_match(&model, &reference);
    }

    /// A step that begins while the last one still waits for an unused parameter is an error.
    pub fn unused_parameters_without_sync_are_an_error(world: &Communicator) {
        let model = DistributedDataParallel::with_bucket_cap(Mlp::new(3), world, 0).unwrap();
        let (x, y) = batch(shard(world));
        cross_entropy(&model.forward(&x, false), Classes, &y).backward();
        let e = cross_entropy(&model.forward(&x, false), Classes, &y)
            .as_dyn()
            .try_backward()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Distributed, "{e}");
        assert!(e.to_string().contains("call sync_gradients()"), "{e}");
        model.sync_gradients().unwrap();
        assert!(
            model
                .spare
                .parameters()
                .iter()
                .all(|p| p.tensor.grad().is_some())
        );
    }
}

#[cfg(feature = "nccl")]
mod nccl;
