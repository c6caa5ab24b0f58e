//! Run-time kernel compilation with NVRTC.
//!
//! A kernel is compiled on first use for the device's compute capability — to a CUBIN
//! (`--gpu-architecture=sm_XY`) when this NVRTC knows the architecture, else to PTX for the
//! newest architecture it knows below the device's (`compute_XY`), which the driver compiles
//! on load. The result is cached per device (`device.rs`). Compile failures carry NVRTC's log.
//!
//! NVRTC is loaded at run time (`libnvrtc.so`, `libnvrtc.so.12`, … on the dynamic loader's
//! search path, i.e. `LD_LIBRARY_PATH`): it ships with the CUDA toolkit and also as the pip
//! wheel `nvidia-cuda-nvrtc-cu12` (`…/site-packages/nvidia/cuda_nvrtc/lib`). It needs no GPU.

use super::disk_cache;
use super::error::{device_error, nvrtc as nvrtc_error};
use crate::error::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::{CString, c_char, c_int};
use std::sync::OnceLock;

/// What NVRTC produces for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Machine code for exactly this architecture (`sm_XY`, compute capability `XY`).
    Cubin(u32),
    /// PTX for this virtual architecture (`compute_XY`), compiled further by the driver.
    Ptx(u32),
}

impl Target {
    /// The NVRTC option selecting this target.
    pub fn option(self) -> String {
        match self {
            Target::Cubin(a) => format!("--gpu-architecture=sm_{a}"),
            Target::Ptx(a) => format!("--gpu-architecture=compute_{a}"),
        }
    }
}

/// The compute capability `(major, minor)` as NVRTC numbers it (8.6 → 86).
pub fn arch_number(major: i32, minor: i32) -> u32 {
    (major.max(0) as u32) * 10 + minor.max(0) as u32
}

/// The target for a device of architecture `arch`, given the architectures this NVRTC
/// supports: a CUBIN when `arch` is among them, else PTX for the newest one below `arch`;
/// `None` when the device is older than all of them.
pub fn choose_target(arch: u32, supported: &[u32]) -> Option<Target> {
    if supported.contains(&arch) {
        return Some(Target::Cubin(arch));
    }
    supported
        .iter()
        .copied()
        .filter(|&a| a < arch)
        .max()
        .map(Target::Ptx)
}

/// A compiled kernel image.
#[derive(Debug, Clone)]
pub enum Image {
    /// ELF machine code.
    Cubin(Vec<u8>),
    /// PTX text.
    Ptx(String),
}

/// Whether the NVRTC library can be loaded; the error says how to provide it. Checked once.
pub fn available() -> Result<(), String> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to `dlopen` the candidate library names.
    if *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() }) {
        Ok(())
    } else {
        Err(
            "NVRTC not found: no libnvrtc.so / libnvrtc.so.12 on the library search path; \
             install the CUDA toolkit or `pip install nvidia-cuda-nvrtc-cu12` and add its \
             nvidia/cuda_nvrtc/lib folder to LD_LIBRARY_PATH"
                .to_string(),
        )
    }
}

fn check_available(op: &'static str) -> Result<()> {
    available().map_err(|m| device_error(op, m))
}

/// NVRTC's `(major, minor)` version.
pub fn version(op: &'static str) -> Result<(i32, i32)> {
    check_available(op)?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| nvrtc_error(op, "querying its version", e))?;
    Ok((major, minor))
}

/// The architectures this NVRTC can compile for (e.g. `[50, 52, …, 90]`).
pub fn supported_archs(op: &'static str) -> Result<Vec<u32>> {
    check_available(op)?;
    let mut n: c_int = 0;
    // SAFETY: a valid out-pointer.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(|e| nvrtc_error(op, "listing its architectures", e))?;
    let mut archs = vec![0 as c_int; n.max(0) as usize];
    if !archs.is_empty() {
        // SAFETY: `archs` has room for the `n` entries NVRTC writes.
        unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
            .result()
            .map_err(|e| nvrtc_error(op, "listing its architectures", e))?;
    }
    Ok(archs.into_iter().map(|a| a.max(0) as u32).collect())
}

/// Destroys the program when dropped, on every path.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here. A failure to free it
        // leaks the program; there is nothing better to do in a destructor.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles `source` (program name `name`, shown in NVRTC's messages) for `target`.
/// A compile error includes NVRTC's log.
pub fn compile(op: &'static str, source: &str, name: &str, target: Target) -> Result<Image> {
    check_available(op)?;
    let src = CString::new(source)
        .map_err(|_| device_error(op, format!("kernel source {name} contains a NUL byte")))?;
    let cname = CString::new(name)
        .map_err(|_| device_error(op, format!("kernel name {name:?} contains a NUL byte")))?;
    let prog = Program(
        result::create_program(&src, Some(cname.as_c_str()))
            .map_err(|e| nvrtc_error(op, &format!("creating program {name}"), e))?,
    );
    let options = [target.option(), "--std=c++17".to_string()];
    // SAFETY: `prog` is a live program; the options are NUL-free.
    let compiled = unsafe { result::compile_program(prog.0, &options) };
    if let Err(e) = compiled {
        // SAFETY: `prog` is a live program.
        let log = unsafe { result::get_program_log(prog.0) }
            .map(|l| c_text(&l))
            .unwrap_or_else(|_| "(NVRTC gave no log)".to_string());
        return Err(compile_failure(
            op,
            name,
            target,
            &format!("{:?}", e.0),
            &log,
        ));
    }
    match target {
        Target::Cubin(_) => {
            let mut size = 0usize;
            // SAFETY: `prog` compiled successfully for a real architecture, so it has a CUBIN;
            // the buffer has the size NVRTC reported.
            unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) }
                .result()
                .map_err(|e| nvrtc_error(op, &format!("sizing the CUBIN of {name}"), e))?;
            let mut cubin = vec![0u8; size];
            unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr() as *mut c_char) }
                .result()
                .map_err(|e| nvrtc_error(op, &format!("reading the CUBIN of {name}"), e))?;
            Ok(Image::Cubin(cubin))
        }
        Target::Ptx(_) => {
            // SAFETY: `prog` compiled successfully.
            let ptx = unsafe { result::get_ptx(prog.0) }
                .map_err(|e| nvrtc_error(op, &format!("reading the PTX of {name}"), e))?;
            Ok(Image::Ptx(c_text(&ptx)))
        }
    }
}

/// [`compile`], through the disk cache in `cache` (`None`: no cache; see `disk_cache.rs`):
/// an image compiled before for the same text, name, target and NVRTC version is read back
/// instead of compiled. The cache never makes a compile fail.
pub fn compile_cached(
    op: &'static str,
    source: &str,
    name: &str,
    target: Target,
    cache: Option<&std::path::Path>,
) -> Result<Image> {
    let Some(dir) = cache else {
        return compile(op, source, name, target);
    };
    let (major, minor) = version(op)?;
    let ext = match target {
        Target::Cubin(_) => "cubin",
        Target::Ptx(_) => "ptx",
    };
    let nvrtc = format!("nvrtc {major}.{minor}");
    let path = disk_cache::entry(dir, name, &[source, name, &target.option(), &nvrtc], ext);
    if let Ok(bytes) = std::fs::read(&path) {
        match target {
            Target::Cubin(_) => return Ok(Image::Cubin(bytes)),
            Target::Ptx(_) => {
                if let Ok(text) = String::from_utf8(bytes) {
                    return Ok(Image::Ptx(text));
                }
            }
        }
    }
    let image = compile(op, source, name, target)?;
    let bytes = match &image {
        Image::Cubin(b) => b.as_slice(),
        Image::Ptx(t) => t.as_bytes(),
    };
    // Not stored (a read-only or full disk) only means compiling again next time.
    let _ = disk_cache::store(&path, bytes);
    Ok(image)
}

/// The error for a failed compilation, with NVRTC's log.
pub fn compile_failure(
    op: &'static str,
    name: &str,
    target: Target,
    code: &str,
    log: &str,
) -> Error {
    device_error(
        op,
        format!(
            "NVRTC could not compile kernel {name} ({}, {code}):\n{}",
            target.option(),
            log.trim_end()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_numbers_and_options() {
        assert_eq!(arch_number(8, 6), 86);
        assert_eq!(arch_number(9, 0), 90);
        assert_eq!(arch_number(12, 0), 120);
        assert_eq!(Target::Cubin(86).option(), "--gpu-architecture=sm_86");
        assert_eq!(Target::Ptx(90).option(), "--gpu-architecture=compute_90");
    }

    #[test]
    fn targets_prefer_exact_machine_code_then_older_ptx() {
        let supported = [50, 52, 60, 61, 70, 75, 80, 86, 89, 90];
        assert_eq!(choose_target(86, &supported), Some(Target::Cubin(86)));
        assert_eq!(choose_target(90, &supported), Some(Target::Cubin(90)));
        // a newer GPU than this NVRTC knows: PTX of the newest known, JIT-compiled by the driver
        assert_eq!(choose_target(120, &supported), Some(Target::Ptx(90)));
        // an architecture between known ones
        assert_eq!(choose_target(87, &supported), Some(Target::Ptx(86)));
        // older than everything: no target
        assert_eq!(choose_target(35, &supported), None);
        assert_eq!(choose_target(80, &[]), None);
    }

    #[test]
    fn compile_failures_carry_the_log() {
        let e = compile_failure(
            "contiguous",
            "copy.cu",
            Target::Cubin(80),
            "NVRTC_ERROR_COMPILATION",
            "copy.cu(3): error: identifier \"x\" is undefined\n\n",
        );
        assert_eq!(e.kind(), crate::ErrorKind::Device);
        assert_eq!(
            e.message(),
            "NVRTC could not compile kernel copy.cu (--gpu-architecture=sm_80, \
             NVRTC_ERROR_COMPILATION):\ncopy.cu(3): error: identifier \"x\" is undefined"
        );
    }

    #[test]
    fn c_strings_stop_at_the_nul() {
        let raw: Vec<c_char> = b"ptx text\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_text(&raw), "ptx text");
        assert_eq!(c_text(&[]), "");
    }
}
