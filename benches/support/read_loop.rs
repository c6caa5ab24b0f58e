//! The read baseline shared by `benches/compute.rs`, `examples/timing.rs`,
//! `examples/interleaved.rs` and the peer comparison (`benches/peers`): what summing memory
//! can reach on this CPU, against which the reductions are reported.

/// The sum of `x` with 64 independent accumulators, in AVX-512 registers when the CPU has
/// them. Compiled for the SSE2 baseline instead, the same loop is limited by its adds (8–12
/// GB/s on one thread here, below what our reductions read), not by the memory.
pub fn read_sum(x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512 F (checked just above).
        return unsafe { read_sum_avx512(x) };
    }
    read_sum_in(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn read_sum_avx512(x: &[f32]) -> f32 {
    read_sum_in(x)
}

#[inline(always)]
fn read_sum_in(x: &[f32]) -> f32 {
    let mut acc = [0f32; 64];
    for c in x.chunks_exact(64) {
        for k in 0..64 {
            acc[k] += c[k];
        }
    }
    acc.iter().sum::<f32>() + x.chunks_exact(64).remainder().iter().sum::<f32>()
}
