//! Host-side launch preparation: layouts packed for the kernels, grid sizes, scalar arguments.
//! Pure functions, unit-tested without a GPU.

use super::rt::{DeviceRepr, LaunchConfig};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};

/// The most dims a kernel layout holds after coalescing; every kernel program defines
/// `NT_MAX_DIMS` from it (`kernels::common`).
pub const MAX_DIMS: usize = 16;

/// Threads per block of elementwise kernels.
pub const BLOCK: u32 = 256;

/// Threads per block of the row kernels; every kernel program defines `NT_REDUCE_THREADS`
/// from it (`kernels::common`).
pub const ROW_BLOCK: u32 = 256;

/// Entries per tile of the sort kernel (`sort.cu`), sorted by one block of `SORT_TILE / 4`
/// threads in shared memory; every kernel program defines `NT_SORT_TILE` from it. A power of
/// two whose keys and tile positions (`int`) fit the 48 KiB of static shared memory a block
/// gets without opting in: 4096 × (8 + 4) bytes for `f64` keys. Rows up to this long are
/// sorted by the tile pass alone.
pub const SORT_TILE: u32 = 4096;

/// The most blocks launched; grid-stride loops cover the rest (the hardware limit is 2^31 - 1).
pub const MAX_BLOCKS: u32 = 1 << 20;

/// `NtLayout` of `common.cuh`, passed to kernels by value: element `i` (row-major over
/// `sizes[..rank]`) is at `offset + Σ index_d · strides[d]`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLayout {
    sizes: [u64; MAX_DIMS],
    strides: [u64; MAX_DIMS],
    offset: u64,
    rank: u32,
    /// [`KernelLayout::CONTIGUOUS`] and [`KernelLayout::INDEX32`], or'ed.
    flags: u32,
}

// SAFETY: `KernelLayout` is `repr(C)` plain data whose field order, types and padding (none:
// 8-byte fields, then two 4-byte fields) match `NtLayout` in `common.cuh`.
unsafe impl DeviceRepr for KernelLayout {}

impl KernelLayout {
    /// Flag: element `i` is at `offset + i` (the kernel skips the index arithmetic).
    pub const CONTIGUOUS: u32 = 1;
    /// Flag: the element count fits 32 bits, so every linear index and size does and the
    /// kernel divides in 32 bits (several times cheaper than 64-bit division on a GPU).
    pub const INDEX32: u32 = 2;

    /// Packs sizes, strides and offset; fails beyond [`MAX_DIMS`] dims.
    pub fn new(
        op: &'static str,
        sizes: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<KernelLayout> {
        debug_assert_eq!(sizes.len(), strides.len());
        if sizes.len() > MAX_DIMS {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!(
                    "CUDA kernels take at most {MAX_DIMS} dims after merging contiguous ones; \
                     this layout has {} (sizes {sizes:?}, strides {strides:?})",
                    sizes.len()
                ),
            ));
        }
        let mut l = KernelLayout {
            sizes: [1; MAX_DIMS],
            strides: [0; MAX_DIMS],
            offset: offset as u64,
            rank: sizes.len() as u32,
            flags: 0,
        };
        for (d, (&size, &stride)) in sizes.iter().zip(strides).enumerate() {
            l.sizes[d] = size as u64;
            l.strides[d] = stride as u64;
        }
        let contiguous = match sizes.len() {
            0 => true,
            1 => strides[0] == 1,
            _ => false,
        };
        let numel = sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s as u64));
        let index32 = numel.is_some_and(|n| n <= u32::MAX as u64);
        l.flags =
            if contiguous { Self::CONTIGUOUS } else { 0 } | if index32 { Self::INDEX32 } else { 0 };
        Ok(l)
    }

    /// Whether the kernel skips the index arithmetic (and takes its contiguous fast path).
    pub fn is_contiguous(&self) -> bool {
        self.flags & Self::CONTIGUOUS != 0
    }

    /// This layout with the 32-bit index path turned off, so tests can compare both paths.
    #[cfg(test)]
    pub fn with_64_bit_indices(mut self) -> KernelLayout {
        self.flags &= !Self::INDEX32;
        self
    }

    /// The storage position of linear index `i`, computed as the kernels do.
    #[cfg(test)]
    pub fn position(&self, mut i: u64) -> u64 {
        if self.is_contiguous() {
            return self.offset + i;
        }
        let mut pos = self.offset;
        for d in (0..self.rank as usize).rev() {
            pos = pos.wrapping_add((i % self.sizes[d]).wrapping_mul(self.strides[d]));
            i /= self.sizes[d];
        }
        pos
    }
}

/// Merges dims for a joint traversal of `N` operands that share `sizes`: drops size-1 dims and
/// merges a dim into the one before it where every operand allows it. Row-major order of the
/// result is row-major order of the input. Returns the merged sizes and per-operand strides.
pub fn coalesce<const N: usize>(
    sizes: &[usize],
    strides: [&[usize]; N],
) -> (Vec<usize>, [Vec<usize>; N]) {
    let mut out_sizes: Vec<usize> = Vec::with_capacity(sizes.len());
    let mut out_strides: [Vec<usize>; N] = std::array::from_fn(|_| Vec::new());
    for (d, &size) in sizes.iter().enumerate() {
        if size == 1 {
            continue;
        }
        if let Some(last) = out_sizes.last_mut() {
            // Strides are taken modulo 2^64, as the kernels do (a wrapped stride walks
            // backwards), so the merge test wraps too.
            let mergeable =
                (0..N).all(|k| out_strides[k].last() == Some(&strides[k][d].wrapping_mul(size)));
            if mergeable {
                *last *= size;
                for k in 0..N {
                    *out_strides[k].last_mut().expect("same length as sizes") = strides[k][d];
                }
                continue;
            }
        }
        out_sizes.push(size);
        for k in 0..N {
            out_strides[k].push(strides[k][d]);
        }
    }
    (out_sizes, out_strides)
}

/// Kernel layouts for `N` operands of the same `sizes` traversed together by linear index.
///
/// Each operand is coalesced on its own: every kernel computes each operand's position from
/// the shared row-major index, and coalescing keeps row-major order, so a contiguous operand
/// becomes a single dim (and skips the index arithmetic) whatever the others are.
pub fn kernel_layouts<const N: usize>(
    op: &'static str,
    sizes: &[usize],
    strides: [&[usize]; N],
    offsets: [usize; N],
) -> Result<[KernelLayout; N]> {
    let mut out = [KernelLayout::new(op, &[], &[], 0)?; N];
    for k in 0..N {
        let (merged, [st]) = coalesce(sizes, [strides[k]]);
        out[k] = KernelLayout::new(op, &merged, &st, offsets[k])?;
    }
    Ok(out)
}

/// Launch configuration of an elementwise kernel over `n > 0` elements: [`BLOCK`] threads per
/// block, enough blocks for one element per thread up to [`MAX_BLOCKS`] (grid-stride loops
/// do the rest).
pub fn elementwise_config(n: usize) -> LaunchConfig {
    elementwise_config_for(n, false)
}

/// [`elementwise_config`] for a kernel with a contiguous fast path (`NT_CONTIGUOUS_FOR_EACH4`
/// in `common.cuh`), which takes that path when `contiguous`: then, from
/// [`QUARTER_THREADS_FROM`] elements, a quarter of a thread per element, so that each thread
/// has four reads in flight. On an H200, 64 Mi-element `exp`, `add` and casts with a thread
/// per element and one read each ran at 1.8-3.2 TB/s, PyTorch (four elements per thread) at
/// 3.7-4.0 (BENCHMARKS.md, "CUDA"). Strided layouts keep a thread per element: their loop
/// has one read in flight per thread, and fewer threads would only serialise it.
pub fn elementwise_config_for(n: usize, contiguous: bool) -> LaunchConfig {
    debug_assert!(n > 0);
    let per_thread = if contiguous && n >= QUARTER_THREADS_FROM {
        4
    } else {
        1
    };
    let blocks = n
        .div_ceil(BLOCK as usize * per_thread)
        .clamp(1, MAX_BLOCKS as usize) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Elements from which contiguous elementwise kernels run a quarter of a thread per element:
/// 1 Mi, where that is still 1024 blocks of [`BLOCK`], several per multiprocessor of a large
/// GPU (132 on an H100 or H200). Fewer elements keep a thread each: parallelism matters more
/// than reads in flight there.
pub const QUARTER_THREADS_FROM: usize = 1 << 20;

/// Launch configuration of a row kernel (reductions, softmax) over `rows > 0` rows: one block
/// of [`ROW_BLOCK`] threads per row, up to [`MAX_BLOCKS`] blocks.
pub fn rows_config(rows: usize) -> LaunchConfig {
    debug_assert!(rows > 0);
    LaunchConfig {
        grid_dim: (rows.clamp(1, MAX_BLOCKS as usize) as u32, 1, 1),
        block_dim: (ROW_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Launch configuration of the sort kernel's tile pass over `tiles > 0` tiles of rows of `n`
/// entries: one block per tile, up to [`MAX_BLOCKS`] blocks (the kernel's loop does the rest),
/// of a quarter as many threads as the tile's bitonic network has entries (each thread holds
/// four and compares two pairs at every step), at least a warp: 1024 threads for full tiles
/// of [`SORT_TILE`], 32 for rows of up to 128 (a full tile's block on a short row would leave
/// almost all of it idle at every step).
pub fn sort_tile_config(tiles: usize, n: usize) -> LaunchConfig {
    debug_assert!(tiles > 0);
    let network = n.clamp(2, SORT_TILE as usize).next_power_of_two() as u32;
    LaunchConfig {
        grid_dim: (tiles.clamp(1, MAX_BLOCKS as usize) as u32, 1, 1),
        block_dim: ((network / 4).clamp(32, SORT_TILE / 4), 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Threads per row of a reduction (`reduce.cu`): a power of two dividing [`ROW_BLOCK`], so a
/// block reduces `ROW_BLOCK / group` rows side by side. `rows` rows of `rlen` elements;
/// `rows_adjacent` when consecutive rows start at consecutive elements (the reduced dim is not
/// the innermost: `sum(0)` of a row-major matrix).
///
/// - Rows adjacent in memory, at least a warp of them: one thread per row, so that the threads
///   of a warp read adjacent elements at every step (parallelism, where rows are too few,
///   comes from splitting the rows: [`reduce_splits`]).
/// - Long rows (or few rows): the whole block on a row.
/// - Otherwise the smallest power of two covering the row, at most a warp (32): short rows do
///   not leave most of a block idle.
///
/// For example: `sum(0)` of a row-major `[8192, 8192]` matrix, a thread per row; `sum(-1)` of
/// an `[8, 2^20]` one, a block per row; `sum(-1)` of a `[4096, 10]` one, 16 threads per row.
/// Measured on an H200 (BENCHMARKS.md, "CUDA"): column sums with a block per column read
/// 690 GB/s, with a thread per column and split rows ~3 TB/s.
pub fn reduce_group(rows: usize, rlen: usize, rows_adjacent: bool) -> u32 {
    const WARP: usize = 32;
    if rows_adjacent && rows >= WARP {
        return 1;
    }
    if rlen >= 1024 || (rows < 64 && rlen > WARP) {
        return ROW_BLOCK;
    }
    rlen.next_power_of_two().clamp(1, WARP) as u32
}

/// Threads a reduction should keep busy: an H200 or H100 holds 132 × 2048 resident threads.
const REDUCE_BUSY_THREADS: usize = 1 << 18;

/// How many consecutive chunks each row of a reduction is split into (`reduce.cu`), each
/// reduced by its own block into a partial result that a second pass combines: 1 when the
/// rows alone keep [`REDUCE_BUSY_THREADS`] threads busy, else enough chunks to do so, each at
/// least 32 elements per thread. `rows` rows of `rlen`, `group` threads per row
/// ([`reduce_group`]). One block of 256 threads on the 64 Mi elements of a whole-tensor sum
/// read 3 GB/s on an H200 (one multiprocessor waiting on memory); split 1024 ways, the sum
/// reads at the copy bandwidth.
pub fn reduce_splits(rows: usize, rlen: usize, group: u32) -> usize {
    const MIN_PER_THREAD: usize = 32;
    let threads = rows.saturating_mul(group as usize);
    if threads >= REDUCE_BUSY_THREADS {
        return 1;
    }
    let by_parallelism = REDUCE_BUSY_THREADS / threads.max(1);
    let by_length = rlen / (group as usize * MIN_PER_THREAD);
    by_parallelism.min(by_length).max(1)
}

/// Launch configuration of a reduction of `rows > 0` rows, `group` threads each
/// ([`reduce_group`]), each row split into `splits` chunks ([`reduce_splits`]): blocks of
/// [`ROW_BLOCK`] threads, one per (`ROW_BLOCK / group` rows, chunk) up to [`MAX_BLOCKS`] (the
/// kernel's loop does the rest).
pub fn reduce_config(rows: usize, group: u32, splits: usize) -> LaunchConfig {
    debug_assert!(rows > 0 && splits > 0 && group.is_power_of_two() && group <= ROW_BLOCK);
    let per_block = (ROW_BLOCK / group) as usize;
    LaunchConfig {
        grid_dim: (
            rows.div_ceil(per_block)
                .saturating_mul(splits)
                .clamp(1, MAX_BLOCKS as usize) as u32,
            1,
            1,
        ),
        block_dim: (ROW_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Whether a running sum or product (`select.cu`) of `lanes` lanes of `len` elements runs one
/// block per lane (a parallel scan in chunks of [`ROW_BLOCK`]) rather than one thread per lane
/// walking its elements in order: when there are too few lanes to occupy a GPU with one
/// thread each and the lanes are longer than a warp. Not yet measured on a GPU.
pub fn scan_block_per_lane(lanes: usize, len: usize) -> bool {
    lanes < 1 << 14 && len > 32
}

/// `NtWindow` of `window.cu`, passed by value: a sliding window's geometry over an `h × w`
/// input with `oh × ow` positions.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelWindow {
    h: u64,
    w: u64,
    oh: u64,
    ow: u64,
    kh: u64,
    kw: u64,
    sh: u64,
    sw: u64,
    ph: u64,
    pw: u64,
    dh: u64,
    dw: u64,
}

// SAFETY: `KernelWindow` is `repr(C)` plain data, twelve `u64`s without padding, in the order
// of `NtWindow`'s fields in `window.cu`.
unsafe impl DeviceRepr for KernelWindow {}

impl KernelWindow {
    /// The geometry of `window` over an `h × w` input, or the errors of
    /// [`Window2d::output_size`](crate::layout::Window2d::output_size) (named `op`).
    pub fn new(
        op: &'static str,
        window: &crate::layout::Window2d,
        (h, w): (usize, usize),
    ) -> Result<KernelWindow> {
        let (oh, ow) = window.output_size_for(op, h, w)?;
        let u = |v: usize| v as u64;
        Ok(KernelWindow {
            h: u(h),
            w: u(w),
            oh: u(oh),
            ow: u(ow),
            kh: u(window.kernel.0),
            kw: u(window.kernel.1),
            sh: u(window.stride.0),
            sw: u(window.stride.1),
            ph: u(window.padding.0),
            pw: u(window.padding.1),
            dh: u(window.dilation.0),
            dw: u(window.dilation.1),
        })
    }

    /// The window's positions `(OH, OW)`.
    pub fn positions(&self) -> (usize, usize) {
        (self.oh as usize, self.ow as usize)
    }
}

/// The bytes of `value`, little-endian and zero-extended to 64 bits (`from_bits` in
/// `common.cuh` reads them back).
pub fn scalar_bits<E: Element>(value: E) -> u64 {
    let size = std::mem::size_of::<E>();
    debug_assert!(size <= 8);
    let mut bytes = [0u8; 8];
    // SAFETY: every `Element` type is plain data of at most 8 bytes without padding, so all
    // `size` bytes of `value` are initialised and may be read as `u8`.
    let src = unsafe { std::slice::from_raw_parts(&value as *const E as *const u8, size) };
    bytes[..size].copy_from_slice(src);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use half::{bf16, f16};

    fn positions(l: &Layout) -> Vec<usize> {
        let mut out = vec![];
        crate::layout::for_each_block(l, |b| {
            out.extend((0..b.len).map(|i| b.starts[0] + i * b.strides[0]))
        });
        out
    }

    #[test]
    fn kernel_positions_match_the_layout() {
        let base = Layout::contiguous(&[2, 3, 4, 5]).unwrap();
        let views = [
            base.clone(),
            base.permute(&[2, 0, 3, 1]).unwrap(),
            base.narrow(2, 1, 2).unwrap().transpose(0, 3).unwrap(),
            Layout::new(&[3, 1, 4], &[0, 7, 2], 5).unwrap(), // broadcast dim and size-1 dim
            Layout::new(&[], &[], 9).unwrap(),
        ];
        for l in &views {
            let [k] = kernel_layouts("test", l.sizes(), [l.strides()], [l.offset()]).unwrap();
            let got: Vec<usize> = (0..l.numel() as u64)
                .map(|i| k.position(i) as usize)
                .collect();
            assert_eq!(got, positions(l), "{l:?}");
        }
    }

    #[test]
    fn the_32_bit_index_path_is_taken_exactly_when_the_element_count_fits() {
        let flags = |sizes: &[usize]| {
            let strides = vec![3; sizes.len()];
            KernelLayout::new("test", sizes, &strides, 0).unwrap().flags
        };
        assert_eq!(flags(&[3, 4]), KernelLayout::INDEX32);
        assert_eq!(flags(&[65535, 65537]), KernelLayout::INDEX32); // 2^32 - 1 elements
        assert_eq!(flags(&[65536, 65536]), 0); // 2^32
        assert_eq!(flags(&[1 << 20, 1 << 20, 1 << 30]), 0); // a broadcast view past 2^64
        assert_eq!(flags(&[]), KernelLayout::CONTIGUOUS | KernelLayout::INDEX32);
        let k = KernelLayout::new("test", &[7], &[1], 2).unwrap();
        assert_eq!(k.with_64_bit_indices().flags, KernelLayout::CONTIGUOUS);
    }

    #[test]
    fn coalescing_merges_jointly_contiguous_dims_only() {
        // dst contiguous [2, 3, 4]; src the same but with dim 0 transposed away
        let (sizes, [a, b]) = coalesce(&[2, 3, 4], [&[12, 4, 1], &[1, 2, 6]]);
        assert_eq!(sizes, vec![2, 3, 4]);
        assert_eq!((a, b), (vec![12, 4, 1], vec![1, 2, 6]));
        // dims 1 and 2 of the second operand are contiguous with each other
        let (sizes, [_, b]) = coalesce(&[2, 3, 4], [&[12, 4, 1], &[1, 8, 2]]);
        assert_eq!((sizes, b), (vec![2, 12], vec![1, 2]));
        let (sizes, [a, b]) = coalesce(&[2, 1, 3, 4], [&[12, 99, 4, 1], &[24, 5, 8, 2]]);
        assert_eq!(sizes, vec![24]);
        assert_eq!((a, b), (vec![1], vec![2]));
        let [k] = kernel_layouts("t", &[5, 6], [&[6, 1]], [3]).unwrap();
        assert_eq!((k.rank, k.is_contiguous(), k.position(7)), (1, true, 10));
        let [k] = kernel_layouts("t", &[5, 6], [&[1, 5]], [0]).unwrap();
        assert!(!k.is_contiguous());
        // operands are merged independently: the contiguous one skips the index arithmetic
        let [c, t] = kernel_layouts("t", &[2, 3, 4], [&[12, 4, 1], &[1, 2, 6]], [0, 0]).unwrap();
        assert_eq!((c.rank, c.is_contiguous(), t.rank), (1, true, 3));
        for i in 0..24 {
            assert_eq!(c.position(i), i);
        }
    }

    #[test]
    fn wrapped_strides_walk_backwards_and_still_coalesce() {
        // `flip` of dims 0 and 2 of a contiguous [2, 3, 4]: strides -12, 4, -1 modulo 2^64,
        // starting at the last element of each flipped dim.
        let neg = |s: usize| s.wrapping_neg();
        let strides = [neg(12), 4, neg(1)];
        let [k] = kernel_layouts("flip", &[2, 3, 4], [&strides], [12 + 3]).unwrap();
        let got: Vec<u64> = (0..24).map(|i| k.position(i)).collect();
        let mut want = vec![];
        for a in (0..2u64).rev() {
            for b in 0..3u64 {
                for c in (0..4u64).rev() {
                    want.push(a * 12 + b * 4 + c);
                }
            }
        }
        assert_eq!(got, want);
        // a fully reversed contiguous view merges into one dim of stride -1
        let [k] = kernel_layouts("flip", &[2, 3], [&[neg(3), neg(1)]], [5]).unwrap();
        assert_eq!((k.rank, k.strides[0]), (1, u64::MAX));
        assert_eq!(
            (0..6).map(|i| k.position(i)).collect::<Vec<_>>(),
            [5, 4, 3, 2, 1, 0]
        );
    }

    #[test]
    fn too_many_dims_is_an_error_not_a_panic() {
        let sizes = vec![2; MAX_DIMS + 1];
        let strides: Vec<usize> = (0..=MAX_DIMS).map(|d| 1 << (2 * d)).collect(); // never mergeable
        let err = kernel_layouts("contiguous", &sizes, [&strides], [0]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("at most 16 dims"), "{err}");
        // 17 dims that merge are fine
        let c = crate::layout::contiguous_strides(&sizes).unwrap();
        assert!(kernel_layouts("contiguous", &sizes, [&c], [0]).is_ok());
    }

    #[test]
    fn kernel_layout_is_packed_like_the_c_struct() {
        assert_eq!(std::mem::size_of::<KernelLayout>(), 16 * 8 * 2 + 8 + 4 + 4);
        assert_eq!(std::mem::align_of::<KernelLayout>(), 8);
    }

    #[test]
    fn launch_configs_cover_every_element() {
        let c = elementwise_config(1);
        assert_eq!((c.grid_dim, c.block_dim), ((1, 1, 1), (256, 1, 1)));
        assert_eq!(elementwise_config(256).grid_dim.0, 1);
        assert_eq!(elementwise_config(257).grid_dim.0, 2);
        // contiguous: a quarter of a thread per element from 1 Mi elements
        assert_eq!(elementwise_config_for((1 << 20) - 1, true).grid_dim.0, 4096);
        assert_eq!(elementwise_config_for(1 << 20, true).grid_dim.0, 1024);
        assert_eq!(elementwise_config_for(1 << 26, true).grid_dim.0, 65536);
        assert_eq!(elementwise_config_for(1 << 26, false).grid_dim.0, 262144);
        // beyond the cap the grid-stride loop covers the rest
        assert_eq!(elementwise_config(1 << 40).grid_dim.0, MAX_BLOCKS);
        assert_eq!(rows_config(3).grid_dim.0, 3);
        assert_eq!(rows_config(usize::MAX).grid_dim.0, MAX_BLOCKS);
        assert_eq!(rows_config(1).block_dim.0, ROW_BLOCK);
    }

    #[test]
    fn reductions_pick_threads_per_row_by_shape() {
        // many adjacent rows: a thread each
        assert_eq!(reduce_group(1 << 20, 64, true), 1);
        assert_eq!(reduce_group(1 << 14, 5000, true), 1);
        // adjacent, a warp or more of them: a thread each (splits add parallelism)
        assert_eq!(reduce_group(100, 64, true), 1);
        assert_eq!(reduce_group(8192, 8192, true), 1);
        // adjacent but fewer than a warp: as for any row (few rows: the whole block)
        assert_eq!(reduce_group(31, 64, true), 256);
        assert_eq!(reduce_group(8, 1 << 20, true), 256);
        // long rows, or few rows: the whole block
        assert_eq!(reduce_group(8, 1 << 20, false), 256);
        assert_eq!(reduce_group(100_000, 1024, false), 256);
        assert_eq!(reduce_group(63, 33, false), 256);
        // short rows: the power of two covering them, at most a warp
        assert_eq!(reduce_group(64, 33, false), 32);
        assert_eq!(reduce_group(4096, 10, false), 16);
        assert_eq!(reduce_group(4096, 1, false), 1);
        assert_eq!(reduce_group(4096, 0, false), 1);
        assert_eq!(reduce_group(4096, 1023, false), 32);
        for rows in [1, 7, 64, 1 << 14, 1 << 20] {
            for rlen in [0, 1, 2, 3, 31, 32, 33, 1000, 1024, 1 << 20] {
                for adjacent in [false, true] {
                    let g = reduce_group(rows, rlen, adjacent);
                    assert!(g.is_power_of_two() && ROW_BLOCK.is_multiple_of(g), "{g}");
                    // every row gets its threads
                    let splits = reduce_splits(rows, rlen, g);
                    assert!(
                        splits >= 1 && (splits == 1 || splits <= rlen),
                        "{rows} {rlen}"
                    );
                    let c = reduce_config(rows, g, splits);
                    let covered = c.grid_dim.0 as usize * (ROW_BLOCK / g) as usize;
                    assert!(covered >= rows.min(MAX_BLOCKS as usize), "{rows} {g}");
                }
            }
        }
        assert_eq!(reduce_config(1000, 32, 1).grid_dim.0, 125);
        assert_eq!(reduce_config(1000, 1, 1).grid_dim.0, 4);
        assert_eq!(reduce_config(3, 256, 1).grid_dim.0, 3);
        assert_eq!(reduce_config(3, 256, 10).grid_dim.0, 30);
        assert_eq!(reduce_config(usize::MAX, 1, 1).grid_dim.0, MAX_BLOCKS);
        assert_eq!(reduce_config(1 << 20, 1, 1 << 20).grid_dim.0, MAX_BLOCKS);
    }

    #[test]
    fn sort_blocks_hold_a_quarter_of_the_network() {
        assert_eq!(sort_tile_config(1, 1).block_dim.0, 32);
        assert_eq!(sort_tile_config(7, 128).block_dim.0, 32);
        assert_eq!(sort_tile_config(7, 129).block_dim.0, 64);
        assert_eq!(sort_tile_config(2, 3000).block_dim.0, 1024);
        assert_eq!(sort_tile_config(9, 1 << 20).block_dim.0, SORT_TILE / 4);
        assert_eq!(sort_tile_config(9, 1 << 20).grid_dim.0, 9);
        for n in [1, 2, 5, 100, 1000, 4095, 4096, 4097, 1 << 20] {
            let threads = sort_tile_config(1, n).block_dim.0 as usize;
            let size = n.min(SORT_TILE as usize).next_power_of_two().max(2);
            assert!(4 * threads >= size && threads <= 1024, "{n}");
        }
    }

    #[test]
    fn reductions_split_rows_only_when_rows_leave_the_device_idle() {
        // a whole-tensor sum of 64 Mi elements: 1024 chunks of 64 Ki
        assert_eq!(reduce_splits(1, 1 << 26, 256), 1024);
        // column sums of [8192, 8192], a thread per column: 32 chunks of 256
        assert_eq!(reduce_splits(8192, 8192, 1), 32);
        // enough rows: no split
        assert_eq!(reduce_splits(8192, 8192, 256), 1);
        assert_eq!(reduce_splits(1 << 18, 100, 1), 1);
        // short rows are not split below 32 elements per thread
        assert_eq!(reduce_splits(1, 1000, 256), 1);
        assert_eq!(reduce_splits(1, 100, 1), 3);
        assert_eq!(reduce_splits(0, 0, 1), 1);
    }

    #[test]
    fn scans_run_a_block_per_lane_when_lanes_are_few_and_long() {
        assert!(scan_block_per_lane(1, 1 << 20));
        assert!(scan_block_per_lane(100, 33));
        assert!(!scan_block_per_lane(100, 32)); // a warp's worth: a thread walks it
        assert!(!scan_block_per_lane(1 << 14, 1000)); // enough lanes for a thread each
    }

    #[test]
    fn scalar_bits_are_the_little_endian_bytes() {
        assert_eq!(scalar_bits(1.0f32), 0x3f80_0000);
        assert_eq!(scalar_bits(-2.0f64), (-2.0f64).to_bits());
        assert_eq!(scalar_bits(f16::ONE), 0x3c00);
        assert_eq!(scalar_bits(bf16::from_f32(-1.0)), 0xbf80);
        assert_eq!(scalar_bits(-1i8), 0xff);
        assert_eq!(scalar_bits(-1i64), u64::MAX);
        assert_eq!(scalar_bits(300i16), 300);
        assert_eq!(scalar_bits(true), 1);
        assert_eq!(scalar_bits(false), 0);
    }
}
