//! Selection by name: comparisons, `where_`, `masked_fill`, `gather` and `take_along`.
//!
//! Comparisons broadcast by name exactly as arithmetic does (see [`Tensor::add`]): the result
//! has `self`'s dims, then the dims of `other` that `self` lacks. A mask or condition may have
//! any subset of the dims it selects in, in any order: it is aligned to them by name (a view)
//! and broadcast over the rest, so a `(Height, Width)` mask blanks every channel of a
//! `(Height, Width, Channels)` image. Each op is the positional op of the same name on
//! operands lined up at compile time; a size that does not fit is an error naming the dim.

use super::Tensor;
use super::binary::{ByName, aligned_op, full_names};
use super::view::aligned;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::broadcast_shapes;
use crate::named::DimTuple;
use crate::named::{AlignTo, Broadcast, PermuteTo, RemoveDim};
use crate::ops::{Promote, Promoted, ScalarPromote, try_where_};
use crate::tensor::or_panic;

/// Checks that `part`, right-aligned with `whole`, broadcasts to it without growing it (each
/// size equal to the whole's or 1), or says which dim does not: `names` are `whole`'s.
fn fits(
    op: &'static str,
    what: &str,
    part: &[usize],
    whole: &[usize],
    names: &[&'static str],
) -> Result<()> {
    let offset = whole.len().saturating_sub(part.len());
    let bad = part
        .iter()
        .zip(&whole[offset..])
        .position(|(&p, &w)| p != w && p != 1);
    match bad {
        None => Ok(()),
        Some(i) => Err(Error::new(
            ErrorKind::ShapeMismatch,
            op,
            format!(
                "dim `{}` has size {} in the {what} and {} in the tensor, and the {what}'s is \
                 not 1 ({what} shape {part:?} lined up with tensor dims {names:?} of sizes \
                 {whole:?})",
                names.get(offset + i).copied().unwrap_or("?"),
                part[i],
                whole[offset + i],
            ),
        )),
    }
}

macro_rules! named_comparisons {
    ($($name:ident $try_name:ident $name_s:ident $sym:literal;)*) => {
        impl<A: Element, S: DimTuple, P: DimTuple> Tensor<A, S, P> {$(
            #[doc = concat!("Elementwise `self ", $sym, " other` → `bool`, broadcasting by name \
                as [`Tensor::add`] does (mixed types compare after promotion). Panics where \
                [`Tensor::", stringify!($try_name), "`] fails.")]
            ///
            /// ```
            /// use namedtensor::{dims, Tensor};
            /// dims! { Rows, Cols }
            /// let a = Tensor::<f32, (Rows, Cols)>::from_vec(vec![1., 2., 3., 4.], [2, 2]);
            /// let b = Tensor::<f32, (Cols,)>::from_vec(vec![2., 3.], [2]);
            #[doc = concat!("let c = a.", stringify!($name), "(&b);")]
            /// assert_eq!(c.names(), ["Rows", "Cols"]);
            #[doc = concat!("assert_eq!(c.to_vec(), a.as_dyn().", stringify!($name),
                "(b.as_dyn()).to_vec());")]
            /// ```
            #[track_caller]
            pub fn $name<B: Element, S2: DimTuple, P2: DimTuple>(
                &self,
                other: &Tensor<B, S2, P2>,
            ) -> ByName<bool, S, S2, P, P2>
            where
                A: Promote<B>,
                S: Broadcast<S2, P, P2>,
            {
                or_panic(self.$try_name(other))
            }

            #[doc = concat!("[`Tensor::", stringify!($name), "`], or an error naming the dim \
                whose sizes disagree.")]
            pub fn $try_name<B: Element, S2: DimTuple, P2: DimTuple>(
                &self,
                other: &Tensor<B, S2, P2>,
            ) -> Result<ByName<bool, S, S2, P, P2>>
            where
                A: Promote<B>,
                S: Broadcast<S2, P, P2>,
            {
                aligned_op(
                    stringify!($name),
                    &self.raw,
                    const { &<S as Broadcast<S2, P, P2>>::LHS },
                    &other.raw,
                    const { &<S as Broadcast<S2, P, P2>>::RHS },
                    full_names::<<S as Broadcast<S2, P, P2>>::Out, <S as Broadcast<S2, P, P2>>::Private>,
                    |l, r| l.$try_name(r),
                )
                .map(Tensor::wrap)
            }

            #[doc = concat!("Elementwise `self ", $sym, " scalar` → `bool`, names unchanged \
                (compared in the [`ScalarPromote`] type, as \
                [`DynTensor::", stringify!($name_s), "`](crate::DynTensor::", stringify!($name_s), ")).")]
            ///
            /// ```
            /// use namedtensor::{dims, Tensor};
            /// dims! { Rows }
            /// let t = Tensor::<i32, (Rows,)>::from_vec(vec![-1, 0, 2], [3]);
            #[doc = concat!("assert_eq!(t.", stringify!($name_s), "(0.5).to_vec(), t.as_dyn().",
                stringify!($name_s), "(0.5).to_vec());")]
            /// ```
            pub fn $name_s<V: Element>(&self, scalar: V) -> Tensor<bool, S, P>
            where
                A: ScalarPromote<V>,
            {
                Tensor::wrap(self.raw.$name_s(scalar))
            }
        )*}
    };
}

named_comparisons! {
    eq try_eq eq_scalar "==";
    ne try_ne ne_scalar "!=";
    lt try_lt lt_scalar "<";
    le try_le le_scalar "<=";
    gt try_gt gt_scalar ">";
    ge try_ge ge_scalar ">=";
}

impl<A: Element, S: DimTuple, P: DimTuple> Tensor<A, S, P> {
    /// Whether `|self − other| ≤ atol + rtol · |other|` elementwise (PyTorch's `isclose`;
    /// see [`DynTensor::isclose`](crate::DynTensor::isclose)), broadcasting by name as the
    /// comparisons do. Panics where [`Tensor::try_isclose`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let a = Tensor::<f64, (Rows, Cols)>::from_vec(vec![1.0, 2.0, 3.0, 4.0], [2, 2]);
    /// let b = Tensor::<f64, (Cols, Rows)>::from_vec(vec![1.0, 3.0, 2.0 + 1e-9, 4.5], [2, 2]);
    /// let close = a.isclose(&b, 1e-6, 0.0, false); // b is aligned by name: b[Rows i][Cols j]
    /// assert_eq!(close.names(), ["Rows", "Cols"]);
    /// assert_eq!(close.to_vec(), vec![true, true, true, false]);
    /// ```
    #[track_caller]
    pub fn isclose<B: Element, S2: DimTuple, P2: DimTuple>(
        &self,
        other: &Tensor<B, S2, P2>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> ByName<bool, S, S2, P, P2>
    where
        S: Broadcast<S2, P, P2>,
    {
        or_panic(self.try_isclose(other, rtol, atol, equal_nan))
    }

    /// [`Tensor::isclose`], or an error naming the dim whose sizes disagree.
    pub fn try_isclose<B: Element, S2: DimTuple, P2: DimTuple>(
        &self,
        other: &Tensor<B, S2, P2>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> Result<ByName<bool, S, S2, P, P2>>
    where
        S: Broadcast<S2, P, P2>,
    {
        aligned_op(
            "isclose",
            &self.raw,
            const { &<S as Broadcast<S2, P, P2>>::LHS },
            &other.raw,
            const { &<S as Broadcast<S2, P, P2>>::RHS },
            full_names::<<S as Broadcast<S2, P, P2>>::Out, <S as Broadcast<S2, P, P2>>::Private>,
            |l, r| l.try_isclose(r, rtol, atol, equal_nan),
        )
        .map(Tensor::wrap)
    }

    /// Whether every element is close to `other`'s, lined up by name ([`Tensor::isclose`],
    /// NaNs never close); false where the sizes do not broadcast.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let a = Tensor::<f32, (Rows, Cols)>::from_vec(vec![1.0, 2.0, 3.0, 4.0], [2, 2]);
    /// assert!(a.allclose(&a.align_to::<(Cols, Rows)>().contiguous(), 1e-6, 0.0));
    /// assert!(!a.allclose(&Tensor::<f32, (Cols,)>::ones([3]), 1e-6, 0.0));
    /// ```
    pub fn allclose<B: Element, S2: DimTuple, P2: DimTuple>(
        &self,
        other: &Tensor<B, S2, P2>,
        rtol: f64,
        atol: f64,
    ) -> bool
    where
        S: Broadcast<S2, P, P2>,
    {
        self.try_isclose(other, rtol, atol, false)
            .is_ok_and(|close| close.raw.all())
    }
}

/// The result of [`Tensor::where_`]: `self + other`'s dims, the promoted element type.
type Chosen<A, B, S, S2, P, P2> = ByName<Promoted<A, B>, S, S2, P, P2>;
/// The dims [`Tensor::where_`] selects in.
type ChosenDims<S, S2, P, P2> = <S as Broadcast<S2, P, P2>>::Out;
/// The dims left by [`Tensor::take_along`].
type Taken<E, S, D, P> = Tensor<E, <S as RemoveDim<D, P>>::Out, P>;

impl<A: Element, S: DimTuple, P: DimTuple> Tensor<A, S, P> {
    /// `self` where `cond` holds, `other` elsewhere (PyTorch's `torch.where(cond, self,
    /// other)`), by name: `self` and `other` broadcast as in [`Tensor::add`], and `cond` may
    /// have any of the result's dims, in any order. Panics where [`Tensor::try_where_`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Height, Width, Channels }
    /// let img = Tensor::<f32, (Height, Width, Channels)>::ones([2, 2, 3]);
    /// let keep = Tensor::<bool, (Width, Height)>::from_vec(vec![true, false, true, true], [2, 2]);
    /// let out = img.where_(&keep, &Tensor::<f32, ()>::from_vec(vec![0.0], []));
    /// assert_eq!(out.names(), ["Height", "Width", "Channels"]);
    /// // keep[Width 0][Height 1] is false: pixel (Height 1, Width 0) is blanked in every channel.
    /// assert_eq!(out.to_vec(), vec![1., 1., 1., 1., 1., 1., 0., 0., 0., 1., 1., 1.]);
    /// ```
    #[track_caller]
    pub fn where_<B: Element, S2: DimTuple, P2: DimTuple, SC>(
        &self,
        cond: &Tensor<bool, SC>,
        other: &Tensor<B, S2, P2>,
    ) -> Chosen<A, B, S, S2, P, P2>
    where
        A: Promote<B>,
        S: Broadcast<S2, P, P2>,
        SC: AlignTo<ChosenDims<S, S2, P, P2>>,
    {
        or_panic(self.try_where_(cond, other))
    }

    /// [`Tensor::where_`], or an error naming the dim whose sizes disagree (between `self`
    /// and `other`, or between `cond` and the result).
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Rows, Cols }
    /// let t = Tensor::<f32, (Rows, Cols)>::zeros([2, 3]);
    /// let cond = Tensor::<bool, (Cols,)>::from_vec(vec![true; 4], [4]);
    /// let err = t.try_where_(&cond, &t).unwrap_err();
    /// assert!(err.to_string().contains("dim `Cols` has size 4 in the condition and 3"), "{err}");
    /// ```
    pub fn try_where_<B: Element, S2: DimTuple, P2: DimTuple, SC>(
        &self,
        cond: &Tensor<bool, SC>,
        other: &Tensor<B, S2, P2>,
    ) -> Result<Chosen<A, B, S, S2, P, P2>>
    where
        A: Promote<B>,
        S: Broadcast<S2, P, P2>,
        SC: AlignTo<ChosenDims<S, S2, P, P2>>,
    {
        const OP: &str = "where_";
        let names = full_names::<ChosenDims<S, S2, P, P2>, <S as Broadcast<S2, P, P2>>::Private>;
        let c = aligned(
            &cond.raw,
            const { &<SC as AlignTo<ChosenDims<S, S2, P, P2>>>::PLAN },
        );
        aligned_op(
            OP,
            &self.raw,
            const { &<S as Broadcast<S2, P, P2>>::LHS },
            &other.raw,
            const { &<S as Broadcast<S2, P, P2>>::RHS },
            names,
            |l, r| {
                let shape = broadcast_shapes(OP, l.shape(), r.shape())?;
                fits(OP, "condition", c.shape(), &shape, &names())?;
                try_where_(&c, l, r)
            },
        )
        .map(Tensor::wrap)
    }

    /// A copy with `value` wherever `mask` holds; `mask` may have any of `self`'s dims, in
    /// any order, and is broadcast over the others (a `(Height, Width)` mask on a `(Height,
    /// Width, Channels)` image fills every channel). Panics where [`Tensor::try_masked_fill`]
    /// fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Seq, Keys }
    /// let scores = Tensor::<f32, (Seq, Keys)>::zeros([2, 2]);
    /// let future = Tensor::<bool, (Keys, Seq)>::from_vec(vec![false, false, true, false], [2, 2]);
    /// let masked = scores.masked_fill(&future, f32::NEG_INFINITY);
    /// assert_eq!(masked.to_vec(), vec![0., f32::NEG_INFINITY, 0., 0.]);
    /// ```
    #[track_caller]
    pub fn masked_fill<SM>(&self, mask: &Tensor<bool, SM>, value: A) -> Self
    where
        SM: AlignTo<S>,
    {
        or_panic(self.try_masked_fill(mask, value))
    }

    /// [`Tensor::masked_fill`], or an error naming the dim where the mask's size is neither
    /// the tensor's nor 1.
    pub fn try_masked_fill<SM>(&self, mask: &Tensor<bool, SM>, value: A) -> Result<Self>
    where
        SM: AlignTo<S>,
    {
        const OP: &str = "masked_fill";
        let m = aligned(&mask.raw, const { &<SM as AlignTo<S>>::PLAN });
        fits(
            OP,
            "mask",
            m.shape(),
            self.raw.shape(),
            &full_names::<S, P>(),
        )?;
        Ok(Tensor::wrap(self.raw.try_masked_fill(&m, value)?))
    }

    /// PyTorch's `gather` along `D`, by name: `index` has the same dims (in any order) and, in
    /// every dim but `D`, sizes no larger than `self`'s; the result has `self`'s dims and
    /// `index`'s sizes. Panics where [`Tensor::try_gather`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Classes }
    /// let probs = Tensor::<f32, (Batch, Classes)>::from_vec(vec![0.1, 0.9, 0.7, 0.3], [2, 2]);
    /// let picks = Tensor::<i64, (Classes, Batch)>::from_vec(vec![1, 0], [1, 2]);
    /// let got = probs.gather(Classes, &picks);
    /// assert_eq!(got.names(), ["Batch", "Classes"]);
    /// assert_eq!(got.shape(), &[2, 1]);
    /// assert_eq!(got.to_vec(), vec![0.9, 0.7]);
    /// ```
    #[track_caller]
    pub fn gather<D, SI>(&self, dim: D, index: &Tensor<i64, SI, P>) -> Self
    where
        S: RemoveDim<D, P>,
        SI: PermuteTo<S, P>,
    {
        or_panic(self.try_gather(dim, index))
    }

    /// [`Tensor::gather`], or an error for an index out of range or larger than `self` in a
    /// dim other than `D`.
    pub fn try_gather<D, SI>(&self, _dim: D, index: &Tensor<i64, SI, P>) -> Result<Self>
    where
        S: RemoveDim<D, P>,
        SI: PermuteTo<S, P>,
    {
        let perm = const { &<SI as PermuteTo<S, P>>::PERM };
        let index = if perm.is_identity() {
            index.raw.shallow_clone()
        } else {
            index.raw.try_permute(perm)?
        };
        let axis = <S as RemoveDim<D, P>>::AXIS;
        Ok(Tensor::wrap(self.raw.try_gather(axis, &index)?))
    }

    /// Picks one entry along `D` for every position of the other dims: `index` holds a
    /// position in `D` for each combination of (some of) the other dims, and the result has
    /// `self`'s dims without `D`. `index` may lack dims or have size 1 in them (it is then
    /// broadcast, as in PyTorch's `take_along_dim`). Cross-entropy's pick of each example's
    /// label: `log_probs.take_along(Classes, &labels)` with `(Batch, Classes)` and `(Batch,)`
    /// gives `(Batch,)`. Differentiable (the gradient scatters back, summing repeated picks).
    /// Panics where [`Tensor::try_take_along`] fails.
    ///
    /// ```
    /// use namedtensor::{dims, Tensor};
    /// dims! { Batch, Seq, Vocab }
    /// let logits = Tensor::<f32, (Batch, Seq, Vocab)>::from_vec((0..12).map(|x| x as f32).collect(), [2, 2, 3]);
    /// let next = Tensor::<i64, (Seq, Batch)>::from_vec(vec![2, 0, 1, 1], [2, 2]);
    /// let picked = logits.take_along(Vocab, &next);
    /// assert_eq!(picked.names(), ["Batch", "Seq"]);
    /// assert_eq!(picked.to_vec(), vec![2., 4., 6., 10.]);
    /// // One label per batch row, the same at every position of `Seq`:
    /// let per_row = Tensor::<i64, (Batch,)>::from_vec(vec![0, 2], [2]);
    /// assert_eq!(logits.take_along(Vocab, &per_row).to_vec(), vec![0., 3., 8., 11.]);
    /// ```
    #[track_caller]
    pub fn take_along<D, SI>(&self, dim: D, index: &Tensor<i64, SI>) -> Taken<A, S, D, P>
    where
        S: RemoveDim<D, P>,
        SI: AlignTo<<S as RemoveDim<D, P>>::Out>,
    {
        or_panic(self.try_take_along(dim, index))
    }

    /// [`Tensor::take_along`], or an error for an index out of range or a size of `index`
    /// that is neither `self`'s nor 1.
    ///
    /// ```
    /// use namedtensor::{dims, ErrorKind, Tensor};
    /// dims! { Batch, Classes }
    /// let t = Tensor::<f32, (Batch, Classes)>::zeros([2, 3]);
    /// let bad = Tensor::<i64, (Batch,)>::from_vec(vec![0, 3], [2]);
    /// assert_eq!(t.try_take_along(Classes, &bad).unwrap_err().kind(), ErrorKind::IndexOutOfRange);
    /// ```
    pub fn try_take_along<D, SI>(
        &self,
        _dim: D,
        index: &Tensor<i64, SI>,
    ) -> Result<Taken<A, S, D, P>>
    where
        S: RemoveDim<D, P>,
        SI: AlignTo<<S as RemoveDim<D, P>>::Out>,
    {
        const OP: &str = "take_along";
        let axis = <S as RemoveDim<D, P>>::AXIS as usize;
        let plan = const { &<SI as AlignTo<<S as RemoveDim<D, P>>::Out>>::PLAN };
        // The index lined up with the visible dims but `D`, then given a size-1 `D`.
        let lined = aligned(&index.raw, plan).try_unsqueeze((axis - P::RANK) as isize)?;
        let mut target = self.raw.shape().to_vec();
        target[axis] = 1;
        fits(OP, "index", lined.shape(), &target, &full_names::<S, P>())?;
        let target: Vec<isize> = target.iter().map(|&s| s as isize).collect();
        let index = lined.try_expand(&target)?;
        let picked = self.raw.try_gather(axis as isize, &index)?;
        Ok(Tensor::wrap(picked.try_squeeze_dim(axis as isize)?))
    }
}
