//! The header every rank sends before a collective's data, and the check that all agree.
//!
//! # Invariants
//! - Every rank all-gathers the same fixed-size header (16 words) before any data moves, and
//!   [`agree`] is a pure function of the gathered headers: every rank reaches the same
//!   verdict, so either all go on to the data phase or all return an error. A mismatch (two
//!   collectives, dtypes, kinds of device, shapes, roots or reductions) is therefore an error
//!   on every rank, never a hang or a buffer read with the wrong length.
//! - The engine of a call's data phase follows from its tensor's kind of device (MPI through
//!   host memory for CPU tensors, NCCL for CUDA tensors of a communicator made with
//!   `with_nccl`): ranks whose tensors are on different kinds of device would run different
//!   engines, which never meet, so they are refused here. The ordinals may differ (each rank
//!   on its own GPU).
//! - A rank whose own part failed before the exchange (a dim out of range, a tensor it cannot
//!   read) still sends a header, marked failed, so the others return an error too.

use crate::backend::device::Device;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};

/// Words in a header: op, dtype, argument, failed flag and dim, number of dims, element
/// count, the size along the op's dim, a hash of the shape, a hash of the shape without the
/// op's dim, the device, then the first [`SHOWN`] sizes (for messages).
pub(super) const WORDS: usize = 16;
/// The first word of the shown sizes.
const FIRST_SHOWN: usize = 10;
const SHOWN: usize = WORDS - FIRST_SHOWN;

/// The collectives, as the header names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(super) enum Op {
    AllReduce = 1,
    Broadcast,
    AllGather,
    ReduceScatter,
    Barrier,
    Split,
    #[cfg(feature = "nccl")]
    WithNccl,
}

impl Op {
    pub(super) fn name(self) -> &'static str {
        match self {
            Op::AllReduce => "all_reduce_",
            Op::Broadcast => "broadcast_",
            Op::AllGather => "all_gather",
            Op::ReduceScatter => "reduce_scatter",
            Op::Barrier => "barrier",
            Op::Split => "split",
            #[cfg(feature = "nccl")]
            Op::WithNccl => "with_nccl",
        }
    }

    fn from_word(w: u64) -> Option<Op> {
        [
            Op::AllReduce,
            Op::Broadcast,
            Op::AllGather,
            Op::ReduceScatter,
            Op::Barrier,
            Op::Split,
            #[cfg(feature = "nccl")]
            Op::WithNccl,
        ]
        .into_iter()
        .find(|op| *op as u64 == w)
    }
}

/// One rank's description of its call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) op: Op,
    /// The element type (`None` for calls without a tensor).
    pub(super) dtype: Option<DType>,
    /// The reduction, the root or the dim, by op.
    pub(super) arg: u64,
    /// This rank's own part failed before the exchange.
    pub(super) failed: bool,
    pub(super) shape: Vec<usize>,
    /// The op's dim (all_gather, reduce_scatter), `None` otherwise.
    pub(super) axis: Option<usize>,
    /// The tensor's device (`with_nccl`: the device asked for); `None` without a tensor.
    pub(super) device: Option<Device>,
}

/// A device as a word: 0 none, 1 the CPU, `2 + n` CUDA device `n`.
fn device_word(device: Option<Device>) -> u64 {
    match device {
        None => 0,
        Some(Device::Cpu) => 1,
        Some(Device::Cuda(n)) => 2 + n as u64,
    }
}

/// The kind of device a word names (0 none, 1 CPU, 2 CUDA): the engine follows from it.
fn device_kind(word: u64) -> u64 {
    word.min(2)
}

/// FNV-1a over the sizes, leaving out `skip`.
fn shape_hash(shape: &[usize], skip: Option<usize>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for (i, &s) in shape.iter().enumerate() {
        let w = if Some(i) == skip { u64::MAX } else { s as u64 };
        for b in w.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h ^ shape.len() as u64
}

impl Header {
    /// The header of a call with no tensor.
    pub(super) fn bare(op: Op) -> Header {
        Header {
            op,
            dtype: None,
            arg: 0,
            failed: false,
            shape: Vec::new(),
            axis: None,
            device: None,
        }
    }

    /// The words sent.
    pub(super) fn encode(&self) -> [u64; WORDS] {
        let mut w = [0u64; WORDS];
        w[0] = self.op as u64;
        w[1] = self
            .dtype
            .and_then(|d| DType::ALL.iter().position(|x| *x == d))
            .map_or(0, |i| i as u64 + 1);
        w[2] = self.arg;
        w[3] = u64::from(self.failed) | (self.axis.map_or(0, |a| (a as u64 + 1) << 1));
        w[4] = self.shape.len() as u64;
        w[5] = self.shape.iter().map(|&s| s as u64).product();
        w[6] = self.axis.map_or(0, |a| self.shape[a] as u64);
        w[7] = shape_hash(&self.shape, None);
        w[8] = shape_hash(&self.shape, self.axis);
        w[9] = device_word(self.device);
        for (i, &s) in self.shape.iter().take(SHOWN).enumerate() {
            w[FIRST_SHOWN + i] = s as u64;
        }
        w
    }
}

/// Every rank's header, in rank order (one all-gather of `WORDS` words per rank).
pub(super) fn exchange(
    comm: &mpi::topology::SimpleCommunicator,
    mine: &Header,
    size: usize,
) -> Vec<[u64; WORDS]> {
    use mpi::traits::CommunicatorCollectives as _;
    let mut flat = vec![0u64; size * WORDS];
    comm.all_gather_into(&mine.encode()[..], &mut flat[..]);
    flat.chunks_exact(WORDS)
        .map(|w| w.try_into().expect("chunks of WORDS words"))
        .collect()
}

/// What the check reads back of another rank's words.
struct Seen<'a>(&'a [u64; WORDS]);

impl Seen<'_> {
    fn op(&self) -> String {
        Op::from_word(self.0[0]).map_or_else(|| format!("op {}", self.0[0]), |o| o.name().into())
    }
    fn dtype(&self) -> String {
        match self.0[1] {
            0 => "no tensor".into(),
            i => DType::ALL
                .get(i as usize - 1)
                .map_or_else(|| format!("dtype {i}"), |d| d.name().into()),
        }
    }
    fn failed(&self) -> bool {
        self.0[3] & 1 == 1
    }
    fn device(&self) -> String {
        match self.0[9] {
            0 => "no tensor".into(),
            1 => Device::Cpu.to_string(),
            w => Device::Cuda((w - 2) as usize).to_string(),
        }
    }
    /// The shape as far as the header shows it (`…` past the shown sizes).
    fn shape(&self) -> String {
        let n = self.0[4] as usize;
        let shown: Vec<String> = self.0[FIRST_SHOWN..FIRST_SHOWN + n.min(SHOWN)]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if n > SHOWN {
            format!("[{}, … ({n} dims)]", shown.join(", "))
        } else {
            format!("[{}]", shown.join(", "))
        }
    }
}

/// Checks that every rank's header (`all[r]` from rank `r`) describes the same call as
/// `mine`, on rank `me`. The verdict depends on `all` only, so every rank reaches it.
pub(super) fn agree(mine: &Header, all: &[[u64; WORDS]], me: usize) -> Result<()> {
    let op = mine.op.name();
    let err = |kind, msg: String| Err(Error::new(kind, op, msg));
    let seen: Vec<Seen<'_>> = all.iter().map(Seen).collect();
    let list = |f: &dyn Fn(&Seen<'_>) -> String| -> String {
        seen.iter()
            .enumerate()
            .map(|(r, s)| format!("rank {r} {}", f(s)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let differ = |i: usize| all.iter().any(|w| w[i] != all[0][i]);
    if differ(0) {
        return err(
            ErrorKind::Distributed,
            format!(
                "the ranks called different collectives ({}); every rank must make the same \
                 collective calls in the same order",
                list(&|s| s.op())
            ),
        );
    }
    if let Some(r) = seen.iter().position(Seen::failed) {
        let who = if r == me {
            "this rank".to_string()
        } else {
            format!("rank {r}")
        };
        let failed: Vec<String> = (0..all.len())
            .filter(|&r| seen[r].failed())
            .map(|r| r.to_string())
            .collect();
        return err(
            ErrorKind::Distributed,
            format!(
                "the call failed on rank(s) {} before any data moved ({who}'s own error says \
                 why); no rank's tensor was changed",
                failed.join(", ")
            ),
        );
    }
    if differ(1) {
        return err(
            ErrorKind::DTypeMismatch,
            format!(
                "the ranks' tensors have different dtypes: {}",
                list(&|s| s.dtype())
            ),
        );
    }
    if all
        .iter()
        .any(|w| device_kind(w[9]) != device_kind(all[0][9]))
    {
        return err(
            ErrorKind::Device,
            format!(
                "the ranks' tensors are on different kinds of device: {}; every rank's tensor \
                 must be on the CPU or every rank's on a CUDA device, because a collective's \
                 engine follows from the kind (MPI through host memory for CPU tensors; NCCL \
                 for CUDA tensors of a communicator made with with_nccl)",
                list(&|s| s.device())
            ),
        );
    }
    if differ(2) {
        let what = match mine.op {
            Op::AllReduce | Op::ReduceScatter => "reduction",
            Op::Broadcast => "root",
            _ => "argument",
        };
        let arg = |s: &Seen<'_>| -> String {
            match mine.op {
                Op::AllReduce | Op::ReduceScatter => super::ReduceOp::from_word(s.0[2])
                    .map_or_else(|| s.0[2].to_string(), |r| format!("{r:?}")),
                _ => s.0[2].to_string(),
            }
        };
        return err(
            ErrorKind::Distributed,
            format!("the ranks named different {what}s: {}", list(&arg)),
        );
    }
    // all_gather concatenates along its dim: sizes may differ there only.
    let (same, what) = match mine.op {
        Op::AllGather => (
            !differ(3) && !differ(4) && !differ(8),
            " outside the gathered dim",
        ),
        _ => (!differ(4) && !differ(7), ""),
    };
    if !same {
        let dim = match mine.axis {
            Some(a) => format!(" (dim {a})"),
            None => String::new(),
        };
        return err(
            ErrorKind::ShapeMismatch,
            format!(
                "the ranks' shapes differ{what}{dim}: {}",
                list(&|s| s.shape())
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::ReduceOp;

    fn h(op: Op, dtype: DType, arg: u64, shape: &[usize], axis: Option<usize>) -> Header {
        Header {
            op,
            dtype: Some(dtype),
            arg,
            failed: false,
            shape: shape.to_vec(),
            axis,
            device: Some(Device::Cpu),
        }
    }

    fn on(device: Device, h: Header) -> Header {
        Header {
            device: Some(device),
            ..h
        }
    }

    fn check(hs: &[Header]) -> Result<()> {
        let all: Vec<_> = hs.iter().map(Header::encode).collect();
        // Every rank's verdict is the same (each error names that rank's own call).
        let verdicts: Vec<_> = (0..hs.len())
            .map(|r| agree(&hs[r], &all, r).map_err(|e| e.kind()))
            .collect();
        assert!(verdicts.iter().all(|v| *v == verdicts[0]), "{verdicts:?}");
        agree(&hs[0], &all, 0)
    }

    #[test]
    fn equal_calls_agree() {
        let a = h(
            Op::AllReduce,
            DType::F32,
            ReduceOp::Sum as u64,
            &[2, 3],
            None,
        );
        check(&[a.clone(), a.clone(), a]).unwrap();
        let g0 = h(Op::AllGather, DType::I64, 0, &[2, 3], Some(0));
        let g1 = h(Op::AllGather, DType::I64, 0, &[5, 3], Some(0));
        check(&[g0, g1]).unwrap();
        check(&[Header::bare(Op::Barrier), Header::bare(Op::Barrier)]).unwrap();
    }

    #[test]
    fn mismatches_name_the_op_the_ranks_and_the_values() {
        let a = h(
            Op::AllReduce,
            DType::F32,
            ReduceOp::Sum as u64,
            &[2, 3],
            None,
        );
        let sum = ReduceOp::Sum as u64;
        let e = check(&[a.clone(), h(Op::AllReduce, DType::F32, sum, &[3, 2], None)]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
        assert_eq!(
            e.to_string(),
            "all_reduce_: the ranks' shapes differ: rank 0 [2, 3], rank 1 [3, 2]"
        );
        let e = check(&[a.clone(), h(Op::AllReduce, DType::F64, sum, &[2, 3], None)]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DTypeMismatch);
        assert!(
            e.to_string().contains("rank 0 float32, rank 1 float64"),
            "{e}"
        );
        let e = check(&[
            a.clone(),
            h(
                Op::AllReduce,
                DType::F32,
                ReduceOp::Max as u64,
                &[2, 3],
                None,
            ),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("rank 0 Sum, rank 1 Max"), "{e}");
        let e = check(&[a.clone(), h(Op::Broadcast, DType::F32, sum, &[2, 3], None)]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Distributed);
        assert!(
            e.to_string()
                .contains("rank 0 all_reduce_, rank 1 broadcast_"),
            "{e}"
        );
        let e = check(&[a.clone(), Header::bare(Op::Barrier)]).unwrap_err();
        assert!(e.to_string().contains("rank 1 barrier"), "{e}");
        let b0 = h(Op::Broadcast, DType::U8, 0, &[4], None);
        let e = check(&[b0.clone(), h(Op::Broadcast, DType::U8, 1, &[4], None)]).unwrap_err();
        assert!(
            e.to_string()
                .contains("different roots: rank 0 0, rank 1 1"),
            "{e}"
        );
    }

    #[test]
    fn gathered_sizes_may_differ_along_the_dim_only() {
        let g = |shape: &[usize], axis| h(Op::AllGather, DType::F32, 0, shape, Some(axis));
        check(&[g(&[2, 3], 1), g(&[2, 7], 1), g(&[2, 0], 1)]).unwrap();
        let e = check(&[g(&[2, 3], 1), g(&[3, 3], 1)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "all_gather: the ranks' shapes differ outside the gathered dim (dim 1): rank 0 [2, 3], \
             rank 1 [3, 3]"
        );
        // The same sizes in another order are not the same shape.
        assert!(check(&[g(&[2, 3], 0), g(&[3, 2], 1)]).is_err());
        assert!(check(&[g(&[2, 3], 0), g(&[2, 3, 1], 0)]).is_err());
    }

    #[test]
    fn a_rank_that_failed_stops_every_rank() {
        let a = h(Op::AllReduce, DType::F32, 0, &[2], None);
        let mut f = a.clone();
        f.failed = true;
        let all = [a.encode(), f.encode(), a.encode()];
        let e = agree(&a, &all, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Distributed);
        assert!(e.to_string().contains("failed on rank(s) 1"), "{e}");
        assert!(e.to_string().contains("rank 1's own error"), "{e}");
        let e = agree(&f, &all, 1).unwrap_err();
        assert!(e.to_string().contains("this rank's own error"), "{e}");
    }

    #[test]
    fn long_shapes_are_compared_whole_and_shown_in_part() {
        let long: Vec<usize> = (1..=12).collect();
        let mut other = long.clone();
        other[11] = 99;
        let a = h(Op::AllReduce, DType::F32, 0, &long, None);
        let e = check(&[a.clone(), h(Op::AllReduce, DType::F32, 0, &other, None)]).unwrap_err();
        assert!(
            e.to_string()
                .contains("rank 0 [1, 2, 3, 4, 5, 6, … (12 dims)]"),
            "{e}"
        );
        check(&[a.clone(), a]).unwrap();
    }

    #[test]
    fn device_kinds_must_agree_and_ordinals_may_differ() {
        let sum = ReduceOp::Sum as u64;
        let a = h(Op::AllReduce, DType::F32, sum, &[2, 3], None);
        let e = check(&[
            a.clone(),
            on(Device::Cuda(0), a.clone()),
            on(Device::Cuda(1), a.clone()),
        ])
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device);
        assert!(
            e.to_string().starts_with(
                "all_reduce_: the ranks' tensors are on different kinds of device: \
                              rank 0 cpu, rank 1 cuda:0, rank 2 cuda:1;"
            ),
            "{e}"
        );
        // Each rank on its own GPU: one kind, one engine.
        check(&[
            on(Device::Cuda(0), a.clone()),
            on(Device::Cuda(1), a.clone()),
        ])
        .unwrap();
        let g = |d, n| on(d, h(Op::AllGather, DType::I64, 0, &[n, 3], Some(0)));
        check(&[g(Device::Cpu, 1), g(Device::Cpu, 4)]).unwrap();
        let e = check(&[g(Device::Cuda(2), 1), g(Device::Cpu, 4)]).unwrap_err();
        assert!(e.to_string().contains("rank 0 cuda:2, rank 1 cpu"), "{e}");
        // The dtypes are compared first; a call without a tensor has no device.
        let e = check(&[
            a.clone(),
            on(
                Device::Cuda(0),
                h(Op::AllReduce, DType::F64, sum, &[2, 3], None),
            ),
        ])
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DTypeMismatch);
        assert_eq!(Header::bare(Op::Barrier).encode()[9], 0);
    }

    #[test]
    fn the_device_takes_one_word_from_the_shown_sizes() {
        let long: Vec<usize> = (1..=8).collect();
        let w = on(
            Device::Cuda(5),
            h(Op::AllReduce, DType::F32, 0, &long, None),
        )
        .encode();
        assert_eq!(w[9], 7);
        assert_eq!(&w[FIRST_SHOWN..], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(Seen(&w).device(), "cuda:5");
        assert_eq!(Seen(&w).shape(), "[1, 2, 3, 4, 5, 6, … (8 dims)]");
        let short = h(Op::AllReduce, DType::F32, 0, &[4, 5], None).encode();
        assert_eq!(
            (Seen(&short).device(), Seen(&short).shape()),
            ("cpu".into(), "[4, 5]".into())
        );
    }
}
