//! Sliding windows over the last two dims: `unfold2d` (im2col) and its adjoint `fold2d`
//! (col2im), and built on them `conv2d`, `max_pool2d` and `avg_pool2d` with PyTorch's
//! semantics.
//!
//! Each is one backend primitive (`Backend::unfold2d`, `fold2d`, `max_pool2d`): the windows
//! come out in the order `(KH, KW, OH, OW)`, so `conv2d` is one matrix product over the
//! unfolded input, whose layout `[N, C·KH·KW, OH·OW]` is a view of it (no second copy). The
//! gradient of `unfold2d` is `fold2d` and the reverse; max pooling keeps each window's winning
//! tap, and its gradient is `fold2d` of the output's gradient counting only the winners.

use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Window2d;
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

/// The product of `factors` as a size that a shape can hold (at most `isize::MAX`), or an
/// [`ErrorKind::Overflow`] error naming `what`.
fn checked_count(op: &'static str, what: &str, factors: &[usize]) -> Result<usize> {
    crate::layout::checked_numel(factors)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::overflow(op, format!("{what} {}", product_text(factors))))
}

/// `lead` followed by `plane` (a window op's leading sizes and its per-position sizes), or an
/// [`ErrorKind::Overflow`] error naming `what`. The plane's product is checked first, so that
/// a leading size 0 cannot hide a plane whose size overflows (the kernels size a plane on its
/// own).
fn window_shape(
    op: &'static str,
    what: &str,
    lead: &[usize],
    plane: &[usize],
) -> Result<Vec<usize>> {
    let factors: Vec<usize> = plane.iter().chain(lead).copied().collect();
    checked_count(op, what, &factors)?;
    Ok(lead.iter().chain(plane).copied().collect())
}

/// The last two sizes `(H, W)` of `x` and the positions `(OH, OW)` of `window` over them, or
/// the errors naming `op`: fewer than two dims, or a window that does not fit.
fn windows_of<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    window: &Window2d,
) -> Result<((usize, usize), (usize, usize))> {
    let rank = x.dim();
    if rank < 2 {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!("needs at least 2 dims, got shape {:?}", x.shape()),
        ));
    }
    let (h, w) = (x.shape()[rank - 2], x.shape()[rank - 1]);
    Ok(((h, w), window.output_size_for(op, h, w)?))
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
        let ((h, w), (oh, ow)) = windows_of(op, self, &window)?;
        let (kh, kw) = window.kernel;
        let lead = &self.shape()[..self.dim() - 2];
        let out_shape = window_shape(op, "the number of window entries", lead, &[kh, kw, oh, ow])?;
        let buf = dispatch::unfold2d(op, self.storage(), self.layout(), &window, pad_value)?;
        let out = DynTensor::from_contiguous_buffer(buf, &out_shape)?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        Ok(crate::autograd::same_op(op, self, out, move |g| {
            g.fold_windows(op, window, (h, w), None)
        }))
    }

    /// The adjoint of [`DynTensor::unfold2d`] (col2im): `[…, KH, KW, OH, OW]` windows of an
    /// `h × w` input, summed back onto `[…, H, W]` (each input entry gets the sum of the taps
    /// that read it; taps in the padding are dropped). With `[N, C·KH·KW, L]` reshaped to
    /// `[N, C, KH, KW, OH, OW]`, this is PyTorch's `F.fold`. Differentiable (its gradient is
    /// `unfold2d`). Panics where [`DynTensor::try_fold2d`] fails.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, DynTensor};
    /// let x = DynTensor::<f32>::ones(&[3, 3]);
    /// let w = Window2d::new(2, 2);
    /// // How many windows read each entry: 1 at the corners, 4 in the middle.
    /// let counts = x.unfold2d(w, 0.0).fold2d(w, (3, 3));
    /// assert_eq!(counts.to_vec(), vec![1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn fold2d(&self, window: Window2d, hw: (usize, usize)) -> DynTensor<E> {
        or_panic(self.try_fold2d(window, hw))
    }

    /// [`DynTensor::fold2d`], or an error.
    ///
    /// # Errors
    /// The errors of [`Window2d::output_size`] for `hw`, and [`ErrorKind::ShapeMismatch`]
    /// where the tensor is not `[…, KH, KW, OH, OW]` for that window and input.
    ///
    /// ```
    /// use namedtensor::{ops::Window2d, DynTensor, ErrorKind};
    /// let cols = DynTensor::<f32>::zeros(&[2, 2, 3, 3]);
    /// let e = cols.try_fold2d(Window2d::new(2, 2), (5, 5)).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::ShapeMismatch);  // a 5 × 5 input has 4 × 4 windows
    /// ```
    pub fn try_fold2d(&self, window: Window2d, hw: (usize, usize)) -> Result<DynTensor<E>> {
        self.fold_windows("fold2d", window, hw, None)
    }

    /// [`DynTensor::try_fold2d`], its errors naming `op`; with `winners` (tap numbers `a·KW +
    /// b` over `[…, OH, OW]`, from `Backend::max_pool2d`), each window counts only its winning
    /// tap.
    fn fold_windows(
        &self,
        op: &'static str,
        window: Window2d,
        (h, w): (usize, usize),
        winners: Option<&DynTensor<i64>>,
    ) -> Result<DynTensor<E>> {
        let (oh, ow) = window.output_size_for(op, h, w)?;
        let (kh, kw) = window.kernel;
        let rank = self.dim();
        let fits = rank >= 4 && self.shape()[rank - 4..] == [kh, kw, oh, ow];
        if !fits {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!(
                    "the windows of a {h} × {w} input through kernel {:?} have shape [..., {kh}, \
                     {kw}, {oh}, {ow}], got {:?}",
                    window.kernel,
                    self.shape()
                ),
            ));
        }
        let lead = &self.shape()[..rank - 4];
        let out_shape = window_shape(op, "the number of folded entries", lead, &[h, w])?;
        let win = winners.map(|t| (t.storage(), t.layout()));
        let buf = dispatch::fold2d(op, self.storage(), self.layout(), &window, (h, w), win)?;
        let out = DynTensor::from_contiguous_buffer(buf, &out_shape)?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        let winners = winners.cloned();
        Ok(crate::autograd::same_op(op, self, out, move |g| {
            let taps = g.unfold_windows(op, window, E::ZERO)?;
            let Some(winners) = &winners else {
                return Ok(taps);
            };
            // Only the winners passed the gradient on: theirs comes back, zero elsewhere.
            let mask = winners_mask::<E>(winners, kh, kw)?;
            crate::ops::binary::<E, E, E>(op, crate::backend::op::BinaryOp::Mul, &taps, &mask)
        }))
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
        const OP: &str = "max_pool2d";
        let ((h, w), (oh, ow)) = windows_of(OP, self, &window)?;
        let rank = self.dim();
        let out_shape = window_shape(
            OP,
            "the number of windows",
            &self.shape()[..rank - 2],
            &[oh, ow],
        )?;
        let (values, taps) = dispatch::max_pool2d(OP, self.storage(), self.layout(), &window)?;
        let out = DynTensor::from_contiguous_buffer(values, &out_shape)?;
        if !crate::autograd::tracks(self) {
            return Ok(out);
        }
        let winners = DynTensor::<i64>::from_contiguous_buffer(taps, &out_shape)?;
        let (kh, kw) = window.kernel;
        Ok(crate::autograd::same_op(OP, self, out, move |g| {
            // Every tap of a window sees the window's gradient; only the winner keeps it.
            let mut taps: Vec<isize> = g.shape().iter().map(|&s| s as isize).collect();
            taps.splice(rank - 2..rank - 2, [kh as isize, kw as isize]);
            let spread = g.try_unsqueeze(-3)?.try_unsqueeze(-3)?.try_expand(&taps)?;
            spread.fold_windows(OP, window, (h, w), Some(&winners))
        }))
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
        pooled_taps("avg_pool2d", self, window)?.try_mean_dim(-3, false)
    }
}

/// The windows of `x` as `[…, KH·KW, OH, OW]`, the padding zero (average pooling's taps),
/// errors naming `op`.
fn pooled_taps<E: Float>(
    op: &'static str,
    x: &DynTensor<E>,
    window: Window2d,
) -> Result<DynTensor<E>> {
    let cols = x.unfold_windows(op, window, E::ZERO)?;
    let r = cols.dim();
    let mut shape: Vec<isize> = cols.shape()[..r - 4].iter().map(|&s| s as isize).collect();
    // `unfold_windows` checked KH·KW·OH·OW, so KH·KW fits `isize`.
    shape.push((window.kernel.0 * window.kernel.1) as isize);
    shape.extend(cols.shape()[r - 2..].iter().map(|&s| s as isize));
    cols.try_reshape(&shape)
}

/// `[…, KH, KW, OH, OW]`: one where tap `(a, b)` is its window's winner in `winners` (`[…,
/// OH, OW]` tap numbers `a·KW + b`), zero elsewhere.
fn winners_mask<E: Element>(
    winners: &DynTensor<i64>,
    kh: usize,
    kw: usize,
) -> Result<DynTensor<E>> {
    let taps = DynTensor::<i64>::try_arange(0, (kh * kw) as i64, 1)?
        .to_device(winners.device())?
        .try_reshape(&[kh as isize, kw as isize, 1, 1])?;
    let w = winners.try_unsqueeze(-3)?.try_unsqueeze(-3)?;
    w.try_eq(&taps)?.try_to_dtype::<E>()
}
