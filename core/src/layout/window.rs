//! The geometry of a 2-d sliding window (kernel, stride, padding, dilation) and where its taps
//! land: shared by the ops that build on it (`unfold2d`, `fold2d`, the poolings, `conv2d`) and
//! by every backend's window kernels, so the index math is written once.
//!
//! Invariants, for a window whose [`Window2d::output_size`] over `h × w` succeeded:
//! - output position `i < OH` with tap `k < KH` reads padded row `i·sh + k·dh`, at most
//!   `(padded − span) + (span − 1) < h + 2·ph`, so no position computation overflows;
//! - that padded row is input row `i·sh + k·dh − ph` where it is at least `ph` and less than
//!   `ph + h`, and padding otherwise ([`Window2d::source`]); the outputs whose tap lands
//!   inside the input form one range ([`Window2d::inside`]).

use crate::error::{Error, ErrorKind, Result};

/// The geometry of a 2-d sliding window: kernel, stride, zero padding and dilation, each
/// `(rows, cols)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window2d {
    /// Kernel size.
    pub kernel: (usize, usize),
    /// Step between windows.
    pub stride: (usize, usize),
    /// Padding added on both sides.
    pub padding: (usize, usize),
    /// Spacing between kernel taps.
    pub dilation: (usize, usize),
}

impl Window2d {
    /// A `kh × kw` kernel with stride 1, no padding, no dilation.
    ///
    /// ```
    /// let w = namedtensor::ops::Window2d::new(3, 3).stride(2).padding(1);
    /// assert_eq!(w.output_size(8, 8).unwrap(), (4, 4));
    /// ```
    pub fn new(kh: usize, kw: usize) -> Self {
        Window2d {
            kernel: (kh, kw),
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
        }
    }

    /// The same stride along both dims.
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = (s, s);
        self
    }

    /// The same padding along both dims.
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = (p, p);
        self
    }

    /// The same dilation along both dims.
    pub fn dilation(mut self, d: usize) -> Self {
        self.dilation = (d, d);
        self
    }

    /// The number of window positions `(OH, OW)` over an `h × w` input.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] when the kernel, stride or dilation is 0 or the
    /// (dilated) kernel does not fit the padded input; [`ErrorKind::Overflow`] when the padded
    /// input `size + 2·padding` or the dilated kernel's span `dilation·(kernel − 1) + 1`
    /// overflows `usize`.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, ErrorKind};
    /// let huge = Window2d::new(2, 2).padding(usize::MAX / 2);
    /// assert_eq!(huge.output_size(4, 4).unwrap_err().kind(), ErrorKind::Overflow);
    /// ```
    pub fn output_size(&self, h: usize, w: usize) -> Result<(usize, usize)> {
        self.output_size_for("unfold2d", h, w)
    }

    /// [`Window2d::output_size`], its errors naming `op`.
    #[doc(hidden)]
    pub fn output_size_for(&self, op: &'static str, h: usize, w: usize) -> Result<(usize, usize)> {
        let one = |what: &str, size: usize, k: usize, s: usize, p: usize, d: usize| {
            if k == 0 || s == 0 || d == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    op,
                    format!(
                        "the kernel, stride and dilation must be positive ({what}: kernel {k}, \
                         stride {s}, dilation {d})"
                    ),
                ));
            }
            let span = (k - 1)
                .checked_mul(d)
                .and_then(|s| s.checked_add(1))
                .ok_or_else(|| {
                    Error::overflow(
                        op,
                        format!(
                            "the span of the dilated {what} kernel (dilation {d} × (kernel {k} \
                             − 1) + 1)"
                        ),
                    )
                })?;
            let padded = p
                .checked_mul(2)
                .and_then(|both| size.checked_add(both))
                .ok_or_else(|| {
                    Error::overflow(
                        op,
                        format!("the number of padded input {what}s ({size} + 2 × padding {p})"),
                    )
                })?;
            if padded < span {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    op,
                    format!(
                        "the {what} kernel spans {span} entries (kernel {k}, dilation {d}) but \
                         the input has {size} (+ padding {p} on each side)"
                    ),
                ));
            }
            Ok((padded - span) / s + 1)
        };
        let (kh, kw) = self.kernel;
        let (sh, sw) = self.stride;
        let (ph, pw) = self.padding;
        let (dh, dw) = self.dilation;
        Ok((
            one("row", h, kh, sh, ph, dh)?,
            one("column", w, kw, sw, pw, dw)?,
        ))
    }

    /// The input coordinate that output position `out` reads with tap `tap` along `axis` (0:
    /// rows, 1: columns) of an input with `size` entries there, or `None` for padding.
    ///
    /// ```
    /// use namedtensor::ops::Window2d;
    /// let w = Window2d::new(3, 3).padding(1).stride(2);
    /// assert_eq!(w.source(0, 0, 0, 5), None);     // row −1: padding
    /// assert_eq!(w.source(0, 1, 2, 5), Some(3));  // 1·2 + 2·1 − 1
    /// ```
    pub fn source(&self, axis: usize, out: usize, tap: usize, size: usize) -> Option<usize> {
        let (s, p, d) = self.axis(axis);
        (out * s + tap * d).checked_sub(p).filter(|&r| r < size)
    }

    /// The output positions `0..out` whose tap `tap` along `axis` lands inside an input of
    /// `size` entries: exactly those for which [`Window2d::source`] is `Some`.
    ///
    /// ```
    /// use namedtensor::ops::Window2d;
    /// let w = Window2d::new(3, 3).padding(1);
    /// assert_eq!(w.inside(1, 0, 4, 4), 1..4);  // tap 0 of column 0 is padding
    /// assert_eq!(w.inside(1, 2, 4, 4), 0..3);  // tap 2 of column 3 is padding
    /// ```
    pub fn inside(
        &self,
        axis: usize,
        tap: usize,
        size: usize,
        out: usize,
    ) -> std::ops::Range<usize> {
        let (s, p, d) = self.axis(axis);
        let at = tap * d;
        // Position `j` reads `j·s + at − p`, inside where `p − at ≤ j·s < size + p − at`.
        let lo = p.saturating_sub(at).div_ceil(s);
        let hi = (size + p).saturating_sub(at).div_ceil(s);
        lo.min(out)..hi.clamp(lo.min(out), out)
    }

    /// Stride, padding and dilation along `axis`.
    fn axis(&self, axis: usize) -> (usize, usize, usize) {
        if axis == 0 {
            (self.stride.0, self.padding.0, self.dilation.0)
        } else {
            (self.stride.1, self.padding.1, self.dilation.1)
        }
    }
}
