//! The CPU test suite: one test binary whose modules are the library's areas. One crate
//! instead of one per file: the library's generic code is instantiated and linked once, not
//! once per file (the per-file build took 15 minutes of CI's 2 cores). `cargo test --test
//! suite pointwise::` runs one area.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod amp;
mod autograd_api;
mod autograd_grads;
mod autograd_inplace;
mod autograd_named;
mod autograd_torch;
mod bad_input;
mod checkpoint;
mod contiguous;
mod core_aliasing;
mod core_display;
mod core_dtypes;
mod core_errors;
mod core_seeds;
mod core_views_prop;
mod einsum;
mod exp_accuracy;
mod join;
mod matmul;
mod named_algebra;
mod named_compute;
mod named_select;
mod named_views;
mod nn_api;
mod nn_init;
mod nn_torch;
mod npy;
mod pointwise;
mod promote;
mod rearrange;
mod reduce;
mod select;
mod serialize;
mod view_inplace;
