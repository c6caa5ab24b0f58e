//! AddressSanitizer's manual poisoning, for the emulator's red zones.
//!
//! When the kernels are compiled with `-fsanitize=address` (through
//! `NAMEDTENSOR_CUDA_EMU_CXXFLAGS`) and the test process runs with the ASan runtime preloaded,
//! the red zones around each allocation are marked unaddressable: a kernel's load or store
//! past either end of a buffer is then reported where it happens, with the kernel's stack.
//! Without ASan the red zones still catch stores (checked after each launch), never loads.
//!
//! # Invariants
//! - The runtime's functions are looked up once, in the whole process (`dlsym` of the main
//!   program): present exactly when the ASan runtime is loaded, absent otherwise, and then
//!   every function here does nothing.
//! - Only instrumented code (the kernels) is checked against the poison; this crate's Rust
//!   code is not instrumented, so it may read and write red zones (their check, the tests).

use std::ffi::c_void;
use std::sync::OnceLock;

/// `__asan_poison_memory_region` / `__asan_unpoison_memory_region`.
type Region = unsafe extern "C" fn(*const c_void, usize);

/// The ASan runtime's function `name`, if the runtime is loaded.
///
/// # Safety
/// `F` must be the C signature of `name`.
unsafe fn symbol<F: Copy>(name: &[u8]) -> Option<F> {
    let this = libloading::os::unix::Library::this();
    // SAFETY: `F` is the symbol's signature (caller's contract); the runtime is preloaded and
    // never unloaded, so the function pointer stays valid after `this` is dropped.
    unsafe { this.get::<F>(name).ok().map(|f| *f) }
}

/// `(poison, unpoison)`, looked up once.
fn runtime() -> Option<(Region, Region)> {
    static RUNTIME: OnceLock<Option<(Region, Region)>> = OnceLock::new();
    *RUNTIME.get_or_init(|| {
        // SAFETY: both functions take an address and a byte count.
        unsafe {
            Some((
                symbol::<Region>(b"__asan_poison_memory_region")?,
                symbol::<Region>(b"__asan_unpoison_memory_region")?,
            ))
        }
    })
}

/// Whether the process runs with AddressSanitizer.
#[cfg(test)]
pub fn active() -> bool {
    runtime().is_some()
}

/// Marks `len` bytes at `ptr` unaddressable for instrumented code.
///
/// # Safety
/// The bytes lie inside one live heap allocation.
pub unsafe fn poison(ptr: *const u8, len: usize) {
    if let Some((poison, _)) = runtime() {
        // SAFETY: the region is inside a live allocation (caller's contract).
        unsafe { poison(ptr.cast(), len) }
    }
}

/// Marks `len` bytes at `ptr` addressable again.
///
/// # Safety
/// The bytes lie inside one live heap allocation.
pub unsafe fn unpoison(ptr: *const u8, len: usize) {
    if let Some((_, unpoison)) = runtime() {
        // SAFETY: the region is inside a live allocation (caller's contract).
        unsafe { unpoison(ptr.cast(), len) }
    }
}

/// Whether instrumented code may not touch the byte at `ptr`; `None` without ASan.
#[cfg(test)]
pub fn is_poisoned(ptr: *const u8) -> Option<bool> {
    type IsPoisoned = unsafe extern "C" fn(*const c_void) -> i32;
    // SAFETY: the signature of `__asan_address_is_poisoned`, which reads only ASan's shadow
    // memory, valid for any address.
    unsafe {
        let f = symbol::<IsPoisoned>(b"__asan_address_is_poisoned")?;
        Some(f(ptr.cast()) != 0)
    }
}
