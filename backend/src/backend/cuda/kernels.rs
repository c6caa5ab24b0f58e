//! The CUDA C sources (`kernels/*.cu`, embedded with `include_str!`) and the kernels they
//! define.
//!
//! Each source file defines templates and an instantiation macro per kernel family
//! (`NT_COPY(S, D)`, `NT_UNARY(op, T)`, …). A [`Kernel`] names one instantiation: the program
//! NVRTC compiles for it is the shared header, the file, and that one macro line, so only the
//! kernels a program uses are ever compiled. The element types are spelled by
//! [`type_name`] on both sides (`f32`, `bf16`, `bool`, …).

use super::launch;
pub use crate::backend::op::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::dtype::DType;

/// Definitions shared by every kernel file: element types, conversions, layouts.
pub const COMMON: &str = include_str!("kernels/common.cuh");

/// A kernel source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Strided copy with cast (also gathers into a contiguous buffer), fill.
    Copy,
    /// Elementwise unary operations.
    Unary,
    /// Elementwise binary operations and comparisons.
    Binary,
    /// Reductions over one dim.
    Reduce,
    /// Softmax and log-softmax over contiguous rows.
    Softmax,
    /// Normalisation over contiguous rows (layer norm, RMS norm) and its gradient.
    Normalize,
    /// Ternary select, indexed reads, scans along one dim.
    Select,
    /// Sorting of contiguous rows.
    Sort,
    /// Sliding windows over the last two dims: im2col, col2im, max pooling.
    Window,
    /// Optimiser steps in place (Adam, AdamW).
    Optim,
}

impl Source {
    /// Every source file.
    #[cfg_attr(not(test), allow(dead_code))] // the compile-everything test walks them
    pub const ALL: [Source; 10] = [
        Source::Copy,
        Source::Unary,
        Source::Binary,
        Source::Reduce,
        Source::Softmax,
        Source::Normalize,
        Source::Select,
        Source::Sort,
        Source::Window,
        Source::Optim,
    ];

    /// The file's CUDA C text.
    pub fn text(self) -> &'static str {
        match self {
            Source::Copy => include_str!("kernels/copy.cu"),
            Source::Unary => include_str!("kernels/unary.cu"),
            Source::Binary => include_str!("kernels/binary.cu"),
            Source::Reduce => include_str!("kernels/reduce.cu"),
            Source::Softmax => include_str!("kernels/softmax.cu"),
            Source::Normalize => include_str!("kernels/normalize.cu"),
            Source::Select => include_str!("kernels/select.cu"),
            Source::Sort => include_str!("kernels/sort.cu"),
            Source::Window => include_str!("kernels/window.cu"),
            Source::Optim => include_str!("kernels/optim.cu"),
        }
    }

    /// The file name, used as NVRTC's program name (it appears in compile logs).
    pub fn file_name(self) -> &'static str {
        match self {
            Source::Copy => "copy.cu",
            Source::Unary => "unary.cu",
            Source::Binary => "binary.cu",
            Source::Reduce => "reduce.cu",
            Source::Softmax => "softmax.cu",
            Source::Normalize => "normalize.cu",
            Source::Select => "select.cu",
            Source::Sort => "sort.cu",
            Source::Window => "window.cu",
            Source::Optim => "optim.cu",
        }
    }
}

/// The kernels' spelling of an element type.
pub fn type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::U8 => "u8",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
    }
}

fn numeric(dtype: DType) -> bool {
    dtype != DType::Bool
}

/// Whether the scan kernel is defined for `dtype`: the result types of `cumsum`/`cumprod`
/// (floats, which accumulate in f64, and `i64`).
pub fn scan_supports(dtype: DType) -> bool {
    dtype.is_float() || dtype == DType::I64
}

/// Which dtypes a kernel family is instantiated for.
pub trait Supports {
    /// Whether the operation has a kernel for `dtype`.
    fn supports(self, dtype: DType) -> bool;
}

impl Supports for UnaryOp {
    /// Integer types get only the exact operations; `bool` none.
    fn supports(self, dtype: DType) -> bool {
        numeric(dtype) && (!self.is_float_only() || dtype.is_float())
    }
}

impl Supports for BinaryOp {
    /// `div` and `pow` for floats only (integer ones are computed in a float type by the ops
    /// layer); none for `bool` (the backend computes `bool` arithmetic on bytes).
    fn supports(self, dtype: DType) -> bool {
        match self {
            BinaryOp::Div | BinaryOp::Pow => dtype.is_float(),
            _ => numeric(dtype),
        }
    }
}

impl Supports for CompareOp {
    /// Every dtype.
    fn supports(self, _dtype: DType) -> bool {
        true
    }
}

impl Supports for ReduceOp {
    /// `any`/`all` have no kernel (the backend reduces bytes with max/min).
    fn supports(self, dtype: DType) -> bool {
        match self {
            ReduceOp::Sum | ReduceOp::Prod => true,
            ReduceOp::Mean => dtype.is_float(),
            ReduceOp::Any | ReduceOp::All => false,
            _ => numeric(dtype),
        }
    }
}

/// One kernel: the file that defines it, the macro line that instantiates it, and its symbol.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// The defining file.
    pub source: Source,
    /// The instantiation, e.g. `NT_COPY(f32, f16)`.
    pub instance: String,
    /// The `extern "C"` symbol, e.g. `nt_copy_f32_f16`.
    pub name: String,
}

impl Kernel {
    fn new(source: Source, family: &str, args: &[&str]) -> Kernel {
        Kernel {
            source,
            instance: format!("NT_{}({})", family.to_uppercase(), args.join(", ")),
            name: format!("nt_{family}_{}", args.join("_")),
        }
    }

    /// Copy between two strided views, converting from `src` to `dst`.
    pub fn copy(src: DType, dst: DType) -> Kernel {
        Kernel::new(Source::Copy, "copy", &[type_name(src), type_name(dst)])
    }

    /// Fill a strided view of `dtype`.
    pub fn fill(dtype: DType) -> Kernel {
        Kernel::new(Source::Copy, "fill", &[type_name(dtype)])
    }

    /// Unary `op` on `dtype` (check [`UnaryOp::supports`] first).
    pub fn unary(op: UnaryOp, dtype: DType) -> Kernel {
        Kernel::new(Source::Unary, "unary", &[op.name(), type_name(dtype)])
    }

    /// Binary `op` on `dtype` (check [`BinaryOp::supports`] first).
    pub fn binary(op: BinaryOp, dtype: DType) -> Kernel {
        Kernel::new(Source::Binary, "binary", &[op.name(), type_name(dtype)])
    }

    /// Comparison `op` on `dtype`.
    pub fn compare(op: CompareOp, dtype: DType) -> Kernel {
        Kernel::new(Source::Binary, "compare", &[op.name(), type_name(dtype)])
    }

    /// Reduction `op` on `dtype` (check [`ReduceOp::supports`] first).
    pub fn reduce(op: ReduceOp, dtype: DType) -> Kernel {
        Kernel::new(Source::Reduce, "reduce", &[op.name(), type_name(dtype)])
    }

    /// Softmax / log-softmax on a float `dtype`.
    pub fn softmax(dtype: DType) -> Kernel {
        Kernel::new(Source::Softmax, "softmax", &[type_name(dtype)])
    }

    /// The gradient of softmax / log-softmax on a float `dtype`.
    pub fn softmax_backward(dtype: DType) -> Kernel {
        Kernel::new(Source::Softmax, "softmax_bwd", &[type_name(dtype)])
    }

    /// Normalisation over rows (layer norm, RMS norm) on a float `dtype`.
    pub fn normalize(dtype: DType) -> Kernel {
        Kernel::new(Source::Normalize, "normalize", &[type_name(dtype)])
    }

    /// The gradient of normalisation over rows on a float `dtype`.
    pub fn normalize_backward(dtype: DType) -> Kernel {
        Kernel::new(Source::Normalize, "normalize_bwd", &[type_name(dtype)])
    }

    /// One Adam or AdamW step in place on a float `dtype`.
    pub fn adam(dtype: DType) -> Kernel {
        Kernel::new(Source::Optim, "adam", &[type_name(dtype)])
    }

    /// `cond ? a : b` elementwise on `dtype` (any dtype; the condition is `bool`).
    pub fn where_(dtype: DType) -> Kernel {
        Kernel::new(Source::Select, "where", &[type_name(dtype)])
    }

    /// Reads of `dtype` elements at `i64` indices along one dim (any dtype).
    pub fn index(dtype: DType) -> Kernel {
        Kernel::new(Source::Select, "index", &[type_name(dtype)])
    }

    /// Additions of `dtype` elements at `i64` indices along one dim (any dtype).
    pub fn scatter_add(dtype: DType) -> Kernel {
        Kernel::new(Source::Select, "scatter_add", &[type_name(dtype)])
    }

    /// Running sum or product along one dim (check [`scan_supports`] first).
    pub fn scan(dtype: DType) -> Kernel {
        Kernel::new(Source::Select, "scan", &[type_name(dtype)])
    }

    /// Both passes of the row sort of `dtype` (any dtype).
    pub fn sort(dtype: DType) -> Kernel {
        Kernel::new(Source::Sort, "sort", &[type_name(dtype)])
    }

    /// The windows of a 2-d sliding window over `dtype` elements (any dtype).
    pub fn unfold2d(dtype: DType) -> Kernel {
        Kernel::new(Source::Window, "unfold2d", &[type_name(dtype)])
    }

    /// The windows summed back onto their input (any dtype).
    pub fn fold2d(dtype: DType) -> Kernel {
        Kernel::new(Source::Window, "fold2d", &[type_name(dtype)])
    }

    /// Max pooling of a float `dtype`.
    pub fn max_pool2d(dtype: DType) -> Kernel {
        Kernel::new(Source::Window, "max_pool2d", &[type_name(dtype)])
    }

    /// The program NVRTC compiles for this kernel alone.
    #[cfg_attr(feature = "cuda-emu", allow(dead_code))]
    pub fn program(&self) -> String {
        program(self.source, std::slice::from_ref(self))
    }
}

/// `common.cuh` after the constants the host and the kernels share, defined from the host's
/// values: the most dims of a kernel layout and the block size of the row kernels.
pub fn common() -> String {
    format!(
        "#define NT_MAX_DIMS {}\n#define NT_REDUCE_THREADS {}\n#define NT_SORT_TILE {}\n\
         #define NT_LAYOUT_CONTIGUOUS {}u\n#define NT_LAYOUT_INDEX32 {}u\n{COMMON}",
        launch::MAX_DIMS,
        launch::ROW_BLOCK,
        launch::SORT_TILE,
        launch::KernelLayout::CONTIGUOUS,
        launch::KernelLayout::INDEX32,
    )
}

/// The program text instantiating `kernels`, which must all be defined in `source`.
pub fn program(source: Source, kernels: &[Kernel]) -> String {
    let common = common();
    let mut text = String::with_capacity(common.len() + source.text().len() + 64 * kernels.len());
    text.push_str(&common);
    text.push('\n');
    text.push_str(source.text());
    text.push('\n');
    for k in kernels {
        debug_assert_eq!(k.source, source);
        text.push_str(&k.instance);
        text.push('\n');
    }
    text
}

/// Every kernel the backend can ask for, grouped by nothing in particular (tests compile them
/// all, one program per source file; the emulator builds each source with all of its own).
#[cfg(any(test, feature = "cuda-emu"))]
pub fn all_kernels() -> Vec<Kernel> {
    let mut all = Vec::new();
    for &s in &DType::ALL {
        for &d in &DType::ALL {
            all.push(Kernel::copy(s, d));
        }
        all.push(Kernel::fill(s));
        for &op in UnaryOp::ALL {
            if op.supports(s) {
                all.push(Kernel::unary(op, s));
            }
        }
        for &op in BinaryOp::ALL {
            if op.supports(s) {
                all.push(Kernel::binary(op, s));
            }
        }
        for &op in CompareOp::ALL {
            if op.supports(s) {
                all.push(Kernel::compare(op, s));
            }
        }
        for &op in ReduceOp::ALL {
            if op.supports(s) {
                all.push(Kernel::reduce(op, s));
            }
        }
        if s.is_float() {
            all.push(Kernel::softmax(s));
            all.push(Kernel::softmax_backward(s));
            all.push(Kernel::normalize(s));
            all.push(Kernel::normalize_backward(s));
            all.push(Kernel::adam(s));
        }
        all.push(Kernel::where_(s));
        all.push(Kernel::index(s));
        all.push(Kernel::scatter_add(s));
        if scan_supports(s) {
            all.push(Kernel::scan(s));
        }
        all.push(Kernel::sort(s));
        all.push(Kernel::unfold2d(s));
        all.push(Kernel::fold2d(s));
        if s.is_float() {
            all.push(Kernel::max_pool2d(s));
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_instances_match_the_macros() {
        let k = Kernel::copy(DType::F32, DType::BF16);
        assert_eq!(k.instance, "NT_COPY(f32, bf16)");
        assert_eq!(k.name, "nt_copy_f32_bf16");
        let k = Kernel::reduce(ReduceOp::ArgMax, DType::F16);
        assert_eq!(k.instance, "NT_REDUCE(argmax, f16)");
        assert_eq!(k.name, "nt_reduce_argmax_f16");
        assert_eq!(Kernel::fill(DType::Bool).name, "nt_fill_bool");
        assert_eq!(Kernel::where_(DType::BF16).instance, "NT_WHERE(bf16)");
        assert_eq!(Kernel::index(DType::I8).name, "nt_index_i8");
        assert_eq!(Kernel::scatter_add(DType::BF16).name, "nt_scatter_add_bf16");
        assert_eq!(
            Kernel::scatter_add(DType::F32).instance,
            "NT_SCATTER_ADD(f32)"
        );
        assert_eq!(Kernel::scan(DType::I64).name, "nt_scan_i64");
        assert!(scan_supports(DType::F16) && !scan_supports(DType::I32));
        assert!(
            Kernel::softmax(DType::F64)
                .program()
                .ends_with("NT_SOFTMAX(f64)\n")
        );
        assert_eq!(
            Kernel::softmax_backward(DType::BF16).name,
            "nt_softmax_bwd_bf16"
        );
    }

    #[test]
    fn every_macro_and_op_used_is_defined_in_its_file() {
        for k in all_kernels() {
            let text = k.source.text();
            let family = k.instance.split('(').next().unwrap();
            assert!(
                text.contains(&format!("#define {family}(")),
                "{family} in {}",
                k.source.file_name()
            );
        }
        for op in UnaryOp::ALL {
            let text = Source::Unary.text();
            assert!(
                text.contains(&format!("struct nt_op_{} ", op.name()))
                    || text.contains(&format!("NT_FLOAT_OP({},", op.name())),
                "{op:?}"
            );
        }
        for op in BinaryOp::ALL {
            assert!(
                Source::Binary
                    .text()
                    .contains(&format!("nt_op_{} ", op.name()))
            );
        }
        for op in CompareOp::ALL {
            assert!(
                Source::Binary
                    .text()
                    .contains(&format!("nt_op_{} ", op.name()))
            );
        }
        // (any/all have no kernel of their own)
        for op in ReduceOp::ALL
            .iter()
            .filter(|op| DType::ALL.iter().any(|&d| op.supports(d)))
        {
            assert!(
                Source::Reduce
                    .text()
                    .contains(&format!("nt_red_{}", op.name()))
            );
        }
        for &d in &DType::ALL {
            assert!(COMMON.contains(&format!("nt_t_{};", type_name(d))));
        }
    }

    #[test]
    fn constants_shared_with_the_kernels_are_defined_once_by_the_host() {
        // common.cuh only checks that they are there; every program defines them first from
        // the launch constants, so host and kernels cannot disagree.
        for name in [
            "NT_MAX_DIMS",
            "NT_REDUCE_THREADS",
            "NT_SORT_TILE",
            "NT_LAYOUT_CONTIGUOUS",
            "NT_LAYOUT_INDEX32",
        ] {
            assert!(
                !COMMON.contains(&format!("#define {name}")),
                "{name} in common.cuh"
            );
            assert!(
                COMMON.contains(&format!("#ifndef {name}")),
                "{name} unchecked"
            );
        }
        let text = program(Source::Reduce, &[]);
        assert!(text.starts_with(&format!(
            "#define NT_MAX_DIMS {}\n#define NT_REDUCE_THREADS {}\n#define NT_SORT_TILE {}\n",
            launch::MAX_DIMS,
            launch::ROW_BLOCK,
            launch::SORT_TILE
        )));
        assert!(launch::SORT_TILE.is_power_of_two(), "the bitonic network");
        assert!(
            launch::ROW_BLOCK.is_power_of_two(),
            "nt_block_reduce halves the block"
        );
    }

    #[test]
    fn kernel_sources_include_no_header() {
        // NVRTC finds no CUDA header without a toolkit (cuda_fp16.h in particular).
        assert!(!COMMON.contains("#include"));
        for s in Source::ALL {
            assert!(!s.text().contains("#include"), "{}", s.file_name());
        }
    }

    #[test]
    fn reduce_result_types() {
        assert_eq!(ReduceOp::Sum.out_dtype(DType::I8), DType::I64);
        assert_eq!(ReduceOp::Sum.out_dtype(DType::Bool), DType::I64);
        assert_eq!(ReduceOp::Sum.out_dtype(DType::BF16), DType::BF16);
        assert_eq!(ReduceOp::Max.out_dtype(DType::U8), DType::U8);
        assert_eq!(ReduceOp::ArgMin.out_dtype(DType::F64), DType::I64);
        assert!(!ReduceOp::Mean.supports(DType::I32));
        assert!(!ReduceOp::Max.supports(DType::Bool));
        assert!(ReduceOp::Prod.supports(DType::Bool));
        assert!(!UnaryOp::Exp.supports(DType::I64));
        assert!(UnaryOp::Abs.supports(DType::I8));
        assert!(!BinaryOp::Div.supports(DType::I32));
    }
}
