//! The CPU's elementwise engines over strided slices (pointwise, streamed stores, copies and
//! transposes, conversions), the worker pool and the buffer pool.

pub mod convert;
pub mod copy;
pub mod elementwise;
pub mod elementwise_instances;
pub mod half_lines;
pub mod host_buffer;
pub mod parallel;
pub mod pointwise;
pub mod pool;
pub mod stream;
pub mod transpose;
pub mod vmath;

pub use copy::copy_cast;

/// The environment variable `name` parsed as a `T`, when it is set and parses: the backend's
/// settings (`NAMEDTENSOR_NUM_THREADS`, `NAMEDTENSOR_POOL_BYTES`, …) take their first value
/// from it, else their default.
pub fn env_setting<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
