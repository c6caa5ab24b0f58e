//! Operations along one dim: `softmax`, `log_softmax` (float types, computed in `f32` for
//! `f16`/`bf16`), `cumsum`, `cumprod` (accumulating in `f64` for floats and `i64` for
//! integers; integer and `bool` inputs give `i64`, as PyTorch).

use super::promote::SumOutput;
use super::{C, gather_as, on_cuda};
use crate::backend::cpu::convert::as_type;
use crate::backend::cpu::convert::vec_into;
use crate::backend::cpu::scan;
use crate::dtype::Native;
use crate::dtype::{Element, Float};
use crate::error::Result;
use crate::layout::normalize_dim;
use crate::tensor::{DynTensor, or_panic};

/// `(n, inner)` of `t` seen as `[outer, n, inner]` around `dim` (a 0-d tensor accepts 0/-1).
fn around(op: &'static str, shape: &[usize], dim: isize) -> Result<(usize, usize)> {
    if shape.is_empty() && (dim == 0 || dim == -1) {
        return Ok((1, 1));
    }
    let d = normalize_dim(op, dim, shape.len())?;
    Ok((shape[d], shape[d + 1..].iter().product()))
}

fn softmax_impl<E: Float>(t: &DynTensor<E>, dim: isize, log: bool) -> Result<DynTensor<E>> {
    let op = if log { "log_softmax" } else { "softmax" };
    let (n, inner) = around(op, t.shape(), dim)?;
    on_cuda!([t], {
        let d = if t.dim() == 0 {
            0
        } else {
            normalize_dim(op, dim, t.dim())?
        };
        super::cuda::softmax(op, t, d, log)
    });
    // A contiguous input already in the compute type is read where it is; any other is
    // gathered (and converted) first.
    if t.is_contiguous()
        && let Some(out) = {
            let guard = t.storage().read();
            let data = guard.cpu(op)?;
            as_type::<E, C<E>>(&data[t.storage_offset()..t.storage_offset() + t.numel()])
                .map(|src| scan::softmax(src, n, inner, log))
        }
    {
        return DynTensor::from_contiguous_vec(vec_into(out), t.shape());
    }
    let buf = gather_as::<E, C<E>>(op, t)?;
    let out = scan::softmax(&buf, n, inner, log);
    DynTensor::from_contiguous_vec(vec_into(out), t.shape())
}

fn scan_impl<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    dim: isize,
    prod: bool,
) -> Result<DynTensor<SumOutput<E>>> {
    let (n, inner) = around(op, t.shape(), dim)?;
    on_cuda!(
        [t],
        super::cuda::scan::<E, SumOutput<E>>(op, t, n, inner, prod)
    );
    let mut buf = gather_as::<E, SumOutput<E>>(op, t)?;
    if <SumOutput<E> as Element>::DTYPE.is_float() {
        if prod {
            scan::scan(&mut buf, n, inner, 1.0f64, |a, b| a * b);
        } else {
            scan::scan(&mut buf, n, inner, 0.0f64, |a, b| a + b);
        }
    } else if prod {
        scan::scan(&mut buf, n, inner, 1i64, |a, b| a.nmul(b));
    } else {
        scan::scan(&mut buf, n, inner, 0i64, |a, b| a.nadd(b));
    }
    DynTensor::from_contiguous_vec(buf, t.shape())
}

impl<E: Float> DynTensor<E> {
    /// `exp(x) / Σ exp(x)` along `dim`, computed stably (each lane's maximum is subtracted
    /// first). Panics where [`DynTensor::try_softmax`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1000.0f32, 1000.0, 0.0, 0.0], &[2, 2]);
    /// assert_eq!(t.softmax(-1).to_vec(), vec![0.5, 0.5, 0.5, 0.5]);
    /// ```
    #[track_caller]
    pub fn softmax(&self, dim: isize) -> DynTensor<E> {
        or_panic(self.try_softmax(dim))
    }

    /// [`DynTensor::softmax`], or an error for a dim out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_softmax(1).is_err());
    /// ```
    pub fn try_softmax(&self, dim: isize) -> Result<DynTensor<E>> {
        softmax_impl(self, dim, false)
    }

    /// `x - log Σ exp(x)` along `dim`, computed stably.
    /// Panics where [`DynTensor::try_log_softmax`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![0.0f64, 0.0], &[2]);
    /// assert_eq!(t.log_softmax(0).to_vec(), vec![-(2f64.ln()); 2]);
    /// ```
    #[track_caller]
    pub fn log_softmax(&self, dim: isize) -> DynTensor<E> {
        or_panic(self.try_log_softmax(dim))
    }

    /// [`DynTensor::log_softmax`], or an error for a dim out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_log_softmax(-2).is_err());
    /// ```
    pub fn try_log_softmax(&self, dim: isize) -> Result<DynTensor<E>> {
        softmax_impl(self, dim, true)
    }
}

impl<E: Element> DynTensor<E> {
    /// Running sums along `dim` (`i64` for integers and `bool`).
    /// Panics where [`DynTensor::try_cumsum`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]);
    /// assert_eq!(t.cumsum(0).to_vec(), vec![1i64, 2, 4, 6]);
    /// assert_eq!(t.cumsum(1).to_vec(), vec![1i64, 3, 3, 7]);
    /// ```
    #[track_caller]
    pub fn cumsum(&self, dim: isize) -> DynTensor<SumOutput<E>> {
        or_panic(self.try_cumsum(dim))
    }

    /// [`DynTensor::cumsum`], or an error for a dim out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_cumsum(1).is_err());
    /// ```
    pub fn try_cumsum(&self, dim: isize) -> Result<DynTensor<SumOutput<E>>> {
        scan_impl("cumsum", self, dim, false)
    }

    /// Running products along `dim` (`i64` for integers and `bool`).
    /// Panics where [`DynTensor::try_cumprod`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]);
    /// assert_eq!(t.cumprod(0).to_vec(), vec![1.0, 2.0, 6.0, 24.0]);
    /// ```
    #[track_caller]
    pub fn cumprod(&self, dim: isize) -> DynTensor<SumOutput<E>> {
        or_panic(self.try_cumprod(dim))
    }

    /// [`DynTensor::cumprod`], or an error for a dim out of range.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::<f32>::ones(&[2]).try_cumprod(-3).is_err());
    /// ```
    pub fn try_cumprod(&self, dim: isize) -> Result<DynTensor<SumOutput<E>>> {
        scan_impl("cumprod", self, dim, true)
    }
}
