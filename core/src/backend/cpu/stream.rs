//! Non-temporal ("streaming") stores for outputs too large to stay in cache.
//!
//! A plain store to a line that is not in cache first reads that line from memory (a read
//! for ownership), so `c = a + b` over large arrays moves four bytes for every three it
//! needs. A non-temporal store of a whole 64-byte line skips the read and the cache; partial
//! lines lose most of the gain (BENCHMARKS.md, "Measurements behind design choices"), so
//! lines are written with one 64-byte store (AVX-512) or two 32-byte ones (AVX2), never
//! narrower. An op followed by one that reads its output
//! was no slower at 1–8 MiB and faster above, so outputs of at least [`STREAM_MIN_BYTES`]
//! are streamed by default; [`set_streaming_threshold`] (or `NAMEDTENSOR_STREAM_MIN_BYTES`,
//! read at the first use) moves the bound, for a cache of another size, or so that small
//! outputs take the streaming path where each element is costly (the tests under valgrind).
//!
//! # Invariants
//! - Every streamed line starts at a 64-byte aligned address inside the output slice; the
//!   elements before the first such address and after the last whole line are written with
//!   plain stores.
//! - Non-temporal stores are weakly ordered: [`write_blocks`] (under [`map_into`] and
//!   [`zip_into`]) ends with a store fence whenever it streamed, before it returns, so the
//!   writes are ordered before whatever publishes the buffer to other threads (the end of a
//!   rayon task).
//!
//! # One streamed copy for every kernel
//! A streamed output is computed a block at a time into an L1-resident stack buffer by the
//! kernel's ordinary loop, and each block is then stored with `stream_copy`, compiled once
//! per instruction set. So a kernel is compiled once for both stores, at its own instruction
//! set, instead of once more as an AVX copy that writes lines from registers; the block's
//! second pass runs in L1, beside a loop bound by memory (BENCHMARKS.md, session 22).

use super::env_setting;
use super::vmath::Isa;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Outputs of at least this many bytes are written with non-temporal stores, unless
/// [`set_streaming_threshold`] or `NAMEDTENSOR_STREAM_MIN_BYTES` say otherwise.
pub const STREAM_MIN_BYTES: usize = 8 << 20;

static MIN_BYTES: OnceLock<AtomicUsize> = OnceLock::new();

fn min_bytes_cell() -> &'static AtomicUsize {
    MIN_BYTES.get_or_init(|| {
        AtomicUsize::new(env_setting("NAMEDTENSOR_STREAM_MIN_BYTES").unwrap_or(STREAM_MIN_BYTES))
    })
}

/// Sets the output size, in bytes, from which elementwise results and copies are written with
/// non-temporal stores, past the caches (8 MiB unless `NAMEDTENSOR_STREAM_MIN_BYTES` says
/// otherwise; `usize::MAX` never streams). Worth raising on a CPU whose last-level cache
/// holds much larger outputs; results are the same either way.
///
/// ```
/// let before = namedtensor::streaming_threshold();
/// namedtensor::set_streaming_threshold(32 << 20);
/// assert_eq!(namedtensor::streaming_threshold(), 32 << 20);
/// namedtensor::set_streaming_threshold(before);
/// ```
pub fn set_streaming_threshold(bytes: usize) {
    min_bytes_cell().store(bytes, Ordering::Relaxed);
}

/// The output size, in bytes, from which results are written with non-temporal stores (see
/// [`set_streaming_threshold`]).
///
/// ```
/// assert!(namedtensor::streaming_threshold() > 0);
/// ```
pub fn streaming_threshold() -> usize {
    min_bytes_cell().load(Ordering::Relaxed)
}

/// How a row loop stores its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Plain stores through the cache.
    Cached,
    /// Whole 64-byte lines with non-temporal stores of this instruction set
    /// ([`Store::for_output`] never picks [`Isa::Baseline`], whose "stream" is a plain copy).
    Streamed(Isa),
}

impl Store {
    /// Whether an output of `numel` elements of `O` is large enough to be streamed.
    pub fn wanted<O>(numel: usize) -> bool {
        numel.saturating_mul(size_of::<O>()) >= streaming_threshold()
    }

    /// How an output of `numel` elements of `O` is stored: streamed when it is large enough
    /// ([`Store::wanted`]) and the CPU has 32-byte or wider stores, else cached.
    pub fn for_output<O>(numel: usize) -> Store {
        if Self::wanted::<O>(numel) {
            match super::vmath::widest() {
                Isa::Baseline => Store::Cached,
                isa => Store::Streamed(isa),
            }
        } else {
            Store::Cached
        }
    }
}

/// Bytes of the stack block a streamed output is computed into before it is stored: small
/// enough to stay in L1 beside the inputs.
const BLOCK_BYTES: usize = 1024;

/// A 64-byte aligned stack block of [`BLOCK_BYTES`].
#[repr(C, align(64))]
struct Block([MaybeUninit<u8>; BLOCK_BYTES]);

impl Block {
    /// The block as uninitialised elements of `O` (as many as fit).
    fn as_elements<O>(&mut self) -> &mut [MaybeUninit<O>] {
        const { assert!(align_of::<O>() <= 64 && size_of::<O>() > 0) };
        // SAFETY: the block is 64-byte aligned, so aligned for `O` (asserted above), and holds
        // `BLOCK_BYTES / size_of::<O>()` whole elements; `MaybeUninit` has no validity
        // requirement, and the result borrows the block exclusively.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.0.as_mut_ptr().cast::<MaybeUninit<O>>(),
                BLOCK_BYTES / size_of::<O>(),
            )
        }
    }
}

/// `elements` as its bytes.
fn bytes_of<O>(elements: &[MaybeUninit<O>]) -> &[MaybeUninit<u8>] {
    // SAFETY: the same memory, read as bytes; every byte pattern is a valid `MaybeUninit<u8>`.
    unsafe { std::slice::from_raw_parts(elements.as_ptr().cast(), size_of_val(elements)) }
}

/// `elements` as its bytes, writable.
fn bytes_of_mut<O>(elements: &mut [MaybeUninit<O>]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: as in `bytes_of`; the slots stay `MaybeUninit<O>`, so writing any bytes into
    // them is sound (the callers copy whole elements, so each slot holds a whole `O`).
    unsafe { std::slice::from_raw_parts_mut(elements.as_mut_ptr().cast(), size_of_val(elements)) }
}

/// Fills `out` with `fill(part, range)`, which writes every slot of `part` with the elements
/// `range` of the result. Cached: one call on `out` itself. Streamed: a call per L1-sized
/// block of a stack buffer, each block then copied to `out` with non-temporal stores
/// (`stream_copy`), the first block ending where `out`'s first whole line begins.
///
/// `fill` is called from one place, so a kernel inlined into it is compiled once for both
/// stores; the blocks (`Blocks`) and the streamed copy are compiled once per element type
/// and instruction set, shared by every kernel, so a kernel needs no copy of itself under AVX
/// to stream.
#[inline(always)]
pub fn write_blocks<O: Copy>(
    store: Store,
    out: &mut [MaybeUninit<O>],
    fill: impl Fn(&mut [MaybeUninit<O>], Range<usize>),
) {
    let mut blocks = Blocks::new(store, out);
    while let Some((part, range)) = blocks.next() {
        fill(part, range);
    }
}

/// The parts of an output that [`write_blocks`] hands to its kernel, one at a time.
struct Blocks<'a, O> {
    store: Store,
    out: &'a mut [MaybeUninit<O>],
    /// The part handed out last: `out[at..at + len]` (`len == 0` before the first and after
    /// the last).
    at: usize,
    len: usize,
    block: Block,
}

impl<'a, O: Copy> Blocks<'a, O> {
    fn new(store: Store, out: &'a mut [MaybeUninit<O>]) -> Self {
        Blocks {
            store,
            out,
            at: 0,
            len: 0,
            block: Block([MaybeUninit::uninit(); BLOCK_BYTES]),
        }
    }

    /// Stores the part handed out last (when streamed), then hands out the next: the slots
    /// to fill and the range of `out` they stand for. After the last part it fences (when
    /// streamed) and returns `None`.
    #[allow(clippy::should_implement_trait)] // lends from `self`: not an `Iterator`
    fn next(&mut self) -> Option<(&mut [MaybeUninit<O>], Range<usize>)> {
        let n = self.out.len();
        let at = self.at + self.len;
        if let Store::Streamed(isa) = self.store
            && self.len > 0
        {
            let part = &mut self.out[self.at..at];
            stream_copy(
                isa,
                bytes_of(&self.block.as_elements::<O>()[..self.len]),
                bytes_of_mut(part),
            );
        }
        (self.at, self.len) = (at, 0);
        if at >= n {
            if at > 0 && self.store != Store::Cached {
                fence();
            }
            return None;
        }
        let m = match self.store {
            Store::Cached => n - at,
            // The elements before `out`'s first 64-byte boundary first (a whole number: the
            // size of `O` divides 64 whenever lines are streamed, see `stream_copy`).
            Store::Streamed(_) if at == 0 && !(self.out.as_ptr() as usize).is_multiple_of(64) => {
                ((self.out.as_ptr() as usize).wrapping_neg() % 64 / size_of::<O>()).min(n)
            }
            Store::Streamed(_) => (BLOCK_BYTES / size_of::<O>()).min(n - at),
        };
        self.len = m;
        let part = match self.store {
            Store::Cached => &mut self.out[at..at + m],
            Store::Streamed(_) => &mut self.block.as_elements::<O>()[..m],
        };
        Some((part, at..at + m))
    }
}

/// Copies `src` to `dst` (equal lengths), each whole 64-byte line of `dst` with
/// non-temporal stores of `isa`, the bytes before the first and after the last with plain
/// ones. Not inlined: one copy serves every kernel.
#[inline(never)]
fn stream_copy(isa: Isa, src: &[MaybeUninit<u8>], dst: &mut [MaybeUninit<u8>]) {
    assert_eq!(src.len(), dst.len(), "a streamed copy has equal lengths");
    let n = dst.len();
    let head = ((dst.as_ptr() as usize).wrapping_neg() % 64).min(n);
    let lines = (n - head) / 64;
    let body = head..head + lines * 64;
    dst[..head].copy_from_slice(&src[..head]);
    let (to, from) = (dst[body.clone()].as_mut_ptr(), src[body.clone()].as_ptr());
    // SAFETY: the lines lie inside both slices (`body` is in range, indexed above), which are
    // distinct borrows; `dst[head..]` starts on a 64-byte boundary; `isa` came from
    // `vmath::widest`, which checked the CPU (see `Isa`).
    unsafe { stream_lines(isa, to.cast(), from.cast(), lines) };
    dst[body.end..].copy_from_slice(&src[body.end..]);
}

/// `out[i] = f(x[i])`.
#[inline(always)]
pub fn map_into<T: Copy, O: Copy>(
    store: Store,
    out: &mut [MaybeUninit<O>],
    x: &[T],
    f: impl Fn(T) -> O,
) {
    let x = &x[..out.len()];
    write_blocks(
        store,
        out,
        #[inline(always)]
        |part, range| {
            for (o, &p) in part.iter_mut().zip(&x[range]) {
                o.write(f(p));
            }
        },
    )
}

/// `out[i] = f(x[i], y[i])`.
#[inline(always)]
pub fn zip_into<A: Copy, B: Copy, O: Copy>(
    store: Store,
    out: &mut [MaybeUninit<O>],
    x: &[A],
    y: &[B],
    f: impl Fn(A, B) -> O,
) {
    let (x, y) = (&x[..out.len()], &y[..out.len()]);
    write_blocks(
        store,
        out,
        #[inline(always)]
        |part, range| {
            for ((o, &p), &q) in part.iter_mut().zip(&x[range.clone()]).zip(&y[range]) {
                o.write(f(p, q));
            }
        },
    )
}

/// `[f(xs[0]), f(xs[1]), …]`, as a plain loop that is always inlined (`array::map` with a
/// larger closure may become a call per line, which also loses the caller's instruction set).
#[inline(always)]
pub fn map_line<T: Copy, U: Copy, const N: usize>(xs: [T; N], f: impl Fn(T) -> U) -> [U; N] {
    let mut out = [MaybeUninit::<U>::uninit(); N];
    for (o, &x) in out.iter_mut().zip(&xs) {
        o.write(f(x));
    }
    // SAFETY: every element was written above; `[MaybeUninit<U>; N]` and `[U; N]` have the
    // same layout.
    unsafe { std::mem::transmute_copy(&out) }
}

/// `[f(xs[0], ys[0]), f(xs[1], ys[1]), …]`, as [`map_line`].
#[inline(always)]
pub fn zip_line<A: Copy, B: Copy, U: Copy, const N: usize>(
    xs: [A; N],
    ys: [B; N],
    f: impl Fn(A, B) -> U,
) -> [U; N] {
    let mut out = [MaybeUninit::<U>::uninit(); N];
    for ((o, &x), &y) in out.iter_mut().zip(&xs).zip(&ys) {
        o.write(f(x, y));
    }
    // SAFETY: as in `map_line`.
    unsafe { std::mem::transmute_copy(&out) }
}

/// `x[i..i + m]` as an array of `N` (`0 < m <= N`, `i + m <= x.len()`), padded with `x[i]`.
#[inline(always)]
pub fn line_of<T: Copy, const N: usize>(x: &[T], i: usize, m: usize) -> [T; N] {
    if m == N {
        *<&[T; N]>::try_from(&x[i..i + N]).unwrap()
    } else {
        let mut xs = [x[i]; N];
        xs[..m].copy_from_slice(&x[i..i + m]);
        xs
    }
}

/// Writes `out` a line of `N` elements at a time: `line(i, m)` gives elements `i..i + m` in
/// its first `m` lanes (`m < N` only for the last, partial line; the other lanes are
/// ignored). `line` is called from one place, so it is compiled once.
#[inline(always)]
pub fn write_lines<O: Copy, const N: usize>(
    out: &mut [MaybeUninit<O>],
    line: impl Fn(usize, usize) -> [O; N],
) {
    let n = out.len();
    let mut i = 0;
    while i < n {
        let m = N.min(n - i);
        let values = line(i, m);
        if m == N {
            for (o, v) in out[i..i + N].iter_mut().zip(values) {
                o.write(v);
            }
        } else {
            for (o, &v) in out[i..i + m].iter_mut().zip(&values) {
                o.write(v);
            }
        }
        i += m;
    }
}

/// Stores `lines` 64-byte lines from `src` at `dst` with non-temporal stores of `isa`.
///
/// # Safety
/// `dst` is 64-byte aligned and valid for `64 · lines` bytes of writes; `src` is valid for as
/// many reads and does not overlap `dst`; the CPU has the instructions of `isa`.
unsafe fn stream_lines(isa: Isa, dst: *mut u8, src: *const u8, lines: usize) {
    debug_assert!(lines == 0 || (dst as usize).is_multiple_of(64));
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: the caller's contract (alignment, sizes, CPU features).
        Isa::Avx512 => unsafe { x86::stream_lines_avx512(dst, src, lines) },
        // SAFETY: as above.
        Isa::Avx2 => unsafe { x86::stream_lines_avx(dst, src, lines) },
        // SAFETY: valid and disjoint for `64 · lines` bytes (the contract).
        Isa::Baseline => unsafe { std::ptr::copy_nonoverlapping(src, dst, 64 * lines) },
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, 64 * lines) }
    }
}

/// Orders the non-temporal stores before later stores. (Not under Miri, which has no SFENCE
/// and runs the streamed paths' plain-copy fallback only, so that the tests of those paths
/// run there.)
#[inline(always)]
pub fn fence() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: SFENCE is part of the x86-64 baseline (SSE).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(target_arch = "x86_64")]
pub mod x86 {
    use std::arch::x86_64::*;

    /// # Safety
    /// `dst` 64-byte aligned and writable for 64 bytes, `src` readable for 64; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn stream64_avx512(dst: *mut u8, src: *const u8) {
        // SAFETY: the caller's contract.
        unsafe { _mm512_stream_si512(dst.cast(), _mm512_loadu_si512(src.cast())) }
    }

    /// # Safety
    /// `dst` 64-byte aligned and writable for 64 bytes, `src` readable for 64; AVX.
    #[inline]
    #[target_feature(enable = "avx")]
    pub unsafe fn stream64_avx(dst: *mut u8, src: *const u8) {
        // SAFETY: the caller's contract; both halves are 32-byte aligned.
        unsafe {
            _mm256_stream_si256(dst.cast(), _mm256_loadu_si256(src.cast()));
            _mm256_stream_si256(dst.add(32).cast(), _mm256_loadu_si256(src.add(32).cast()));
        }
    }

    /// `lines` 64-byte lines, as [`stream64_avx512`] each.
    ///
    /// # Safety
    /// `dst` 64-byte aligned and writable for `64 · lines` bytes, `src` readable for as many
    /// and disjoint from it; AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn stream_lines_avx512(dst: *mut u8, src: *const u8, lines: usize) {
        for k in 0..lines {
            // SAFETY: line `k` is inside both ranges (the contract).
            unsafe { stream64_avx512(dst.add(64 * k), src.add(64 * k)) }
        }
    }

    /// `lines` 64-byte lines, as [`stream64_avx`] each.
    ///
    /// # Safety
    /// As for [`stream_lines_avx512`], with AVX.
    #[target_feature(enable = "avx")]
    pub unsafe fn stream_lines_avx(dst: *mut u8, src: *const u8, lines: usize) {
        for k in 0..lines {
            // SAFETY: as above.
            unsafe { stream64_avx(dst.add(64 * k), src.add(64 * k)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::vmath::widest;

    /// Every element of every length and misalignment is written once with the right value,
    /// streamed or not, across several blocks.
    #[test]
    fn streamed_rows_match_a_plain_loop_at_every_offset_and_length() {
        let x: Vec<f32> = (0..5000).map(|i| i as f32 * 0.5 - 3.0).collect();
        let y: Vec<f64> = (0..5000).map(|i| (i * i) as f64).collect();
        let streamed = match widest() {
            Isa::Baseline => Store::Cached,
            isa => Store::Streamed(isa),
        };
        for store in [Store::Cached, streamed, Store::Streamed(Isa::Baseline)] {
            for offset in 0..17 {
                for len in [0, 1, 5, 15, 16, 17, 31, 64, 100, 333, 683, 1024, 1500, 4999] {
                    let mut buf = vec![MaybeUninit::<f32>::uninit(); offset + len];
                    let out = &mut buf[offset..];
                    zip_into(store, out, &x, &y, |a, b| a * 2.0 + b as f32);
                    for (i, o) in out.iter().enumerate() {
                        // SAFETY: written above (asserted element by element here).
                        let got = unsafe { o.assume_init() };
                        assert_eq!(got, x[i] * 2.0 + y[i] as f32, "offset {offset} len {len}");
                    }
                    let mut bytes = vec![MaybeUninit::<u8>::uninit(); offset + len];
                    let out = &mut bytes[offset..];
                    map_into(store, out, &x, |a| a as u8);
                    for (i, o) in out.iter().enumerate() {
                        // SAFETY: as above.
                        assert_eq!(unsafe { o.assume_init() }, x[i] as u8);
                    }
                }
            }
        }
    }
}
