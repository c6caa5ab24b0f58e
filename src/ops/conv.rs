//! Sliding windows over the last two dims: `unfold2d` (im2col) and its adjoint `fold2d`
//! (col2im), and built on them `conv2d`, `max_pool2d` and `avg_pool2d` with PyTorch's
//! semantics.
//!
//! Each is one backend primitive (`Backend::unfold2d`, `fold2d`, `max_pool2d`): the windows
//! come out in the order `(KH, KW, OH, OW)`, so `conv2d` is a matrix product over the
//! unfolded input, whose layout `[N, C·KH·KW, OH·OW]` is a view of it (no second copy). The
//! gradient of `unfold2d` is `fold2d` and the reverse; max pooling keeps each window's winning
//! tap, and its gradient is `fold2d` of the output's gradient counting only the winners.
//!
//! On the host, `conv2d` runs a piece of images at a time, each piece's windows small enough
//! to stay in a core's L2 cache between the unfold that writes them and the product that
//! reads them, the pieces split between the threads. It is one node of the graph, whose
//! backward pass computes the windows again, piece by piece, rather than keeping the whole
//! batch's windows from the forward pass (PyTorch keeps the input and the weight likewise).

use crate::backend::device::Device;
use crate::backend::op::ReduceOp;
use crate::dtype::{DType, Element, Float};
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
    /// `window` (its `kernel` must be the weight's). Computed as matrix products over
    /// [`DynTensor::unfold2d`], a piece of images at a time on the host (see the module
    /// docs). Panics where [`DynTensor::try_conv2d`] fails.
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
        // KH·KW·OH·OW checked, so that OH·OW fits `isize` below.
        checked_count(
            OP,
            "the number of window entries",
            &[window.kernel.0, window.kernel.1, oh, ow],
        )?;
        let mut plan = ConvPlan {
            n,
            c,
            o,
            taps,
            hw: (xs[2], xs[3]),
            ohw: (oh, ow),
            window,
            count: 1,
        };
        let tracked = crate::autograd::tracks(self)
            || crate::autograd::tracks(weight)
            || bias.is_some_and(crate::autograd::tracks);
        // Under autocast the product and the bias run in the low dtype, through recorded
        // casts where an input requires grad (the gradients flow back through the same
        // casts): the batch stays one piece, computed by the ops on this thread (autocast is
        // a setting of the thread), and the ops' own formulas record the gradients.
        let autocast = autocast_rounds::<E>();
        if self.device() == Device::Cpu && !autocast {
            plan.count = piece_count::<E>(&plan);
        }
        let (w, b) = plan.matrices(weight, bias)?;
        if tracked && autocast {
            return conv_pieces(self, &w, b.as_ref(), &plan);
        }
        // Computed with grad mode off (nothing to record, or one node recorded below), so
        // that the pieces may run on several threads.
        let y = {
            let _off = crate::autograd::GradMode::no_grad();
            conv_pieces(self, &w, b.as_ref(), &plan)?
        };
        if !tracked {
            return Ok(y);
        }
        Ok(crate::autograd::conv2d(self, weight, bias, plan, y))
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

/// Host memory that a piece of a convolution's windows may take per thread: about half of a
/// core's L2 (1 MiB per core on the AMD EPYC machines; 2 MiB on recent Intel Xeons), so that
/// the windows an unfold writes are still in cache when the product reads them, and the
/// gradient's windows when fold reads them (BENCHMARKS.md, session 28).
const PIECE_BYTES_PER_THREAD: usize = 512 << 10;

/// The sizes of one `conv2d` call: input `[n, c, h, w]`, weight `[o, c, kh, kw]` (`taps =
/// c·kh·kw`), output `[n, o, oh, ow]`; it runs the batch in `count` pieces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvPlan {
    n: usize,
    c: usize,
    o: usize,
    taps: usize,
    hw: (usize, usize),
    ohw: (usize, usize),
    window: Window2d,
    count: usize,
}

impl ConvPlan {
    /// `(start, len)` of each of the `count` pieces of images, of lengths that differ by one at
    /// most; one empty piece for an empty batch (so that the ops still give results of the
    /// right shapes).
    fn pieces(&self) -> impl Iterator<Item = (usize, usize)> {
        let (n, count) = (self.n, self.count.clamp(1, self.n.max(1)));
        // (In u128: `i · n` may exceed usize for a batch of empty images.)
        let start = move |i: usize| (i as u128 * n as u128 / count as u128) as usize;
        (0..count).map(move |i| (start(i), start(i + 1) - start(i)))
    }

    /// `OH·OW` (checked against overflow with the kernel's taps by `try_conv2d`).
    fn positions(&self) -> usize {
        self.ohw.0 * self.ohw.1
    }

    /// The weight as the `[O, taps]` matrix of the product, the bias as an `[O, 1]` column.
    fn matrices<E: Float>(
        &self,
        weight: &DynTensor<E>,
        bias: Option<&DynTensor<E>>,
    ) -> Result<(DynTensor<E>, Option<DynTensor<E>>)> {
        let w = weight.try_reshape(&[self.o as isize, self.taps as isize])?;
        let b = bias
            .map(|b| b.try_reshape(&[self.o as isize, 1]))
            .transpose()?;
        Ok((w, b))
    }
}

/// How many pieces the host splits the batch into: one where the whole batch's windows fit
/// in [`PIECE_BYTES_PER_THREAD`] (its ops then split their own work between the threads),
/// else the fewest pieces that each fit, rounded up to a multiple of the thread count so that
/// the threads get equal shares (pieces differ by one image at most), and no more than the
/// images.
fn piece_count<E: Element>(plan: &ConvPlan) -> usize {
    let per_image = (plan.taps.saturating_mul(plan.positions())).saturating_mul(size_of::<E>());
    let per_piece = (PIECE_BYTES_PER_THREAD / per_image.max(1)).max(1);
    match plan.n.div_ceil(per_piece) {
        0 | 1 => 1,
        count => count.next_multiple_of(crate::num_threads()).min(plan.n),
    }
}

/// `f` over the plan's pieces, in order. Where grad mode is off (nothing is recorded) and
/// there are pieces for every thread, the pieces are split between the threads, each running
/// its pieces' ops on its own ([`crate::backend::cpu::parallel::map_on_threads`]; grad mode
/// is off there too), since a piece's ops are too small to gain from being split again.
/// Where grad mode is on, the ops must record on this thread: the pieces run here, one after
/// the other, as they do where there are fewer pieces than threads.
fn map_pieces<R: Send>(
    plan: &ConvPlan,
    f: impl Fn((usize, usize)) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let pieces: Vec<(usize, usize)> = plan.pieces().collect();
    // Fewer pieces than threads (a batch of fewer images than threads): the pieces one after
    // the other, each op split across every thread, rather than threads left idle.
    if crate::autograd::is_grad_enabled() || pieces.len() < crate::num_threads() {
        return pieces.into_iter().map(f).collect();
    }
    crate::backend::cpu::parallel::map_on_threads(pieces, |piece| {
        let _off = crate::autograd::GradMode::no_grad();
        f(piece)
    })
    .into_iter()
    .collect()
}

/// The windows of images `start..start + len` of `x` as `[len, taps, OH·OW]`.
fn windows_of_piece<E: Float>(
    x: &DynTensor<E>,
    plan: &ConvPlan,
    (start, len): (usize, usize),
) -> Result<DynTensor<E>> {
    let piece = x.try_narrow(0, start as isize, len)?;
    let cols = piece.unfold_windows("conv2d", plan.window, E::ZERO)?;
    cols.try_reshape(&[len as isize, plan.taps as isize, plan.positions() as isize])
}

/// `parts` joined along dim 0 (the one part itself where there is one).
fn joined<E: Element>(mut parts: Vec<DynTensor<E>>) -> Result<DynTensor<E>> {
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    let parts: Vec<&DynTensor<E>> = parts.iter().collect();
    DynTensor::try_cat(&parts, 0)
}

/// Whether autocast runs an `E` convolution's product and bias in a lower dtype (f32 inside
/// an autocast region, as [`DynTensor::try_add_bias`] rounds them).
fn autocast_rounds<E: Element>() -> bool {
    E::DTYPE == DType::F32 && crate::dtype::autocast::autocast_dtype().is_some()
}

/// `conv2d` of `x` `[N, C, H, W]` by `w` `[O, taps]` plus `bias` `[O, 1]`, as `[N, O, OH,
/// OW]`: per piece of images, the windows ([`DynTensor::unfold2d`]) and their product with
/// `w`. Made of recorded ops: differentiable where grad mode is on.
fn conv_pieces<E: Float>(
    x: &DynTensor<E>,
    w: &DynTensor<E>,
    bias: Option<&DynTensor<E>>,
    plan: &ConvPlan,
) -> Result<DynTensor<E>> {
    // Where nothing records and no autocast rounds the sum, the bias goes into each piece's
    // product in place: the product is fresh, seen by nothing else, and still in cache.
    let in_place = !(crate::autograd::is_grad_enabled() || autocast_rounds::<E>());
    let parts = map_pieces(plan, |piece| {
        let y = w.try_matmul(&windows_of_piece(x, plan, piece)?)?;
        match bias {
            Some(b) if in_place => {
                y.try_add_(b)?;
                Ok(y)
            }
            Some(b) => y.try_add_bias(b),
            None => Ok(y),
        }
    })?;
    let (oh, ow) = plan.ohw;
    joined(parts)?.try_reshape(&[plan.n as isize, plan.o as isize, oh as isize, ow as isize])
}

/// The gradients of `conv2d` from the output's gradient `g` `[N, O, OH, OW]`: the input's
/// where `weight` is given (`fold2d` of `wᵀ·g`), the weight's where `x` is given (`g` times
/// the windows of `x`, summed over the images), the bias's where `bias` (the sum of `g` over
/// images and positions). Per piece of images as the forward pass, the windows computed
/// again rather than saved. Made of recorded ops: differentiable under `create_graph`.
pub(crate) fn conv2d_grads<E: Float>(
    g: &DynTensor<E>,
    x: Option<&DynTensor<E>>,
    weight: Option<&DynTensor<E>>,
    bias: bool,
    plan: &ConvPlan,
) -> Result<[Option<DynTensor<E>>; 3]> {
    let (n, o, taps, l) = (
        plan.n as isize,
        plan.o as isize,
        plan.taps as isize,
        plan.positions(),
    );
    let g = g.try_reshape(&[n, o, l as isize])?;
    let gb = if bias {
        let sum = crate::ops::reduce_keepdim("conv2d", ReduceOp::Sum, &g, &[true, false, true])?;
        Some(sum.try_reshape(&[o])?)
    } else {
        None
    };
    let wt = weight
        .map(|w| w.try_reshape(&[o, taps])?.try_transpose(0, 1))
        .transpose()?;
    let parts = map_pieces(plan, |piece| {
        let gp = g.try_narrow(0, piece.0 as isize, piece.1)?;
        let gx = match &wt {
            Some(wt) => {
                let (kh, kw) = plan.window.kernel;
                let (oh, ow) = plan.ohw;
                let shape = [piece.1, plan.c, kh, kw, oh, ow].map(|s| s as isize);
                let cols = wt.try_matmul(&gp)?.try_reshape(&shape)?;
                Some(cols.fold_windows("conv2d", plan.window, plan.hw, None)?)
            }
            None => None,
        };
        let gw = match x {
            Some(x) => {
                // `[len, taps, O]`: the windows' rows are the product's left rows, read in
                // place (`g · colsᵀ` packs both operands first; BENCHMARKS.md, session 28).
                let cols = windows_of_piece(x, plan, piece)?;
                let per_image = cols.try_matmul(&gp.try_transpose(1, 2)?)?;
                let mask = [true, false, false];
                Some(crate::ops::reduce_keepdim(
                    "conv2d",
                    ReduceOp::Sum,
                    &per_image,
                    &mask,
                )?)
            }
            None => None,
        };
        Ok((gx, gw))
    })?;
    let (gx, gws): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
    let gx: Vec<DynTensor<E>> = gx.into_iter().flatten().collect();
    let mut gw = None::<DynTensor<E>>;
    for part in gws.into_iter().flatten() {
        gw = Some(match gw {
            Some(acc) => acc.try_add(&part)?,
            None => part,
        });
    }
    let gx = if weight.is_some() {
        Some(joined(gx)?)
    } else {
        None
    };
    let (kh, kw) = plan.window.kernel;
    let gw = gw
        .map(|t| {
            t.try_reshape(&[taps, o])?
                .try_transpose(0, 1)?
                .try_contiguous()?
                .try_reshape(&[o, plan.c as isize, kh as isize, kw as isize])
        })
        .transpose()?;
    Ok([gx, gw, gb])
}
