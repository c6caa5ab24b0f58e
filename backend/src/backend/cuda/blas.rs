//! Matrix products through cuBLAS (`cublasGemmStridedBatchedEx`), one handle per device.
//!
//! cuBLAS is column-major; a row-major product `C = A·B` is computed as `Cᵀ = Bᵀ·Aᵀ`. A matrix
//! operand whose rows or columns are contiguous is passed as it is, with a transpose flag and
//! leading dimension read off its strides (so `t()` and other transposed views cost no copy);
//! any other operand is gathered first. Batch dims are walked jointly: where they merge into
//! one stride per operand (a broadcast batch dim has stride 0) one strided-batched call does
//! the whole batch, otherwise one call per outer batch index.
//!
//! f32 and f64 compute in their own precision (no TF32); f16 and bf16 accumulate in f32.

use super::copy::{cast, same_device};
use super::device::CudaDevice;
use super::error::{cublas, device_error};
use super::launch::coalesce;
use super::rt::{CudaBlas, DevicePtr, DevicePtrMut};
use super::storage::CudaBuffer;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, contiguous_strides};
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use std::ffi::c_void;
use std::sync::{Arc, PoisonError};

/// How cuBLAS reads one matrix operand: the transpose flag and the leading dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operand {
    /// Whether the memory holds the matrix itself in column-major order (so cuBLAS must
    /// transpose it); otherwise it holds the transpose.
    pub transpose: bool,
    /// The leading dimension.
    pub ld: usize,
}

/// How to present a row-major `rows × cols` matrix with strides `(rs, cs)` to cuBLAS as its
/// transpose (`cols × rows`, column-major), or `None` if neither its rows nor its columns are
/// contiguous and it must be gathered first.
pub fn operand(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<Operand> {
    let fits = |ld: usize| ld <= i32::MAX as usize;
    // Rows contiguous: memory is the transpose, column-major with leading dimension rs.
    if cs == 1 || cols == 1 {
        let ld = if rows > 1 { rs } else { cols.max(1) };
        if ld >= cols.max(1) && fits(ld) {
            return Some(Operand {
                transpose: false,
                ld,
            });
        }
    }
    // Columns contiguous: memory is the matrix, column-major with leading dimension cs.
    if rs == 1 || rows == 1 {
        let ld = if cols > 1 { cs } else { rows.max(1) };
        if ld >= rows.max(1) && fits(ld) {
            return Some(Operand {
                transpose: true,
                ld,
            });
        }
    }
    None
}

/// One strided-batched call: element offsets of the first A, B and C matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    pub a: usize,
    pub b: usize,
    pub c: usize,
    pub count: usize,
}

/// The batched calls covering batch dims `sizes` with the operands' batch strides: every
/// call has `count` matrices `stride` apart per operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlan {
    pub calls: Vec<Call>,
    /// Distance between consecutive matrices of A, B, C within a call (0 = broadcast).
    pub strides: [usize; 3],
}

/// Plans the batch loop: the batch dims are merged jointly; the innermost merged dim becomes
/// the strided batch (split into chunks of at most `max_count`), the others a loop.
pub fn plan_batches(sizes: &[usize], strides: [&[usize]; 3], max_count: usize) -> BatchPlan {
    let (sizes, st) = coalesce(sizes, strides);
    if sizes.contains(&0) {
        return BatchPlan {
            calls: vec![],
            strides: [0; 3],
        };
    }
    let Some((&inner, outer)) = sizes.split_last() else {
        return BatchPlan {
            calls: vec![Call {
                a: 0,
                b: 0,
                c: 0,
                count: 1,
            }],
            strides: [0; 3],
        };
    };
    let r = outer.len();
    let inner_strides = [st[0][r], st[1][r], st[2][r]];
    let mut calls = Vec::new();
    let mut idx = vec![0usize; r];
    loop {
        let base: [usize; 3] =
            std::array::from_fn(|k| idx.iter().zip(&st[k]).map(|(&i, &s)| i * s).sum());
        let mut start = 0;
        while start < inner {
            let count = (inner - start).min(max_count);
            calls.push(Call {
                a: base[0] + start * inner_strides[0],
                b: base[1] + start * inner_strides[1],
                c: base[2] + start * inner_strides[2],
                count,
            });
            start += count;
        }
        // odometer over the outer dims
        let mut d = r;
        loop {
            if d == 0 {
                return BatchPlan {
                    calls,
                    strides: inner_strides,
                };
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The device's cuBLAS handle, created on first use.
fn handle(op: &'static str, dev: &Arc<CudaDevice>) -> Result<Arc<CudaBlas>> {
    let mut slot = dev.blas.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(h) = slot.as_ref() {
        return Ok(Arc::clone(h));
    }
    if !super::rt::cublas_present() {
        return Err(device_error(
            op,
            "cuBLAS not found (libcublas.so / libcublas.so.12 could not be loaded; it comes \
             with the CUDA toolkit or the pip wheel nvidia-cublas-cu12)",
        ));
    }
    let stream = Arc::clone(dev.stream());
    let h = std::panic::catch_unwind(|| CudaBlas::new(stream))
        .map_err(|p| {
            device_error(
                op,
                format!(
                    "cuBLAS could not be used: {}",
                    super::error::panic_message(&*p)
                ),
            )
        })?
        .map_err(|e| cublas(op, dev.device(), "creating a handle", e))?;
    let h = Arc::new(h);
    *slot = Some(Arc::clone(&h));
    Ok(h)
}

fn int(op: &'static str, what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("{what} {v} exceeds cuBLAS's 32-bit limit"),
        )
    })
}

/// The matrix part of an operand, gathered to a contiguous buffer if cuBLAS cannot read it.
fn prepare<'a>(
    op: &'static str,
    buf: &'a CudaBuffer,
    layout: &Layout,
    packed: &'a mut Option<CudaBuffer>,
) -> Result<(&'a CudaBuffer, Layout, Operand)> {
    let r = layout.rank();
    let (rows, cols) = (layout.sizes()[r - 2], layout.sizes()[r - 1]);
    let (rs, cs) = (layout.strides()[r - 2], layout.strides()[r - 1]);
    if let Some(o) = operand(rows, cols, rs, cs) {
        return Ok((buf, layout.clone(), o));
    }
    let gathered = cast(op, buf, layout, buf.dtype())?;
    let l = Layout::contiguous(layout.sizes())?;
    let o = operand(rows, cols, cols, 1).expect("a contiguous matrix is readable");
    Ok((&*packed.insert(gathered), l, o))
}

/// The row-major product of `a` (`[batch…, m, k]`) and `b` (`[batch…, k, n]`), both with the
/// same batch sizes (broadcast batch dims have stride 0), for f32, f64, f16 and bf16: a new
/// contiguous `[batch…, m, n]` buffer.
pub fn matmul(
    op: &'static str,
    a: &CudaBuffer,
    la: &Layout,
    b: &CudaBuffer,
    lb: &Layout,
) -> Result<CudaBuffer> {
    same_device(op, a, b)?;
    let dtype = a.dtype();
    if b.dtype() != dtype {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "operands of {} and {} (convert one first)",
                dtype,
                b.dtype()
            ),
        ));
    }
    let (data_type, compute) = match dtype {
        DType::F32 => (
            cudaDataType::CUDA_R_32F,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::F64 => (
            cudaDataType::CUDA_R_64F,
            cublasComputeType_t::CUBLAS_COMPUTE_64F,
        ),
        DType::F16 => (
            cudaDataType::CUDA_R_16F,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::BF16 => (
            cudaDataType::CUDA_R_16BF,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        other => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("matrix products on CUDA support f32, f64, f16 and bf16, not {other}"),
            ));
        }
    };
    let r = la.rank();
    if r < 2 || lb.rank() != r || la.sizes()[..r - 2] != lb.sizes()[..r - 2] {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "expected [batch…, m, k] and [batch…, k, n] with equal batch sizes, got {:?} \
                 and {:?}",
                la.sizes(),
                lb.sizes()
            ),
        ));
    }
    let (m, k, n) = (la.sizes()[r - 2], la.sizes()[r - 1], lb.sizes()[r - 1]);
    if lb.sizes()[r - 2] != k {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "inner sizes differ: {:?} @ {:?} ({k} vs {})",
                la.sizes(),
                lb.sizes(),
                lb.sizes()[r - 2]
            ),
        ));
    }
    let batch = &la.sizes()[..r - 2];
    let mut out_sizes = batch.to_vec();
    out_sizes.extend([m, n]);
    let out_layout = Layout::contiguous(&out_sizes)?;
    let dev = Arc::clone(a.cuda_device());
    if out_layout.numel() == 0 {
        return CudaBuffer::alloc(op, &dev, dtype, 0);
    }
    if k == 0 {
        return CudaBuffer::zeros(op, &dev, dtype, out_layout.numel());
    }
    let (mut pa, mut pb) = (None, None);
    let (a, la, oa) = prepare(op, a, la, &mut pa)?;
    let (b, lb, ob) = prepare(op, b, lb, &mut pb)?;
    let (mi, ni, ki) = (int(op, "m", m)?, int(op, "n", n)?, int(op, "k", k)?);
    let (lda, ldb) = (
        int(op, "leading dim", ob.ld)?,
        int(op, "leading dim", oa.ld)?,
    );
    let out_batch_strides = contiguous_strides(batch).expect("checked with the layout");
    let c_strides: Vec<usize> = out_batch_strides.iter().map(|s| s * m * n).collect();
    let plan = plan_batches(
        batch,
        [&la.strides()[..r - 2], &lb.strides()[..r - 2], &c_strides],
        i32::MAX as usize,
    );
    let mut out = CudaBuffer::alloc(op, &dev, dtype, out_layout.numel())?;
    let blas = handle(op, &dev)?;
    dev.bind(op)?;
    let stream = dev.stream();
    let size = dtype.size_in_bytes() as u64;
    let op_of = |o: Operand| {
        if o.transpose {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        }
    };
    let (alpha32, beta32, alpha64, beta64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if dtype == DType::F64 {
        (&alpha64 as *const f64 as _, &beta64 as *const f64 as _)
    } else {
        (&alpha32 as *const f32 as _, &beta32 as *const f32 as _)
    };
    {
        let (pa_ptr, _ga) = a.slice().device_ptr(stream);
        let (pb_ptr, _gb) = b.slice().device_ptr(stream);
        let (pc_ptr, _gc) = out.slice_mut().device_ptr_mut(stream);
        for call in &plan.calls {
            let a_ptr = pa_ptr + (la.offset() + call.a) as u64 * size;
            let b_ptr = pb_ptr + (lb.offset() + call.b) as u64 * size;
            let c_ptr = pc_ptr + call.c as u64 * size;
            // SAFETY: the cuBLAS arguments describe Cᵀ (n × m, ldc n) = op(Bᵀ) · op(Aᵀ) over
            // memory that lies within the buffers: the operand layouts fit their storages,
            // the output buffer has batch · m · n elements, and the handle runs on the
            // device's stream. alpha/beta are host values of the compute precision.
            unsafe {
                super::rt::gemm_strided_batched_ex(
                    *blas.handle(),
                    op_of(ob),
                    op_of(oa),
                    ni,
                    mi,
                    ki,
                    alpha,
                    b_ptr as *const c_void,
                    data_type,
                    lda,
                    plan.strides[1] as i64,
                    a_ptr as *const c_void,
                    data_type,
                    ldb,
                    plan.strides[0] as i64,
                    beta,
                    c_ptr as *mut c_void,
                    data_type,
                    ni,
                    plan.strides[2] as i64,
                    int(op, "batch count", call.count)?,
                    compute,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                )
            }
            .map_err(|e| cublas(op, dev.device(), "running a batched gemm", e))?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_operands_need_no_transpose() {
        // a contiguous 3 × 4 matrix: its memory is the 4 × 3 transpose in column-major order
        assert_eq!(
            operand(3, 4, 4, 1),
            Some(Operand {
                transpose: false,
                ld: 4
            })
        );
        // a row-padded one (narrowed columns): ld is the row stride
        assert_eq!(
            operand(3, 2, 4, 1),
            Some(Operand {
                transpose: false,
                ld: 4
            })
        );
    }

    #[test]
    fn transposed_views_are_passed_as_transposes() {
        // t() of a contiguous 4 × 3: a 3 × 4 view with strides (1, 3)
        assert_eq!(
            operand(3, 4, 1, 3),
            Some(Operand {
                transpose: true,
                ld: 3
            })
        );
    }

    #[test]
    fn other_strides_are_gathered() {
        assert_eq!(operand(3, 4, 8, 2), None); // every other column
        assert_eq!(operand(3, 1, 0, 1), None); // an expanded column: rows overlap
        assert_eq!(operand(2, 3, 1, 1), None); // overlapping
    }

    #[test]
    fn vectors_and_single_elements_take_any_stride() {
        // one row: rows stride irrelevant
        assert_eq!(
            operand(1, 5, 999, 1),
            Some(Operand {
                transpose: false,
                ld: 5
            })
        );
        // one column with a row stride of 7
        assert_eq!(
            operand(4, 1, 7, 42),
            Some(Operand {
                transpose: false,
                ld: 7
            })
        );
        assert_eq!(
            operand(1, 1, 0, 0),
            Some(Operand {
                transpose: false,
                ld: 1
            })
        );
    }

    #[test]
    fn batches_merge_into_one_call_when_strides_allow() {
        // [2, 3] batch, contiguous everywhere: one call of 6
        let p = plan_batches(
            &[2, 3],
            [&[3 * 20, 20], &[3 * 30, 30], &[3 * 6, 6]],
            1 << 30,
        );
        assert_eq!(
            p.calls,
            vec![Call {
                a: 0,
                b: 0,
                c: 0,
                count: 6
            }]
        );
        assert_eq!(p.strides, [20, 30, 6]);
        // B broadcast over the batch (stride 0): still one call, stride 0
        let p = plan_batches(&[4], [&[12], &[0], &[6]], 1 << 30);
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.strides, [12, 0, 6]);
        // no batch dims: one matrix
        let p = plan_batches(&[], [&[], &[], &[]], 1 << 30);
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].count, 1);
    }

    #[test]
    fn batches_that_do_not_merge_become_a_loop() {
        // B broadcast along the outer batch dim only: [2, 3] with B strides [0, 10]
        let p = plan_batches(&[2, 3], [&[60, 20], &[0, 10], &[18, 6]], 1 << 30);
        assert_eq!(p.strides, [20, 10, 6]);
        let starts: Vec<(usize, usize, usize)> = p.calls.iter().map(|c| (c.a, c.b, c.c)).collect();
        assert_eq!(starts, vec![(0, 0, 0), (60, 0, 18)]);
        assert!(p.calls.iter().all(|c| c.count == 3));
        // chunks when the count exceeds the limit
        let p = plan_batches(&[5], [&[1], &[1], &[1]], 2);
        let counts: Vec<usize> = p.calls.iter().map(|c| c.count).collect();
        assert_eq!(counts, vec![2, 2, 1]);
        assert_eq!(p.calls[2].a, 4);
        // an empty batch: nothing to do
        assert!(
            plan_batches(&[0, 3], [&[3, 1], &[3, 1], &[3, 1]], 8)
                .calls
                .is_empty()
        );
    }
}
