//! The emulator's own checks: each kernel below has the bug the emulator exists to find (or a
//! correct twin), and each test proves the emulator reports it. Every test uses a private
//! context, so a failure it provokes does not reach `cuda:0` of the other tests.

use super::asan;
use super::kernel_build::compile_source;
use super::memory::{CudaSlice, POISON_BYTE};
use super::stream::{CudaContext, CudaFunction, CudaStream};
use cudarc::driver::sys::CUresult;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::sync::{Arc, OnceLock};

const KERNELS: &str = r#"
// Correct: every thread writes its slot, the block waits, then reads another thread's slot.
__global__ void nt_test_shift(float* out, unsigned salt) {
    __shared__ float s[1024];
    unsigned t = threadIdx.x;
    s[t] = (float)(t + salt);
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = t > 0 ? s[t - 1] : -1.0f;
}

// The same without the barrier: right only if thread t - 1 happens to run before thread t.
__global__ void nt_test_shift_racy(float* out, unsigned salt) {
    __shared__ float s[1024];
    unsigned t = threadIdx.x;
    s[t] = (float)(t + salt);
    out[blockIdx.x * blockDim.x + t] = t > 0 ? s[t - 1] : -1.0f;
}

// Half of the block returns before the barrier the other half waits at.
__global__ void nt_test_early_return(float* out) {
    if (threadIdx.x >= blockDim.x / 2) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}

// Odd and even threads wait at two different barriers.
__global__ void nt_test_divergent_barriers(float* out) {
    unsigned t = threadIdx.x;
    if (t % 2) {
        out[t] = 1.0f;
        __syncthreads();
        out[t] *= 3.0f;
    } else {
        out[t] = 2.0f + out[t];
        __syncthreads();
        __syncthreads();
    }
}

// Writes one element per thread; launched with one thread too many.
__global__ void nt_test_write_each(float* out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 7.0f;
}

// Thread t reads element t + 1: launched with as many threads as elements, the last reads one
// past the end.
__global__ void nt_test_read_next(const float* in, float* out) {
    unsigned t = threadIdx.x;
    out[t] = in[t + 1];
}

// A 64-bit count: a launch passing 32 bits must be refused.
__global__ void nt_test_wide_count(unsigned long long n, float* out) {
    for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) out[i] = (float)i;
}
"#;

const NAMES: [&str; 7] = [
    "nt_test_shift",
    "nt_test_shift_racy",
    "nt_test_early_return",
    "nt_test_divergent_barriers",
    "nt_test_write_each",
    "nt_test_read_next",
    "nt_test_wide_count",
];

fn kernel(name: &str) -> CudaFunction {
    static COMPILED: OnceLock<Vec<CudaFunction>> = OnceLock::new();
    let all = COMPILED.get_or_init(|| {
        compile_source("emulator-self-test", KERNELS, &NAMES).unwrap_or_else(|e| panic!("{e}"))
    });
    all[NAMES.iter().position(|n| *n == name).unwrap()].clone()
}

/// A private context's stream.
fn stream() -> Arc<CudaStream> {
    CudaContext::new_private().default_stream()
}

fn alloc(stream: &Arc<CudaStream>, len: usize) -> CudaSlice<f32> {
    // SAFETY: the elements are read only after a kernel wrote them, or to see the poison.
    unsafe { stream.alloc::<f32>(len) }.unwrap()
}

/// `slice`'s elements once the stream has run everything queued.
fn read(stream: &CudaStream, slice: &CudaSlice<f32>) -> Vec<f32> {
    stream.synchronize().unwrap();
    // SAFETY: the slice is live and no work is pending on its stream.
    unsafe { std::slice::from_raw_parts(slice.alloc.ptr as *const f32, slice.len) }.to_vec()
}

fn cfg(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Launches `name` with one output slice and an optional 32-bit scalar in the given thread
/// order, on a fresh stream; the output (or the stream's error) after a synchronisation.
fn run(
    name: &str,
    blocks: u32,
    threads: u32,
    len: usize,
    salt: Option<u32>,
    seed: u64,
) -> Result<Vec<f32>, (CUresult, String)> {
    let s = stream();
    let mut out = alloc(&s, len);
    let f = kernel(name);
    let mut b = s.launch_builder(&f);
    b.arg(&mut out);
    if let Some(salt) = salt.as_ref() {
        b.arg(salt);
    }
    b.seed(seed);
    // SAFETY: the arguments match the kernel's parameters; `out` covers what it writes (or
    // the test is about the case where it does not).
    let failed = |e: cudarc::driver::DriverError| (e.0, s.failure_message().unwrap_or_default());
    unsafe { b.launch(cfg(blocks, threads)) }.map_err(failed)?;
    s.synchronize().map_err(failed)?;
    Ok(read(&s, &out))
}

#[test]
fn a_barrier_orders_shared_memory_in_every_thread_order() {
    let (blocks, threads) = (3, 64);
    let expected: Vec<f32> = (0..blocks * threads)
        .map(|i| match i % threads {
            0 => -1.0,
            t => (t - 1 + 11) as f32,
        })
        .collect();
    for seed in [0, 1, 2, 3, 0xdead_beef] {
        let got = run(
            "nt_test_shift",
            blocks,
            threads,
            expected.len(),
            Some(11),
            seed,
        )
        .unwrap();
        assert_eq!(got, expected, "seed {seed}");
    }
}

#[test]
fn blocks_larger_than_any_before_on_the_thread_still_run_every_thread_once() {
    // One OS thread runs these launches one after another, so the later, larger blocks grow
    // the fiber pool that the earlier ones' fibers (still suspended in it) belong to.
    for threads in [32, 1024, 32, 512, 1024] {
        let expected: Vec<f32> = (0..2 * threads)
            .map(|i| match i % threads {
                0 => -1.0,
                t => (t - 1 + 5) as f32,
            })
            .collect();
        let got = run("nt_test_shift", 2, threads, expected.len(), Some(5), 0);
        assert_eq!(got, Ok(expected), "{threads} threads");
    }
}

#[test]
fn a_missing_barrier_shows_once_the_thread_order_changes() {
    let (blocks, threads) = (3, 64);
    let len = (blocks * threads) as usize;
    let expected: Vec<f32> = (0..len as u32)
        .map(|i| match i % threads {
            0 => -1.0,
            t => (t - 1 + 5) as f32,
        })
        .collect();
    // In index order, thread t - 1 has always finished before thread t starts: the race hides.
    assert_eq!(
        run("nt_test_shift_racy", blocks, threads, len, Some(5), 0).unwrap(),
        expected
    );
    // Any other order exposes it (a fresh salt per launch keeps stale shared memory from
    // looking right).
    for (k, seed) in [1u64, 2, 3].into_iter().enumerate() {
        let salt = 100 + k as u32;
        let want: Vec<f32> = expected
            .iter()
            .map(|&v| if v < 0.0 { v } else { v - 5.0 + salt as f32 })
            .collect();
        let got = run("nt_test_shift_racy", blocks, threads, len, Some(salt), seed).unwrap();
        assert_ne!(
            got, want,
            "seed {seed} ran the racy kernel as if in index order"
        );
    }
}

#[test]
fn a_barrier_reached_by_part_of_a_block_fails_the_launch_and_the_stream() {
    let s = stream();
    let mut out = alloc(&s, 64);
    let f = kernel("nt_test_early_return");
    // SAFETY: one pointer argument covering 64 elements; at most 32 are written.
    let launched = unsafe { s.launch_builder(&f).arg(&mut out).launch(cfg(2, 64)) };
    assert!(
        launched.is_ok(),
        "the launch is queued; the failure comes when it runs"
    );
    let e = s.synchronize().unwrap_err();
    assert_eq!(e.0, CUresult::CUDA_ERROR_LAUNCH_FAILED);
    let message = s.failure_message().unwrap();
    assert!(
        message.contains("__syncthreads reached by 32 of the 64 threads of block (0, 0, 0)")
            && message.contains("nt_test_early_return"),
        "{message}"
    );
    // Sticky: the context refuses everything after a fault, as a GPU does.
    // SAFETY: not read.
    assert!(unsafe { s.alloc::<f32>(4) }.is_err());
    assert_eq!(
        s.synchronize().unwrap_err().0,
        CUresult::CUDA_ERROR_LAUNCH_FAILED
    );
}

#[test]
fn threads_waiting_at_different_barriers_fail_the_launch() {
    let (code, message) = run("nt_test_divergent_barriers", 1, 8, 8, None, 0).unwrap_err();
    assert_eq!(code, CUresult::CUDA_ERROR_LAUNCH_FAILED);
    assert!(
        message.contains("the threads of block (0, 0, 0) wait at different __syncthreads"),
        "{message}"
    );
}

#[test]
fn a_write_past_the_end_of_an_allocation_is_an_illegal_address() {
    assert_eq!(
        run("nt_test_write_each", 1, 16, 16, None, 0).unwrap(),
        vec![7.0; 16]
    );
    if asan::active() {
        // AddressSanitizer would stop the process at the write (the red zone is poisoned).
        eprintln!("skipped: the red zones are AddressSanitizer's here");
        return;
    }
    let s = stream();
    let mut out = alloc(&s, 16);
    let f = kernel("nt_test_write_each");
    // SAFETY: deliberately one thread too many; the red zone after the payload absorbs it.
    unsafe { s.launch_builder(&f).arg(&mut out).launch(cfg(1, 17)) }.unwrap();
    assert_eq!(
        s.synchronize().unwrap_err().0,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
    );
    let message = s.failure_message().unwrap();
    assert!(
        message.contains("nt_test_write_each wrote outside an allocation of 64 bytes"),
        "{message}"
    );
}

#[test]
fn arguments_of_the_wrong_size_or_number_are_refused() {
    let s = stream();
    let mut out = alloc(&s, 8);
    let f = kernel("nt_test_wide_count");
    let narrow = 8u32;
    // SAFETY: deliberately wrong: the emulator refuses before running the kernel.
    unsafe {
        s.launch_builder(&f)
            .arg(&narrow)
            .arg(&mut out)
            .launch(cfg(1, 4))
    }
    .unwrap();
    assert_eq!(
        s.synchronize().unwrap_err().0,
        CUresult::CUDA_ERROR_LAUNCH_FAILED
    );
    let message = s.failure_message().unwrap();
    assert!(
        message.contains(
            "argument 0 of nt_test_wide_count is 8 bytes in the kernel's signature, the launch \
             passed 4 bytes"
        ),
        "{message}"
    );

    let s = stream();
    let mut out = alloc(&s, 8);
    // SAFETY: as above, one argument short.
    unsafe { s.launch_builder(&f).arg(&mut out).launch(cfg(1, 4)) }.unwrap();
    assert!(s.synchronize().is_err());
    let message = s.failure_message().unwrap();
    assert!(
        message.contains("nt_test_wide_count takes 2 arguments, the launch passed 1"),
        "{message}"
    );

    // And the right call works.
    let s = stream();
    let mut out = alloc(&s, 8);
    let wide = 8u64;
    // SAFETY: matches the signature; `out` has 8 elements.
    unsafe {
        s.launch_builder(&f)
            .arg(&wide)
            .arg(&mut out)
            .launch(cfg(1, 4))
    }
    .unwrap();
    assert_eq!(read(&s, &out), (0..8).map(|i| i as f32).collect::<Vec<_>>());
}

#[test]
fn invalid_launch_configurations_are_refused_up_front_and_not_sticky() {
    let s = stream();
    let mut out = alloc(&s, 2048);
    let f = kernel("nt_test_write_each");
    for (blocks, threads) in [(1, 1025), (1, 0), (0, 32)] {
        // SAFETY: refused before anything runs.
        let e = unsafe {
            s.launch_builder(&f)
                .arg(&mut out)
                .launch(cfg(blocks, threads))
        };
        assert_eq!(
            e.unwrap_err().0,
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "{blocks} x {threads}"
        );
    }
    // SAFETY: 2 blocks of 1024 threads write the 2048 elements.
    unsafe { s.launch_builder(&f).arg(&mut out).launch(cfg(2, 1024)) }.unwrap();
    assert_eq!(read(&s, &out), vec![7.0; 2048]);
}

#[test]
fn work_runs_at_the_synchronisation_and_unwritten_memory_is_poison() {
    let s = stream();
    let mut out = alloc(&s, 32);
    let f = kernel("nt_test_write_each");
    // SAFETY: 16 threads write the first 16 of 32 elements.
    unsafe { s.launch_builder(&f).arg(&mut out).launch(cfg(1, 16)) }.unwrap();
    // SAFETY: the slice is live; reading behind the stream's back is what this test is about.
    let before =
        unsafe { std::slice::from_raw_parts(out.alloc.ptr as *const u8, out.alloc.len) }.to_vec();
    assert!(
        before.iter().all(|&b| b == POISON_BYTE),
        "the launch ran before a synchronisation"
    );
    let after = read(&s, &out);
    assert_eq!(after[..16], [7.0; 16]);
    assert!(
        after[16..]
            .iter()
            .all(|v| v.is_nan() && v.to_bits() == u32::MAX)
    );
}

/// Reads one element past the end of a buffer: a test of its own only to be run, in a child
/// process, by `a_read_past_the_end_is_reported_under_address_sanitizer`.
#[test]
#[ignore = "run by a_read_past_the_end_is_reported_under_address_sanitizer"]
fn read_past_the_end_in_a_child_process() {
    if std::env::var_os("NAMEDTENSOR_EMU_ASAN_CHILD").is_none() {
        return;
    }
    let s = stream();
    let input = alloc(&s, 16);
    let mut out = alloc(&s, 16);
    let f = kernel("nt_test_read_next");
    // SAFETY: deliberately reads one element past `input`, into its (poisoned) red zone.
    unsafe {
        s.launch_builder(&f)
            .arg(&input)
            .arg(&mut out)
            .launch(cfg(1, 16))
    }
    .unwrap();
    let _ = s.synchronize();
}

#[test]
fn a_read_past_the_end_is_reported_under_address_sanitizer() {
    if !asan::active() {
        eprintln!("skipped: needs AddressSanitizer (see .ci/run)");
        return;
    }
    // The reading kernel, in bounds: 15 threads read elements 1..16.
    let s = stream();
    let input = alloc(&s, 16);
    let mut out = alloc(&s, 16);
    // SAFETY: 15 threads read elements 1 to 15 of 16 and write 0 to 14.
    unsafe {
        s.launch_builder(&kernel("nt_test_read_next"))
            .arg(&input)
            .arg(&mut out)
            .launch(cfg(1, 15))
    }
    .unwrap();
    s.synchronize().unwrap();
    // One thread more reads past the end: AddressSanitizer stops that process.
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "--ignored",
            "--nocapture",
            "backend::cuda::emu::tests::read_past_the_end_in_a_child_process",
        ])
        .env("NAMEDTENSOR_EMU_ASAN_CHILD", "1")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&child.stderr);
    assert!(!child.status.success(), "{report}");
    // A load of the poisoned red zone (ASan's own word for it), in the kernel.
    for part in [
        "AddressSanitizer: use-after-poison",
        "READ of size 4",
        "in nt_test_read_next",
    ] {
        assert!(report.contains(part), "{part} missing from:\n{report}");
    }
}
