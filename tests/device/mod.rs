//! The device tests: each runs on the CPU and on cuda:0 (the real GPU with `--features cuda`,
//! the emulated one with `--features cuda-emu`, skipped with a printed reason where neither
//! is usable) and compares with the CPU result.
//!
//! Built only with one of those features, and as a module of the library's unit-test binary
//! (`src/lib.rs` includes this file; `cargo test --features cuda-emu --lib` runs them), not
//! as a test crate of their own: a test crate links the library built as an rlib, and that
//! second build of the library with the CUDA features took four of the five minutes of CI's
//! `cuda-emu` step. They use only the public API, through the crate's own name
//! (`extern crate self as namedtensor`), as a test crate would.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod compute;
mod core_ops;
mod model_move;
