//! A stand-in for cuBLAS's `cublasGemmStridedBatchedEx`: a reference strided-batched GEMM,
//! column-major, with cuBLAS's documented argument checks, run on the emulated stream.
//!
//! Checks (cuBLAS returns `CUBLAS_STATUS_INVALID_VALUE`): `m`, `n`, `k` and the batch count are
//! not negative; `lda ≥ max(1, rows of A as stored)` (`m` for `N`, `k` for `T`), likewise
//! `ldb` (`k` for `N`, `n` for `T`) and `ldc ≥ max(1, m)`. Supported types (else
//! `CUBLAS_STATUS_NOT_SUPPORTED`): one data type for A, B and C, f32/f16/bf16 with
//! `CUBLAS_COMPUTE_32F` (products accumulated in f32) and f64 with `CUBLAS_COMPUTE_64F`.
//! `alpha` and `beta` are read when the call is made (host pointer mode), the matrices when
//! the stream runs it. `beta == 0` ignores C's old contents (NaN included), as BLAS does.

use super::stream::CudaStream;
use cudarc::cublas::result::CublasError;
use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cublasStatus_t, cudaDataType,
};
use half::{bf16, f16};
use std::ffi::{c_int, c_longlong, c_void};
use std::sync::Arc;

/// A cuBLAS handle: the stream its calls run on.
#[derive(Debug, Clone, Copy)]
pub struct Handle(*const CudaStream);

/// The emulated cuBLAS library handle of one device.
#[derive(Debug)]
pub struct CudaBlas {
    /// Keeps alive the stream the handle points at.
    _stream: Arc<CudaStream>,
    handle: Handle,
}

// SAFETY: the handle only points at `stream`, which the struct keeps alive; the stream is
// `Sync`.
unsafe impl Send for CudaBlas {}
// SAFETY: as above.
unsafe impl Sync for CudaBlas {}

impl CudaBlas {
    /// A handle whose calls run on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<CudaBlas, CublasError> {
        let handle = Handle(Arc::as_ptr(&stream));
        Ok(CudaBlas {
            _stream: stream,
            handle,
        })
    }

    /// The handle for [`gemm_strided_batched_ex`] (valid while `self` lives).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

/// Whether "cuBLAS" is present: always, in the emulator.
pub fn is_present() -> bool {
    true
}

fn invalid() -> CublasError {
    CublasError(cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE)
}

/// Element access by data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    F32,
    F64,
    F16,
    BF16,
}

impl Ty {
    fn size(self) -> u64 {
        match self {
            Ty::F32 => 4,
            Ty::F64 => 8,
            Ty::F16 | Ty::BF16 => 2,
        }
    }

    /// # Safety
    /// `addr` must point at a readable element of this type.
    unsafe fn load(self, addr: u64) -> f64 {
        // SAFETY: caller's contract (unaligned reads: device pointers are only element-aligned).
        unsafe {
            match self {
                Ty::F32 => (addr as *const f32).read_unaligned() as f64,
                Ty::F64 => (addr as *const f64).read_unaligned(),
                Ty::F16 => f16::from_bits((addr as *const u16).read_unaligned()).to_f64(),
                Ty::BF16 => bf16::from_bits((addr as *const u16).read_unaligned()).to_f64(),
            }
        }
    }

    /// # Safety
    /// `addr` must point at a writable element of this type.
    unsafe fn store(self, addr: u64, v: f64) {
        // SAFETY: caller's contract. f32-computed types round the f32 result once.
        unsafe {
            match self {
                Ty::F32 => (addr as *mut f32).write_unaligned(v as f32),
                Ty::F64 => (addr as *mut f64).write_unaligned(v),
                Ty::F16 => (addr as *mut u16).write_unaligned(f16::from_f32(v as f32).to_bits()),
                Ty::BF16 => (addr as *mut u16).write_unaligned(bf16::from_f32(v as f32).to_bits()),
            }
        }
    }
}

/// One operand: address, leading dimension, batch stride, transposed or not.
#[derive(Debug, Clone, Copy)]
struct Mat {
    ptr: u64,
    ld: u64,
    stride: i64,
    trans: bool,
}

impl Mat {
    /// The address of element `(i, j)` of `op(M)` in batch `b`.
    fn at(&self, ty: Ty, b: u64, i: u64, j: u64) -> u64 {
        let (r, c) = if self.trans { (j, i) } else { (i, j) };
        let base = self
            .ptr
            .wrapping_add((b as i64).wrapping_mul(self.stride) as u64 * ty.size());
        base.wrapping_add((r + c * self.ld) * ty.size())
    }
}

/// `C = alpha · op(A) · op(B) + beta · C` for each of `batch` matrices; see the module docs.
///
/// # Safety
/// As for cuBLAS: `handle` comes from a live [`CudaBlas`]; `alpha` and `beta` point at host
/// values of the compute precision; A, B and C cover every element the arguments describe and
/// stay live until the stream has run the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_strided_batched_ex(
    handle: Handle,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    a_type: cudaDataType,
    lda: c_int,
    stride_a: c_longlong,
    b: *const c_void,
    b_type: cudaDataType,
    ldb: c_int,
    stride_b: c_longlong,
    beta: *const c_void,
    c: *mut c_void,
    c_type: cudaDataType,
    ldc: c_int,
    stride_c: c_longlong,
    batch_count: c_int,
    compute_type: cublasComputeType_t,
    _algo: cublasGemmAlgo_t,
) -> Result<(), CublasError> {
    let trans = |t: cublasOperation_t| match t {
        cublasOperation_t::CUBLAS_OP_N => Ok(false),
        cublasOperation_t::CUBLAS_OP_T => Ok(true),
        _ => Err(CublasError(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED)),
    };
    let (ta, tb) = (trans(transa)?, trans(transb)?);
    if m < 0 || n < 0 || k < 0 || batch_count < 0 {
        return Err(invalid());
    }
    let rows_a = if ta { k } else { m };
    let rows_b = if tb { n } else { k };
    if lda < rows_a.max(1) || ldb < rows_b.max(1) || ldc < m.max(1) {
        return Err(invalid());
    }
    let not_supported = CublasError(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED);
    if a_type != b_type || a_type != c_type {
        return Err(not_supported);
    }
    let ty = match (a_type, compute_type) {
        (cudaDataType::CUDA_R_32F, cublasComputeType_t::CUBLAS_COMPUTE_32F) => Ty::F32,
        (cudaDataType::CUDA_R_16F, cublasComputeType_t::CUBLAS_COMPUTE_32F) => Ty::F16,
        (cudaDataType::CUDA_R_16BF, cublasComputeType_t::CUBLAS_COMPUTE_32F) => Ty::BF16,
        (cudaDataType::CUDA_R_64F, cublasComputeType_t::CUBLAS_COMPUTE_64F) => Ty::F64,
        _ => return Err(not_supported),
    };
    // SAFETY: host values of the compute precision (caller's contract).
    let (alpha, beta) = unsafe {
        if ty == Ty::F64 {
            (*(alpha as *const f64), *(beta as *const f64))
        } else {
            (*(alpha as *const f32) as f64, *(beta as *const f32) as f64)
        }
    };
    let ma = Mat {
        ptr: a as u64,
        ld: lda as u64,
        stride: stride_a,
        trans: ta,
    };
    let mb = Mat {
        ptr: b as u64,
        ld: ldb as u64,
        stride: stride_b,
        trans: tb,
    };
    let mc = Mat {
        ptr: c as u64,
        ld: ldc as u64,
        stride: stride_c,
        trans: false,
    };
    let (m, n, k, batch) = (m as u64, n as u64, k as u64, batch_count as u64);
    // SAFETY: the handle points at the stream of a live `CudaBlas` (caller's contract).
    let stream = unsafe { &*handle.0 };
    stream
        .issue_work(move || {
            for bi in 0..batch {
                for j in 0..n {
                    for i in 0..m {
                        // SAFETY: every address lies in A, B or C (caller's contract), which
                        // stay live until this work item has run.
                        unsafe {
                            let dot = if ty == Ty::F64 {
                                (0..k).fold(0.0f64, |s, l| {
                                    s + ty.load(ma.at(ty, bi, i, l)) * ty.load(mb.at(ty, bi, l, j))
                                })
                            } else {
                                (0..k).fold(0.0f32, |s, l| {
                                    s + ty.load(ma.at(ty, bi, i, l)) as f32
                                        * ty.load(mb.at(ty, bi, l, j)) as f32
                                }) as f64
                            };
                            let addr = mc.at(ty, bi, i, j);
                            let old = if beta == 0.0 {
                                0.0
                            } else {
                                beta * ty.load(addr)
                            };
                            let v = if ty == Ty::F64 {
                                alpha * dot + old
                            } else {
                                (alpha as f32 * dot as f32 + old as f32) as f64
                            };
                            ty.store(addr, v);
                        }
                    }
                }
            }
            Ok(())
        })
        .map_err(|_| CublasError(cublasStatus_t::CUBLAS_STATUS_EXECUTION_FAILED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cuda::emu::CudaContext;

    fn run(ta: bool, tb: bool, lda: i32, ldb: i32, ldc: i32) -> Result<Vec<f32>, CublasError> {
        // Column-major A (2×3) = [[1,2,3],[4,5,6]], B (3×2) = [[1,0],[0,1],[1,1]].
        let a_cm: Vec<f32> = if ta {
            vec![1., 2., 3., 4., 5., 6.] // Aᵀ stored column-major (3×2): the rows of A
        } else {
            vec![1., 4., 2., 5., 3., 6.]
        };
        // B (3×2) = [[1,0],[0,1],[1,1]] column-major, or Bᵀ (2×3) column-major.
        let b_cm: Vec<f32> = if tb {
            vec![1., 0., 0., 1., 1., 1.]
        } else {
            vec![1., 0., 1., 0., 1., 1.]
        };
        let mut c = vec![f32::NAN; 4];
        let ctx = CudaContext::new(0).unwrap();
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(Arc::clone(&stream))?;
        let op = |t| {
            if t {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: host vectors standing in for device memory, live until the synchronize.
        unsafe {
            gemm_strided_batched_ex(
                *blas.handle(),
                op(ta),
                op(tb),
                2,
                2,
                3,
                &alpha as *const f32 as *const c_void,
                a_cm.as_ptr() as *const c_void,
                cudaDataType::CUDA_R_32F,
                lda,
                0,
                b_cm.as_ptr() as *const c_void,
                cudaDataType::CUDA_R_32F,
                ldb,
                0,
                &beta as *const f32 as *const c_void,
                c.as_mut_ptr() as *mut c_void,
                cudaDataType::CUDA_R_32F,
                ldc,
                0,
                1,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )?;
        }
        stream.synchronize().unwrap();
        Ok(c)
    }

    #[test]
    fn reference_gemm_matches_a_hand_computed_product() {
        // A·B = [[1+3, 2+3], [4+6, 5+6]] = [[4,5],[10,11]]; column-major C = [4,10,5,11].
        assert_eq!(run(false, false, 2, 3, 2).unwrap(), vec![4., 10., 5., 11.]);
        assert_eq!(run(true, false, 3, 3, 2).unwrap(), vec![4., 10., 5., 11.]);
        assert_eq!(run(false, true, 2, 2, 2).unwrap(), vec![4., 10., 5., 11.]);
        assert_eq!(run(true, true, 3, 2, 2).unwrap(), vec![4., 10., 5., 11.]);
    }

    #[test]
    fn leading_dimensions_are_checked_as_cublas_does() {
        let invalid = Err(CublasError(cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE));
        assert_eq!(run(false, false, 1, 3, 2), invalid); // lda < m
        assert_eq!(run(true, false, 2, 3, 2), invalid); // lda < k for a transposed A
        assert_eq!(run(false, false, 2, 2, 2), invalid); // ldb < k
        assert_eq!(run(false, true, 2, 1, 2), invalid); // ldb < n for a transposed B
        assert_eq!(run(false, false, 2, 3, 1), invalid); // ldc < m
    }
}
