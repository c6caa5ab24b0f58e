//! The device tests: each runs on the CPU and on cuda:0 (the real GPU with `--features cuda`,
//! the emulated one with `--features cuda-emu`, skipped with a printed reason where neither
//! is usable) and compares with the CPU result.
//!
//! Built only with one of those features: without a CUDA device the crate would run the CPU
//! halves alone, which the `suite` crate already covers, and CI's plain test build would spend
//! about 90 s of compile time on it (the `cuda-emu` step builds and runs it anyway).
#![cfg(any(feature = "cuda", feature = "cuda-emu"))]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod compute;
mod core_ops;
