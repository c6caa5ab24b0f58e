//! Comparisons and selection: `eq`/`ne`/`lt`/`le`/`gt`/`ge` (tensor and scalar forms, compared
//! after promotion), `where_`, `masked_fill`, logical operations, `isnan`/`isinf`/`isfinite`,
//! `isclose`/`allclose`.

use super::binary::Sp;
use super::promote::{Promote, Promoted, ScalarPromote};
use super::{
    C, binary, binary_scalar, compare, converted, expand_layout, inplace_source, scalar_on, test,
    unary,
};
use crate::backend::op::{BinaryOp, CompareOp, TestOp, UnaryOp};
use crate::dtype::Element;
use crate::dtype::cast;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, broadcast_shapes};
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

macro_rules! comparisons {
    ($($(#[doc = $doc:literal])* $name:ident, $try_name:ident, $name_s:ident, $cop:ident;)*) => {
        impl<E: Element> DynTensor<E> {$(
            $(#[doc = $doc])*
            #[track_caller]
            pub fn $name<B: Element>(&self, other: &DynTensor<B>) -> DynTensor<bool>
            where
                E: Promote<B>,
            {
                or_panic(self.$try_name(other))
            }

            #[doc = concat!("[`DynTensor::", stringify!($name), "`], or an error \
                (`ShapeMismatch`) when the shapes do not broadcast.")]
            ///
            /// ```
            /// use namedtensor::DynTensor;
            #[doc = concat!("assert!(DynTensor::<f32>::ones(&[2]).", stringify!($try_name),
                "(&DynTensor::<f32>::ones(&[3])).is_err());")]
            /// ```
            pub fn $try_name<B: Element>(&self, other: &DynTensor<B>) -> Result<DynTensor<bool>>
            where
                E: Promote<B>,
            {
                compare::<E, B, Promoted<E, B>>(stringify!($name), CompareOp::$cop, self, other)
            }

            #[doc = concat!("[`DynTensor::", stringify!($name), "`] against a scalar, compared \
                in the [`ScalarPromote`](crate::ScalarPromote) type (an integer tensor and a \
                float scalar compare as `f32`).")]
            ///
            /// ```
            /// let t = namedtensor::DynTensor::from_vec(vec![1i32, 2, 3], &[3]);
            #[doc = concat!("let r = t.", stringify!($name_s), "(2.5);")]
            /// assert_eq!(r.shape(), &[3]);
            /// ```
            pub fn $name_s<S: Element>(&self, scalar: S) -> DynTensor<bool>
            where
                E: ScalarPromote<S>,
            {
                let op = stringify!($name_s);
                let v = or_panic(scalar_on::<C<Sp<E, S>>>(cast(scalar), self.device()));
                or_panic(compare::<E, C<Sp<E, S>>, Sp<E, S>>(op, CompareOp::$cop, self, &v))
            }
        )*}
    };
}

comparisons! {
    /// Elementwise `self == other` → `bool`, broadcasting; mixed types compare after promotion.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1i32, 2, 3], &[3]);
    /// let b = DynTensor::from_vec(vec![1.0f32, 2.5, 3.0], &[3]);
    /// assert_eq!(a.eq(&b).to_vec(), vec![true, false, true]);
    /// ```
    eq, try_eq, eq_scalar, Eq;
    /// Elementwise `self != other` → `bool` (true for NaN).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, f32::NAN], &[2]);
    /// assert_eq!(a.ne(&a).to_vec(), vec![false, true]);
    /// ```
    ne, try_ne, ne_scalar, Ne;
    /// Elementwise `self < other` → `bool`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1u8, 200], &[2]);
    /// assert_eq!(a.lt(&DynTensor::from_vec(vec![-1i8], &[1])).to_vec(), vec![false, false]);
    /// ```
    lt, try_lt, lt_scalar, Lt;
    /// Elementwise `self <= other` → `bool`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f64, 2.0], &[2]);
    /// assert_eq!(a.le_scalar(1).to_vec(), vec![true, false]);
    /// ```
    le, try_le, le_scalar, Le;
    /// Elementwise `self > other` → `bool`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1i64, 5], &[2]);
    /// assert_eq!(a.gt_scalar(1.5).to_vec(), vec![false, true]);
    /// ```
    gt, try_gt, gt_scalar, Gt;
    /// Elementwise `self >= other` → `bool`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1i64, 5], &[2, 1]);
    /// let b = DynTensor::from_vec(vec![1i64, 5], &[2]);
    /// assert_eq!(a.ge(&b).to_vec(), vec![true, false, true, true]);
    /// ```
    ge, try_ge, ge_scalar, Ge;
}

/// `cond ? a : b` elementwise, broadcasting all three (PyTorch's `torch.where`); the result
/// type is the promotion of `A` and `B`. Panics where [`try_where_`] fails.
///
/// ```
/// use namedtensor::{where_, DynTensor};
/// let cond = DynTensor::from_vec(vec![true, false], &[2, 1]);
/// let a = DynTensor::from_vec(vec![1i32, 2, 3], &[3]);
/// let b = DynTensor::scalar(0.5f32);
/// assert_eq!(where_(&cond, &a, &b).to_vec(), vec![1.0, 2.0, 3.0, 0.5, 0.5, 0.5]);
/// ```
#[track_caller]
pub fn where_<A: Promote<B>, B: Element>(
    cond: &DynTensor<bool>,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> DynTensor<Promoted<A, B>> {
    or_panic(try_where_(cond, a, b))
}

/// [`where_`], or an error (`ShapeMismatch`) when the three shapes do not broadcast.
///
/// ```
/// use namedtensor::{ops::try_where_, DynTensor};
/// let cond = DynTensor::from_vec(vec![true, false], &[2]);
/// assert!(try_where_(&cond, &DynTensor::<f32>::ones(&[3]), &DynTensor::<f32>::ones(&[1])).is_err());
/// ```
pub fn try_where_<A: Promote<B>, B: Element>(
    cond: &DynTensor<bool>,
    a: &DynTensor<A>,
    b: &DynTensor<B>,
) -> Result<DynTensor<Promoted<A, B>>> {
    let op = "where";
    // The shape check first, with the message naming all three shapes.
    broadcast_shapes(op, a.shape(), b.shape())
        .and_then(|s| broadcast_shapes(op, cond.shape(), &s))
        .map_err(|_| {
            Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!(
                    "the condition's shape {:?} and the operands' shapes {:?} and {:?} cannot be \
                     broadcast together",
                    cond.shape(),
                    a.shape(),
                    b.shape()
                ),
            )
        })?;
    let (a, b) = (
        converted::<A, Promoted<A, B>>(a)?,
        converted::<B, Promoted<A, B>>(b)?,
    );
    super::select(op, cond, &a, &b)
}

impl<E: Element> DynTensor<E> {
    /// PyTorch's method form of [`where_`]: `self` where `cond` holds, else `other`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, -2.0], &[2]);
    /// assert_eq!(a.where_(&a.gt_scalar(0), &DynTensor::scalar(0.0f32)).to_vec(), vec![1.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn where_<B: Element>(
        &self,
        cond: &DynTensor<bool>,
        other: &DynTensor<B>,
    ) -> DynTensor<Promoted<E, B>>
    where
        E: Promote<B>,
    {
        where_(cond, self, other)
    }

    /// Whether `other` has the same shape and the same elements (PyTorch's `torch.equal`;
    /// NaN equals nothing, `-0.0` equals `0.0`). Differently shaped tensors are unequal, not
    /// an error; tensors on two devices are compared on the host.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, 2.0], &[2]);
    /// assert!(a.equal(&DynTensor::from_vec(vec![1.0, 2.0], &[2])));
    /// assert!(!a.equal(&DynTensor::from_vec(vec![1.0, 2.0], &[2, 1])));
    /// assert!(!DynTensor::from_vec(vec![f32::NAN], &[1]).equal(&DynTensor::from_vec(vec![f32::NAN], &[1])));
    /// ```
    pub fn equal(&self, other: &DynTensor<E>) -> bool
    where
        E: Promote<E>,
    {
        if self.shape() != other.shape() {
            return false;
        }
        if self.device() != other.device() {
            return self.to_vec() == other.to_vec();
        }
        self.try_eq(other).is_ok_and(|same| same.all())
    }

    /// A copy with `value` wherever `mask` (broadcast to this shape) is true.
    /// Panics where [`DynTensor::try_masked_fill`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    /// let mask = DynTensor::from_vec(vec![false, true], &[2]);
    /// assert_eq!(t.masked_fill(&mask, -1.0).to_vec(), vec![1.0, -1.0, 3.0, -1.0]);
    /// ```
    #[track_caller]
    pub fn masked_fill(&self, mask: &DynTensor<bool>, value: E) -> DynTensor<E> {
        or_panic(self.try_masked_fill(mask, value))
    }

    /// [`DynTensor::masked_fill`], or an error when `mask` does not broadcast to this shape.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<f32>::ones(&[2, 2]);
    /// assert!(t.try_masked_fill(&DynTensor::from_vec(vec![true; 3], &[3]), 0.0).is_err());
    /// ```
    pub fn try_masked_fill(&self, mask: &DynTensor<bool>, value: E) -> Result<DynTensor<E>> {
        let op = "masked_fill";
        let lm = mask_layout(op, mask, self.shape())?;
        let v = scalar_on(value, self.device())?;
        let lv = expand_layout(v.layout(), self.shape())?;
        let (sm, sv, ss) = (mask.storage(), v.storage(), self.storage());
        let buf = dispatch::where_(op, sm, &lm, sv, &lv, ss, self.layout())?;
        let out = DynTensor::from_contiguous_buffer(buf, self.shape())?;
        if crate::autograd::tracks(self) {
            return Ok(crate::autograd::select(mask, &v, self, out));
        }
        Ok(out)
    }

    /// Writes `value` through this view wherever `mask` (broadcast to its shape) is true.
    /// Panics where [`DynTensor::try_masked_fill_`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::from_vec(vec![1i32, 2, 3], &[3]);
    /// t.masked_fill_(&t.gt_scalar(1), 0);
    /// assert_eq!(t.to_vec(), vec![1, 0, 0]);
    /// ```
    #[track_caller]
    pub fn masked_fill_(&self, mask: &DynTensor<bool>, value: E) -> &Self {
        or_panic(self.try_masked_fill_(mask, value))
    }

    /// [`DynTensor::masked_fill_`], or an error when `mask` does not broadcast to this shape
    /// or this view is expanded; nothing is written then.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<f32>::ones(&[3]).expand(&[2, 3]);
    /// assert!(t.try_masked_fill_(&DynTensor::from_vec(vec![true], &[1]), 0.0).is_err());
    /// ```
    pub fn try_masked_fill_(&self, mask: &DynTensor<bool>, value: E) -> Result<&Self> {
        let op = "masked_fill_";
        mask_layout(op, mask, self.shape())?;
        if crate::autograd::write_in_place(op, self, false, |old| old.try_masked_fill(mask, value))?
        {
            return Ok(self);
        }
        let mask = inplace_source(op, self, mask)?;
        let (d, m) = (self.storage(), mask.storage());
        dispatch::masked_fill_(op, d, self.layout(), m, mask.layout(), value)?;
        Ok(self)
    }

    /// Elementwise logical and of the truth values (non-zero is true), broadcasting.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![true, true, false], &[3]);
    /// let b = DynTensor::from_vec(vec![1.0f32, 0.0, 2.0], &[3]);
    /// assert_eq!(a.logical_and(&b).to_vec(), vec![true, false, false]);
    /// ```
    #[track_caller]
    pub fn logical_and<B: Element>(&self, other: &DynTensor<B>) -> DynTensor<bool> {
        or_panic(compare::<E, B, bool>(
            "logical_and",
            CompareOp::LogicalAnd,
            self,
            other,
        ))
    }

    /// Elementwise logical or (non-zero is true), broadcasting.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![true, false], &[2]);
    /// assert_eq!(a.logical_or(&DynTensor::from_vec(vec![false], &[1])).to_vec(), vec![true, false]);
    /// ```
    #[track_caller]
    pub fn logical_or<B: Element>(&self, other: &DynTensor<B>) -> DynTensor<bool> {
        or_panic(compare::<E, B, bool>(
            "logical_or",
            CompareOp::LogicalOr,
            self,
            other,
        ))
    }

    /// Elementwise logical exclusive or (non-zero is true), broadcasting.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![true, false], &[2]);
    /// assert_eq!(a.logical_xor(&DynTensor::from_vec(vec![true], &[1])).to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn logical_xor<B: Element>(&self, other: &DynTensor<B>) -> DynTensor<bool> {
        or_panic(compare::<E, B, bool>(
            "logical_xor",
            CompareOp::LogicalXor,
            self,
            other,
        ))
    }

    /// Elementwise logical not (zero becomes true).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![0i32, 3], &[2]);
    /// assert_eq!(a.logical_not().to_vec(), vec![true, false]);
    /// ```
    #[track_caller]
    pub fn logical_not(&self) -> DynTensor<bool> {
        or_panic(test("logical_not", TestOp::Zero, self))
    }

    /// Whether each element is NaN (never for integers).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, f32::NAN], &[2]);
    /// assert_eq!(a.isnan().to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn isnan(&self) -> DynTensor<bool> {
        or_panic(test("isnan", TestOp::Nan, self))
    }

    /// Whether each element is finite (neither infinite nor NaN; always for integers).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, f32::INFINITY, f32::NAN], &[3]);
    /// assert_eq!(a.isfinite().to_vec(), vec![true, false, false]);
    /// ```
    #[track_caller]
    pub fn isfinite(&self) -> DynTensor<bool> {
        or_panic(test("isfinite", TestOp::Finite, self))
    }

    /// Whether each element is `+inf` or `-inf`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, f32::NEG_INFINITY, f32::NAN], &[3]);
    /// assert_eq!(a.isinf().to_vec(), vec![false, true, false]);
    /// ```
    #[track_caller]
    pub fn isinf(&self) -> DynTensor<bool> {
        or_panic(test("isinf", TestOp::Inf, self))
    }

    /// Whether `|self - other| <= atol + rtol · |other|` elementwise (PyTorch's `isclose`),
    /// broadcasting and comparing in `f64`; NaNs are close to each other only if `equal_nan`.
    /// Infinities are close only to themselves. Panics where the shapes do not broadcast.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f32, 2.0, f32::NAN], &[3]);
    /// let b = DynTensor::from_vec(vec![1.0f32 + 1e-7, 2.1, f32::NAN], &[3]);
    /// assert_eq!(a.isclose(&b, 1e-5, 1e-8, false).to_vec(), vec![true, false, false]);
    /// assert_eq!(a.isclose(&b, 1e-5, 1e-8, true).to_vec(), vec![true, false, true]);
    /// ```
    #[track_caller]
    pub fn isclose<B: Element>(
        &self,
        other: &DynTensor<B>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> DynTensor<bool> {
        or_panic(self.try_isclose(other, rtol, atol, equal_nan))
    }

    /// [`DynTensor::isclose`], or an error where the shapes do not broadcast.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::<f32>::ones(&[2, 3]);
    /// assert!(a.try_isclose(&DynTensor::<f32>::ones(&[2]), 1e-5, 1e-8, false).is_err());
    /// ```
    pub fn try_isclose<B: Element>(
        &self,
        other: &DynTensor<B>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> Result<DynTensor<bool>> {
        isclose(self, other, rtol, atol, equal_nan)
    }

    /// Whether every element is close to `other`'s (see [`DynTensor::isclose`], NaNs never
    /// close); false when the shapes do not broadcast.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::from_vec(vec![1.0f64, 2.0], &[2]);
    /// assert!(a.allclose(&DynTensor::from_vec(vec![1.0f32, 2.0], &[2]), 1e-5, 1e-8));
    /// assert!(!a.allclose(&DynTensor::<f64>::ones(&[3]), 1e-5, 1e-8));
    /// ```
    pub fn allclose<B: Element>(&self, other: &DynTensor<B>, rtol: f64, atol: f64) -> bool {
        if broadcast_shapes("allclose", self.shape(), other.shape()).is_err() {
            return false;
        }
        self.isclose(other, rtol, atol, false).all()
    }
}

/// `|a - b| <= atol + rtol · |b|` for finite values, equality otherwise, and NaN close to NaN
/// if `equal_nan`: composed of primitives, in `f64`.
fn isclose<A: Element, B: Element>(
    a: &DynTensor<A>,
    b: &DynTensor<B>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> Result<DynTensor<bool>> {
    let op = "isclose";
    broadcast_shapes(op, a.shape(), b.shape())?;
    let (x, y) = (a.try_to_dtype::<f64>()?, b.try_to_dtype::<f64>()?);
    let diff = unary(
        op,
        UnaryOp::Abs,
        &binary::<f64, f64, f64>(op, BinaryOp::Sub, &x, &y)?,
    )?;
    let scaled = binary_scalar::<f64, f64>(
        op,
        BinaryOp::Mul,
        &unary(op, UnaryOp::Abs, &y)?,
        rtol,
        false,
    )?;
    let tol = binary_scalar::<f64, f64>(op, BinaryOp::Add, &scaled, atol, false)?;
    let within = compare::<f64, f64, f64>(op, CompareOp::Le, &diff, &tol)?;
    let finite = compare::<bool, bool, bool>(
        op,
        CompareOp::LogicalAnd,
        &test(op, TestOp::Finite, &x)?,
        &test(op, TestOp::Finite, &y)?,
    )?;
    let and = |p: &DynTensor<bool>, q: &DynTensor<bool>| {
        compare::<bool, bool, bool>(op, CompareOp::LogicalAnd, p, q)
    };
    let or = |p: &DynTensor<bool>, q: &DynTensor<bool>| {
        compare::<bool, bool, bool>(op, CompareOp::LogicalOr, p, q)
    };
    let mut close = or(
        &compare::<f64, f64, f64>(op, CompareOp::Eq, &x, &y)?,
        &and(&within, &finite)?,
    )?;
    if equal_nan {
        let nans = and(&test(op, TestOp::Nan, &x)?, &test(op, TestOp::Nan, &y)?)?;
        close = or(&close, &nans)?;
    }
    Ok(close)
}

/// The layout of `mask` broadcast to `shape`, or an error naming both shapes.
fn mask_layout(op: &'static str, mask: &DynTensor<bool>, shape: &[usize]) -> Result<Layout> {
    expand_layout(mask.layout(), shape).map_err(|_| {
        Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "the mask's shape {:?} cannot be broadcast to the tensor's shape {shape:?}",
                mask.shape()
            ),
        )
    })
}
