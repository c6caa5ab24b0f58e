//! The collectives on a communicator made with NCCL (`Communicator::with_nccl`, feature
//! `nccl`) across MPI processes: on each rank's emulated `cuda:0` with `cuda-emu` (the emulated
//! NCCL connects the processes of one machine), on the ranks' GPUs otherwise.
//!
//! One test, ignored by a plain `cargo test`: MPI starts once per process, and the test in
//! `mod.rs` ends it, so this one runs in a process of its own, as `.ci/mpi` runs it:
//! `mpirun -np N <unit-test binary> dist_tests::nccl:: --ignored` (also without `mpirun`, as a
//! world of one). Every rank computes the expected result of every call on its own, as in
//! `mod.rs`, and compares; the MPI engine's result on the same elements must be the same.

use super::{Batch, Hidden, data, expected, is_float};
use namedtensor::dist::{self, Communicator, ReduceOp};
use namedtensor::{DType, Device, DynTensor, Element, ErrorKind, Tensor};

const OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean];

/// The GPU rank `r` uses (the emulator has one, `cuda:0`, in every process).
fn gpu(r: usize) -> Device {
    Device::Cuda(r % Device::cuda_count().max(1))
}

/// Rank `me`'s `n` elements in `shape`, on `dev`.
fn on<E: Element>(me: usize, shape: &[usize], dev: Device) -> DynTensor<E> {
    let n = shape.iter().product();
    DynTensor::from_vec(data::<E>(me, n), shape)
        .to_device(dev)
        .unwrap()
}

/// all_reduce_ with each op on a contiguous tensor, a transposed view (written only in
/// `wait`) and an offset narrow (the rest of the storage unchanged); the MPI engine's result
/// on a CPU copy is the same.
fn all_reduce_every_op<E: Element>(nccl: &Communicator, world: &Communicator, dev: Device) {
    let (me, size) = (nccl.rank(), nccl.size());
    for op in OPS {
        let want: Vec<E> = (0..12).map(|i| expected::<E>(op, size, i)).collect();
        let t = on::<E>(me, &[3, 4], dev);
        let r = nccl.all_reduce_(&t, op);
        if op == ReduceOp::Mean && !is_float(E::DTYPE) {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            assert!(e.to_string().contains("Mean needs a float dtype"), "{e}");
            assert_eq!(t.to_vec(), data::<E>(me, 12), "unchanged after the error");
            continue;
        }
        r.unwrap();
        assert_eq!(t.to_vec(), want, "{op:?} of {} on {dev}", E::DTYPE);
        let cpu = DynTensor::from_vec(data::<E>(me, 12), &[3, 4]);
        world.all_reduce_(&cpu, op).unwrap();
        assert_eq!(t.to_vec(), cpu.to_vec(), "{op:?}: NCCL and MPI agree");

        let base = DynTensor::from_vec(data::<E>(me, 12), &[3, 4])
            .transpose(0, 1)
            .contiguous()
            .to_device(dev)
            .unwrap();
        let view = base.transpose(0, 1);
        let pending = nccl.all_reduce_start(&view, op).unwrap();
        assert_eq!(view.to_vec(), data::<E>(me, 12), "written only in wait");
        pending.wait().unwrap();
        assert_eq!(view.to_vec(), want, "{op:?} through a transposed view");

        let t = on::<E>(me, &[3, 4], dev);
        nccl.all_reduce_(&t.narrow(0, 1, 2), op).unwrap();
        let mut whole = data::<E>(me, 4);
        whole.extend_from_slice(&want[4..]);
        assert_eq!(t.to_vec(), whole, "{op:?} through an offset view");
    }
}

/// broadcast_ from every root into a transposed view; an empty tensor too.
fn broadcast_from_every_root<E: Element>(nccl: &Communicator, dev: Device) {
    let (me, size) = (nccl.rank(), nccl.size());
    for root in 0..size {
        let t = on::<E>(me, &[2, 3], dev);
        nccl.broadcast_(&t.transpose(0, 1), root).unwrap();
        assert_eq!(t.to_vec(), data::<E>(root, 6), "{} from {root}", E::DTYPE);
    }
    let empty = on::<E>(me, &[0, 3], dev);
    nccl.broadcast_(&empty, 0).unwrap();
}

/// all_gather with sizes that differ by rank along the dim (NCCL sends the largest part from
/// every rank), positional and named, equal to the MPI engine's.
fn all_gather_uneven<E: Element>(nccl: &Communicator, world: &Communicator, dev: Device) {
    let (me, size) = (nccl.rank(), nccl.size());
    let t = on::<E>(me, &[me + 1, 3], dev);
    let all = nccl.all_gather(&t, 0).unwrap();
    let want: Vec<E> = (0..size).flat_map(|r| data::<E>(r, 3 * (r + 1))).collect();
    assert_eq!(all.shape(), &[size * (size + 1) / 2, 3]);
    assert_eq!(all.device(), dev);
    assert_eq!(all.to_vec(), want);
    let cpu = DynTensor::from_vec(data::<E>(me, 3 * (me + 1)), &[me + 1, 3]);
    assert_eq!(world.all_gather(&cpu, 0).unwrap().to_vec(), want);

    // Along the last dim of a named tensor, through a transposed view: rank r holds 2 rows of
    // r + 1.
    let stored = on::<E>(me, &[me + 1, 2], dev);
    let t: Tensor<E, (Batch, Hidden)> = stored.transpose(0, 1).refine_names();
    let all = nccl.all_gather(&t, Hidden).unwrap();
    assert_eq!(all.names(), ["Batch", "Hidden"]);
    assert_eq!(all.shape(), &[2, size * (size + 1) / 2]);
    for row in 0..2 {
        let got = all.as_dyn().select(0, row as isize).to_vec();
        let want: Vec<E> = (0..size)
            .flat_map(|r| {
                let d = data::<E>(r, 2 * (r + 1));
                (0..r + 1).map(move |c| d[c * 2 + row])
            })
            .collect();
        assert_eq!(got, want, "row {row}");
    }
    // Every part empty: no NCCL call on any rank.
    let none = nccl.all_gather(&on::<E>(me, &[0, 2], dev), 0).unwrap();
    assert_eq!(none.shape(), &[0, 2]);
}

/// reduce_scatter with even parts (NCCL's reduce-scatter) and uneven ones (an all-reduce of
/// which each rank keeps its part), along each dim, equal to the MPI engine's.
fn reduce_scatter_parts<E: Element>(nccl: &Communicator, world: &Communicator, dev: Device) {
    let (me, size) = (nccl.rank(), nccl.size());
    let op = if is_float(E::DTYPE) {
        ReduceOp::Mean
    } else {
        ReduceOp::Sum
    };
    for rows in [2 * size, 2 * size + 1, 1] {
        let t = on::<E>(me, &[rows, 3], dev);
        let part = nccl.reduce_scatter(&t, 0, op).unwrap();
        let sizes: Vec<usize> = (0..size)
            .map(|r| rows / size + usize::from(r < rows % size))
            .collect();
        let start: usize = sizes[..me].iter().sum();
        let want: Vec<E> = (start * 3..(start + sizes[me]) * 3)
            .map(|i| expected::<E>(op, size, i))
            .collect();
        assert_eq!(part.shape(), &[sizes[me], 3], "{rows} rows");
        assert_eq!(part.device(), dev);
        assert_eq!(part.to_vec(), want, "{op:?}, {rows} rows");
        let cpu = DynTensor::from_vec(data::<E>(me, rows * 3), &[rows, 3]);
        assert_eq!(world.reduce_scatter(&cpu, 0, op).unwrap().to_vec(), want);

        // Along the named dim 1: the tensor stored [rows, 3], viewed [3, rows].
        let stored = on::<E>(me, &[rows, 3], dev);
        let named: Tensor<E, (Batch, Hidden)> = stored.transpose(0, 1).refine_names();
        let part = nccl.reduce_scatter(&named, Hidden, ReduceOp::Max).unwrap();
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

fn every_dtype(nccl: &Communicator, world: &Communicator, dev: Device) {
    macro_rules! each {
        ($($t:ty)*) => {$(
            all_reduce_every_op::<$t>(nccl, world, dev);
            broadcast_from_every_root::<$t>(nccl, dev);
            all_gather_uneven::<$t>(nccl, world, dev);
            reduce_scatter_parts::<$t>(nccl, world, dev);
        )*};
    }
    each! { bool u8 i8 i16 i32 i64 half::f16 half::bf16 f32 f64 }
}

/// What stays on MPI or is refused on a communicator made with NCCL, on every rank alike.
fn engines_and_errors(nccl: &Communicator, dev: Device) {
    let (me, size) = (nccl.rank(), nccl.size());
    // A CPU tensor goes through MPI on the same communicator.
    let t = DynTensor::<i64>::ones(&[3]);
    nccl.all_reduce_(&t, ReduceOp::Sum).unwrap();
    assert_eq!(t.to_vec(), vec![size as i64; 3]);

    // The header check still guards the data phase: shapes that differ are an error on every
    // rank, and no tensor changes.
    if size >= 2 {
        let shape: &[usize] = if me == 0 { &[2, 3] } else { &[3, 2] };
        let t = on::<f32>(me, shape, dev);
        let e = nccl.all_reduce_(&t, ReduceOp::Sum).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
        assert_eq!(t.to_vec(), data::<f32>(me, 6));

        // Rank 0's tensor on the CPU, the others' on their GPUs: two engines would never
        // meet, so every rank gets the error, naming the devices.
        let t = on::<f32>(me, &[4], if me == 0 { Device::Cpu } else { dev });
        let e = nccl.all_reduce_(&t, ReduceOp::Sum).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("different kinds of device"), "{msg}");
        assert!(
            msg.contains(&format!("rank 0 cpu, rank 1 {}", gpu(1))),
            "{msg}"
        );
        assert_eq!(t.to_vec(), data::<f32>(me, 4), "unchanged");
    }

    // Several calls in flight, waited for in another order than started.
    let a = DynTensor::<f32>::ones(&[1000]).to_device(dev).unwrap();
    let b = DynTensor::<f32>::full(&[10], 2.0).to_device(dev).unwrap();
    let pa = nccl.all_reduce_start(&a, ReduceOp::Sum).unwrap();
    let pb = nccl.all_reduce_start(&b, ReduceOp::Mean).unwrap();
    let pg = nccl.all_gather_start(&b, 0).unwrap();
    let barrier = nccl.barrier_start().unwrap();
    let g = pg.wait().unwrap();
    pb.wait().unwrap();
    barrier.wait().unwrap();
    pa.wait().unwrap();
    assert_eq!(a.to_vec(), vec![size as f32; 1000]);
    assert_eq!(b.to_vec(), vec![2.0; 10]);
    assert_eq!(g.to_vec(), vec![2.0; 10 * size]);

    // A split of it has no NCCL; the group still works afterwards.
    let half = nccl.split(Some((me % 2) as u32), 0).unwrap().unwrap();
    assert_eq!(half.nccl_device(), None);
    let t = on::<i32>(me, &[5], dev);
    nccl.all_reduce_(&t, ReduceOp::Max).unwrap();
    let want: Vec<i32> = (0..5)
        .map(|i| expected::<i32>(ReduceOp::Max, size, i))
        .collect();
    assert_eq!(t.to_vec(), want);
}

/// `with_nccl` on a CPU device: refused on the rank that asks, and an error on every other
/// rank, none waiting.
fn cpu_device_refused(world: &Communicator, dev: Device) {
    let e = world.with_nccl(Device::Cpu).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.to_string().contains("needs a CUDA device, not cpu"),
        "{e}"
    );
    let (me, size) = (world.rank(), world.size());
    if size >= 2 {
        let last = size - 1;
        let r = world.with_nccl(if me == last { Device::Cpu } else { dev });
        let e = r.unwrap_err();
        if me == last {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        } else {
            assert_eq!(e.kind(), ErrorKind::Distributed, "{e}");
            assert!(
                e.to_string().contains(&format!("failed on rank(s) {last}")),
                "{e}"
            );
        }
    }
    world.barrier().unwrap();
}

#[test]
#[ignore = "MPI starts once per process: run alone, as .ci/mpi does (dist_tests::nccl:: --ignored)"]
fn collectives_on_nccl() {
    let world = dist::init().unwrap();
    let dev = gpu(world.rank());
    let nccl = match world.with_nccl(dev) {
        Ok(c) => c,
        // A build on cudarc without libnccl (no GPU needed): the error says so, and that
        // the MPI engine works without it.
        Err(e) if e.to_string().contains("NCCL could not be loaded") => {
            assert_eq!(e.kind(), ErrorKind::Distributed);
            assert!(e.to_string().contains("without NCCL, over MPI"), "{e}");
            println!("skipping the NCCL tests: {e}");
            return;
        }
        Err(e) if dev.check_available().is_err() => {
            println!("skipping the NCCL tests: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        (nccl.rank(), nccl.size(), nccl.nccl_device()),
        (world.rank(), world.size(), Some(dev))
    );
    assert_eq!(world.nccl_device(), None);
    assert!(
        format!("{nccl:?}").ends_with(&format!(", NCCL on {dev})")),
        "{nccl:?}"
    );
    cpu_device_refused(&world, dev);
    every_dtype(&nccl, &world, dev);
    engines_and_errors(&nccl, dev);
    // A second NCCL communicator of the same ranks, used alongside the first.
    let again = world.with_nccl(dev).unwrap();
    let t = on::<half::bf16>(world.rank(), &[7], dev);
    again.all_reduce_(&t, ReduceOp::Sum).unwrap();
    let want: Vec<half::bf16> = (0..7)
        .map(|i| expected::<half::bf16>(ReduceOp::Sum, world.size(), i))
        .collect();
    assert_eq!(t.to_vec(), want);
    assert_eq!(DType::BF16, t.dtype());
    nccl.barrier().unwrap();
    drop((again, nccl));
    world.barrier().unwrap();
}
