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
//! - Non-temporal stores are weakly ordered: [`map_into`] and [`zip_into`] end with a store
//!   fence whenever they streamed, before they return, so the writes are ordered before
//!   whatever publishes the buffer to other threads (the end of a rayon task).

use super::env_setting;
use super::vmath::Isa;
use std::mem::MaybeUninit;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Outputs of at least this many bytes are written with non-temporal stores, unless
/// [`set_streaming_threshold`] or `NAMEDTENSOR_STREAM_MIN_BYTES` say otherwise.
pub(crate) const STREAM_MIN_BYTES: usize = 8 << 20;

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
pub(crate) enum Store {
    /// Plain stores through the cache.
    Cached,
    /// Whole 64-byte lines with non-temporal stores of this instruction set (never
    /// [`Isa::Baseline`]).
    Streamed(Isa),
}

impl Store {
    /// Whether an output of `numel` elements of `O` is large enough to be streamed.
    pub(crate) fn wanted<O>(numel: usize) -> bool {
        numel.saturating_mul(size_of::<O>()) >= streaming_threshold()
    }

    /// Streamed with `isa` when `stream` and `isa` has 32-byte or wider stores, else cached.
    #[inline(always)]
    pub(crate) fn choose(stream: bool, isa: Isa) -> Store {
        if stream && isa != Isa::Baseline {
            Store::Streamed(isa)
        } else {
            Store::Cached
        }
    }
}

/// `out[i] = f(x[i])`.
#[inline(always)]
pub(crate) fn map_into<T: Copy, O: Copy>(
    store: Store,
    out: &mut [MaybeUninit<O>],
    x: &[T],
    f: impl Fn(T) -> O,
) {
    // The second operand is the first again: its loads are the same addresses, which the
    // compiler merges.
    zip_into(
        store,
        out,
        x,
        x,
        #[inline(always)]
        |p, _| f(p),
    )
}

/// `out[i] = f(x[i], y[i])`.
#[inline(always)]
pub(crate) fn zip_into<A: Copy, B: Copy, O: Copy>(
    store: Store,
    out: &mut [MaybeUninit<O>],
    x: &[A],
    y: &[B],
    f: impl Fn(A, B) -> O,
) {
    let (x, y) = (&x[..out.len()], &y[..out.len()]);
    macro_rules! lines {
        ($n:literal) => {
            write_lines::<O, $n>(
                store,
                out,
                #[inline(always)]
                |i, m| zip_line(line_of::<A, $n>(x, i, m), line_of::<B, $n>(y, i, m), &f),
            )
        };
    }
    // The line width is chosen by `const` conditions, so that only the one `write_lines` an
    // element size needs is compiled (a branch on a run-time value would instantiate all four).
    if matches!(store, Store::Streamed(_)) {
        if const { size_of::<O>() == 4 } {
            return lines!(16);
        } else if const { size_of::<O>() == 8 } {
            return lines!(8);
        } else if const { size_of::<O>() == 2 } {
            return lines!(32);
        } else if const { size_of::<O>() == 1 } {
            return lines!(64);
        }
    }
    for ((o, &p), &q) in out.iter_mut().zip(x).zip(y) {
        o.write(f(p, q));
    }
}

/// `[f(xs[0]), f(xs[1]), …]`, as a plain loop that is always inlined (`array::map` with a
/// larger closure may become a call per line, which also loses the caller's instruction set).
#[inline(always)]
pub(crate) fn map_line<T: Copy, U: Copy, const N: usize>(xs: [T; N], f: impl Fn(T) -> U) -> [U; N] {
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
pub(crate) fn zip_line<A: Copy, B: Copy, U: Copy, const N: usize>(
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
pub(crate) fn line_of<T: Copy, const N: usize>(x: &[T], i: usize, m: usize) -> [T; N] {
    if m == N {
        *<&[T; N]>::try_from(&x[i..i + N]).unwrap()
    } else {
        let mut xs = [x[i]; N];
        xs[..m].copy_from_slice(&x[i..i + m]);
        xs
    }
}

/// Writes `out` a line of `N` elements at a time: `line(i, m)` gives elements `i..i + m` in
/// its first `m` lanes (`m < N` only for the first and last, partial lines; the other lanes
/// are ignored). Streamed stores write every whole line that starts on a 64-byte boundary
/// with non-temporal stores (`N · size_of::<O>()` must then be 64) and fence at the end;
/// cached stores write plain lines from the start of `out`.
#[inline(always)]
pub(crate) fn write_lines<O: Copy, const N: usize>(
    store: Store,
    out: &mut [MaybeUninit<O>],
    line: impl Fn(usize, usize) -> [O; N],
) {
    let n = out.len();
    let head = match store {
        Store::Cached => 0,
        Store::Streamed(_) => {
            assert_eq!(N * size_of::<O>(), 64, "a streamed line is 64 bytes");
            // `out` is aligned to `O`, whose size divides 64, so whole elements reach the
            // boundary.
            let misaligned = out.as_ptr() as usize % 64;
            if misaligned == 0 {
                0
            } else {
                ((64 - misaligned) / size_of::<O>()).min(n)
            }
        }
    };
    let lines = (n - head) / N;
    let body = head..head + lines * N;
    let write_part = |out: &mut [MaybeUninit<O>], i: usize| {
        let m = out.len();
        if m > 0 {
            for (o, &v) in out.iter_mut().zip(&line(i, m)) {
                o.write(v);
            }
        }
    };
    write_part(&mut out[..head], 0);
    for i in body.clone().step_by(N) {
        let values = line(i, N);
        match store {
            Store::Cached => {
                for (o, v) in out[i..i + N].iter_mut().zip(values) {
                    o.write(v);
                }
            }
            // SAFETY: `i + N <= n`, so the line lies inside `out`; `out[head..]` starts on a
            // 64-byte boundary and each line is 64 bytes (asserted above), so every line is
            // aligned; `isa` came from `vectorized_for`, which checked the CPU (see `Isa`).
            Store::Streamed(isa) => unsafe {
                stream_line(isa, out.as_mut_ptr().add(i).cast::<u8>(), &values)
            },
        }
    }
    write_part(&mut out[body.end..], body.end);
    if lines > 0 && store != Store::Cached {
        fence();
    }
}

/// Stores the 64 bytes of `values` at `dst` with non-temporal stores.
///
/// # Safety
/// `dst` is 64-byte aligned and valid for 64 bytes of writes; `values` is 64 bytes; the CPU
/// has the instructions of `isa`.
#[inline(always)]
unsafe fn stream_line<V>(isa: Isa, dst: *mut u8, values: &V) {
    debug_assert_eq!(size_of::<V>(), 64);
    debug_assert_eq!(dst as usize % 64, 0);
    let src = (values as *const V).cast::<u8>();
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: the caller's contract (alignment, size, CPU features).
        Isa::Avx512 => unsafe { x86::stream64_avx512(dst, src) },
        // SAFETY: as above.
        Isa::Avx2 => unsafe { x86::stream64_avx(dst, src) },
        // SAFETY: `dst` is valid for 64 bytes and `src` holds 64; they cannot overlap (one is
        // a local value).
        Isa::Baseline => unsafe { std::ptr::copy_nonoverlapping(src, dst, 64) },
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, 64) }
    }
}

/// Orders the non-temporal stores before later stores.
#[inline(always)]
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE is part of the x86-64 baseline (SSE).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use std::arch::x86_64::*;

    /// # Safety
    /// `dst` 64-byte aligned and writable for 64 bytes, `src` readable for 64; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn stream64_avx512(dst: *mut u8, src: *const u8) {
        // SAFETY: the caller's contract.
        unsafe { _mm512_stream_si512(dst.cast(), _mm512_loadu_si512(src.cast())) }
    }

    /// # Safety
    /// `dst` 64-byte aligned and writable for 64 bytes, `src` readable for 64; AVX.
    #[inline]
    #[target_feature(enable = "avx")]
    pub(crate) unsafe fn stream64_avx(dst: *mut u8, src: *const u8) {
        // SAFETY: the caller's contract; both halves are 32-byte aligned.
        unsafe {
            _mm256_stream_si256(dst.cast(), _mm256_loadu_si256(src.cast()));
            _mm256_stream_si256(dst.add(32).cast(), _mm256_loadu_si256(src.add(32).cast()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::vmath::vectorized_for;

    /// Every element of every length and misalignment is written once with the right value,
    /// streamed or not.
    #[test]
    fn streamed_rows_match_a_plain_loop_at_every_offset_and_length() {
        let x: Vec<f32> = (0..700).map(|i| i as f32 * 0.5 - 3.0).collect();
        let y: Vec<f64> = (0..700).map(|i| (i * i) as f64).collect();
        for stream in [false, true] {
            for offset in 0..17 {
                for len in [0, 1, 5, 15, 16, 17, 31, 64, 100, 333, 683] {
                    let mut buf = vec![MaybeUninit::<f32>::uninit(); offset + len];
                    let out = &mut buf[offset..];
                    vectorized_for(|isa| {
                        zip_into(Store::choose(stream, isa), out, &x, &y, |a, b| {
                            a * 2.0 + b as f32
                        })
                    });
                    for (i, o) in out.iter().enumerate() {
                        // SAFETY: written above (asserted element by element here).
                        let got = unsafe { o.assume_init() };
                        assert_eq!(got, x[i] * 2.0 + y[i] as f32, "offset {offset} len {len}");
                    }
                    let mut bytes = vec![MaybeUninit::<u8>::uninit(); offset + len];
                    let out = &mut bytes[offset..];
                    vectorized_for(|isa| {
                        map_into(Store::choose(stream, isa), out, &x, |a| a as u8)
                    });
                    for (i, o) in out.iter().enumerate() {
                        // SAFETY: as above.
                        assert_eq!(unsafe { o.assume_init() }, x[i] as u8);
                    }
                }
            }
        }
    }
}
