//! Sliding windows over the last two dims: `unfold2d` (im2col), and built on it `conv2d`,
//! `max_pool2d` and `avg_pool2d` with PyTorch's semantics.
//!
//! `unfold2d` is a gather: the last two dims are flattened, a constant column is appended for
//! the padding, and one `index_select` with a precomputed index of every window position reads
//! the windows in the order `(KH, KW, OH, OW)`. Its gradient is therefore `index_add`, which
//! adds the overlapping windows' contributions back (col2im), on every device that has the
//! two primitives, and `conv2d` is one matrix product over the unfolded input, whose layout
//! `[N, C·KH·KW, OH·OW]` is a view of the gather's result (no second copy).

use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{DynTensor, or_panic};

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
    fn output_size_for(&self, op: &'static str, h: usize, w: usize) -> Result<(usize, usize)> {
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

    /// For each window tap and position, in the order `(KH, KW, OH, OW)`, the index into the
    /// flattened `h × w` input, or `h·w` (the padding column) where the tap falls outside it.
    /// `taps` is `kh·kw·oh·ow`, checked by the caller; the vector is allocated fallibly (an
    /// [`ErrorKind::OutOfMemory`] error where the host cannot hold it).
    fn gather_index(
        &self,
        op: &'static str,
        (h, w): (usize, usize),
        (oh, ow): (usize, usize),
        taps: usize,
    ) -> Result<Vec<i64>> {
        let (kh, kw) = self.kernel;
        let ((sh, sw), (ph, pw), (dh, dw)) = (self.stride, self.padding, self.dilation);
        crate::storage::reserve_buffer::<i64>(op, taps)?;
        let mut idx = crate::storage::take_buffer(taps);
        // A tap's position in the padded input, `i·s + k·d` for position `i < o` and tap
        // `k < kernel`, is at most `(padded − span) + (span − 1)` (`output_size_for`), so it
        // fits `usize`; it lies inside the input where it is at least the padding and less
        // than the padding plus the input's size.
        let inside = |pos: usize, p: usize, size: usize| pos.checked_sub(p).filter(|&r| r < size);
        for ki in 0..kh {
            for kj in 0..kw {
                for i in 0..oh {
                    let r = inside(i * sh + ki * dh, ph, h);
                    for j in 0..ow {
                        let c = inside(j * sw + kj * dw, pw, w);
                        // `r·w + c < h·w`, the numel of an existing tensor: no overflow.
                        idx.push(match (r, c) {
                            (Some(r), Some(c)) => (r * w + c) as i64,
                            _ => (h * w) as i64,
                        });
                    }
                }
            }
        }
        Ok(idx)
    }
}

/// The product of `factors` as a size that a shape can hold (at most `isize::MAX`), or an
/// [`ErrorKind::Overflow`] error naming `what`.
fn checked_count(op: &'static str, what: &str, factors: &[usize]) -> Result<usize> {
    crate::layout::checked_numel(factors)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::overflow(op, format!("{what} {}", product_text(factors))))
}

/// `a × b × …`, for messages.
fn product_text(factors: &[usize]) -> String {
    let parts: Vec<String> = factors.iter().map(usize::to_string).collect();
    parts.join(" × ")
}

impl<E: Element> DynTensor<E> {
    /// The sliding windows of `window` over the last two dims: `[…, H, W]` becomes
    /// `[…, KH, KW, OH, OW]`, entry `[…, a, b, i, j]` being input `[…, i·sh − ph + a·dh,
    /// j·sw − pw + b·dw]`, or `pad_value` outside the input. Reshaped to `[N, C·KH·KW,
    /// OH·OW]`, a `[N, C, H, W]` input's windows are PyTorch's `F.unfold`. Differentiable
    /// (overlapping windows add up in the gradient). Panics where
    /// [`DynTensor::try_unfold2d`] fails.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, DynTensor};
    /// let x = DynTensor::<i64>::arange(0, 9, 1).reshape(&[3, 3]);
    /// let w = x.unfold2d(Window2d::new(2, 2), 0);          // [2, 2, 2, 2]
    /// assert_eq!(w.shape(), &[2, 2, 2, 2]);
    /// assert_eq!(w.i((0, 0)).to_vec(), vec![0, 1, 3, 4]);  // top-left taps of the 4 windows
    /// assert_eq!(w.i((1, 1)).to_vec(), vec![4, 5, 7, 8]);  // bottom-right taps
    /// let p = x.unfold2d(Window2d::new(3, 3).padding(1), -1);
    /// assert_eq!(p.i((0, 0)).to_vec(), vec![-1, -1, -1, -1, 0, 1, -1, 3, 4]);
    /// ```
    #[track_caller]
    pub fn unfold2d(&self, window: Window2d, pad_value: E) -> DynTensor<E> {
        or_panic(self.try_unfold2d(window, pad_value))
    }

    /// [`DynTensor::unfold2d`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::ShapeMismatch`] for a tensor of rank below 2; the errors of
    /// [`Window2d::output_size`]; [`ErrorKind::Overflow`] when the number of windows times
    /// the kernel's taps overflows, and [`ErrorKind::OutOfMemory`] when the host cannot hold
    /// the windows.
    pub fn try_unfold2d(&self, window: Window2d, pad_value: E) -> Result<DynTensor<E>> {
        self.unfold_windows("unfold2d", window, pad_value)
    }

    /// [`DynTensor::try_unfold2d`], its errors naming `op` (the op the caller called).
    fn unfold_windows(
        &self,
        op: &'static str,
        window: Window2d,
        pad_value: E,
    ) -> Result<DynTensor<E>> {
        let rank = self.dim();
        if rank < 2 {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!("needs at least 2 dims, got shape {:?}", self.shape()),
            ));
        }
        let (h, w) = (self.shape()[rank - 2], self.shape()[rank - 1]);
        let (oh, ow) = window.output_size_for(op, h, w)?;
        let (kh, kw) = window.kernel;
        let taps = checked_count(
            op,
            "the number of window taps kernel rows × kernel cols × output rows × output cols =",
            &[kh, kw, oh, ow],
        )?;
        let lead: Vec<isize> = self.shape()[..rank - 2]
            .iter()
            .map(|&s| s as isize)
            .collect();
        let mut flat_shape = lead.clone();
        flat_shape.push((h * w) as isize);
        let flat = self.try_reshape(&flat_shape)?;
        // One constant column after the input: the target of every tap outside it.
        let mut pad_shape: Vec<usize> = self.shape()[..rank - 2].to_vec();
        pad_shape.push(1);
        let pad = DynTensor::full_on(&pad_shape, pad_value, self.device())?;
        let padded = DynTensor::try_cat(&[&flat, &pad], -1)?;
        let index = window.gather_index(op, (h, w), (oh, ow), taps)?;
        let index = DynTensor::try_from_vec(index, &[taps])?.to_device(self.device())?;
        // Each factor is at most `taps`, which fits `isize`.
        let mut out_shape = lead;
        out_shape.extend([kh, kw, oh, ow].map(|s| s as isize));
        padded.try_index_select(-1, &index)?.try_reshape(&out_shape)
    }
}

impl<E: Float> DynTensor<E> {
    /// PyTorch's `F.conv2d`: `x` `[N, C, H, W]` (or `[C, H, W]`), `weight` `[O, C, KH, KW]`,
    /// optional `bias` `[O]`, gives `[N, O, OH, OW]`, where the kernel geometry comes from
    /// `window` (its `kernel` must be the weight's). Computed as one batched matrix product
    /// over [`DynTensor::unfold2d`]. Panics where [`DynTensor::try_conv2d`] fails.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, DynTensor};
    /// let x = DynTensor::<f64>::ones(&[1, 2, 4, 4]);
    /// let w = DynTensor::<f64>::ones(&[3, 2, 3, 3]);
    /// let y = x.conv2d(&w, None, Window2d::new(3, 3).padding(1));
    /// assert_eq!(y.shape(), &[1, 3, 4, 4]);
    /// assert_eq!(y.get(&[0, 0, 0, 0]), 8.0);   // a corner sees 2 × 2 × 2 inputs
    /// assert_eq!(y.get(&[0, 0, 1, 1]), 18.0);  // an inner one 3 × 3 × 2
    /// ```
    #[track_caller]
    pub fn conv2d(
        &self,
        weight: &DynTensor<E>,
        bias: Option<&DynTensor<E>>,
        window: Window2d,
    ) -> DynTensor<E> {
        or_panic(self.try_conv2d(weight, bias, window))
    }

    /// [`DynTensor::conv2d`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::ShapeMismatch`] naming the shapes when they do not fit together; the
    /// errors of [`DynTensor::try_unfold2d`] (named `conv2d`).
    pub fn try_conv2d(
        &self,
        weight: &DynTensor<E>,
        bias: Option<&DynTensor<E>>,
        window: Window2d,
    ) -> Result<DynTensor<E>> {
        const OP: &str = "conv2d";
        if self.dim() == 3 {
            return self
                .try_unsqueeze(0)?
                .try_conv2d(weight, bias, window)?
                .try_squeeze_dim(0);
        }
        let (xs, ws) = (self.shape(), weight.shape());
        let fits = xs.len() == 4
            && ws.len() == 4
            && ws[1] == xs[1]
            && (ws[2], ws[3]) == window.kernel
            && bias.is_none_or(|b| b.shape() == [ws[0]]);
        if !fits {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                OP,
                format!(
                    "input {xs:?} ([N, C, H, W]), weight {ws:?} ([O, C, KH, KW]), bias {:?} \
                     ([O]) and kernel {:?} do not fit together",
                    bias.map(|b| b.shape().to_vec()),
                    window.kernel
                ),
            ));
        }
        let (n, c, o) = (xs[0], xs[1], ws[0]);
        let (oh, ow) = window.output_size_for(OP, xs[2], xs[3])?;
        // The weight's C·KH·KW overflows only where it has no entries (O = 0).
        let taps = checked_count(
            OP,
            "the weight's taps per output channel C × KH × KW =",
            &[c, window.kernel.0, window.kernel.1],
        )?;
        let cols = self.unfold_windows(OP, window, E::ZERO)?;
        // `unfold_windows` checked KH·KW·OH·OW, so OH·OW fits `isize`.
        let cols = cols.try_reshape(&[n as isize, taps as isize, (oh * ow) as isize])?;
        let y = weight
            .try_reshape(&[o as isize, taps as isize])?
            .try_matmul(&cols)?;
        let y = match bias {
            Some(b) => y.try_add_bias(&b.try_reshape(&[o as isize, 1])?)?,
            None => y,
        };
        y.try_reshape(&[n as isize, o as isize, oh as isize, ow as isize])
    }

    /// PyTorch's `F.max_pool2d` over the last two dims (`[…, H, W]` to `[…, OH, OW]`); padding
    /// counts as −∞. The gradient goes to the first maximum of each window, as in PyTorch.
    /// Panics where [`DynTensor::try_max_pool2d`] fails.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, DynTensor};
    /// let x = DynTensor::<f32>::arange(0.0, 16.0, 1.0).reshape(&[1, 4, 4]);
    /// let y = x.max_pool2d(Window2d::new(2, 2).stride(2));
    /// assert_eq!(y.to_vec(), vec![5.0, 7.0, 13.0, 15.0]);
    /// ```
    #[track_caller]
    pub fn max_pool2d(&self, window: Window2d) -> DynTensor<E> {
        or_panic(self.try_max_pool2d(window))
    }

    /// [`DynTensor::max_pool2d`], or the errors of [`DynTensor::try_unfold2d`] (named
    /// `max_pool2d`).
    pub fn try_max_pool2d(&self, window: Window2d) -> Result<DynTensor<E>> {
        let taps = pooled_taps("max_pool2d", self, window, E::from_f64(f64::NEG_INFINITY))?;
        Ok(taps.try_max_dim(-3, false)?.0)
    }

    /// PyTorch's `F.avg_pool2d` over the last two dims, padding counted as zeros in the
    /// mean (`count_include_pad=True`). Panics where [`DynTensor::try_avg_pool2d`] fails.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, DynTensor};
    /// let x = DynTensor::<f32>::arange(0.0, 16.0, 1.0).reshape(&[1, 4, 4]);
    /// assert_eq!(x.avg_pool2d(Window2d::new(2, 2).stride(2)).to_vec(), vec![2.5, 4.5, 10.5, 12.5]);
    /// ```
    #[track_caller]
    pub fn avg_pool2d(&self, window: Window2d) -> DynTensor<E> {
        or_panic(self.try_avg_pool2d(window))
    }

    /// [`DynTensor::avg_pool2d`], or the errors of [`DynTensor::try_unfold2d`] (named
    /// `avg_pool2d`).
    pub fn try_avg_pool2d(&self, window: Window2d) -> Result<DynTensor<E>> {
        pooled_taps("avg_pool2d", self, window, E::ZERO)?.try_mean_dim(-3, false)
    }
}

/// The windows of `x` as `[…, KH·KW, OH, OW]`, errors naming `op`.
fn pooled_taps<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    window: Window2d,
    pad: E,
) -> Result<DynTensor<E>> {
    let cols = x.unfold_windows(op, window, pad)?;
    let r = cols.dim();
    let mut shape: Vec<isize> = cols.shape()[..r - 4].iter().map(|&s| s as isize).collect();
    // `unfold_windows` checked KH·KW·OH·OW, so KH·KW fits `isize`.
    shape.push((window.kernel.0 * window.kernel.1) as isize);
    shape.extend(cols.shape()[r - 2..].iter().map(|&s| s as isize));
    cols.try_reshape(&shape)
}
