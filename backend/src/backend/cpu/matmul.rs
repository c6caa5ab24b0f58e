//! Batched matrix products over strided operands.
//!
//! A [`Batched`] problem is `offsets.len()` products `C_b = A_b · B_b` of an `m × k` by a
//! `k × n` matrix, where `A_b` starts at storage position `offsets[b][0]` and is read with
//! (row, column) strides `a_strides`, and likewise `B_b`. The strides go to the kernels as they
//! are: transposed, step-sliced and offset operands are never copied, and a broadcast batch
//! dim (stride 0) simply repeats an offset. The outputs are written one after the other,
//! row-major, into a fresh buffer.
//!
//! `f32`, `f64` and `f16` go to the `gemm` crate (except `f32` products whose operands both
//! run along a long contraction with few outputs, which [`super::dot_products`] computes
//! unpacked on AVX-512 machines); integers to a blocked loop accumulating in
//! `i64` with wrapping arithmetic (the same result as wrapping arithmetic in the element type,
//! since every integer type's arithmetic is `i64`'s modulo its width).

use super::convert::{as_type, as_type_mut};
use super::dot_products;
use super::elementwise::map_new;
use super::host_buffer::HostBuffer;
use super::parallel::{for_each_row_chunk, for_each_with_caller, num_threads, pool};
use super::pool::take as take_buffer;
use super::transpose::{Bits, Plan};
use crate::dtype::{DType, Element};
use crate::layout::{Coalesced, Layout};
use gemm_common::Parallelism;
use std::mem::MaybeUninit;

/// A batch of matrix products with shared sizes and strides; see the module docs.
#[derive(Debug, Clone)]
pub struct Batched {
    /// Rows of each left operand and of each output.
    pub m: usize,
    /// Columns of each right operand and of each output.
    pub n: usize,
    /// The contracted size.
    pub k: usize,
    /// (row, column) strides of every left operand.
    pub a_strides: [usize; 2],
    /// (row, column) strides of every right operand.
    pub b_strides: [usize; 2],
    /// Storage positions of element (0, 0) of the left and right operand of each product.
    pub offsets: Vec<[usize; 2]>,
}

impl Batched {
    /// Multiply-adds of one product.
    fn work(&self) -> usize {
        self.m.saturating_mul(self.n).saturating_mul(self.k)
    }
}

/// The products of `p` over `a` and `b`, concatenated row-major (`offsets.len() · m · n`
/// elements). `E` must be `f32`, `f64`, `f16` or an integer type (callers route `bf16`
/// through `f32` and refuse `bool`).
pub fn matmul<E: Element>(a: &[E], b: &[E], p: &Batched) -> HostBuffer<E> {
    match E::DTYPE {
        DType::F32 | DType::F64 | DType::F16 => gemm_batched(a, b, p),
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => int_batched(a, b, p),
        DType::BF16 | DType::Bool => unreachable!("matmul kernel called for {}", E::DTYPE),
    }
}

/// The products of `la` over `a` (sizes `[batch…, m, k]`) and `lb` over `b` (`[batch…, k, n]`,
/// the same batch sizes, broadcast batch dims with stride 0), row-major `[batch…, m, n]`.
/// `bf16` has too few bits to accumulate in: it is computed in `f32` and rounded once.
pub fn matmul_op<E: Element>(a: &[E], la: &Layout, b: &[E], lb: &Layout) -> HostBuffer<E> {
    if E::DTYPE != DType::BF16 {
        return matmul(a, b, &batched(la, lb));
    }
    // Each operand's distinct elements in f32, seen again at the expanded sizes.
    let widen = |src: &[E], l: &Layout| -> (HostBuffer<f32>, Layout) {
        let distinct = l.collapse_broadcast();
        let wide = map_new::<E, f32, f32, f32, false>(src, &distinct, |x| x);
        let sizes: Vec<isize> = l.sizes().iter().map(|&s| s as isize).collect();
        let back = Layout::contiguous(distinct.sizes())
            .and_then(|c| c.expand(&sizes))
            .expect("a valid layout's sizes");
        (wide, back)
    };
    let ((a32, la32), (b32, lb32)) = (widen(a, la), widen(b, lb));
    let product = matmul(&a32, &b32, &batched(&la32, &lb32));
    let whole = Layout::contiguous(&[product.len()]).expect("a buffer's length fits a layout");
    map_new::<f32, f32, f32, E, false>(&product, &whole, |x| x)
}

/// The [`Batched`] problem of `la · lb` (see [`matmul_op`]): a right operand shared by the
/// whole batch and a left operand whose batch dims continue its row dim with matching strides
/// make one product with `batches · m` rows; otherwise one offset pair per product (none when
/// the products are empty: the batch may still be large, and the result has no element).
fn batched(la: &Layout, lb: &Layout) -> Batched {
    let r = la.rank();
    debug_assert!(r >= 2 && lb.rank() == r && la.sizes()[..r - 2] == lb.sizes()[..r - 2]);
    let batch = &la.sizes()[..r - 2];
    let (m, k, n) = (la.sizes()[r - 2], la.sizes()[r - 1], lb.sizes()[r - 1]);
    let (bsa, bsb) = (&la.strides()[..r - 2], &lb.strides()[..r - 2]);
    let a_strides = [la.strides()[r - 2], la.strides()[r - 1]];
    let b_strides = [lb.strides()[r - 2], lb.strides()[r - 1]];
    let b_shared = batch.iter().zip(bsb).all(|(&s, &st)| s <= 1 || st == 0);
    if b_shared && let Some(row_stride) = fold_rows(batch, bsa, m, a_strides[0]) {
        return Batched {
            m: batch.iter().product::<usize>() * m,
            n,
            k,
            a_strides: [row_stride, a_strides[1]],
            b_strides,
            offsets: vec![[la.offset(), lb.offset()]],
        };
    }
    let mut offsets = Vec::new();
    if m > 0 && n > 0 {
        let walk = Coalesced::new(batch, [bsa, bsb], [la.offset(), lb.offset()]);
        offsets.reserve_exact(batch.iter().product());
        walk.for_each_block(|blk| {
            let ([a0, b0], [da, db]) = (blk.starts, blk.strides);
            offsets.extend((0..blk.len).map(|i| [a0 + i * da, b0 + i * db]));
        });
    }
    Batched {
        m,
        n,
        k,
        a_strides,
        b_strides,
        offsets,
    }
}

/// The row stride of the left operand seen as one `(batches · m) × k` matrix, if its batch
/// dims and row dim form a single strided run.
fn fold_rows(batch: &[usize], strides: &[usize], m: usize, row_stride: usize) -> Option<usize> {
    let dims: Vec<(usize, usize)> = batch
        .iter()
        .zip(strides)
        .map(|(&s, &st)| (s, st))
        .chain(std::iter::once((m, row_stride)))
        .filter(|&(s, _)| s != 1)
        .collect();
    if dims.iter().any(|&(s, _)| s == 0) {
        return None;
    }
    if !dims.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0) {
        return None;
    }
    Some(dims.last().map_or(row_stride, |&(_, stride)| stride))
}

/// Products of at least this many multiply-adds that have rows enough for every thread are
/// split by `gemm` itself, which shares its packed blocks of B between the threads; smaller
/// ones are cut into bands of rows, one per thread, each a single-threaded `gemm` with the
/// calling thread computing one band, which starts sooner (the crossover is measured in
/// BENCHMARKS.md, "Measurements behind design choices").
const BAND_MAX_WORK: usize = 1 << 29;

/// Rows of a band are a multiple of this (whole register tiles of `gemm`'s kernels).
const BAND_ROW_ALIGN: usize = 16;

/// `C = A·B` for one `m × n × k` product with `gemm`'s kernel for `E`: `ptrs` are C, A and
/// B, `strides` their `[row, column]` strides. The kernels come from `gemm-f32`, `gemm-f64`
/// and `gemm-f16` directly, not through the `gemm` crate, whose type dispatch would also
/// compile its complex-number kernels (`gemm-c32`/`gemm-c64`, ~27 s of a cold release build;
/// BENCHMARKS.md "Build cost"). Like `gemm::gemm`, it hands the kernel the transposed product
/// (`Cᵀ = Bᵀ·Aᵀ`) when C's rows are contiguous, since the kernels prefer a column-major C.
///
/// # Safety
/// `E` is `f32`, `f64` or `f16` (other types panic); every stride is non-negative; A and B
/// are readable and C writable at every position the strides reach for `i < m`, `j < n`,
/// `l < k`; C is written, never read, so it may be uninitialised.
unsafe fn gemm_kernel<E: Element>(
    [m, n, k]: [usize; 3],
    [dst, lhs, rhs]: [*const E; 3],
    [[dst_rs, dst_cs], [lhs_rs, lhs_cs], [rhs_rs, rhs_cs]]: [[isize; 2]; 3],
    parallelism: Parallelism,
) {
    debug_assert!(
        [dst_rs, dst_cs, lhs_rs, lhs_cs, rhs_rs, rhs_cs]
            .iter()
            .all(|&s| s >= 0)
    );
    // Both operands along a long contraction with a narrow side (A row-major, B column-major,
    // `k ≥ 256`, `min(m, n) ≤ 64`: a convolution's weight gradient `g · colsᵀ`): packing, not
    // arithmetic, dominates, and the kernel packs its left operand by a slower strided loop,
    // so the left operand is the one with fewer rows, whatever C's layout. Scratch timings of
    // the 3×32×32 CNN's three weight gradients (32 batches, one thread): 0.72 → 0.40 ms
    // (m 16, n 27, k 1024), 0.67 → 0.41 ms (32, 144, 256); with k = 64 (64, 288) C's layout
    // mattered more (0.41 → 0.48 ms), so short contractions keep the rule below.
    let swap = if lhs_cs == 1 && rhs_rs == 1 && m != n && k >= 256 && m.min(n) <= 64 {
        n < m
    } else {
        dst_cs < dst_rs
    };
    let ((m, n), (dst_rs, dst_cs), (lhs, lhs_rs, lhs_cs), (rhs, rhs_rs, rhs_cs)) = if swap {
        (
            (n, m),
            (dst_cs, dst_rs),
            (rhs, rhs_cs, rhs_rs),
            (lhs, lhs_cs, lhs_rs),
        )
    } else {
        (
            (m, n),
            (dst_rs, dst_cs),
            (lhs, lhs_rs, lhs_cs),
            (rhs, rhs_rs, rhs_cs),
        )
    };
    macro_rules! run {
        ($t:ty, $kernel:path) => {
            // SAFETY: the caller's contract; `E::DTYPE` says `E` is `$t`, so the casts keep
            // the element type.
            unsafe {
                $kernel()(
                    m,
                    n,
                    k,
                    dst.cast::<$t>().cast_mut(),
                    dst_cs,
                    dst_rs,
                    false,
                    lhs.cast::<$t>(),
                    lhs_cs,
                    lhs_rs,
                    rhs.cast::<$t>(),
                    rhs_cs,
                    rhs_rs,
                    <$t as num_traits::Zero>::zero(),
                    <$t as num_traits::One>::one(),
                    false,
                    false,
                    false,
                    parallelism,
                )
            }
        };
    }
    match E::DTYPE {
        DType::F32 => run!(f32, gemm_f32::gemm::f32::get_gemm_fn),
        DType::F64 => run!(f64, gemm_f64::gemm::f64::get_gemm_fn),
        DType::F16 => run!(half::f16, gemm_f16::gemm::f16::get_gemm_fn),
        other => panic!("gemm has no kernel for {other:?}"),
    }
}

/// `gemm` over every product. Work below `gemm`'s threading threshold stays on the calling
/// thread; above it, products run one after the other, each split across the pool by `gemm`
/// when it is large (see [`BAND_MAX_WORK`]), and otherwise the `batches · m` output rows of all
/// products are cut into one band per thread.
fn gemm_batched<E: Element>(a: &[E], b: &[E], p: &Batched) -> HostBuffer<E> {
    let (m, n, k) = (p.m, p.n, p.k);
    let len = m * n;
    let batches = p.offsets.len();
    let total = batches * len;
    if total == 0 || k == 0 {
        return vec![E::ZERO; total].into();
    }
    // A pooled buffer (no page faults when one of this size was freed before), written by
    // `gemm` through its spare capacity; its length is set once every product is written.
    let mut out = take_buffer::<E>(total);
    let [a_rs, a_cs] = p.a_strides.map(|s| s as isize);
    let [b_rs, b_cs] = p.b_strides.map(|s| s as isize);
    // Rows `row0..row0 + dst.len() / n` of the product whose operands start at `[oa, ob]`,
    // with the rows of A read from `a` itself (through `a_strides`) or from a row-major copy.
    let gemm_rows = |dst: &mut [MaybeUninit<E>],
                     a: &[E],
                     [a_rs, a_cs]: [isize; 2],
                     ob: usize,
                     parallelism: Parallelism| {
        let rows = dst.len() / n;
        debug_assert!(dst.len() == rows * n);
        // One comparison per call: the reads below stay within `a`.
        assert!(a.len() > (rows - 1) * a_rs as usize + (k - 1) * a_cs as usize);
        // SAFETY: `gemm` reads A at `i·a_rs + l·a_cs` of `a` for i < rows, l < k, within
        // `a` (asserted above; `rows ≥ 1` since `dst` is not empty, and callers pass A from
        // the band's first row on, or its row-major copy). It reads B
        // at `ob + l·b_rs + j·b_cs` for l < k, j < n: positions of B's layout, which the
        // caller checked against the storage `b`. It writes `dst[i·n + j]` for i < rows,
        // j < n, all within `dst`. It never reads `dst`, so the slots may be uninitialised,
        // and it writes every one of them (k > 0 here). `E` is f32, f64 or f16 (see
        // `gemm_kernel`).
        unsafe {
            gemm_kernel(
                [rows, n, k],
                [dst.as_mut_ptr().cast::<E>(), a.as_ptr(), b.as_ptr().add(ob)],
                [[n as isize, 1], [a_rs, a_cs], [b_rs, b_cs]],
                parallelism,
            )
        }
    };
    // Both operands along a long contraction with a short side: dot products, unpacked.
    let dots = E::DTYPE == DType::F32 && dot_products::eligible(m, n, k, p.a_strides, p.b_strides);
    let product = |dst: &mut [MaybeUninit<E>],
                   [oa, ob]: [usize; 2],
                   row0: usize,
                   parallelism: Parallelism| {
        let rows = dst.len() / n;
        debug_assert!(row0 + rows <= m);
        if let (true, Some(a), Some(b), Some(dst)) = (
            dots,
            as_type::<E, f32>(a),
            as_type::<E, f32>(b),
            as_type_mut::<MaybeUninit<E>, MaybeUninit<f32>>(dst),
        ) {
            let (a_row, b_col) = (p.a_strides[0], p.b_strides[1]);
            return dot_products::products(a, [oa, a_row], b, [ob, b_col], [row0, n, k], dst);
        }
        let first = oa + row0 * p.a_strides[0];
        if gathers_left_rows::<E>(rows, n, k, p.a_strides[1], parallelism) {
            with_scratch::<E, _>(rows * k, |copy| {
                gather_rows(a, first, p.a_strides, copy, k);
                gemm_rows(dst, copy, [k as isize, 1], ob, parallelism)
            })
        } else {
            gemm_rows(dst, &a[first..], [a_rs, a_cs], ob, parallelism)
        }
    };
    let slots = &mut out.spare_capacity_mut()[..total];
    let pool = pool();
    let threads = num_threads();
    let total_rows = batches * m;
    let parallel = threads > 1
        && p.work().saturating_mul(batches) >= gemm_common::gemm::get_threading_threshold();
    // (Dot products always go in bands: their kernel has no threads of its own.)
    if parallel && !dots && (p.work() >= BAND_MAX_WORK || total_rows < threads * BAND_ROW_ALIGN) {
        // gemm splits its work with rayon's `current_num_threads`/`par_iter`, so inside
        // `install` it runs on the library's pool, with the library's thread count.
        pool.install(|| {
            for (dst, &o) in slots.chunks_mut(len).zip(&p.offsets) {
                product(dst, o, 0, Parallelism::Rayon(threads))
            }
        });
    } else {
        let bands = if parallel { threads } else { 1 };
        let per = total_rows.div_ceil(bands).next_multiple_of(BAND_ROW_ALIGN);
        // Band `t` holds output rows `t·per..` counted across the products; it may end inside
        // one product and start inside another.
        for_each_with_caller(slots.chunks_mut(per * n).enumerate(), |(t, band)| {
            let mut row = t * per;
            let mut rest = band;
            while !rest.is_empty() {
                let (batch, row0) = (row / m, row % m);
                let here = (m - row0).min(rest.len() / n);
                let (dst, tail) = rest.split_at_mut(here * n);
                product(dst, p.offsets[batch], row0, Parallelism::None);
                row += here;
                rest = tail;
            }
        });
    }
    // SAFETY: the chunks of `slots` cover its `total` elements, and `gemm` wrote every
    // element of every chunk (see `product`).
    unsafe { out.set_len(total) };
    out
}

/// Left operands of at most this many bytes are gathered row-major into the thread's
/// [`with_scratch`] buffer when `gemm` would otherwise copy them itself (see
/// [`gathers_left_rows`]); so each thread keeps at most this much per float type.
const SCRATCH_MAX_BYTES: usize = 1 << 20;

/// Whether [`gemm_batched`] copies `rows` rows of a left operand with column stride `a_cs`
/// into the thread's scratch buffer before a single-threaded `gemm` call. `gemm` packs (copies)
/// a left operand whose columns are strided (`a_cs != 1`, e.g. the `xᵀ` of a weight gradient
/// `xᵀ · g`) unless the product has very few columns (under twice its register tile, 48 or
/// 96 rows of `f32`), into a buffer it allocates and frees on every call: a training step's
/// peak memory then holds a copy of `x` (BENCHMARKS.md, session 11). The same copy into a
/// buffer that the thread keeps, as MKL keeps its workspace, costs the same and allocates
/// nothing after the first call. Larger operands are left to `gemm`, whose packing is
/// bounded by its cache blocking; multi-threaded calls too (their packing is shared).
fn gathers_left_rows<E: Element>(
    rows: usize,
    n: usize,
    k: usize,
    a_cs: usize,
    parallelism: Parallelism,
) -> bool {
    a_cs != 1
        && n >= 64
        && matches!(parallelism, Parallelism::None)
        && rows
            .saturating_mul(k)
            .saturating_mul(std::mem::size_of::<E>())
            <= SCRATCH_MAX_BYTES
}

/// Runs `f` on the calling thread's scratch buffer of `E`, resized to `len` elements
/// (contents unspecified). The buffer is kept for the thread's next call: see
/// [`gathers_left_rows`] for why, [`SCRATCH_MAX_BYTES`] for its bound. `E` is f32, f64 or f16.
///
/// The buffer is taken out of the thread's slot for the call and put back after it, so that
/// a call entered again on this thread meanwhile finds the slot empty and works in a buffer
/// of its own instead of panicking on a borrow held across `f`. Today's `f` (a copy on the
/// calling thread, a single-threaded `gemm`) never waits on a pool, where a rayon thread
/// would run other queued work, possibly another product's band; the guard keeps a later
/// parallel `f` from turning that into a panic.
fn with_scratch<E: Element, R>(len: usize, f: impl FnOnce(&mut Vec<E>) -> R) -> R {
    let mut buffer = scratch_slot::<E, _>(std::mem::take);
    // Exactly what is missing, not the doubling of a growing `Vec`: the kept buffer stays
    // within `SCRATCH_MAX_BYTES`.
    buffer.reserve_exact(len.saturating_sub(buffer.len()));
    buffer.resize(len, E::ZERO);
    let result = f(&mut buffer);
    scratch_slot::<E, _>(|slot| {
        if slot.capacity() < buffer.capacity() {
            *slot = buffer;
        }
    });
    result
}

/// Runs `g` on the calling thread's kept scratch buffer of `E` (f32, f64 or f16).
fn scratch_slot<E: Element, R>(g: impl FnOnce(&mut Vec<E>) -> R) -> R {
    type Buffers = (Vec<f32>, Vec<f64>, Vec<half::f16>);
    thread_local! {
        static SCRATCH: std::cell::RefCell<Buffers> = const {
            std::cell::RefCell::new((Vec::new(), Vec::new(), Vec::new()))
        };
    }
    SCRATCH.with_borrow_mut(|(b32, b64, b16)| {
        let any: &mut dyn std::any::Any = match E::DTYPE {
            DType::F32 => b32,
            DType::F64 => b64,
            DType::F16 => b16,
            other => unreachable!("matmul scratch requested for {other}"),
        };
        g(any
            .downcast_mut::<Vec<E>>()
            .expect("the buffer of E's own type"))
    })
}

/// Copies the `rows × k` matrix whose element (i, l) is `a[first + i·rs + l·cs]` into `copy`,
/// row-major, on the calling thread (it runs inside one band of a product, or a product too
/// small to split). A transposed source (`rs < cs`) goes through the tiled transpose of
/// [`super::transpose`] (16 × 16 register tiles): gathered element by element, every read was
/// a new cache line, and the copy took 4.7 % of a transformer training step, tiled 2.9 %,
/// where `gemm`'s own packing of the same operands took about 2 % (`perf record` of
/// benches/peers' `nn_transformer_adamw_b16_s64_m64`, one thread).
fn gather_rows<E: Element>(
    a: &[E],
    first: usize,
    [rs, cs]: [usize; 2],
    copy: &mut Vec<E>,
    k: usize,
) {
    let rows = copy.len() / k;
    let layout = Layout::new(&[rows, k], &[rs, cs], first).expect("a band of a valid operand");
    if let Some(plan) = Plan::new(&layout) {
        copy.clear();
        plan.run(a, &mut copy.spare_capacity_mut()[..rows * k], &Bits, false);
        // SAFETY: `run` wrote all `rows · k` slots (its contract), within the capacity that
        // the buffer had before `clear`.
        unsafe { copy.set_len(rows * k) };
        return;
    }
    for (i, row) in copy.chunks_exact_mut(k).enumerate() {
        let start = first + i * rs;
        for (l, x) in row.iter_mut().enumerate() {
            *x = a[start + l * cs];
        }
    }
}

/// Columns of the output computed together: the `i64` accumulators of one block stay in L1.
const INT_BLOCK: usize = 256;

/// Integer products: for each output row and block of columns, `acc += a[i, l] · b[l, ..]` in
/// `i64` with wrapping arithmetic, then converted (wrapping) to `E`. Rows are split across
/// the pool.
fn int_batched<E: Element>(a: &[E], b: &[E], p: &Batched) -> HostBuffer<E> {
    let (m, n, k) = (p.m, p.n, p.k);
    let rows = p.offsets.len() * m;
    let mut out = vec![E::ZERO; rows * n];
    if out.is_empty() || k == 0 {
        return out.into();
    }
    let [a_rs, a_cs] = p.a_strides;
    let [b_rs, b_cs] = p.b_strides;
    for_each_row_chunk(&mut out, rows, n, |range, chunk| {
        let mut acc = [0i64; INT_BLOCK];
        for (r, dst) in range.zip(chunk.chunks_mut(n)) {
            let [oa, ob] = p.offsets[r / m];
            let a_row = oa + (r % m) * a_rs;
            for j0 in (0..n).step_by(INT_BLOCK) {
                let jn = INT_BLOCK.min(n - j0);
                let acc = &mut acc[..jn];
                acc.fill(0);
                for l in 0..k {
                    let x = a[a_row + l * a_cs].to_i64();
                    if x == 0 {
                        continue;
                    }
                    let start = ob + l * b_rs + j0 * b_cs;
                    if b_cs == 1 {
                        for (s, &y) in acc.iter_mut().zip(&b[start..start + jn]) {
                            *s = s.wrapping_add(x.wrapping_mul(y.to_i64()));
                        }
                    } else {
                        for (j, s) in acc.iter_mut().enumerate() {
                            *s = s.wrapping_add(x.wrapping_mul(b[start + j * b_cs].to_i64()));
                        }
                    }
                }
                for (d, &s) in dst[j0..j0 + jn].iter_mut().zip(acc.iter()) {
                    *d = E::from_i64(s);
                }
            }
        }
    });
    out.into()
}

#[cfg(test)]
mod batched_tests {
    use super::*;

    /// The layouts the ops layer hands over for contiguous operands of shapes `a` and `b`
    /// (both at least 2-D): batch dims broadcast to their common shape.
    fn expanded(a: Layout, b: Layout) -> (Layout, Layout) {
        let (ra, rb) = (a.rank(), b.rank());
        let r = ra.max(rb);
        let batch: Vec<usize> = (0..r - 2)
            .map(|d| {
                let size =
                    |l: &Layout, rl: usize| (d + rl).checked_sub(r).map_or(1, |e| l.sizes()[e]);
                size(&a, ra).max(size(&b, rb))
            })
            .collect();
        let with = |l: &Layout| {
            let rl = l.rank();
            let sizes: Vec<isize> = batch
                .iter()
                .chain(&l.sizes()[rl - 2..])
                .map(|&s| s as isize)
                .collect();
            l.expand(&sizes).unwrap()
        };
        (with(&a), with(&b))
    }

    fn batched_of(a: &[usize], b: &[usize]) -> Batched {
        let (la, lb) = expanded(
            Layout::contiguous(a).unwrap(),
            Layout::contiguous(b).unwrap(),
        );
        batched(&la, &lb)
    }

    #[test]
    fn a_batch_over_a_shared_right_operand_is_one_product() {
        let p = batched_of(&[3, 4, 5, 6], &[6, 7]);
        assert_eq!((p.m, p.n, p.k, p.offsets.len()), (60, 7, 6, 1));
        assert_eq!(p.a_strides, [6, 1]);
        // A transposed batch does not fold.
        let a = Layout::contiguous(&[5, 3, 6])
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let (la, lb) = expanded(a, Layout::contiguous(&[6, 7]).unwrap());
        let p = batched(&la, &lb);
        assert_eq!((p.m, p.offsets.len()), (5, 3));
        assert_eq!(p.offsets, vec![[0, 0], [6, 0], [12, 0]]);
    }

    #[test]
    fn broadcast_batches_repeat_offsets() {
        let p = batched_of(&[2, 1, 2, 3], &[3, 3, 4]);
        assert_eq!(p.offsets.len(), 6);
        let a: Vec<usize> = p.offsets.iter().map(|o| o[0]).collect();
        let b: Vec<usize> = p.offsets.iter().map(|o| o[1]).collect();
        assert_eq!(a, [0, 0, 0, 6, 6, 6]);
        assert_eq!(b, [0, 12, 24, 0, 12, 24]);
    }

    #[test]
    fn empty_products_need_no_offsets() {
        let b = Layout::new(&[1 << 40, 3, 0], &[0, 1, 1], 0).unwrap();
        let (la, lb) = expanded(Layout::contiguous(&[2, 3]).unwrap(), b);
        assert!(batched(&la, &lb).offsets.is_empty());
    }
}

#[cfg(test)]
mod gathered_left_tests {
    use super::*;
    use half::f16;

    /// `Σ_l a[oa + i·ars + l·acs] · b[ob + l·brs + j·bcs]` for every product, in f64.
    fn naive<E: Element>(a: &[E], b: &[E], p: &Batched) -> Vec<f64> {
        let mut out = Vec::new();
        for &[oa, ob] in &p.offsets {
            for i in 0..p.m {
                for j in 0..p.n {
                    let s = (0..p.k)
                        .map(|l| {
                            a[oa + i * p.a_strides[0] + l * p.a_strides[1]].to_f64()
                                * b[ob + l * p.b_strides[0] + j * p.b_strides[1]].to_f64()
                        })
                        .sum::<f64>();
                    out.push(s);
                }
            }
        }
        out
    }

    /// Values that are exact in every float type, as are the products' sums here: small
    /// integers, repeating only every 23 positions.
    fn values<E: Element>(len: usize, seed: usize) -> HostBuffer<E> {
        (0..len)
            .map(|i| E::from_f64(((i * 7 + seed) % 23) as f64 - 11.0))
            .collect()
    }

    /// `xᵀ · g` as a weight gradient takes it: A is a transposed (column-major) `m × k`
    /// view starting at `offset`, with `batches` products of A over one B each.
    fn transposed_left<E: Element>(m: usize, n: usize, k: usize, offset: usize, batches: usize) {
        strided_left::<E>(m, n, k, [1, m], offset, batches)
    }

    /// Products of an `m × k` left operand read with `a_strides` from `offset` (each of the
    /// `batches` products `m · k` positions further on) over contiguous right operands.
    fn strided_left<E: Element>(
        m: usize,
        n: usize,
        k: usize,
        a_strides: [usize; 2],
        offset: usize,
        batches: usize,
    ) {
        let span = (m - 1) * a_strides[0] + (k - 1) * a_strides[1] + 1;
        let a = values::<E>(offset + (batches - 1) * m * k + span, 1);
        let b = values::<E>(batches * k * n, 2);
        let p = Batched {
            m,
            n,
            k,
            a_strides,
            b_strides: [n, 1],
            offsets: (0..batches)
                .map(|t| [offset + t * m * k, t * k * n])
                .collect(),
        };
        let got: Vec<f64> = gemm_batched(&a, &b, &p)
            .iter()
            .map(|x| x.to_f64())
            .collect();
        assert_eq!(got, naive(&a, &b, &p), "{} {m}×{k}·{k}×{n}", E::DTYPE);
    }

    /// Both operands along the contraction (A row-major, B column-major), as a convolution's
    /// weight gradient `g · colsᵀ` takes them: with a long contraction and a narrow side the
    /// kernel's operands are ordered by their rows, not by C's layout; each order, in f32
    /// and f64 (whose sums here are exact) and f16 (within its rounding), against the naive
    /// product.
    #[test]
    fn products_along_the_contraction_give_the_naive_product() {
        fn case<E: Element>(m: usize, n: usize, k: usize, batches: usize) {
            let a = values::<E>(batches * m * k, 3);
            let b = values::<E>(batches * n * k, 4);
            let p = Batched {
                m,
                n,
                k,
                a_strides: [k, 1],
                b_strides: [1, k],
                offsets: (0..batches).map(|t| [t * m * k, t * n * k]).collect(),
            };
            let got: Vec<f64> = gemm_batched(&a, &b, &p)
                .iter()
                .map(|x| x.to_f64())
                .collect();
            let want = naive(&a, &b, &p);
            if E::DTYPE == DType::F16 {
                // f16 rounds each result once (2^-11 relative); sums here reach 10^4.
                let near = got
                    .iter()
                    .zip(&want)
                    .all(|(g, w)| (g - w).abs() <= w.abs() / 1024.0);
                assert!(near, "f16 {m}×{k}·{k}×{n}: {got:?} against {want:?}");
                return;
            }
            assert_eq!(got, want, "{} {m}×{k}·{k}×{n}", E::DTYPE);
        }
        for (m, n, k, batches) in [
            (16, 27, 1024, 3),
            (27, 16, 1024, 2),
            (32, 144, 256, 2),
            (70, 9, 300, 1),
            (64, 288, 64, 2),
        ] {
            case::<f32>(m, n, k, batches);
            case::<f64>(m, n, k, batches);
            case::<f16>(m, n, k.min(256), batches);
        }
    }

    #[test]
    fn gathered_left_operands_give_the_naive_product() {
        // The MLP's weight gradient (784 × 64 · 64 × 256) is gathered; so are offset and
        // batched ones, whose bands start inside a product.
        assert!(gathers_left_rows::<f32>(
            784,
            256,
            64,
            784,
            Parallelism::None
        ));
        transposed_left::<f32>(784, 256, 64, 0, 1);
        transposed_left::<f32>(37, 70, 19, 5, 3);
        transposed_left::<f64>(40, 64, 33, 3, 2);
        transposed_left::<f16>(20, 96, 8, 1, 2);
        // Too few columns (gemm reads A in place) or too large for one band: not gathered,
        // same results (with several threads, the large one's bands may be gathered).
        assert!(!gathers_left_rows::<f32>(37, 63, 19, 37, Parallelism::None));
        transposed_left::<f32>(37, 63, 19, 0, 2);
        assert!(!gathers_left_rows::<f64>(
            600,
            64,
            300,
            600,
            Parallelism::None
        ));
        transposed_left::<f64>(600, 64, 300, 0, 1);
        // Gathered without the tiled transpose (its plan needs 0 < rs < cs): stepped
        // columns of a row-major matrix, one row, a broadcast row.
        strided_left::<f32>(30, 70, 12, [40, 3], 2, 2);
        strided_left::<f64>(1, 80, 9, [1, 5], 0, 1);
        strided_left::<f32>(6, 64, 10, [0, 2], 1, 1);
    }

    #[test]
    fn gathered_products_from_several_threads_at_once() {
        // Bands of different callers' products meet on the pool's threads. A smoke test:
        // when the copy still ran on the pool, it did not catch a borrow held across the
        // scratch call in three runs (re-entry depended on timing); the next test enters
        // the call again deterministically.
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for _ in 0..3 {
                        transposed_left::<f32>(784, 256, 64, t, 1);
                    }
                });
            }
        });
    }

    #[test]
    fn scratch_calls_entered_again_on_the_thread_use_their_own_buffer() {
        with_scratch::<f32, _>(4, |outer| {
            outer.fill(2.0);
            with_scratch::<f32, _>(8, |inner| {
                assert_eq!(inner.len(), 8);
                inner.fill(3.0);
            });
            assert_eq!(outer.as_slice(), &[2.0; 4]);
        });
        // The larger of the two buffers is kept.
        with_scratch::<f32, _>(0, |s| assert!(s.capacity() >= 8));
    }

    #[test]
    fn scratch_buffers_are_kept_per_type_and_grow() {
        with_scratch::<f32, _>(10, |s| s.fill(1.0));
        with_scratch::<f64, _>(4, |s| assert_eq!(s.len(), 4));
        // The f32 buffer kept its contents and grows on demand.
        with_scratch::<f32, _>(12, |s| {
            assert_eq!(s.len(), 12);
            assert_eq!(&s[..10], &[1.0; 10]);
        });
    }
}
