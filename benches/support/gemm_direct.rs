//! The matrix-product baseline shared by `benches/matmul.rs` and `examples/interleaved.rs`:
//! the `gemm` crate called directly, as a user without namedtensor would.

use namedtensor::Element;

/// `c = a · b` for row-major n × n matrices, straight through `gemm`, on `pool`.
///
/// Panics unless `a`, `b` and `c` hold n·n elements each.
pub fn gemm_direct<E: Element>(pool: &rayon::ThreadPool, n: usize, a: &[E], b: &[E], c: &mut [E]) {
    assert!(a.len() == n * n && b.len() == n * n && c.len() == n * n);
    let threads = pool.current_num_threads();
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: a, b and c hold n·n elements each (checked above), read and written row-major
    // with row stride n and column stride 1; c does not overlap a or b (a `&mut` borrow).
    pool.install(|| unsafe {
        gemm::gemm(
            n,
            n,
            n,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            n as isize,
            b.as_ptr(),
            1,
            n as isize,
            E::ZERO,
            E::ONE,
            false,
            false,
            false,
            parallelism,
        )
    });
}
