//! Run-time selection of the widest vector instructions for a loop.
//!
//! # Dispatch
//! The crate is compiled for baseline x86-64 (SSE2): 4 `f32` lanes, and no `roundps`.
//! [`vectorized`] runs a closure inside a function compiled with AVX-512 (or AVX2 + FMA),
//! chosen once per call by the CPU's features, so that the loops in the closure, inlined
//! there, are vectorised for the wider registers. One generic body serves every instruction
//! set.

/// The vector instruction set a [`vectorized_for`] closure runs under.
///
/// Invariant: a value other than `Baseline` is only made by [`vectorized_for`] and [`widest`],
/// after checking that the CPU has every feature of that set, so code handed one may use
/// those instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512 F/VL/DQ/BW with AVX2, FMA and F16C.
    Avx512,
    /// AVX2 with FMA and F16C.
    Avx2,
    /// The baseline the crate is compiled for.
    Baseline,
}

/// Runs `f` inside a function compiled for the widest vector instructions this CPU has
/// (AVX-512, else AVX2 + FMA + F16C, else the baseline), so that loops in `f` (inlined there) use
/// them. Costs one cached feature check per call: call it around a loop over a row, not per
/// element.
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    vectorized_for(
        #[inline(always)]
        |_| f(),
    )
}

/// [`vectorized`], telling `f` which instruction set it runs under, for code that uses
/// instructions of that set explicitly (see [`super::stream`]).
#[inline(always)]
pub fn vectorized_for<R>(f: impl FnOnce(Isa) -> R) -> R {
    match widest() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `widest` found every feature `with_avx512` is compiled for (same list).
        Isa::Avx512 => unsafe { x86::with_avx512(f) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for `with_avx2`.
        Isa::Avx2 => unsafe { x86::with_avx2(f) },
        _ => f(Isa::Baseline),
    }
}

/// `vectorized_if!(WIDE, |isa| body)` runs `body` inside [`vectorized_for`] (AVX-512, AVX2 or
/// the baseline) when the constant expression `WIDE` holds, else with `isa = Isa::Baseline`
/// in the caller's (baseline) code. `WIDE` is evaluated in a `const` block, so an instance
/// compiles `body` three times when it holds and once when not. (A loop that streams its
/// output needs no wide copy of itself: see [`super::stream`].)
macro_rules! vectorized_if {
    ($wide:expr, |$isa:pat_param| $body:expr) => {{
        if const { $wide } {
            $crate::backend::cpu::vmath::vectorized_for(
                #[inline(always)]
                |$isa| $body,
            )
        } else {
            let $isa = $crate::backend::cpu::vmath::Isa::Baseline;
            $body
        }
    }};
}
pub(crate) use vectorized_if;

/// The widest instruction set this CPU has: the one [`vectorized_for`] runs under, and the
/// one large outputs are streamed with (see [`super::stream`]).
#[inline(always)]
pub fn widest() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if x86::has_avx512() {
            return Isa::Avx512;
        }
        if x86::has_avx2() {
            return Isa::Avx2;
        }
    }
    Isa::Baseline
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    #[inline(always)]
    pub(super) fn has_avx512() -> bool {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512bw")
            && has_avx2()
    }

    #[inline(always)]
    pub(super) fn has_avx2() -> bool {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("f16c")
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")]
    pub(super) fn with_avx512<R>(f: impl FnOnce(super::Isa) -> R) -> R {
        f(super::Isa::Avx512)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn with_avx2<R>(f: impl FnOnce(super::Isa) -> R) -> R {
        f(super::Isa::Avx2)
    }
}
