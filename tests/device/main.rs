//! The device tests: each runs on the CPU and on cuda:0 (the real GPU with `--features cuda`,
//! the emulated one with `--features cuda-emu`, skipped with a printed reason where neither
//! is usable) and compares with the CPU result.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod compute;
mod core_ops;
