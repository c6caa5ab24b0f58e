//! Matrix products whose operands both run along a long contraction: `C = A·B` with A's rows
//! and B's columns contiguous over `k` (a convolution's weight gradient `g · colsᵀ`, where
//! `g` is `[out_channels, positions]` and `cols` is `[taps, positions]`), computed as dot
//! products of rows with columns, four by four, without packing either operand.
//!
//! A packing GEMM copies both operands into its panel layouts before multiplying; with few
//! outputs (`m · n ≤ 64²`) each copied element takes part in few multiply-adds, so the copies
//! cost more than the arithmetic (a 16 × 27 product over 1024 positions ran at a quarter of
//! the FMA peak through `gemm`). Here a block of four rows of A and four columns of B keeps
//! sixteen vector accumulators, reads each operand once per block from the cache, and is
//! bounded by its multiply-adds.
//!
//! # Invariants
//! - [`eligible`] holds for the problem: `k ≥` [`MIN_K`], [`MIN_SIDE`] `≤ m, n`,
//!   `m · n ≤` [`MAX_OUTPUTS`], A's column stride and B's row stride are 1, and the CPU has
//!   AVX-512 F (the only instruction set with a kernel here; other machines keep `gemm`);
//! - every row of A and column of B that a block reads lies in its slice: [`products`]
//!   checks the slice lengths once per call, before any unchecked load;
//! - each output is the sum, over lanes `l mod 16`, of that lane's fused multiply-adds in `l`
//!   order, the 16 lanes then added as a fixed tree (`sum16`): deterministic for a given
//!   problem and independent of the thread count, but not `gemm`'s order, so the two paths
//!   round differently.

/// Contractions shorter than this go to `gemm`: the horizontal sums at the end of each block
/// would cost as much as the block's arithmetic.
pub const MIN_K: usize = 256;

/// Products with more outputs than this go to `gemm`: a block reads its rows and columns from
/// the cache again for every other block, and with many blocks those reads cost more than
/// `gemm`'s copies. (One thread, 32 products, `gemm`'s time over this kernel's: 16 × 27 over
/// 1024 positions 2.1×, 32 × 32 2.3×, 64 × 64 over 512 1.5×, 16 × 144 over 256 1.2×; 32 × 144
/// over 256 0.76×, 64 × 576 over 256 0.63×.)
pub const MAX_OUTPUTS: usize = 64 * 64;

/// Products with fewer rows or columns than this go to `gemm`: a block always computes four
/// of each, so a narrower product would repeat most of its work (a matrix times a vector
/// four times over), and `gemm` has kernels for such shapes.
pub const MIN_SIDE: usize = 16;

/// Whether the `m × n × k` product with A's (row, column) strides `a_strides` and B's
/// `b_strides` runs here (see the module docs).
pub fn eligible(
    m: usize,
    n: usize,
    k: usize,
    a_strides: [usize; 2],
    b_strides: [usize; 2],
) -> bool {
    a_strides[1] == 1
        && b_strides[0] == 1
        && k >= MIN_K
        && m * n <= MAX_OUTPUTS
        && m.min(n) >= MIN_SIDE
        && has_kernel()
}

#[cfg(target_arch = "x86_64")]
fn has_kernel() -> bool {
    std::is_x86_feature_detected!("avx512f")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_kernel() -> bool {
    false
}

/// Rows `row0..row0 + dst.len() / n` of `C = A·B` (row-major in `dst`), A's row `i` being
/// `a[a0 + i·a_row..][..k]` and B's column `j` being `b[b0 + j·b_col..][..k]`.
///
/// Panics where a row or column would run past its slice, or without [`eligible`]'s kernel.
pub fn products(
    a: &[f32],
    [a0, a_row]: [usize; 2],
    b: &[f32],
    [b0, b_col]: [usize; 2],
    [row0, n, k]: [usize; 3],
    dst: &mut [std::mem::MaybeUninit<f32>],
) {
    let rows = dst.len() / n;
    if rows == 0 {
        return;
    }
    // Every row and column read below ends inside its slice (the last one is the furthest).
    let end = |start: usize, step: usize, count: usize| start + (count - 1) * step + k;
    assert!(end(a0 + row0 * a_row, a_row, rows) <= a.len());
    assert!(end(b0, b_col, n) <= b.len());
    #[cfg(target_arch = "x86_64")]
    {
        assert!(has_kernel(), "dot_products::products without AVX-512");
        let row = |i: usize| a[a0 + (row0 + i) * a_row..][..k].as_ptr();
        let col = |j: usize| b[b0 + j * b_col..][..k].as_ptr();
        for i0 in (0..rows).step_by(4) {
            // A block past the last row or column repeats it; its extra sums are dropped.
            let r: [*const f32; 4] = std::array::from_fn(|t| row((i0 + t).min(rows - 1)));
            for j0 in (0..n).step_by(4) {
                let c: [*const f32; 4] = std::array::from_fn(|t| col((j0 + t).min(n - 1)));
                // SAFETY: the CPU has AVX-512 F (asserted above); each pointer starts a run of
                // `k` elements inside its slice (the assertions above, and `[..k]` in `row` and
                // `col`), which is all the block reads.
                let sums = unsafe { x86::block(r, c, k) };
                for (t, sums) in sums.iter().enumerate().take(rows - i0) {
                    let out = &mut dst[(i0 + t) * n + j0..][..(n - j0).min(4)];
                    for (o, &s) in out.iter_mut().zip(sums) {
                        o.write(s);
                    }
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("dot_products::products without a kernel");
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The 4 × 4 dot products of the `k`-element runs at `rows` with those at `cols`.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, and each pointer starts `k` readable `f32`s.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn block(rows: [*const f32; 4], cols: [*const f32; 4], k: usize) -> [[f32; 4]; 4] {
        let mut acc = [[_mm512_setzero_ps(); 4]; 4];
        let mut l = 0;
        while l + 16 <= k {
            // SAFETY: `l + 16 ≤ k`, so each 16-lane load stays in its run.
            let (a, b) = unsafe {
                (
                    [0, 1, 2, 3].map(|t| _mm512_loadu_ps(rows[t].add(l))),
                    [0, 1, 2, 3].map(|t| _mm512_loadu_ps(cols[t].add(l))),
                )
            };
            for (acc, &a) in acc.iter_mut().zip(&a) {
                for (acc, &b) in acc.iter_mut().zip(&b) {
                    *acc = _mm512_fmadd_ps(a, b, *acc);
                }
            }
            l += 16;
        }
        if l < k {
            // The last `k − l < 16` elements: masked loads read only those (the masked-off
            // lanes are zero and never touch memory).
            let mask: __mmask16 = (1u16 << (k - l)) - 1;
            // SAFETY: the mask's lanes are the run's last `k − l` elements.
            let (a, b) = unsafe {
                (
                    [0, 1, 2, 3].map(|t| _mm512_maskz_loadu_ps(mask, rows[t].add(l))),
                    [0, 1, 2, 3].map(|t| _mm512_maskz_loadu_ps(mask, cols[t].add(l))),
                )
            };
            for (acc, &a) in acc.iter_mut().zip(&a) {
                for (acc, &b) in acc.iter_mut().zip(&b) {
                    *acc = _mm512_fmadd_ps(a, b, *acc);
                }
            }
        }
        // Vector `4c + r` is block entry (r, c), so the sums come out row-major.
        let v: [__m512; 16] = std::array::from_fn(|i| acc[i % 4][i / 4]);
        let mut out = [0f32; 16];
        // SAFETY: `out` has 16 `f32`s, one unaligned vector store.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr(), sum16(v)) };
        std::array::from_fn(|r| std::array::from_fn(|c| out[4 * r + c]))
    }

    /// The sums of 16 vectors' lanes, lane `4q + r` of the result holding vector `4r + q`'s
    /// (a fixed tree of shuffles and additions, all in registers).
    #[target_feature(enable = "avx512f")]
    fn sum16(v: [__m512; 16]) -> __m512 {
        // Quarters: vectors 2i and 2i + 1 folded to two quarters each.
        let w: [__m512; 8] = std::array::from_fn(|i| {
            let (a, b) = (v[2 * i], v[2 * i + 1]);
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0b01_00_01_00>(a, b),
                _mm512_shuffle_f32x4::<0b11_10_11_10>(a, b),
            )
        });
        // Quarter q of z[i] holds four partial sums of vector 4i + q.
        let z: [__m512; 4] = std::array::from_fn(|i| {
            let (a, b) = (w[2 * i], w[2 * i + 1]);
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0b10_00_10_00>(a, b),
                _mm512_shuffle_f32x4::<0b11_01_11_01>(a, b),
            )
        });
        // Within each quarter q: two partial sums of vector q + 8i and two of vector
        // q + 8i + 4.
        let pair = |a: __m512, b: __m512| {
            _mm512_add_ps(
                _mm512_shuffle_ps::<0b10_00_10_00>(a, b),
                _mm512_shuffle_ps::<0b11_01_11_01>(a, b),
            )
        };
        let (u0, u1) = (pair(z[0], z[1]), pair(z[2], z[3]));
        pair(u0, u1)
    }
}
