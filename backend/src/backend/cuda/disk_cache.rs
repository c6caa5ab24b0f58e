//! Compiled kernels kept on disk, so that a machine compiles each kernel program once rather
//! than once per process: NVRTC's images for a real device (`nvrtc::compile_cached`), the
//! host compiler's shared libraries for the emulator (`emu/kernel_build.rs`).
//!
//! The folder is `NAMEDTENSOR_CUDA_CACHE` if set, else `namedtensor/cuda` in
//! `$XDG_CACHE_HOME` or `$HOME/.cache`, else in the system's temporary folder.
//! `NAMEDTENSOR_CUDA_CACHE=off` turns the cache off (images are compiled every time).
//!
//! # Invariants
//! - An entry's name holds a hash of everything that decides its bytes (program text,
//!   compiler and its version or flags, target), so a stale entry is a miss, never a hit.
//! - Entries appear whole: written under a name private to the writing process, then renamed,
//!   so a concurrent process finds either no entry or a complete one.
//! - Failing to read or write the cache is never an error by itself: the caller compiles.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The cache folder, or `None` when the cache is off.
pub fn dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NAMEDTENSOR_CUDA_CACHE") {
        return (d != "off").then(|| PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    Some(base.join("namedtensor").join("cuda"))
}

/// The entry for `parts` in `dir`: `<label>-<hash of parts>.<ext>`.
pub fn entry(dir: &Path, label: &str, parts: &[&str], ext: &str) -> PathBuf {
    // SipHash with fixed keys: the same name in every process built by one compiler (another
    // Rust release may name entries differently, which only costs a miss).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    dir.join(format!("{label}-{:016x}.{ext}", h.finish()))
}

/// Stores `bytes` as `path` (atomically, see the invariants); errors are for the caller to
/// ignore or report.
pub fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary(path)?;
    std::fs::write(&tmp, bytes)?;
    publish(&tmp, path)
}

/// A private name beside `path` for an entry being written (its folder created): unique to
/// this process and this call, as two threads may compile the same program at once.
pub fn temporary(path: &Path) -> std::io::Result<PathBuf> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let write = WRITES.fetch_add(1, Ordering::Relaxed);
    Ok(path.with_file_name(format!(".{name}.{}.{write}.tmp", std::process::id())))
}

/// Moves the finished `tmp` to `path` (removing `tmp` if that fails).
pub fn publish(tmp: &Path, path: &Path) -> std::io::Result<()> {
    std::fs::rename(tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_named_by_everything_that_decides_them() {
        let d = Path::new("/cache");
        let a = entry(d, "copy.cu", &["text", "sm_80", "12.9"], "cubin");
        assert!(a.starts_with(d));
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("copy.cu-") && name.ends_with(".cubin"),
            "{name}"
        );
        assert_eq!(a, entry(d, "copy.cu", &["text", "sm_80", "12.9"], "cubin"));
        for other in [
            entry(d, "copy.cu", &["text2", "sm_80", "12.9"], "cubin"),
            entry(d, "copy.cu", &["text", "sm_90", "12.9"], "cubin"),
            entry(d, "copy.cu", &["text", "sm_80", "12.8"], "cubin"),
            // the parts' boundaries count: "ab" + "c" is not "a" + "bc"
            entry(d, "copy.cu", &["texts", "m_80", "12.9"], "cubin"),
        ] {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn stored_entries_appear_whole_and_replace_older_ones() {
        let dir =
            std::env::temp_dir().join(format!("namedtensor-cache-test-{}", std::process::id()));
        let path = entry(&dir, "k", &["x"], "bin");
        store(&path, b"first").unwrap();
        store(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        // writers of one entry on several threads: each publishes a whole image
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let path = &path;
                s.spawn(move || store(path, &vec![t; 1 << 16]).unwrap());
            }
        });
        let last = std::fs::read(&path).unwrap();
        assert_eq!(last.len(), 1 << 16);
        assert!(last.iter().all(|&b| b == last[0]));
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // a folder that cannot be created is an error the caller may ignore
        let blocked = entry(&path, "k", &["x"], "bin"); // below a file
        assert!(store(&blocked, b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
