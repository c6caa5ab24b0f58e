//! Tiled copies of transposed and permuted sources into row-major order.
//!
//! Gathering a view whose innermost dim is strided row by row reads one element of every
//! source cache line per output row, so each line is fetched again for every row. Here the
//! output is written in `TILE × TILE` tiles over the innermost dim `l` and the dim `c` of
//! smallest source stride: each tile reads `TILE` source lines and writes `TILE` output
//! lines while they are in L1. Plain copies of 4- and 8-byte elements with a unit source
//! stride in `c` transpose 8 × 8 (4 × 4) blocks in AVX registers.
//!
//! Outputs of 4-byte elements of at least [`STREAM_MIN_BYTES`](super::stream::STREAM_MIN_BYTES)
//! whose rows all start at one alignment have their column blocks shifted so that tiles
//! cover whole aligned 64-byte output lines; such a tile is transposed into an L1 staging
//! tile and its rows written with non-temporal stores (4096² `f32`, 1 thread: 28 → 18 ms;
//! 2 threads: 17 → 10–11 ms).

use super::host_buffer::HostBuffer;
use super::parallel::for_each_row_range;
use super::pool::take as take_buffer;
use super::stream::Store;
use crate::layout::{Coalesced, Layout, contiguous_strides};
use std::mem::MaybeUninit;

/// Side of the square tiles: 16 4-byte elements are one cache line.
const TILE: usize = 16;

/// Length along the innermost dim of the blocks of tiles that one work unit copies. Units go
/// down the tiled dim `c` first, so a block's source lines are read again by the next unit
/// while their pages are in the TLB, instead of every unit running down the whole source
/// (256 against whole rows of tiles or single tiles: BENCHMARKS.md, "Measurements behind
/// design choices").
const L_BLOCK: usize = 256;

/// The coalesced dim to tile with the innermost one when gathering through `walk` (operand
/// 0 the source, operand 1 the row-major output): the dim of smallest non-zero source stride,
/// if that stride is below the innermost dim's source stride, which is neither 0 nor 1.
fn tile_dim(walk: &Coalesced<2>) -> Option<usize> {
    let ss = walk.strides(0);
    let last = ss.len().checked_sub(1)?;
    if ss[last] <= 1 {
        return None;
    }
    (0..last)
        .filter(|&d| ss[d] > 0 && ss[d] < ss[last])
        .min_by_key(|&d| ss[d])
}

/// One tile: `rows × cols` elements, element (i, j) read at `s + i·sc + j·sl` and written at
/// `d + i·oc + j`; `stream`: write whole 64-byte output rows with non-temporal stores where
/// they are aligned (see [`super::stream`]).
#[derive(Clone, Copy)]
pub struct Tile {
    s: usize,
    d: usize,
    rows: usize,
    cols: usize,
    sc: usize,
    sl: usize,
    oc: usize,
    stream: bool,
}

/// How the elements of one tile are copied.
pub trait TileCopy<E, F>: Sync {
    /// Writes every element of `t`.
    ///
    /// # Safety
    /// Every source and destination position of `t` is in bounds (`src` and the buffer behind
    /// `dst`), and no other thread accesses the tile's destination positions meanwhile.
    unsafe fn copy(&self, src: &[E], dst: *mut MaybeUninit<F>, t: Tile);
}

/// Copies converting each element with a function.
pub struct Mapped<'a, G>(pub &'a G);

impl<E: Copy + Sync, F, G: Fn(E) -> F + Sync> TileCopy<E, F> for Mapped<'_, G> {
    unsafe fn copy(&self, src: &[E], dst: *mut MaybeUninit<F>, t: Tile) {
        for i in 0..t.rows {
            let (s, d) = (t.s + i * t.sc, t.d + i * t.oc);
            for j in 0..t.cols {
                // SAFETY: in bounds by the caller's contract.
                unsafe { (*dst.add(d + j)).write((self.0)(*src.get_unchecked(s + j * t.sl))) };
            }
        }
    }
}

/// Plain copies, with the AVX block transposes where they apply.
pub struct Bits;

impl<E: Copy + Sync> TileCopy<E, E> for Bits {
    unsafe fn copy(&self, src: &[E], dst: *mut MaybeUninit<E>, t: Tile) {
        #[cfg(target_arch = "x86_64")]
        if t.sc == 1 && t.rows == TILE && t.cols == TILE && std::is_x86_feature_detected!("avx") {
            let (s, d) = (src.as_ptr().wrapping_add(t.s), dst.wrapping_add(t.d));
            // SAFETY: AVX is present; the tile is in bounds by the caller's contract; the
            // kernels move bits, which is a copy for every `Copy` type of that size. The
            // streamed kernel's rows are 64-byte aligned: the first is (checked), and the row
            // stride is a multiple of 16 elements of 4 bytes.
            match std::mem::size_of::<E>() {
                4 if t.stream && (d as usize).is_multiple_of(64) && t.oc.is_multiple_of(TILE) => {
                    return unsafe { x86::tile_32_streamed(s.cast(), t.sl, d.cast(), t.oc) };
                }
                4 => return unsafe { x86::tile_32(s.cast(), t.sl, d.cast(), t.oc) },
                8 => return unsafe { x86::tile_64(s.cast(), t.sl, d.cast(), t.oc) },
                _ => {}
            }
        }
        // SAFETY: the caller's contract.
        unsafe { Mapped(&|x: E| x).copy(src, dst, t) }
    }
}

/// The elements of `layout` over `src` in row-major order, copied tile by tile with `tile`
/// into a buffer from the buffer pool; `None` when [`Plan::new`] finds nothing to tile.
pub fn tiled_to_vec<E: Sync, F: Send>(
    src: &[E],
    layout: &Layout,
    tile: &impl TileCopy<E, F>,
) -> Option<HostBuffer<F>> {
    let plan = Plan::new(layout)?;
    let n = layout.numel();
    let mut out: HostBuffer<F> = take_buffer(n);
    plan.run(src, &mut out.spare_capacity_mut()[..n], tile, true);
    // SAFETY: `run` writes all `n` positions.
    unsafe { out.set_len(n) };
    Some(out)
}

/// How a layout is copied in tiles: the coalesced walk of source and row-major output, and
/// the dim `c` tiled together with the innermost dim `l`.
pub struct Plan {
    walk: Coalesced<2>,
    c: usize,
}

impl Plan {
    /// A plan for `layout`, or `None` when it is empty, its innermost dim is contiguous or
    /// broadcast in the source, or no dim has a smaller source stride to tile it with.
    pub fn new(layout: &Layout) -> Option<Plan> {
        if layout.numel() == 0 {
            return None;
        }
        let out_strides = contiguous_strides(layout.sizes()).expect("numel is checked in layouts");
        let walk = Coalesced::new(
            layout.sizes(),
            [layout.strides(), &out_strides],
            [layout.offset(), 0],
        );
        let c = tile_dim(&walk)?;
        Some(Plan { walk, c })
    }

    /// Writes every element of the layout, in row-major order, to `dst` (exactly `numel`
    /// slots), tile rows at different outer indices in parallel when `parallel` and the work
    /// is large enough, else all on the calling thread.
    pub fn run<E: Sync, F: Send>(
        &self,
        src: &[E],
        dst: &mut [MaybeUninit<F>],
        tile: &impl TileCopy<E, F>,
        parallel: bool,
    ) {
        let (walk, c) = (&self.walk, self.c);
        let n = dst.len();
        let sizes = walk.sizes();
        assert_eq!(
            sizes.iter().product::<usize>(),
            n,
            "the destination fits the layout"
        );
        let (ss, os) = (walk.strides(0), walk.strides(1));
        let l = sizes.len() - 1;
        let (size_c, size_l) = (sizes[c], sizes[l]);
        let (sc, sl, oc) = (ss[c], ss[l], os[c]);
        debug_assert_eq!(os[l], 1);
        let outer: Vec<usize> = (0..l).filter(|&d| d != c).collect();
        let c_tiles = size_c.div_ceil(TILE);
        let bl = L_BLOCK.min(size_l);
        // Large outputs are streamed in whole aligned lines. Every output row starts at the
        // same alignment when all output strides but the innermost are multiples of a tile,
        // so the column blocks start `shift` columns in, where the first aligned line begins,
        // with the columns before it as a block of their own.
        let stream = Store::wanted::<F>(n)
            && size_of::<F>() * TILE == 64
            && (0..l).all(|d| os[d] % TILE == 0);
        let shift = if stream {
            let misaligned = dst.as_ptr() as usize % 64;
            ((64 - misaligned) % 64 / size_of::<F>()).min(size_l)
        } else {
            0
        };
        let head = usize::from(shift > 0);
        let l_blocks = head + (size_l - shift).div_ceil(bl);
        // Columns of block `lb`.
        let block = |lb: usize| {
            if lb < head {
                0..shift
            } else {
                let start = shift + (lb - head) * bl;
                start..(start + bl).min(size_l)
            }
        };
        let units = outer.iter().map(|&d| sizes[d]).product::<usize>() * l_blocks * c_tiles;
        let dst = SharedOut(dst.as_mut_ptr());
        let body = |range: std::ops::Range<usize>| {
            let dst = &dst; // the whole (Sync) wrapper, not its raw-pointer field
            for u in range {
                // Unit `u`: the tiles of one tile of `c` and one block of `l`, at one outer
                // index; consecutive units go down `c`.
                let i0 = (u % c_tiles) * TILE;
                let lb = (u / c_tiles) % l_blocks;
                let mut o = u / c_tiles / l_blocks;
                let (mut s0, mut d0) = (walk.offsets()[0] + i0 * sc, i0 * oc);
                for &d in outer.iter().rev() {
                    let i = o % sizes[d];
                    o /= sizes[d];
                    s0 += i * ss[d];
                    d0 += i * os[d];
                }
                let rows = TILE.min(size_c - i0);
                let cols_range = block(lb);
                let l_end = cols_range.end;
                for j0 in cols_range.step_by(TILE) {
                    let cols = TILE.min(l_end - j0);
                    let t = Tile {
                        s: s0 + j0 * sl,
                        d: d0 + j0,
                        rows,
                        cols,
                        sc,
                        sl,
                        oc,
                        stream,
                    };
                    // The tile's last element has the largest position in both buffers
                    // (strides are non-negative): checking it bounds-checks the whole tile.
                    assert!(t.s + (rows - 1) * sc + (cols - 1) * sl < src.len());
                    assert!(t.d + (rows - 1) * oc + cols <= n);
                    // SAFETY: in bounds (checked above). The tile's output positions belong
                    // to this unit alone (its outer index, its tile of `c`), and each unit is
                    // handed to one thread once.
                    unsafe { tile.copy(src, dst.0, t) };
                }
            }
            if stream {
                super::stream::fence();
            }
        };
        if parallel {
            for_each_row_range(units, TILE * bl, body);
        } else {
            body(0..units);
        }
        // The units cover every outer index and every tile of `c`, and each writes all
        // `size_l` columns of its rows: all `n` positions of `dst` are written.
    }
}

/// A pointer into a buffer that several threads write at disjoint positions.
struct SharedOut<F>(*mut MaybeUninit<F>);
// SAFETY: only used to write disjoint elements from different threads (see the uses);
// `F: Send` lets the written values pass to the buffer's owner.
unsafe impl<F: Send> Send for SharedOut<F> {}
unsafe impl<F: Send> Sync for SharedOut<F> {}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::TILE;
    use std::arch::x86_64::*;

    /// A 16 × 16 tile of 4-byte elements as four 8 × 8 register transposes: source column j
    /// (8 elements of rows i at `src + j·sl`, contiguous) becomes element j of output rows i.
    ///
    /// # Safety
    /// AVX is available; `src + i + j·sl` and `dst + i·oc + j` are valid for i, j < 16.
    #[target_feature(enable = "avx")]
    pub unsafe fn tile_32(src: *const f32, sl: usize, dst: *mut f32, oc: usize) {
        for bj in (0..TILE).step_by(8) {
            for bi in (0..TILE).step_by(8) {
                // SAFETY: within the tile, by the contract.
                unsafe { block_8x8(src.add(bi + bj * sl), sl, dst.add(bi * oc + bj), oc) }
            }
        }
    }

    #[inline]
    #[target_feature(enable = "avx")]
    unsafe fn block_8x8(src: *const f32, sl: usize, dst: *mut f32, oc: usize) {
        // SAFETY (whole body): 8 loads of 8 elements at `src + j·sl` and 8 stores at
        // `dst + i·oc`, all within the caller's tile.
        unsafe {
            macro_rules! r {
                ($j:expr) => {
                    _mm256_loadu_ps(src.add($j * sl))
                };
            }
            let (r0, r1, r2, r3) = (r!(0), r!(1), r!(2), r!(3));
            let (r4, r5, r6, r7) = (r!(4), r!(5), r!(6), r!(7));
            let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
            let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
            let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
            let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            macro_rules! w {
                ($i:expr, $v:expr) => {
                    _mm256_storeu_ps(dst.add($i * oc), $v)
                };
            }
            w!(0, _mm256_permute2f128_ps::<0x20>(s0, s4));
            w!(1, _mm256_permute2f128_ps::<0x20>(s1, s5));
            w!(2, _mm256_permute2f128_ps::<0x20>(s2, s6));
            w!(3, _mm256_permute2f128_ps::<0x20>(s3, s7));
            w!(4, _mm256_permute2f128_ps::<0x31>(s0, s4));
            w!(5, _mm256_permute2f128_ps::<0x31>(s1, s5));
            w!(6, _mm256_permute2f128_ps::<0x31>(s2, s6));
            w!(7, _mm256_permute2f128_ps::<0x31>(s3, s7));
        }
    }

    /// [`tile_32`] through a 1 KiB staging tile in L1, whose 16 rows of 64 bytes are then
    /// written with non-temporal stores (one 64-byte store with AVX-512, else two 32-byte).
    ///
    /// # Safety
    /// As for [`tile_32`]; in addition every output row `dst + i·oc` is 64-byte aligned.
    #[target_feature(enable = "avx")]
    pub unsafe fn tile_32_streamed(src: *const f32, sl: usize, dst: *mut f32, oc: usize) {
        let mut stage = [0.0f32; TILE * TILE];
        // SAFETY: the source is the caller's tile; `stage` holds the 16 × 16 output tile.
        unsafe { tile_32(src, sl, stage.as_mut_ptr(), TILE) };
        let avx512 = std::is_x86_feature_detected!("avx512f");
        for (i, row) in stage.chunks_exact(TILE).enumerate() {
            let (d, r) = (
                dst.wrapping_add(i * oc).cast::<u8>(),
                row.as_ptr().cast::<u8>(),
            );
            // SAFETY: `d` is an aligned 64-byte output row inside the caller's tile; `r` is
            // one row of `stage`; the CPU has AVX-512F (checked) or AVX (the contract).
            unsafe {
                if avx512 {
                    crate::backend::cpu::stream::x86::stream64_avx512(d, r)
                } else {
                    crate::backend::cpu::stream::x86::stream64_avx(d, r)
                }
            }
        }
    }

    /// A 16 × 16 tile of 8-byte elements as sixteen 4 × 4 register transposes.
    ///
    /// # Safety
    /// As for [`tile_32`].
    #[target_feature(enable = "avx")]
    pub unsafe fn tile_64(src: *const f64, sl: usize, dst: *mut f64, oc: usize) {
        for bj in (0..TILE).step_by(4) {
            for bi in (0..TILE).step_by(4) {
                // SAFETY: within the tile, by the contract.
                unsafe {
                    let (src, dst) = (src.add(bi + bj * sl), dst.add(bi * oc + bj));
                    let r0 = _mm256_loadu_pd(src);
                    let r1 = _mm256_loadu_pd(src.add(sl));
                    let r2 = _mm256_loadu_pd(src.add(2 * sl));
                    let r3 = _mm256_loadu_pd(src.add(3 * sl));
                    let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
                    let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
                    _mm256_storeu_pd(dst, _mm256_permute2f128_pd::<0x20>(t0, t2));
                    _mm256_storeu_pd(dst.add(oc), _mm256_permute2f128_pd::<0x20>(t1, t3));
                    _mm256_storeu_pd(dst.add(2 * oc), _mm256_permute2f128_pd::<0x31>(t0, t2));
                    _mm256_storeu_pd(dst.add(3 * oc), _mm256_permute2f128_pd::<0x31>(t1, t3));
                }
            }
        }
    }
}
