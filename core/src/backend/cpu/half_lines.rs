//! Row loops for `f16`/`bf16` operands computed in `f32`, a 64-byte line (32 elements) at a
//! time, widened and narrowed in vector registers.
//!
//! The generic blocked path converts 256-element blocks into stack buffers, computes there
//! and converts back through another buffer: three passes over L1 per block, and a call per
//! conversion. Here each line is loaded, widened (F16C `vcvtph2ps` for `f16`, a 16-bit shift
//! for `bf16`), computed, narrowed (`vcvtps2ph` with round-to-nearest-even for `f16`; the
//! same rounding as [`bf16::from_f32`] on bits for `bf16`) and stored, without leaving the
//! registers, and large outputs are streamed (see [`super::stream`]); timings in
//! `BENCHMARKS.md`.
//!
//! Only used under [`vectorized_for`](super::vmath::vectorized_for) with AVX2 or AVX-512 (both
//! include F16C there); the callers fall back to the blocked path otherwise.

use super::convert::{as_type, as_uninit_type_mut};
use super::pointwise::In;
use super::stream::{Store, line_of, map_line, write_blocks, write_lines, zip_line};
use super::vmath::Isa;
use crate::dtype::cast;
use crate::dtype::{DType, Element};
use half::{bf16, f16};
use std::mem::MaybeUninit;

/// Elements per line.
const N: usize = 32;

/// A 16-bit float type with line conversions to and from `f32`.
trait Half: Element {
    /// The line widened to `f32` (exact).
    fn widen(isa: Isa, xs: [Self; N]) -> [f32; N];
    /// The line rounded to nearest even (NaN stays NaN).
    fn narrow(isa: Isa, ys: [f32; N]) -> [Self; N];
}

impl Half for f16 {
    #[inline(always)]
    fn widen(isa: Isa, xs: [f16; N]) -> [f32; N] {
        #[cfg(target_arch = "x86_64")]
        if isa != Isa::Baseline {
            // SAFETY: `isa` is AVX2 or AVX-512, both checked to include F16C (see `Isa`).
            return unsafe { x86::widen_f16c(&xs) };
        }
        let _ = isa;
        map_line(xs, f16::to_f32)
    }

    #[inline(always)]
    fn narrow(isa: Isa, ys: [f32; N]) -> [f16; N] {
        #[cfg(target_arch = "x86_64")]
        if isa != Isa::Baseline {
            // SAFETY: as in `widen`.
            return unsafe { x86::narrow_f16c(&ys) };
        }
        let _ = isa;
        map_line(ys, f16::from_f32)
    }
}

impl Half for bf16 {
    #[inline(always)]
    fn widen(_: Isa, xs: [bf16; N]) -> [f32; N] {
        map_line(xs, |x| f32::from_bits((x.to_bits() as u32) << 16))
    }

    #[inline(always)]
    fn narrow(_: Isa, ys: [f32; N]) -> [bf16; N] {
        map_line(ys, |y| {
            let x = y.to_bits();
            let rounded = (x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16) as u16;
            let nan = ((x >> 16) as u16) | 0x0040;
            let is_nan = (x & 0x7FFF_FFFF) > 0x7F80_0000;
            bf16::from_bits(if is_nan { nan } else { rounded })
        })
    }
}

/// Whether [`unary`] handles these types: `S` and `O` one half type, `T` and `U` `f32`.
/// Callers test it in a `const` block, so that the line loops are compiled only for them.
pub const fn fits_unary<S: Element, T: Element, U: Element, O: Element>() -> bool {
    S::DTYPE.is_half() && S::DTYPE as u8 == O::DTYPE as u8 && computes_in_f32::<T, U>()
}

/// Whether [`binary`] handles these types: `A`, `B` and `O` one half type, `T` and `U` `f32`.
pub const fn fits_binary<A: Element, B: Element, T: Element, U: Element, O: Element>() -> bool {
    fits_unary::<A, T, U, O>() && A::DTYPE as u8 == B::DTYPE as u8
}

const fn computes_in_f32<T: Element, U: Element>() -> bool {
    T::DTYPE as u8 == DType::F32 as u8 && U::DTYPE as u8 == DType::F32 as u8
}

/// `out[i] = f(src[start + i])` for types that [`fits_unary`], when the source is contiguous
/// and `isa` is not the baseline; returns whether it ran.
#[inline(always)]
pub fn unary<S: Element, T: Element, U: Element, O: Element>(
    isa: Isa,
    store: Store,
    out: &mut [MaybeUninit<O>],
    src: &[S],
    start: usize,
    stride: usize,
    f: &impl Fn(T) -> U,
) -> bool {
    if isa == Isa::Baseline || stride != 1 || !const { fits_unary::<S, T, U, O>() } {
        return false;
    }
    let g = |x: f32| cast::<U, f32>(f(cast::<f32, T>(x)));
    if const { S::DTYPE as u8 == DType::F16 as u8 } {
        map_lines::<S, O, f16>(isa, store, out, src, start, g)
    } else {
        map_lines::<S, O, bf16>(isa, store, out, src, start, g)
    }
    true
}

/// `out[i] = f(a[i], b[i])` for types that [`fits_binary`], when each operand is contiguous
/// or broadcast (not both broadcast) and `isa` is not the baseline; returns whether it ran.
#[inline(always)]
pub fn binary<A: Element, B: Element, T: Element, U: Element, O: Element>(
    isa: Isa,
    store: Store,
    out: &mut [MaybeUninit<O>],
    a: In<'_, A>,
    b: In<'_, B>,
    f: &impl Fn(T, T) -> U,
) -> bool {
    if isa == Isa::Baseline || !const { fits_binary::<A, B, T, U, O>() } {
        return false;
    }
    let g = |x: f32, y: f32| cast::<U, f32>(f(cast::<f32, T>(x), cast::<f32, T>(y)));
    if const { A::DTYPE as u8 == DType::F16 as u8 } {
        zip_lines::<A, B, O, f16>(isa, store, out, a, b, g)
    } else {
        zip_lines::<A, B, O, bf16>(isa, store, out, a, b, g)
    }
}

#[inline(always)]
fn map_lines<S: Element, O: Element, H: Half>(
    isa: Isa,
    store: Store,
    out: &mut [MaybeUninit<O>],
    src: &[S],
    start: usize,
    g: impl Fn(f32) -> f32,
) {
    let (Some(x), Some(out)) = (as_type::<S, H>(src), as_uninit_type_mut::<O, H>(out)) else {
        unreachable!("the caller matched the types");
    };
    let x = &x[start..start + out.len()];
    write_blocks(
        store,
        out,
        #[inline(always)]
        |part, range| {
            let x = &x[range];
            write_lines::<H, N>(
                part,
                #[inline(always)]
                |i, m| H::narrow(isa, map_line(H::widen(isa, line_of(x, i, m)), &g)),
            )
        },
    );
}

#[inline(always)]
fn zip_lines<A: Element, B: Element, O: Element, H: Half>(
    isa: Isa,
    store: Store,
    out: &mut [MaybeUninit<O>],
    a: In<'_, A>,
    b: In<'_, B>,
    g: impl Fn(f32, f32) -> f32,
) -> bool {
    let (Some(x), Some(y), Some(out)) = (
        as_type::<A, H>(a.data),
        as_type::<B, H>(b.data),
        as_uninit_type_mut::<O, H>(out),
    ) else {
        unreachable!("the caller matched the types");
    };
    let n = out.len();
    match (a.stride, b.stride) {
        (1, 1) => {
            let (x, y) = (&x[a.start..a.start + n], &y[b.start..b.start + n]);
            write_blocks(
                store,
                out,
                #[inline(always)]
                |part, range| {
                    let (x, y) = (&x[range.clone()], &y[range]);
                    write_lines::<H, N>(
                        part,
                        #[inline(always)]
                        |i, m| {
                            let xs = H::widen(isa, line_of(x, i, m));
                            let ys = H::widen(isa, line_of(y, i, m));
                            H::narrow(isa, zip_line(xs, ys, &g))
                        },
                    )
                },
            );
        }
        (1, 0) => {
            let (x, q) = (&x[a.start..a.start + n], cast::<H, f32>(y[b.start]));
            map_lines::<H, H, H>(isa, store, out, x, 0, |p| g(p, q));
        }
        (0, 1) => {
            let (p, y) = (cast::<H, f32>(x[a.start]), &y[b.start..b.start + n]);
            map_lines::<H, H, H>(isa, store, out, y, 0, |q| g(p, q));
        }
        _ => return false,
    }
    true
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::N;
    use half::f16;
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has F16C and AVX.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn widen_f16c(xs: &[f16; N]) -> [f32; N] {
        let mut ys = [0.0f32; N];
        for k in (0..N).step_by(8) {
            // SAFETY: `k + 8 <= N`: eight 16-bit loads from `xs` and eight 32-bit stores
            // into `ys`, both in bounds; unaligned forms.
            unsafe {
                let h = _mm_loadu_si128(xs.as_ptr().add(k).cast::<__m128i>());
                _mm256_storeu_ps(ys.as_mut_ptr().add(k), _mm256_cvtph_ps(h));
            }
        }
        ys
    }

    /// # Safety
    /// The CPU has F16C and AVX.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn narrow_f16c(ys: &[f32; N]) -> [f16; N] {
        let mut xs = [f16::ZERO; N];
        for k in (0..N).step_by(8) {
            // SAFETY: as in `widen_f16c`, the other way.
            unsafe {
                let v = _mm256_loadu_ps(ys.as_ptr().add(k));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(xs.as_mut_ptr().add(k).cast::<__m128i>(), h);
            }
        }
        xs
    }
}
