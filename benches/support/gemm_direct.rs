//! The matrix-product baseline shared by `benches/matmul.rs` and `examples/interleaved.rs`:
//! gemm's kernel for the element type called directly, as a user without namedtensor would.
//! The kernel crates (`gemm-f32`, `-f64`, `-f16`) are called the way the `gemm` front crate
//! calls them, which the dev build then need not compile with its complex-number kernels.

use half::f16;
use namedtensor::{DType, Element};

/// `c = a · b` for row-major n × n matrices, straight through gemm's kernel, on `pool`.
///
/// Panics unless `a`, `b` and `c` hold n·n elements each, or for an element type gemm has no
/// kernel for.
pub fn gemm_direct<E: Element>(pool: &rayon::ThreadPool, n: usize, a: &[E], b: &[E], c: &mut [E]) {
    assert!(a.len() == n * n && b.len() == n * n && c.len() == n * n);
    let threads = pool.current_num_threads();
    let parallelism = if threads > 1 {
        gemm_common::Parallelism::Rayon(threads)
    } else {
        gemm_common::Parallelism::None
    };
    // Row-major c = a · b is column-major cᵀ = bᵀ · aᵀ, the orientation gemm's kernels take
    // (the front crate's `gemm::gemm` makes the same swap for a row-major destination).
    macro_rules! run {
        ($t:ty, $kernel:path) => {
            // SAFETY: `E::DTYPE` says `E` is `$t`, so the casts keep the element type; a, b and
            // c hold n·n elements each (checked above), read and written with column stride n
            // and row stride 1; c does not overlap a or b (a `&mut` borrow).
            pool.install(|| unsafe {
                $kernel()(
                    n,
                    n,
                    n,
                    c.as_mut_ptr().cast::<$t>(),
                    n as isize,
                    1,
                    false,
                    b.as_ptr().cast::<$t>(),
                    n as isize,
                    1,
                    a.as_ptr().cast::<$t>(),
                    n as isize,
                    1,
                    <$t as num_traits::Zero>::zero(),
                    <$t as num_traits::One>::one(),
                    false,
                    false,
                    false,
                    parallelism,
                )
            })
        };
    }
    match E::DTYPE {
        DType::F32 => run!(f32, gemm_f32::gemm::f32::get_gemm_fn),
        DType::F64 => run!(f64, gemm_f64::gemm::f64::get_gemm_fn),
        DType::F16 => run!(f16, gemm_f16::gemm::f16::get_gemm_fn),
        other => panic!("gemm has no kernel for {other:?}"),
    }
}
