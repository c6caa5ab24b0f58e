//! Kernels for the emulator: each kernel source file, with every kernel the backend can ask of
//! it, compiled once by the host C++ compiler into a shared library, and loaded.
//!
//! The program is `shim.h`, then exactly the text NVRTC compiles (`kernels::program`: the
//! shared header, the file, the instantiation lines), then one `NT_EMU_ENTRY(name)` per kernel.
//! Libraries are kept in the disk cache (`disk_cache.rs`), keyed by the program, the compiler
//! and its flags, so the test binaries of one run (and later runs) compile each file once.
//!
//! Environment: `CXX` (default `c++`) is the compiler; `NAMEDTENSOR_CUDA_EMU_CXXFLAGS` adds
//! flags (e.g. `-fsanitize=address` together with an ASan-preloaded test run).

use super::stream::CudaFunction;
use crate::backend::cuda::disk_cache;
use crate::backend::cuda::kernels::{self, Kernel, Source};
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The device-side runtime: CUDA's keywords and built-ins for host C++, fibers, barriers.
pub const SHIM: &str = include_str!("shim.h");

/// `nt_emu_launch_t` of `shim.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchParams {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem_bytes: u32,
    pub reserved: u32,
    /// 0: threads in index order; else the seed of their order between barriers.
    pub seed: u64,
}

/// `nt_emu_entry_<kernel>`: launch parameters, argument value pointers, their sizes and count,
/// a message buffer and its size; 0 on success.
pub type Entry = unsafe extern "C" fn(
    *const LaunchParams,
    *mut *mut c_void,
    *const u64,
    u32,
    *mut c_char,
    usize,
) -> i32;

/// The compiler and its flags.
fn compiler() -> (String, Vec<String>) {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let mut flags: Vec<String> = ["-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-x", "c++"]
        .map(String::from)
        .to_vec();
    if let Ok(extra) = std::env::var("NAMEDTENSOR_CUDA_EMU_CXXFLAGS") {
        flags.extend(extra.split_whitespace().map(String::from));
    }
    (cxx, flags)
}

/// The emulator program for `source`: every kernel the backend can ask of it, with entries.
pub fn program(source: Source) -> (String, Vec<Kernel>) {
    let kernels: Vec<Kernel> = kernels::all_kernels()
        .into_iter()
        .filter(|k| k.source == source)
        .collect();
    let mut text = String::from(SHIM);
    text.push('\n');
    text.push_str(&kernels::program(source, &kernels));
    for k in &kernels {
        text.push_str(&format!("NT_EMU_ENTRY({})\n", k.name));
    }
    (text, kernels)
}

/// Compiles `text` (or finds it in the disk cache) and returns the library's path; `label`
/// names the file and appears in error messages. With the cache off, libraries go to a
/// folder of this process's own.
fn build(label: &str, text: &str) -> Result<PathBuf, String> {
    let (cxx, flags) = compiler();
    let dir = disk_cache::dir().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("namedtensor-cuda-emu-{}", std::process::id()))
    });
    let mut parts: Vec<&str> = vec![text, &cxx];
    parts.extend(flags.iter().map(String::as_str));
    let path = disk_cache::entry(&dir, label, &parts, "so");
    if path.exists() {
        return Ok(path);
    }
    let tmp = disk_cache::temporary(&path).map_err(|e| {
        format!(
            "cannot create the kernel cache folder {}: {e}",
            dir.display()
        )
    })?;
    let mut child = Command::new(&cxx)
        // A sanitizer runtime preloaded into the tests (`.ci/run`) is not the compiler's.
        .env_remove("LD_PRELOAD")
        .args(&flags)
        .arg("-")
        .arg("-o")
        .arg(&tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the C++ compiler `{cxx}` (set CXX): {e}"))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(text.as_bytes())
        .map_err(|e| format!("cannot feed the C++ compiler: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("the C++ compiler failed to run: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let log = String::from_utf8_lossy(&out.stderr);
        let log: String = log.lines().take(40).collect::<Vec<_>>().join("\n");
        return Err(format!(
            "compiling {label} for the CUDA emulator with `{cxx}` failed:\n{log}"
        ));
    }
    disk_cache::publish(&tmp, &path)
        .map_err(|e| format!("cannot move {} into the kernel cache: {e}", tmp.display()))?;
    Ok(path)
}

struct Loaded {
    // Keeps the library mapped while its entries are used (never unloaded).
    _library: libloading::Library,
    entries: HashMap<String, Entry>,
}

/// Loads the library at `path` and looks up the entry of each kernel of `names`.
fn load(path: &std::path::Path, names: &[&str]) -> Result<Loaded, String> {
    // SAFETY: the library is one this module compiled from the shim and CUDA C kernels; loading
    // it runs no initialisers beyond the C++ runtime's.
    let library = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    let mut entries = HashMap::new();
    for name in names {
        let symbol = format!("nt_emu_entry_{name}");
        // SAFETY: NT_EMU_ENTRY defines the symbol with exactly the `Entry` signature.
        let entry: Entry = unsafe { library.get::<Entry>(symbol.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("{} lacks {symbol}: {e}", path.display()))?;
        entries.insert(name.to_string(), entry);
    }
    Ok(Loaded {
        _library: library,
        entries,
    })
}

/// Compiles CUDA C `source` (kernels without templates) for the emulator and returns the
/// kernels `names` of it, for the emulator's own tests. The library stays loaded.
#[cfg(test)]
pub fn compile_source(
    label: &str,
    source: &str,
    names: &[&str],
) -> Result<Vec<CudaFunction>, String> {
    let mut text = format!("{SHIM}\n{source}\n");
    for name in names {
        text.push_str(&format!("NT_EMU_ENTRY({name})\n"));
    }
    let loaded = load(&build(label, &text)?, names)?;
    let functions = names
        .iter()
        .map(|n| CudaFunction {
            name: Arc::from(*n),
            entry: loaded.entries[*n],
        })
        .collect();
    // Kept mapped, and reachable, for the rest of the process.
    static KEPT: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());
    KEPT.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(loaded);
    Ok(functions)
}

/// The kernel `kernel`, compiling and loading its source file on first use.
pub fn function(kernel: &Kernel) -> Result<CudaFunction, String> {
    static LOADED: OnceLock<Mutex<HashMap<Source, Loaded>>> = OnceLock::new();
    let mut loaded = LOADED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let std::collections::hash_map::Entry::Vacant(slot) = loaded.entry(kernel.source) {
        let (text, kernels) = program(kernel.source);
        let path = build(kernel.source.file_name(), &text)?;
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        slot.insert(load(&path, &names)?);
    }
    let entry = *loaded[&kernel.source]
        .entries
        .get(&kernel.name)
        .ok_or_else(|| {
            format!(
                "{} is not among the kernels of {} the emulator compiled",
                kernel.name,
                kernel.source.file_name()
            )
        })?;
    Ok(CudaFunction {
        name: Arc::from(kernel.name.as_str()),
        entry,
    })
}
