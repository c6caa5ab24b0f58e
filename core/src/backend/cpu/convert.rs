//! Slice conversions between element types for the CPU kernels: reinterpretation of a slice
//! whose type is known to be another (`as_type`), and [`convert`], with SIMD conversions for
//! `f16`/`bf16` ↔ `f32` and a plain copy when the types are the same.

use super::host_buffer::HostBuffer;
use crate::dtype::{DType, Element};
use crate::layout::Layout;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use std::any::TypeId;
use std::mem::MaybeUninit;

/// `s` seen as a slice of `T`, when `S` is `T`.
#[inline(always)]
pub fn as_type<S: 'static, T: 'static>(s: &[S]) -> Option<&[T]> {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        Some(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<T>(), s.len()) })
    } else {
        None
    }
}

/// Whether `A` and `B` are one element type, as a constant: `if const { same_type::<A, B>() }`
/// compiles the branch only for the instances where it holds (a run-time `TypeId` test
/// compiles both).
pub const fn same_type<A: Element, B: Element>() -> bool {
    A::DTYPE as u8 == B::DTYPE as u8
}

/// `s` seen as a mutable slice of `T`, when `S` is `T`.
#[inline(always)]
pub fn as_type_mut<S: 'static, T: 'static>(s: &mut [S]) -> Option<&mut [T]> {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        Some(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<T>(), s.len()) })
    } else {
        None
    }
}

/// `s` seen as a mutable slice of uninitialised `T`, when `S` is `T`.
#[inline(always)]
pub fn as_uninit_type_mut<S: 'static, T: 'static>(
    s: &mut [MaybeUninit<S>],
) -> Option<&mut [MaybeUninit<T>]> {
    if TypeId::of::<S>() == TypeId::of::<T>() {
        // SAFETY: `S` and `T` are the same type.
        Some(unsafe {
            std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<MaybeUninit<T>>(), s.len())
        })
    } else {
        None
    }
}

/// Converts `src` into `dst` (same length) elementwise with [`Element::cast`]'s rounding: a
/// copy for the same type, SIMD conversions between `f16`/`bf16` and `f32`/`f64`.
#[inline]
pub fn convert<S: Element, T: Element>(src: &[S], dst: &mut [T]) {
    debug_assert_eq!(src.len(), dst.len());
    if let Some(s) = as_type::<S, T>(src) {
        dst.copy_from_slice(s);
        return;
    }
    match (S::DTYPE, T::DTYPE) {
        (DType::F16, DType::F32) => f16_to_f32(
            as_type::<S, f16>(src).unwrap(),
            as_type_mut::<T, f32>(dst).unwrap(),
        ),
        (DType::F32, DType::F16) => f32_to_f16(
            as_type::<S, f32>(src).unwrap(),
            as_type_mut::<T, f16>(dst).unwrap(),
        ),
        (DType::F16, DType::F64) => {
            as_type::<S, f16>(src)
                .unwrap()
                .convert_to_f64_slice(as_type_mut::<T, f64>(dst).unwrap());
        }
        (DType::F64, DType::F16) => {
            as_type_mut::<T, f16>(dst)
                .unwrap()
                .convert_from_f64_slice(as_type::<S, f64>(src).unwrap());
        }
        (DType::BF16, DType::F32) => bf16_to_f32(
            as_type::<S, bf16>(src).unwrap(),
            as_type_mut::<T, f32>(dst).unwrap(),
        ),
        (DType::F32, DType::BF16) => f32_to_bf16(
            as_type::<S, f32>(src).unwrap(),
            as_type_mut::<T, bf16>(dst).unwrap(),
        ),
        _ => {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = s.cast::<T>();
            }
        }
    }
}

/// `f16` → `f32`: a whole-slice F16C loop where the CPU has it (8 per instruction, with no
/// call per chunk), else `half`'s slice conversion.
#[inline]
fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU supports F16C (and AVX, which F16C implies).
        return unsafe { x86::f16_to_f32_f16c(src, dst) };
    }
    src.convert_to_f32_slice(dst)
}

/// `f32` → `f16`, rounding to nearest even: F16C where available, else `half`.
#[inline]
fn f32_to_f16(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU supports F16C (and AVX, which F16C implies).
        return unsafe { x86::f32_to_f16_f16c(src, dst) };
    }
    dst.convert_from_f32_slice(src)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use half::slice::HalfFloatSliceExt;
    use half::{bf16, f16};
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support F16C and AVX.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn f16_to_f32_f16c(src: &[f16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let body = n - n % 8;
        let (s, d) = (src.as_ptr().cast::<u16>(), dst.as_mut_ptr());
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= n, within both slices; unaligned loads and stores.
            unsafe {
                let h = _mm_loadu_si128(s.add(i).cast::<__m128i>());
                _mm256_storeu_ps(d.add(i), _mm256_cvtph_ps(h));
            }
            i += 8;
        }
        src[body..n].convert_to_f32_slice(&mut dst[body..n]);
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bf16_to_f32_avx2(src: &[bf16], dst: &mut [f32]) {
        super::bf16_to_f32_plain(src, dst)
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn f32_to_bf16_avx2(src: &[f32], dst: &mut [bf16]) {
        super::f32_to_bf16_plain(src, dst)
    }

    /// # Safety
    /// The CPU must support F16C and AVX.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn f32_to_f16_f16c(src: &[f32], dst: &mut [f16]) {
        let n = src.len().min(dst.len());
        let body = n - n % 8;
        let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u16>());
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= n, within both slices; unaligned loads and stores.
            unsafe {
                let f = _mm256_loadu_ps(s.add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(f);
                _mm_storeu_si128(d.add(i).cast::<__m128i>(), h);
            }
            i += 8;
        }
        dst[body..n].convert_from_f32_slice(&src[body..n]);
    }
}

/// `bf16` → `f32` is exact: the bits shifted into the high half. Written on bits so that the
/// loop vectorises; compiled for AVX2 as well and chosen at run time.
#[inline]
fn bf16_to_f32(src: &[bf16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2.
        return unsafe { x86::bf16_to_f32_avx2(src, dst) };
    }
    bf16_to_f32_plain(src, dst)
}

#[inline(always)]
fn bf16_to_f32_plain(src: &[bf16], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f32::from_bits((s.to_bits() as u32) << 16);
    }
}

/// `f32` → `bf16`, rounding to nearest even with NaN kept quiet (what `bf16::from_f32` does),
/// written branch-free on bits so that the loop vectorises (SSE2 cannot narrow 32-bit lanes to
/// 16 bits in one instruction, so the AVX2 build of the same loop is chosen when available).
#[inline]
fn f32_to_bf16(src: &[f32], dst: &mut [bf16]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2.
        return unsafe { x86::f32_to_bf16_avx2(src, dst) };
    }
    f32_to_bf16_plain(src, dst)
}

#[inline(always)]
fn f32_to_bf16_plain(src: &[f32], dst: &mut [bf16]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        let x = s.to_bits();
        let rounded = (x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16) as u16;
        let nan = ((x >> 16) as u16) | 0x0040;
        let is_nan = (x & 0x7FFF_FFFF) > 0x7F80_0000;
        *d = bf16::from_bits(if is_nan { nan } else { rounded });
    }
}

/// `v` converted to `E`: the same buffer when `T` is `E`, else a converted copy.
pub fn vec_into<T: Element, E: Element>(v: HostBuffer<T>) -> HostBuffer<E> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<E>() {
        // SAFETY: `T` and `E` are the same type.
        return unsafe { v.retype::<E>() };
    }
    let n = v.len();
    let layout = Layout::contiguous(&[n]).expect("a vector's length fits a layout");
    super::pointwise::build(&[n], [&layout], |out, [start], _| {
        super::pointwise::unary::<T, T, T, E>(
            out,
            &v,
            start,
            1,
            &|x| x,
            super::vmath::Isa::Baseline,
            super::stream::Store::Cached,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_conversions_match_half() {
        let xs = [
            0.0f32,
            -0.0,
            1.0,
            f32::from_bits(0x3F80_8000), // 1 + 2^-8: a tie, rounds to even (down)
            f32::from_bits(0x3F81_8000), // 1 + 3·2^-8: a tie, rounds to even (up)
            3.0e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
            -2.5e-39,
            f32::MAX,
            65504.0,
            0.1,
        ];
        let mut b = [bf16::ZERO; 14];
        f32_to_bf16(&xs, &mut b);
        for (x, y) in xs.iter().zip(&b) {
            let want = bf16::from_f32(*x);
            assert!(
                want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                "{x}"
            );
        }
        let mut back = [0.0f32; 14];
        bf16_to_f32(&b, &mut back);
        for (y, z) in b.iter().zip(&back) {
            assert!(y.to_f32() == *z || z.is_nan());
        }
    }

    #[test]
    fn f16_conversions_match_half() {
        let xs: Vec<f32> = (0..1000)
            .map(|i| ((i as f32) - 500.0) * 0.37 + 1e-6 * i as f32)
            .chain([
                f32::NAN,
                f32::INFINITY,
                65520.0,
                1e-8,
                -0.0,
                65504.0,
                2049.0,
            ])
            .collect();
        let mut h = vec![f16::ZERO; xs.len()];
        f32_to_f16(&xs, &mut h);
        let mut back = vec![0.0f32; xs.len()];
        f16_to_f32(&h, &mut back);
        for ((x, y), z) in xs.iter().zip(&h).zip(&back) {
            let want = f16::from_f32(*x);
            assert!(
                want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                "{x}"
            );
            assert!(want.to_f32() == *z || z.is_nan(), "{x}");
        }
    }
}
