//! Operations along one dim: `softmax`, `log_softmax` (float types, computed in `f32` for
//! `f16`/`bf16`), `cumsum`, `cumprod` (accumulating in `f64` for floats and `i64` for
//! integers; integer and `bool` inputs give `i64`, as PyTorch).

use super::promote::SumOutput;
use crate::dtype::{Element, Float};
use crate::error::Result;
use crate::layout::normalize_dim;
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

/// The dim along which to work: `dim` normalised (a 0-d tensor accepts 0 and -1).
fn along(op: &'static str, shape: &[usize], dim: isize) -> Result<usize> {
    if shape.is_empty() && (dim == 0 || dim == -1) {
        return Ok(0);
    }
    normalize_dim(op, dim, shape.len())
}

fn softmax_impl<E: Float>(t: &DynTensor<E>, dim: isize, log: bool) -> Result<DynTensor<E>> {
    let op = if log { "log_softmax" } else { "softmax" };
    let d = along(op, t.shape(), dim)?;
    let buf = dispatch::softmax(op, t.storage(), t.layout(), d, log)?;
    let out = DynTensor::from_contiguous_buffer(buf, t.shape())?;
    if !crate::autograd::tracks(t) {
        return Ok(out);
    }
    Ok(crate::autograd::softmax(op, t, d, log, out))
}

/// The gradient of `softmax(x)` (`log_softmax` with `log`) along `d` from its output `y` and
/// the output's gradient `g` (same shape and device): `y·(g − Σ g·y)`, or `g − exp(y)·Σ g`,
/// in one pass of the backend (autograd's formula when nothing records it).
pub(crate) fn softmax_backward<E: Element>(
    y: &DynTensor<E>,
    g: &DynTensor<E>,
    d: usize,
    log: bool,
) -> Result<DynTensor<E>> {
    let op = if log {
        "log_softmax_backward"
    } else {
        "softmax_backward"
    };
    super::check_gradient_shape(op, y, g)?;
    let buf =
        dispatch::softmax_backward(op, y.storage(), y.layout(), g.storage(), g.layout(), d, log)?;
    DynTensor::from_contiguous_buffer(buf, y.shape())
}

fn scan_impl<E: Element>(
    op: &'static str,
    t: &DynTensor<E>,
    dim: isize,
    prod: bool,
) -> Result<DynTensor<SumOutput<E>>> {
    let d = along(op, t.shape(), dim)?;
    let buf = dispatch::scan::<E, SumOutput<E>>(op, prod, t.storage(), t.layout(), d)?;
    let out = DynTensor::from_contiguous_buffer(buf, t.shape())?;
    if !crate::autograd::tracks(t) || SumOutput::<E>::DTYPE != E::DTYPE {
        return Ok(out);
    }
    let out = crate::autograd::same_type::<_, DynTensor<E>>(out);
    let out = if prod {
        crate::autograd::cumprod(t, d, out)
    } else {
        crate::autograd::cumsum(t, d, out)
    };
    Ok(crate::autograd::same_type(out))
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
