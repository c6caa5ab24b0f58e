//! CPU kernels over strided slices.

pub(crate) mod convert;
mod copy;
mod elementwise;
mod half_lines;
mod instances;
mod matmul;
pub(crate) mod parallel;
pub(crate) mod pointwise;
pub(crate) mod pool;
pub(crate) mod reduce;
mod reduction;
pub(crate) mod scan;
mod select;
mod shape;
mod sort;
pub(crate) mod stream;
mod transpose;
pub(crate) mod vmath;
mod window;
mod words;

pub(crate) use copy::copy_cast;

/// The environment variable `name` parsed as a `T`, when it is set and parses: the backend's
/// settings (`NAMEDTENSOR_NUM_THREADS`, `NAMEDTENSOR_POOL_BYTES`, …) take their first value
/// from it, else their default.
pub(crate) fn env_setting<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
pub(crate) use instances::Cpu;
