//! Tests of the CUDA backend that need more than one file: NVRTC compiling every kernel
//! source (needs only `libnvrtc`), the kernels' f16/bf16 conversions and casts compiled for
//! the host and compared with the Rust side (needs only `c++`), and the compute kernels on a
//! GPU (skipped without one). Every test prints why it skips.

use super::compute::{binary, compare, reduce, softmax, unary};
use super::device::{self, CudaDevice};
use super::kernels::{self, BinaryOp, CompareOp, Kernel, ReduceOp, Source, UnaryOp, all_kernels};
use super::nvrtc::{self, Image, Target};
use super::storage::CudaBuffer;
use crate::dtype::{DType, Element};
use crate::layout::Layout;
use half::{bf16, f16};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// NVRTC: every kernel source compiles for fixed architectures (no GPU needed).

fn nvrtc_or_skip() -> bool {
    match nvrtc::available() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipping: {why}");
            false
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Compiles every kernel of `source` in one program to machine code for sm_80 and sm_90
/// (front end, optimizer and assembler) and checks that each kernel symbol is there.
fn compile_every_kernel_of(source: Source) {
    if !nvrtc_or_skip() {
        return;
    }
    let (major, minor) = nvrtc::version("test").unwrap();
    let supported = nvrtc::supported_archs("test").unwrap();
    let ks: Vec<Kernel> = all_kernels()
        .into_iter()
        .filter(|k| k.source == source)
        .collect();
    let text = kernels::program(source, &ks);
    for arch in [80, 90] {
        assert!(
            supported.contains(&arch),
            "NVRTC {major}.{minor} lacks sm_{arch}"
        );
        let start = std::time::Instant::now();
        let image = nvrtc::compile("test", &text, source.file_name(), Target::Cubin(arch))
            .unwrap_or_else(|e| panic!("{e}"));
        let Image::Cubin(cubin) = image else {
            panic!("asked for a CUBIN")
        };
        for k in &ks {
            assert!(
                contains(&cubin, &k.name),
                "{} missing for sm_{arch}",
                k.name
            );
        }
        eprintln!(
            "NVRTC {major}.{minor}: {} kernels of {} compiled for sm_{arch} in {:.1?}",
            ks.len(),
            source.file_name(),
            start.elapsed()
        );
    }
}

#[test]
fn nvrtc_compiles_every_copy_kernel() {
    compile_every_kernel_of(Source::Copy);
}

#[test]
fn nvrtc_compiles_every_unary_kernel() {
    compile_every_kernel_of(Source::Unary);
}

#[test]
fn nvrtc_compiles_every_binary_kernel() {
    compile_every_kernel_of(Source::Binary);
}

#[test]
fn nvrtc_compiles_every_reduce_kernel() {
    compile_every_kernel_of(Source::Reduce);
}

#[test]
fn nvrtc_compiles_every_softmax_kernel() {
    compile_every_kernel_of(Source::Softmax);
}

#[test]
fn nvrtc_compiles_every_normalize_kernel() {
    compile_every_kernel_of(Source::Normalize);
}

#[test]
fn nvrtc_compiles_every_select_kernel() {
    compile_every_kernel_of(Source::Select);
}

#[test]
fn nvrtc_compiles_every_sort_kernel() {
    compile_every_kernel_of(Source::Sort);
}

#[test]
fn nvrtc_compiles_every_window_kernel() {
    compile_every_kernel_of(Source::Window);
}

#[test]
fn nvrtc_compiles_every_optim_kernel() {
    compile_every_kernel_of(Source::Optim);
}

#[test]
fn nvrtc_tests_cover_every_source_file() {
    // one `nvrtc_compiles_every_*` test per file above
    assert_eq!(Source::ALL.len(), 10);
}

#[test]
fn nvrtc_images_are_cached_on_disk_by_text_target_and_version() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("namedtensor-nvrtc-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let text = Kernel::fill(DType::F32).program();
    let compile = |target, cache: &std::path::Path| {
        nvrtc::compile_cached("test", &text, "copy.cu", target, Some(cache)).unwrap()
    };
    let entries = |ext: &str| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        v.sort();
        v
    };
    let Image::Cubin(first) = compile(Target::Cubin(80), &dir) else {
        panic!("asked for a CUBIN")
    };
    let stored = entries("cubin");
    assert_eq!(stored.len(), 1);
    assert_eq!(std::fs::read(&stored[0]).unwrap(), first);
    // A hit is read back, not compiled: a marked entry comes back as it is.
    std::fs::write(&stored[0], b"marked").unwrap();
    let Image::Cubin(again) = compile(Target::Cubin(80), &dir) else {
        panic!("asked for a CUBIN")
    };
    assert_eq!(again, b"marked");
    // Another architecture is another entry; PTX is an entry of its own kind.
    compile(Target::Cubin(90), &dir);
    assert_eq!(entries("cubin").len(), 2);
    let Image::Ptx(ptx) = compile(Target::Ptx(80), &dir) else {
        panic!("asked for PTX")
    };
    assert!(ptx.contains("nt_fill_f32"));
    assert_eq!(entries("ptx").len(), 1);
    // A cache that cannot be used (its folder is a file) costs a compile, not an error.
    let Image::Cubin(uncached) = compile(Target::Cubin(80), &stored[0]) else {
        panic!("asked for a CUBIN")
    };
    assert_eq!(uncached, first);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nvrtc_compiles_single_kernels_and_ptx_as_the_runtime_does() {
    if !nvrtc_or_skip() {
        return;
    }
    // The run-time path: one kernel per program, CUBIN for a known architecture, PTX for a
    // newer one.
    for k in [
        Kernel::copy(DType::F32, DType::BF16),
        Kernel::fill(DType::Bool),
        Kernel::reduce(ReduceOp::ArgMax, DType::F16),
    ] {
        let image = nvrtc::compile(
            "test",
            &k.program(),
            k.source.file_name(),
            Target::Cubin(86),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(image, Image::Cubin(ref b) if contains(b, &k.name)));
    }
    let k = Kernel::softmax(DType::BF16);
    let Image::Ptx(ptx) =
        nvrtc::compile("test", &k.program(), k.source.file_name(), Target::Ptx(80)).unwrap()
    else {
        panic!("asked for PTX")
    };
    assert!(
        ptx.contains(".entry nt_softmax_bf16"),
        "{}",
        &ptx[..200.min(ptx.len())]
    );
    assert!(ptx.contains(".target sm_80"));
}

#[test]
fn nvrtc_compile_errors_carry_the_log() {
    if !nvrtc_or_skip() {
        return;
    }
    let text = format!(
        "{}\nextern \"C\" __global__ void broken() {{ undefined_name(); }}\n",
        kernels::common()
    );
    let e = nvrtc::compile("contiguous", &text, "broken.cu", Target::Cubin(80)).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Device);
    assert!(
        e.message()
            .contains("NVRTC could not compile kernel broken.cu"),
        "{e}"
    );
    assert!(e.message().contains("undefined_name"), "{e}");
    // A header include fails without a toolkit include path, which is why kernels have none.
    let e = nvrtc::compile(
        "test",
        "#include <cuda_fp16.h>\n",
        "fp16.cu",
        Target::Cubin(80),
    );
    if let Err(e) = e {
        assert!(e.message().contains("cuda_fp16.h"), "{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// The conversions of `common.cuh`, compiled for the host with `c++` and compared with Rust.

const HARNESS: &str = r#"
#include <cstdio>
#include <cstdlib>
#include <vector>
#define __device__
#define __forceinline__ inline
struct nt_dim3 { unsigned int x, y, z; };
static nt_dim3 threadIdx, blockIdx, blockDim, gridDim;
static void __syncthreads() {}
#include "common.cuh"

template <typename T> static std::vector<T> load(const char* dir, const char* name) {
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(2); }
    std::vector<T> v;
    T x;
    while (std::fread(&x, sizeof x, 1, f) == 1) v.push_back(x);
    std::fclose(f);
    return v;
}
template <typename T> static void save(const char* dir, const char* name, const std::vector<T>& v) {
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = std::fopen(path, "wb");
    if (!f) { std::perror(path); std::exit(2); }
    std::fwrite(v.data(), sizeof(T), v.size(), f);
    std::fclose(f);
}

// Casts every value of source type S (file "src_<S>.bin") to every dtype, appending the raw
// bytes of each result (zero-extended to 8 bytes) to "cast_<S>.bin".
template <typename S> static void casts(const char* dir, const char* s) {
    char in[64], out[64];
    std::snprintf(in, sizeof in, "src_%s.bin", s);
    std::snprintf(out, sizeof out, "cast_%s.bin", s);
    std::vector<unsigned char> raw = load<unsigned char>(dir, in);
    std::vector<unsigned long long> res;
    for (size_t i = 0; i < raw.size() / sizeof(S); ++i) {
        S s;
        __builtin_memcpy(&s, &raw[i * sizeof(S)], sizeof(S));
#define NT_OUT(D)                                                        \
        { D d = nt_cast<D>(s); unsigned long long b = 0;                 \
          __builtin_memcpy(&b, &d, sizeof d); res.push_back(b); }
        NT_OUT(nt_t_bool) NT_OUT(nt_t_u8) NT_OUT(nt_t_i8) NT_OUT(nt_t_i16) NT_OUT(nt_t_i32)
        NT_OUT(nt_t_i64) NT_OUT(nt_t_f16) NT_OUT(nt_t_bf16) NT_OUT(nt_t_f32) NT_OUT(nt_t_f64)
    }
    save(dir, out, res);
}

int main(int argc, char** argv) {
    const char* dir = argv[1];
    std::vector<unsigned int> h16(65536), hb16(65536);
    for (unsigned int i = 0; i < 65536; ++i) {
        h16[i] = nt_f32_bits(nt_f16_to_f32((unsigned short)i));
        hb16[i] = nt_f32_bits(nt_bf16_to_f32((unsigned short)i));
    }
    save(dir, "f16_to_f32.bin", h16);
    save(dir, "bf16_to_f32.bin", hb16);
    std::vector<unsigned int> f32 = load<unsigned int>(dir, "f32.bin");
    std::vector<unsigned short> a(f32.size()), b(f32.size());
    for (size_t i = 0; i < f32.size(); ++i) {
        a[i] = nt_f32_to_f16(nt_f32_from_bits(f32[i]));
        b[i] = nt_f32_to_bf16(nt_f32_from_bits(f32[i]));
    }
    save(dir, "f32_to_f16.bin", a);
    save(dir, "f32_to_bf16.bin", b);
    std::vector<unsigned long long> f64 = load<unsigned long long>(dir, "f64.bin");
    std::vector<unsigned short> c(f64.size()), d(f64.size());
    for (size_t i = 0; i < f64.size(); ++i) {
        c[i] = nt_f64_to_f16(nt_f64_from_bits(f64[i]));
        d[i] = nt_f64_to_bf16(nt_f64_from_bits(f64[i]));
    }
    save(dir, "f64_to_f16.bin", c);
    save(dir, "f64_to_bf16.bin", d);
    casts<nt_t_bool>(dir, "bool"); casts<nt_t_u8>(dir, "u8"); casts<nt_t_i8>(dir, "i8");
    casts<nt_t_i16>(dir, "i16"); casts<nt_t_i32>(dir, "i32"); casts<nt_t_i64>(dir, "i64");
    casts<nt_t_f16>(dir, "f16"); casts<nt_t_bf16>(dir, "bf16"); casts<nt_t_f32>(dir, "f32");
    casts<nt_t_f64>(dir, "f64");
    return 0;
}
"#;

fn write_bin<T: Copy>(dir: &std::path::Path, name: &str, v: &[T]) {
    // SAFETY: plain data of the element types below, read as bytes.
    let bytes =
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn read_u16(dir: &std::path::Path, name: &str) -> Vec<u16> {
    let b = std::fs::read(dir.join(name)).unwrap();
    b.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}
fn read_u32(dir: &std::path::Path, name: &str) -> Vec<u32> {
    let b = std::fs::read(dir.join(name)).unwrap();
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
fn read_u64(dir: &std::path::Path, name: &str) -> Vec<u64> {
    let b = std::fs::read(dir.join(name)).unwrap();
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The correctly rounded (nearest, ties to even) 16-bit float of `d` among the finite values
/// `value(bits)` for `bits` in `0..=max_finite`, with infinity at `inf_bits`; computed by exact
/// comparison of distances (independent of the algorithm under test).
fn reference_round(d: f64, value: impl Fn(u16) -> f64, max_finite: u16, inf_bits: u16) -> u16 {
    let sign = if d.is_sign_negative() { 0x8000u16 } else { 0 };
    let a = d.abs();
    if a.is_infinite() {
        return sign | inf_bits;
    }
    // Largest magnitude with value <= a (binary search over the monotone positive bits).
    let top = value(max_finite) + (value(max_finite) - value(max_finite - 1));
    let (mut lo, mut hi) = (0u16, max_finite);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if value(mid) <= a {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let below = value(lo);
    let (above_bits, above) = if lo == max_finite {
        (inf_bits, top) // rounding past the largest finite value gives infinity
    } else {
        (lo + 1, value(lo + 1))
    };
    // Both differences are exact (Sterbenz: the values are within a factor 2 of `a`, or 0).
    let (dl, dh) = (a - below, above - a);
    let bits = if dl < dh || (dl == dh && lo % 2 == 0) {
        lo
    } else {
        above_bits
    };
    sign | bits
}

fn ref_f64_to_f16(d: f64) -> u16 {
    reference_round(d, |b| f16::from_bits(b).to_f64(), 0x7bff, 0x7c00)
}
fn ref_f64_to_bf16(d: f64) -> u16 {
    reference_round(d, |b| bf16::from_bits(b).to_f64(), 0x7f7f, 0x7f80)
}

/// Values of every type that exercise the cast rules (bounds, saturation, NaN, ties, signs).
fn cast_samples() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        0.7,
        -0.7,
        1.5,
        2.5,
        -2.5,
        100.7,
        -100.7,
        127.0,
        127.9,
        128.0,
        -128.0,
        -128.9,
        -129.0,
        255.0,
        255.5,
        256.0,
        -1.0e-3,
        32767.5,
        32768.0,
        -32769.0,
        65504.0,
        65519.0,
        65520.0,
        1.0e5,
        -1.0e5,
        2147483647.0,
        2147483648.0,
        -2147483649.0,
        4294967296.5,
        1.0e10,
        -1.0e10,
        9.223_372_036_854_776e18, // 2^63
        -9.223_372_036_854_776e18,
        1.0e19,
        -1.0e19,
        3.0e38,
        -3.0e38,
        1.0e39,
        1.0e300,
        1.0e-8,
        6.0e-8,
        1.0e-40,
        1.0e-320,
    ];
    v.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
    v
}

fn int_samples() -> Vec<i64> {
    vec![
        0,
        1,
        -1,
        2,
        127,
        128,
        -128,
        -129,
        255,
        256,
        -256,
        32767,
        32768,
        -32769,
        65535,
        65536,
        65519,
        65521,
        2147483647,
        2147483648,
        -2147483649,
        4294967297,
        (1 << 53) + 1,
        i64::MAX,
        i64::MIN,
        -7,
    ]
}

fn to_bits<E: Element>(v: E) -> u64 {
    super::launch::scalar_bits(v)
}

fn expected_casts<S: Element>(src: &[S]) -> Vec<u64> {
    let mut out = Vec::new();
    for &s in src {
        out.push(to_bits(s.cast::<bool>()));
        out.push(to_bits(s.cast::<u8>()));
        out.push(to_bits(s.cast::<i8>()));
        out.push(to_bits(s.cast::<i16>()));
        out.push(to_bits(s.cast::<i32>()));
        out.push(to_bits(s.cast::<i64>()));
        out.push(to_bits(s.cast::<f16>()));
        out.push(to_bits(s.cast::<bf16>()));
        out.push(to_bits(s.cast::<f32>()));
        out.push(to_bits(s.cast::<f64>()));
    }
    out
}

fn is_nan_bits(bits: u64, dtype: DType) -> bool {
    match dtype {
        DType::F16 => f16::from_bits(bits as u16).is_nan(),
        DType::BF16 => bf16::from_bits(bits as u16).is_nan(),
        DType::F32 => f32::from_bits(bits as u32).is_nan(),
        DType::F64 => f64::from_bits(bits).is_nan(),
        _ => false,
    }
}

fn check_casts<S: Element>(dir: &std::path::Path, src: &[S]) {
    let name = kernels::type_name(S::DTYPE);
    let got = read_u64(dir, &format!("cast_{name}.bin"));
    let want = expected_casts(src);
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let (s, d) = (src[i / 10], DType::ALL[i % 10]);
        if is_nan_bits(w, d) && is_nan_bits(g, d) {
            continue; // NaN payloads may differ
        }
        assert_eq!(
            g,
            w,
            "cast {s} ({}) to {d}: kernel {g:#x}, CPU {w:#x}",
            S::DTYPE
        );
    }
}

#[test]
fn kernel_conversions_compiled_for_the_host_match_the_cpu_bit_for_bit() {
    let Some((dir, exe)) = host_build("conv", HARNESS) else {
        return;
    };

    // f32 inputs: every upper half with low halves around the rounding points of f16 (bit 12)
    // and bf16 (bit 15).
    let lows: [u32; 14] = [
        0, 1, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0x9000, 0xc000,
        0xe000, 0xffff,
    ];
    let f32s: Vec<u32> = (0..=0xffffu32)
        .flat_map(|hi| lows.iter().map(move |&lo| (hi << 16) | lo))
        .collect();
    // f64 inputs: every f16 and bf16 value and midpoint, nudged up and down, plus the f32s.
    let mut f64s: Vec<f64> = Vec::new();
    for bits in 0..=0xffffu16 {
        for (v, next) in [
            (
                f16::from_bits(bits).to_f64(),
                f16::from_bits(bits.wrapping_add(1)).to_f64(),
            ),
            (
                bf16::from_bits(bits).to_f64(),
                bf16::from_bits(bits.wrapping_add(1)).to_f64(),
            ),
        ] {
            f64s.push(v);
            if v.is_finite() && next.is_finite() && next.abs() > v.abs() {
                let mid = (v + next) / 2.0;
                f64s.extend([
                    mid,
                    f64::from_bits(mid.to_bits() + 1),
                    f64::from_bits(mid.to_bits() - 1),
                    f64::from_bits(mid.to_bits() + (1 << 30)), // beyond f32's precision
                ]);
            }
        }
    }
    f64s.extend(f32s.iter().map(|&b| f32::from_bits(b) as f64));
    f64s.extend(cast_samples());
    let f64_bits: Vec<u64> = f64s.iter().map(|d| d.to_bits()).collect();
    write_bin(&dir, "f32.bin", &f32s);
    write_bin(&dir, "f64.bin", &f64_bits);

    // cast inputs of every source type
    let floats = cast_samples();
    let ints = int_samples();
    let bools = [false, true];
    let u8s: Vec<u8> = ints.iter().map(|&i| i as u8).collect();
    let i8s: Vec<i8> = ints.iter().map(|&i| i as i8).collect();
    let i16s: Vec<i16> = ints.iter().map(|&i| i as i16).collect();
    let i32s: Vec<i32> = ints.iter().map(|&i| i as i32).collect();
    let f16s: Vec<f16> = floats.iter().map(|&f| f16::from_f32(f as f32)).collect();
    let bf16s: Vec<bf16> = floats.iter().map(|&f| bf16::from_f32(f as f32)).collect();
    let f32v: Vec<f32> = floats.iter().map(|&f| f as f32).collect();
    write_bin(&dir, "src_bool.bin", &bools);
    write_bin(&dir, "src_u8.bin", &u8s);
    write_bin(&dir, "src_i8.bin", &i8s);
    write_bin(&dir, "src_i16.bin", &i16s);
    write_bin(&dir, "src_i32.bin", &i32s);
    write_bin(&dir, "src_i64.bin", &ints);
    write_bin(&dir, "src_f16.bin", &f16s);
    write_bin(&dir, "src_bf16.bin", &bf16s);
    write_bin(&dir, "src_f32.bin", &f32v);
    write_bin(&dir, "src_f64.bin", &floats);

    let run = std::process::Command::new(&exe).arg(&dir).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // 16-bit to f32: exact, NaN keeps its payload with the quiet bit, as `half`.
    for (bits, got) in read_u32(&dir, "f16_to_f32.bin").into_iter().enumerate() {
        let want = f16::from_bits(bits as u16).to_f32().to_bits();
        assert_eq!(got, want, "f16 {bits:#06x} to f32");
    }
    for (bits, got) in read_u32(&dir, "bf16_to_f32.bin").into_iter().enumerate() {
        let want = bf16::from_bits(bits as u16).to_f32().to_bits();
        assert_eq!(got, want, "bf16 {bits:#06x} to f32");
    }
    // f32 to 16-bit: round to nearest even, as `half`'s from_f32.
    let to_f16 = read_u16(&dir, "f32_to_f16.bin");
    let to_bf16 = read_u16(&dir, "f32_to_bf16.bin");
    for (i, &b) in f32s.iter().enumerate() {
        let x = f32::from_bits(b);
        let (w16, wb16) = (f16::from_f32(x), bf16::from_f32(x));
        if x.is_nan() {
            assert!(f16::from_bits(to_f16[i]).is_nan() && bf16::from_bits(to_bf16[i]).is_nan());
            continue;
        }
        assert_eq!(to_f16[i], w16.to_bits(), "f32 {x:e} ({b:#010x}) to f16");
        assert_eq!(to_bf16[i], wb16.to_bits(), "f32 {x:e} ({b:#010x}) to bf16");
    }
    // f64 to 16-bit: correctly rounded (one rounding), checked against exact comparisons.
    let to_f16 = read_u16(&dir, "f64_to_f16.bin");
    let to_bf16 = read_u16(&dir, "f64_to_bf16.bin");
    for (i, &d) in f64s.iter().enumerate() {
        if d.is_nan() {
            assert!(f16::from_bits(to_f16[i]).is_nan() && bf16::from_bits(to_bf16[i]).is_nan());
            continue;
        }
        assert_eq!(
            to_f16[i],
            ref_f64_to_f16(d),
            "f64 {d:e} ({:#018x}) to f16",
            d.to_bits()
        );
        assert_eq!(
            to_bf16[i],
            ref_f64_to_bf16(d),
            "f64 {d:e} ({:#018x}) to bf16",
            d.to_bits()
        );
    }
    // Generic casts between all dtypes against `Element::cast` (on values where the CPU's
    // conversions round once; see the note on f64 sources in `common.cuh`).
    check_casts(&dir, &bools);
    check_casts(&dir, &u8s);
    check_casts(&dir, &i8s);
    check_casts(&dir, &i16s);
    check_casts(&dir, &i32s);
    check_casts(&dir, &ints);
    check_casts(&dir, &f16s);
    check_casts(&dir, &bf16s);
    check_casts(&dir, &f32v);
    check_casts(&dir, &floats);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The kernels' index math and operations, compiled for the host: `NtLayout` read from the
// bytes of Rust's `KernelLayout` (checks that the two agree), positions, wrapping integer
// arithmetic, NaN rules and the argmax/argmin combination under any split between threads.

const OPS_HARNESS: &str = r#"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define __device__
#define __global__
#define __shared__
#define __forceinline__ inline
struct nt_dim3 { unsigned int x, y, z; };
static nt_dim3 threadIdx, blockIdx, blockDim, gridDim;
static void __syncthreads() {}
static float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static double rsqrt(double x) { return 1.0 / std::sqrt(x); }
#include "common.cuh"
#include "unary.cu"
#include "binary.cu"
#include "reduce.cu"

static int failures = 0;
#define CHECK(c) do { if (!(c)) { std::fprintf(stderr, "line %d: %s\n", __LINE__, #c); ++failures; } } while (0)

static std::vector<unsigned char> load(const char* dir, const char* name) {
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(2); }
    std::vector<unsigned char> v;
    int c;
    while ((c = std::fgetc(f)) != EOF) v.push_back((unsigned char)c);
    std::fclose(f);
    return v;
}
static void save(const char* dir, const char* name, const std::vector<nt_i64>& v) {
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = std::fopen(path, "wb");
    if (!f) { std::perror(path); std::exit(2); }
    std::fwrite(v.data(), sizeof(nt_i64), v.size(), f);
    std::fclose(f);
}

template <typename T> static void int_ops(const std::vector<nt_i64>& xs, std::vector<nt_i64>& out) {
    for (nt_i64 a64 : xs) {
        T a = (T)a64;
        out.push_back((nt_i64)nt_op_neg()(a));
        out.push_back((nt_i64)nt_op_abs()(a));
        out.push_back((nt_i64)nt_op_square()(a));
        out.push_back((nt_i64)nt_op_sign()(a));
        out.push_back((nt_i64)nt_op_relu()(a));
        for (nt_i64 b64 : xs) {
            T b = (T)b64;
            out.push_back((nt_i64)nt_op_add()(a, b));
            out.push_back((nt_i64)nt_op_sub()(a, b));
            out.push_back((nt_i64)nt_op_mul()(a, b));
            out.push_back((nt_i64)nt_op_maximum()(a, b));
            out.push_back((nt_i64)nt_op_minimum()(a, b));
        }
    }
}

int main(int argc, char** argv) {
    const char* dir = argv[1];
    // Layouts: records of an NtLayout followed by the element count.
    std::vector<unsigned char> raw = load(dir, "layouts.bin");
    std::vector<nt_i64> positions;
    for (size_t at = 0; at < raw.size(); at += sizeof(NtLayout) + 8) {
        NtLayout l;
        nt_u64 n;
        __builtin_memcpy(&l, &raw[at], sizeof l);
        __builtin_memcpy(&n, &raw[at + sizeof l], 8);
        for (nt_u64 i = 0; i < n; ++i) positions.push_back((nt_i64)nt_position(l, i));
    }
    save(dir, "positions.bin", positions);

    // Integer operations on the samples, for i8, i32, i64 and u8.
    std::vector<unsigned char> xr = load(dir, "ints.bin");
    std::vector<nt_i64> xs(xr.size() / 8);
    __builtin_memcpy(xs.data(), xr.data(), xr.size());
    std::vector<nt_i64> ints;
    int_ops<signed char>(xs, ints);
    int_ops<int>(xs, ints);
    int_ops<long long>(xs, ints);
    int_ops<unsigned char>(xs, ints);
    save(dir, "int_ops.bin", ints);

    // Float rules.
    float nan = std::nanf("");
    CHECK(std::isnan(nt_op_maximum()(nan, 1.0f)) && std::isnan(nt_op_maximum()(1.0f, nan)));
    CHECK(std::isnan(nt_op_minimum()(2.0, (double)nan)));
    CHECK(nt_op_maximum()(-1.0f, 2.0f) == 2.0f && nt_op_minimum()(-1.0f, 2.0f) == -1.0f);
    CHECK(std::isnan(nt_op_relu()(nan)) && nt_op_relu()(-3.0f) == 0.0f && nt_op_relu()(3.0f) == 3.0f);
    CHECK(nt_op_sign()(nan) == 0.0f && nt_op_sign()(-0.5) == -1.0 && nt_op_sign()(0.0f) == 0.0f);
    CHECK(!std::signbit(nt_op_abs()(-0.0f)) && nt_op_abs()(-2.5) == 2.5);
    CHECK(nt_op_round()(2.5f) == 2.0f && nt_op_round()(3.5) == 4.0 && nt_op_round()(-0.5f) == 0.0f);
    CHECK(std::fabs(nt_op_sigmoid()(0.0f) - 0.5f) < 1e-7f);
    CHECK(std::fabs(nt_op_gelu()(1.0) - 0.8413447460685429) < 1e-12);
    CHECK(nt_op_eq()(nan, nan) == false && nt_op_ne()(nan, nan) == true);
    CHECK(nt_op_lt()(1, 2) && nt_op_ge()(2.0, 2.0) && !nt_op_gt()(false, true));

    // argmax/argmin: the first NaN if any, else the first extreme, whichever thread saw what.
    typedef nt_red_argmax<float> amax;
    typedef nt_red_argmin<float> amin;
    float row[] = {1.0f, 3.0f, 3.0f, -2.0f, nan, 5.0f, nan};
    for (int n = 1; n <= 7; ++n) {
        int want_max = 0, want_min = 0, first_nan = -1;
        for (int k = 0; k < n; ++k) {
            if (std::isnan(row[k])) { if (first_nan < 0) first_nan = k; continue; }
            if (std::isnan(row[want_max]) || row[k] > row[want_max]) want_max = k;
            if (std::isnan(row[want_min]) || row[k] < row[want_min]) want_min = k;
        }
        if (first_nan >= 0) want_max = want_min = first_nan;
        for (int threads = 1; threads <= 4; ++threads) {
            // thread t takes k = t, t + threads, ...; then the tree of the block reduction
            std::vector<amax::acc> pmax(4, amax::init());
            std::vector<amin::acc> pmin(4, amin::init());
            for (int t = 0; t < threads; ++t)
                for (int k = t; k < n; k += threads) {
                    pmax[t] = amax::step(pmax[t], row[k], k);
                    pmin[t] = amin::step(pmin[t], row[k], k);
                }
            for (int s = 2; s > 0; s >>= 1)
                for (int t = 0; t < s; ++t) {
                    pmax[t] = amax::combine(pmax[t], pmax[t + s]);
                    pmin[t] = amin::combine(pmin[t], pmin[t + s]);
                }
            CHECK(amax::finish(pmax[0], n) == want_max);
            CHECK(amin::finish(pmin[0], n) == want_min);
        }
    }
    // The other accumulators.
    typedef nt_red_max<nt_half> hmax;
    CHECK(hmax::finish(hmax::step(hmax::init(), nt_traits<nt_half>::from_f32(-3.0f), 0), 1).bits == 0xc200);
    CHECK(std::isnan(nt_red_max<float>::combine(1.0f, nan)));
    typedef nt_red_sum<bool> bsum;
    CHECK(bsum::finish(bsum::step(bsum::step(bsum::init(), true, 0), true, 1), 2) == 2);
    typedef nt_red_prod<signed char> cprod;
    CHECK(cprod::finish(cprod::step(cprod::step(cprod::init(), (signed char)100, 0), (signed char)100, 1), 2) == 10000);
    typedef nt_red_mean<nt_bfloat> bmean;
    CHECK(nt_bf16_to_f32(bmean::finish(bmean::combine(
        bmean::step(bmean::init(), nt_traits<nt_bfloat>::from_f32(1.0f), 0),
        bmean::step(bmean::init(), nt_traits<nt_bfloat>::from_f32(2.0f), 1)), 2).bits) == 1.5f);
    CHECK(nt_red_min<unsigned char>::init() == 255);
    CHECK(nt_red_max<long long>::init() == -9223372036854775807LL - 1);
    CHECK(std::isinf(nt_red_min<double>::init()) && nt_red_min<double>::init() > 0);
    return failures == 0 ? 0 : 1;
}
"#;

/// Compiles `harness` (with the kernel sources beside it) for the host in a fresh folder;
/// `None` (after printing why) without a C++ compiler.
fn host_build(tag: &str, harness: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    if std::process::Command::new(&cxx)
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping: no C++ compiler ({cxx}) to compile the kernel sources for the host");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("namedtensor-cuda-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("common.cuh"), kernels::common()).unwrap();
    for source in Source::ALL {
        std::fs::write(dir.join(source.file_name()), source.text()).unwrap();
    }
    std::fs::write(dir.join("harness.cpp"), harness).unwrap();
    let exe = dir.join("harness");
    let out = std::process::Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-Wno-unknown-pragmas", "-o"])
        .arg(&exe)
        .arg(dir.join("harness.cpp"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cxx} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((dir, exe))
}

/// The storage positions of `l` in row-major order, from `Layout::storage_index`.
fn reference_positions(l: &Layout) -> Vec<i64> {
    let mut out = Vec::new();
    let mut idx = vec![0usize; l.rank()];
    for _ in 0..l.numel() {
        out.push(l.storage_index(&idx).unwrap() as i64);
        for d in (0..l.rank()).rev() {
            idx[d] += 1;
            if idx[d] < l.sizes()[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// What the harness's `int_ops<T>` must produce: Rust's wrapping arithmetic.
macro_rules! expected_int_ops {
    ($t:ty, $xs:expr, $out:expr) => {
        for &a in $xs {
            let a = a as $t;
            $out.push(a.wrapping_neg() as i64);
            $out.push((if a < 0 as $t { a.wrapping_neg() } else { a }) as i64);
            $out.push(a.wrapping_mul(a) as i64);
            $out.push(match a.cmp(&(0 as $t)) {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            });
            $out.push(a.max(0 as $t) as i64);
            for &b in $xs {
                let b = b as $t;
                $out.push(a.wrapping_add(b) as i64);
                $out.push(a.wrapping_sub(b) as i64);
                $out.push(a.wrapping_mul(b) as i64);
                $out.push(a.max(b) as i64);
                $out.push(a.min(b) as i64);
            }
        }
    };
}

#[test]
fn kernel_index_math_and_ops_compiled_for_the_host_match_rust() {
    use super::launch::{KernelLayout, kernel_layouts};
    let Some((dir, exe)) = host_build("ops", OPS_HARNESS) else {
        return;
    };
    let base = Layout::contiguous(&[3, 4, 5]).unwrap();
    let views = [
        base.clone(),
        base.permute(&[2, 0, 1]).unwrap(),
        base.narrow(1, 1, 2).unwrap().transpose(0, 2).unwrap(),
        Layout::new(&[4, 1, 3], &[0, 9, 7], 11).unwrap(),
        Layout::new(&[], &[], 6).unwrap(),
        Layout::new(&[2, 2, 2, 2, 2], &[1000, 1, 100, 10, 10000], 3).unwrap(),
    ];
    let mut bytes: Vec<u8> = Vec::new();
    let mut want: Vec<i64> = Vec::new();
    for l in &views {
        let [k] = kernel_layouts("test", l.sizes(), [l.strides()], [l.offset()]).unwrap();
        // Both index paths: 32-bit (what these small layouts get) and 64-bit.
        for k in [k, k.with_64_bit_indices()] {
            // SAFETY: `KernelLayout` is `repr(C)` plain data without padding.
            bytes.extend_from_slice(unsafe {
                std::slice::from_raw_parts(
                    &k as *const KernelLayout as *const u8,
                    std::mem::size_of::<KernelLayout>(),
                )
            });
            bytes.extend_from_slice(&(l.numel() as u64).to_le_bytes());
            want.extend(reference_positions(l));
        }
    }
    std::fs::write(dir.join("layouts.bin"), &bytes).unwrap();
    let xs: Vec<i64> = vec![
        0,
        1,
        -1,
        7,
        -100,
        127,
        -128,
        200,
        40_000,
        i64::MAX,
        i64::MIN,
    ];
    write_bin(&dir, "ints.bin", &xs);
    let run = std::process::Command::new(&exe).arg(&dir).output().unwrap();
    assert!(
        run.status.success(),
        "the kernels' operations disagree with their specification:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let got: Vec<i64> = read_u64(&dir, "positions.bin")
        .into_iter()
        .map(|p| p as i64)
        .collect();
    assert_eq!(got, want, "positions");
    let mut want = Vec::new();
    expected_int_ops!(i8, &xs, want);
    expected_int_ops!(i32, &xs, want);
    expected_int_ops!(i64, &xs, want);
    expected_int_ops!(u8, &xs, want);
    let got: Vec<i64> = read_u64(&dir, "int_ops.bin")
        .into_iter()
        .map(|p| p as i64)
        .collect();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "integer operation result {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The compute kernels on a GPU (skipped without one).

fn gpu() -> Option<Arc<CudaDevice>> {
    match device::get("test", 0) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("skipping on cuda:0: {}", e.message());
            None
        }
    }
}

fn upload<E: Element>(dev: &Arc<CudaDevice>, data: &[E]) -> CudaBuffer {
    CudaBuffer::from_host("test", dev, data).unwrap()
}

fn download<E: Element>(b: &CudaBuffer) -> Vec<E> {
    b.read("test", 0, b.len()).unwrap()
}

fn layout(sizes: &[usize]) -> Layout {
    Layout::contiguous(sizes).unwrap()
}

#[test]
fn gpu_unary_on_strided_views() {
    let Some(dev) = gpu() else { return };
    // exp of the transpose of a [2, 3] f32 matrix
    let x: Vec<f32> = vec![0.0, 1.0, -1.0, 2.0, 0.5, -0.5];
    let b = upload(&dev, &x);
    let t = layout(&[2, 3]).transpose(0, 1).unwrap();
    let got: Vec<f32> = download(&unary("exp", UnaryOp::Exp, &b, &t).unwrap());
    let want: Vec<f32> = [0, 3, 1, 4, 2, 5].iter().map(|&i| x[i].exp()).collect();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w.abs(), "{got:?} vs {want:?}");
    }
    // neg wraps for integers
    let b = upload(&dev, &[i32::MIN, 5, -7]);
    assert_eq!(
        download::<i32>(&unary("neg", UnaryOp::Neg, &b, &layout(&[3])).unwrap()),
        vec![i32::MIN, -5, 7]
    );
    // relu in f16 computes in f32 and keeps NaN
    let h: Vec<f16> = [-1.5f32, 0.0, 2.25, f32::NAN].map(f16::from_f32).to_vec();
    let got: Vec<f16> =
        download(&unary("relu", UnaryOp::Relu, &upload(&dev, &h), &layout(&[4])).unwrap());
    assert_eq!(&got[..3], &[f16::ZERO, f16::ZERO, f16::from_f32(2.25)]);
    assert!(got[3].is_nan());
    assert!(unary("exp", UnaryOp::Exp, &upload(&dev, &[1i64]), &layout(&[1])).is_err());
}

#[test]
fn gpu_binary_and_compare_broadcast_through_stride_zero() {
    let Some(dev) = gpu() else { return };
    let a = upload(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]); // [2, 3]
    let b = upload(&dev, &[10.0f32, 20.0, 30.0]); // [3] expanded to [2, 3]
    let lb = layout(&[3]).expand(&[2, 3]).unwrap();
    let sum: Vec<f32> =
        download(&binary("add", BinaryOp::Add, &a, &layout(&[2, 3]), &b, &lb).unwrap());
    assert_eq!(sum, vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
    let gt: Vec<bool> =
        download(&compare("gt", CompareOp::Gt, &a, &layout(&[2, 3]), &b, &lb).unwrap());
    assert_eq!(gt, vec![false; 6]);
    let m = upload(&dev, &[f32::NAN, 1.0]);
    let n = upload(&dev, &[0.0f32, 2.0]);
    let got: Vec<f32> = download(
        &binary(
            "maximum",
            BinaryOp::Maximum,
            &m,
            &layout(&[2]),
            &n,
            &layout(&[2]),
        )
        .unwrap(),
    );
    assert!(got[0].is_nan() && got[1] == 2.0);
    let w = upload(&dev, &[i8::MAX, 1]);
    let got: Vec<i8> =
        download(&binary("add", BinaryOp::Add, &w, &layout(&[2]), &w, &layout(&[2])).unwrap());
    assert_eq!(got, vec![-2, 2]); // wraps
    assert!(
        binary(
            "add",
            BinaryOp::Add,
            &a,
            &layout(&[2, 3]),
            &b,
            &layout(&[3])
        )
        .is_err()
    );
}

#[test]
fn gpu_reductions_over_any_dim() {
    let Some(dev) = gpu() else { return };
    // [2, 3, 4] of 0..24 reduced over each dim, also through a permuted view
    let x: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let b = upload(&dev, &x);
    let l = layout(&[2, 3, 4]);
    let sum1: Vec<f32> = download(&reduce("sum", ReduceOp::Sum, &b, &l, 1).unwrap());
    let want: Vec<f32> = (0..2)
        .flat_map(|i| (0..4).map(move |k| (0..3).map(|j| (i * 12 + j * 4 + k) as f32).sum()))
        .collect();
    assert_eq!(sum1, want);
    let p = l.permute(&[2, 0, 1]).unwrap(); // [4, 2, 3]
    let max0: Vec<f32> = download(&reduce("max", ReduceOp::Max, &b, &p, 0).unwrap());
    assert_eq!(max0, vec![3.0, 7.0, 11.0, 15.0, 19.0, 23.0]);
    let arg: Vec<i64> = download(&reduce("argmax", ReduceOp::ArgMax, &b, &p, 0).unwrap());
    assert_eq!(arg, vec![3; 6]);
    // long rows (more than one block's threads), f16 accumulating in f32, ties keep the first
    let long: Vec<f16> = (0..5000).map(|i| f16::from_f32((i % 7) as f32)).collect();
    let s: Vec<f16> = download(
        &reduce(
            "sum",
            ReduceOp::Sum,
            &upload(&dev, &long),
            &layout(&[5000]),
            0,
        )
        .unwrap(),
    );
    let exact: f32 = (0..5000).map(|i| (i % 7) as f32).sum();
    assert_eq!(s, vec![f16::from_f32(exact)]);
    let a: Vec<i64> = download(
        &reduce(
            "argmax",
            ReduceOp::ArgMax,
            &upload(&dev, &long),
            &layout(&[5000]),
            0,
        )
        .unwrap(),
    );
    assert_eq!(a, vec![6]);
    let ints = upload(&dev, &[3i32, -4, 5]);
    let p: Vec<i64> = download(&reduce("prod", ReduceOp::Prod, &ints, &layout(&[3]), 0).unwrap());
    assert_eq!(p, vec![-60]);
    let mean: Vec<f64> = download(
        &reduce(
            "mean",
            ReduceOp::Mean,
            &upload(&dev, &[1.0f64, 2.0]),
            &layout(&[2]),
            0,
        )
        .unwrap(),
    );
    assert_eq!(mean, vec![1.5]);
    let empty = upload::<f32>(&dev, &[]);
    assert!(reduce("max", ReduceOp::Max, &empty, &layout(&[2, 0]), 1).is_err());
    let z: Vec<f32> = download(&reduce("sum", ReduceOp::Sum, &empty, &layout(&[2, 0]), 1).unwrap());
    assert_eq!(z, vec![0.0, 0.0]);
}

#[test]
fn gpu_softmax_rows() {
    let Some(dev) = gpu() else { return };
    let x = [1.0f64, 2.0, 3.0, 1.0, 1.0, 1.0];
    let b = upload(&dev, &x);
    let got: Vec<f64> = download(&softmax("softmax", &b, &layout(&[2, 3]), false).unwrap());
    let e: f64 = (1.0f64.exp() + 2.0f64.exp() + 3.0f64.exp()).ln();
    let want = [1.0 - e, 2.0 - e, 3.0 - e].map(f64::exp);
    for (g, w) in got[..3].iter().zip(want) {
        assert!((g - w).abs() < 1e-12);
    }
    for g in &got[3..] {
        assert!((g - 1.0 / 3.0).abs() < 1e-12);
    }
    // log-softmax over a transposed (non-contiguous) view
    let t = layout(&[2, 3]).transpose(0, 1).unwrap(); // rows (1, 1), (2, 1), (3, 1)
    let got: Vec<f64> = download(&softmax("log_softmax", &b, &t, true).unwrap());
    let l = (1.0f64.exp() * 2.0).ln();
    assert!((got[0] - (1.0 - l)).abs() < 1e-12);
}

#[test]
fn gpu_matmul_transposed_and_broadcast_batches() {
    let Some(dev) = gpu() else { return };
    use super::blas::matmul;
    // [2, 3] @ [3, 2]
    let a = upload(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = upload(&dev, &[7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0]);
    let c: Vec<f32> =
        download(&matmul("matmul", &a, &layout(&[2, 3]), &b, &layout(&[3, 2])).unwrap());
    assert_eq!(c, vec![58.0, 64.0, 139.0, 154.0]);
    // aᵀ @ a through a transposed view: [3, 2] @ [2, 3]
    let at = layout(&[2, 3]).transpose(0, 1).unwrap();
    let c: Vec<f32> = download(&matmul("matmul", &a, &at, &a, &layout(&[2, 3])).unwrap());
    assert_eq!(
        c,
        vec![17.0, 22.0, 27.0, 22.0, 29.0, 36.0, 27.0, 36.0, 45.0]
    );
    // a batch of 3 against one broadcast matrix (stride 0), in f16
    let ah: Vec<f16> = (0..3 * 2 * 2).map(|i| f16::from_f32(i as f32)).collect();
    let bh: Vec<f16> = [1.0f32, 0.0, 0.0, 2.0].map(f16::from_f32).to_vec();
    let lb = layout(&[1, 2, 2]).expand(&[3, 2, 2]).unwrap();
    let c: Vec<f16> = download(
        &matmul(
            "matmul",
            &upload(&dev, &ah),
            &layout(&[3, 2, 2]),
            &upload(&dev, &bh),
            &lb,
        )
        .unwrap(),
    );
    let want: Vec<f16> = (0..3 * 2 * 2)
        .map(|i| f16::from_f32(if i % 2 == 0 { i as f32 } else { 2.0 * i as f32 }))
        .collect();
    assert_eq!(c, want);
    // an operand with neither rows nor columns contiguous is gathered first
    let x = upload(&dev, &(0..16).map(|i| i as f64).collect::<Vec<_>>());
    let every_other = Layout::new(&[2, 2], &[8, 2], 0).unwrap(); // [[0, 2], [8, 10]]
    let c: Vec<f64> = download(&matmul("matmul", &x, &every_other, &x, &layout(&[2, 2])).unwrap());
    assert_eq!(c, vec![4.0, 6.0, 20.0, 38.0]);
}

#[test]
fn gpu_bad_ordinal_and_mixed_devices_are_errors() {
    let Some(_dev) = gpu() else { return };
    let n = device::device_count();
    let e = device::get("test", n).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Device);
    assert!(e.message().contains("does not exist"), "{e}");
}
