//! Matrix products with `torch.matmul`'s rules, and the `mm`, `bmm`, `mv`, `dot` forms.
//!
//! | operands | result |
//! |---|---|
//! | 1-D `(k)` · 1-D `(k)` | 0-d: the dot product |
//! | 2-D `(m, k)` · 2-D `(k, n)` | `(m, n)` |
//! | 1-D `(k)` · 2-D `(k, n)` | `(n)`: a 1 is prepended to the first, then removed |
//! | 2-D `(m, k)` · 1-D `(k)` | `(m)`: a 1 is appended to the second, then removed |
//! | N-D · N-D | the last two dims are matrices, the dims before them batch dims, which broadcast |
//!
//! For example `(j, 1, n, m) · (k, m, p) → (j, k, n, p)`. Operands are read through their
//! strides (transposed, sliced and expanded operands are not copied); the result is a new
//! contiguous tensor. Floats use the `gemm` crate (`bf16` is computed in `f32` and rounded
//! once); integers accumulate in `i64` and wrap like the element type's arithmetic. `bool`
//! tensors are refused, as in PyTorch.

use crate::dtype::{DType, Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, broadcast_shapes, checked_numel};
use crate::storage::dispatch;
use crate::tensor::{DynTensor, or_panic};

/// A checked product: its result shape, and the operands' layouts as `[batch…, m, k]` and
/// `[batch…, k, n]` with the batch dims broadcast (1-D operands made matrices).
struct Plan {
    out_shape: Vec<usize>,
    la: Layout,
    lb: Layout,
}

fn shape_error(op: &'static str, a: &[usize], b: &[usize], message: String) -> Error {
    Error::new(
        ErrorKind::ShapeMismatch,
        op,
        format!("cannot multiply shape {a:?} by shape {b:?}: {message}"),
    )
}

/// Applies the matmul rules to two layouts (pure index math; see the module docs).
fn plan(op: &'static str, a: &Layout, b: &Layout) -> Result<Plan> {
    let (sa, sb) = (a.sizes(), b.sizes());
    if a.rank() == 0 || b.rank() == 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("both operands need at least 1 dim, got shapes {sa:?} and {sb:?}"),
        ));
    }
    // Promote vectors to matrices: (k) → (1, k) on the left, (k) → (k, 1) on the right.
    let a2 = if a.rank() == 1 {
        a.unsqueeze(0)?
    } else {
        a.clone()
    };
    let b2 = if b.rank() == 1 {
        b.unsqueeze(1)?
    } else {
        b.clone()
    };
    let (ra, rb) = (a2.rank(), b2.rank());
    let (m, k) = (a2.sizes()[ra - 2], a2.sizes()[ra - 1]);
    let (k2, n) = (b2.sizes()[rb - 2], b2.sizes()[rb - 1]);
    if k != k2 {
        return Err(shape_error(
            op,
            sa,
            sb,
            format!(
                "the first's dim {} has size {k} but the second's dim {} has size {k2} (the \
                 contracted sizes must be equal)",
                a.rank() - 1,
                b.rank().saturating_sub(2)
            ),
        ));
    }
    let (batch_a, batch_b) = (&a2.sizes()[..ra - 2], &b2.sizes()[..rb - 2]);
    let batch = broadcast_shapes(op, batch_a, batch_b).map_err(|e| {
        shape_error(
            op,
            sa,
            sb,
            format!(
                "their batch dims {batch_a:?} and {batch_b:?} do not broadcast ({})",
                e.message()
            ),
        )
    })?;
    let mut out_shape = batch.clone();
    if a.rank() > 1 {
        out_shape.push(m);
    }
    if b.rank() > 1 {
        out_shape.push(n);
    }
    checked_numel(&out_shape)
        .ok_or_else(|| Error::overflow(op, format!("the result shape {out_shape:?}")))?;

    let with = |tail: [usize; 2]| -> Vec<isize> {
        batch.iter().chain(&tail).map(|&s| s as isize).collect()
    };
    Ok(Plan {
        out_shape,
        la: a2.expand(&with([m, k]))?,
        lb: b2.expand(&with([k, n]))?,
    })
}

impl<E: Element> DynTensor<E> {
    /// The matrix product with `torch.matmul`'s rules (see the table below); panics where
    /// [`DynTensor::try_matmul`] fails.
    ///
    /// | `self` | `other` | result |
    /// |---|---|---|
    /// | `(k)` | `(k)` | `()` (dot product) |
    /// | `(m, k)` | `(k, n)` | `(m, n)` |
    /// | `(k)` | `(k, n)` | `(n)` |
    /// | `(m, k)` | `(k)` | `(m)` |
    /// | `(…a, m, k)` | `(…b, k, n)` | `(broadcast(…a, …b), m, n)` |
    ///
    /// ```
    /// use namedtensor::{tensor, DynTensor};
    /// let a = tensor!([[1., 2.], [3., 4.]]);
    /// let b = tensor!([[5., 6.], [7., 8.]]);
    /// assert_eq!(a.matmul(&b).to_vec(), vec![19., 22., 43., 50.]);
    /// assert_eq!(a.t().matmul(&b).to_vec(), vec![26., 30., 38., 44.]); // no copy of a.t()
    /// // batch dims broadcast: (3, 4, 1, 2) · (1, 2, 3) → (3, 4, 1, 3)
    /// let x = DynTensor::<f32>::ones(&[3, 4, 1, 2]);
    /// let y = DynTensor::<f32>::ones(&[1, 2, 3]);
    /// assert_eq!(x.matmul(&y).shape(), &[3, 4, 1, 3]);
    /// ```
    #[track_caller]
    pub fn matmul(&self, other: &DynTensor<E>) -> DynTensor<E> {
        or_panic(self.try_matmul(other))
    }

    /// [`DynTensor::matmul`], or an error: [`ErrorKind::InvalidArgument`] for a 0-d operand
    /// or `bool` elements, [`ErrorKind::ShapeMismatch`] when the contracted sizes differ
    /// (the message names both shapes and dims) or the batch dims do not broadcast.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let a = DynTensor::<f32>::zeros(&[2, 3]);
    /// let err = a.try_matmul(&DynTensor::zeros(&[4, 5])).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    /// assert!(err.to_string().contains("[2, 3]") && err.to_string().contains("[4, 5]"));
    /// ```
    pub fn try_matmul(&self, other: &DynTensor<E>) -> Result<DynTensor<E>> {
        self.matmul_as("matmul", other)
    }

    fn matmul_as(&self, op: &'static str, other: &DynTensor<E>) -> Result<DynTensor<E>> {
        let plan = plan(op, self.layout(), other.layout())?;
        if E::DTYPE == DType::Bool {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                "matrix products of bool tensors are not defined (as in PyTorch); convert with \
                 to_dtype first",
            ));
        }
        // Under autocast an f32 product runs in the low dtype: both operands cast (recorded,
        // so gradients flow back through the same casts), the result cast back.
        if E::DTYPE == DType::F32 {
            match crate::dtype::autocast::autocast_dtype() {
                Some(DType::BF16) => return self.matmul_in::<half::bf16>(op, other),
                Some(DType::F16) => return self.matmul_in::<half::f16>(op, other),
                _ => {}
            }
        }
        if crate::autograd::tracks(self) || crate::autograd::tracks(other) {
            return self.matmul_recorded(op, other, &plan);
        }
        let (a, b) = (self.storage(), other.storage());
        // The product's `[batch…, m, n]` in row-major order is the result's order too.
        let buf = dispatch::matmul(op, a, &plan.la, b, &plan.lb)?;
        DynTensor::from_contiguous_buffer(buf, &plan.out_shape)
    }

    /// [`DynTensor::matmul_as`] computed in the element type `L`.
    fn matmul_in<L: Element>(
        &self,
        op: &'static str,
        other: &DynTensor<E>,
    ) -> Result<DynTensor<E>> {
        let (a, b) = (self.try_to_dtype::<L>()?, other.try_to_dtype::<L>()?);
        a.matmul_as(op, &b)?.try_to_dtype::<E>()
    }

    /// [`DynTensor::matmul_as`] for operands that require grad: the vector promotions and
    /// batch broadcasts are made with recorded views, and the batched product is recorded
    /// on them.
    fn matmul_recorded(
        &self,
        op: &'static str,
        other: &DynTensor<E>,
        plan: &Plan,
    ) -> Result<DynTensor<E>> {
        if self.dim() >= 3 && other.dim() <= 2 {
            // As PyTorch: the batch dims of the first operand fold into its rows, so that the
            // gradient of a shared weight is one product over all rows, not one product per
            // batch entry and a sum.
            let (lead, k) = self.shape().split_at(self.dim() - 1);
            let rows: usize = lead.iter().product();
            let rows = self.try_reshape(&[rows as isize, k[0] as isize])?;
            let out: Vec<isize> = plan.out_shape.iter().map(|&s| s as isize).collect();
            return rows.matmul_as(op, other)?.try_reshape(&out);
        }
        let a = if self.dim() == 1 {
            self.try_unsqueeze(0)?
        } else {
            self.shallow_clone()
        };
        let b = if other.dim() == 1 {
            other.try_unsqueeze(1)?
        } else {
            other.shallow_clone()
        };
        let sizes = |l: &Layout| -> Vec<isize> { l.sizes().iter().map(|&s| s as isize).collect() };
        let (a, b) = (
            a.try_expand(&sizes(&plan.la))?,
            b.try_expand(&sizes(&plan.lb))?,
        );
        let buf = dispatch::matmul(op, a.storage(), a.layout(), b.storage(), b.layout())?;
        let mut shape = plan.la.sizes().to_vec();
        shape[plan.la.rank() - 1] = plan.lb.sizes()[plan.lb.rank() - 1];
        let y = DynTensor::from_contiguous_buffer(buf, &shape)?;
        let y = crate::autograd::matmul(op, &a, &b, y);
        let out: Vec<isize> = plan.out_shape.iter().map(|&s| s as isize).collect();
        y.try_reshape(&out)
    }

    /// The product of two matrices (both 2-D, no broadcasting); panics where
    /// [`DynTensor::try_mm`] fails.
    ///
    /// ```
    /// let a = namedtensor::DynTensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]);
    /// assert_eq!(a.mm(&a.t()).to_vec(), vec![14, 32, 32, 77]);
    /// ```
    #[track_caller]
    pub fn mm(&self, other: &DynTensor<E>) -> DynTensor<E> {
        or_panic(self.try_mm(other))
    }

    /// [`DynTensor::mm`], or an error unless both are 2-D with matching inner sizes.
    ///
    /// ```
    /// let v = namedtensor::DynTensor::<f32>::zeros(&[3]);
    /// assert!(v.try_mm(&v).is_err());
    /// ```
    pub fn try_mm(&self, other: &DynTensor<E>) -> Result<DynTensor<E>> {
        expect_ranks("mm", "2-D and 2-D", self, other, [2, 2])?;
        self.matmul_as("mm", other)
    }

    /// Batched product of `(b, m, k)` and `(b, k, n)` (both 3-D, equal batch sizes, no
    /// broadcasting); panics where [`DynTensor::try_bmm`] fails.
    ///
    /// ```
    /// let a = namedtensor::DynTensor::<f64>::ones(&[4, 2, 3]);
    /// let b = namedtensor::DynTensor::<f64>::ones(&[4, 3, 5]);
    /// let c = a.bmm(&b);
    /// assert_eq!(c.shape(), &[4, 2, 5]);
    /// assert_eq!(c.get(&[3, 1, 4]), 3.0);
    /// ```
    #[track_caller]
    pub fn bmm(&self, other: &DynTensor<E>) -> DynTensor<E> {
        or_panic(self.try_bmm(other))
    }

    /// [`DynTensor::bmm`], or an error unless both are 3-D with equal batch sizes and
    /// matching inner sizes.
    ///
    /// ```
    /// let a = namedtensor::DynTensor::<f64>::ones(&[4, 2, 3]);
    /// assert!(a.try_bmm(&namedtensor::DynTensor::ones(&[1, 3, 5])).is_err()); // no broadcast
    /// ```
    pub fn try_bmm(&self, other: &DynTensor<E>) -> Result<DynTensor<E>> {
        expect_ranks("bmm", "3-D and 3-D", self, other, [3, 3])?;
        if self.shape()[0] != other.shape()[0] {
            return Err(shape_error(
                "bmm",
                self.shape(),
                other.shape(),
                format!(
                    "batch sizes {} and {} differ (bmm does not broadcast; matmul does)",
                    self.shape()[0],
                    other.shape()[0]
                ),
            ));
        }
        self.matmul_as("bmm", other)
    }

    /// Matrix–vector product of `(m, k)` and `(k)`, giving `(m)`; panics where
    /// [`DynTensor::try_mv`] fails.
    ///
    /// ```
    /// let a = namedtensor::tensor!([[1., 2.], [3., 4.]]);
    /// let v = namedtensor::tensor!([1., 1.]);
    /// assert_eq!(a.mv(&v).to_vec(), vec![3., 7.]);
    /// ```
    #[track_caller]
    pub fn mv(&self, other: &DynTensor<E>) -> DynTensor<E> {
        or_panic(self.try_mv(other))
    }

    /// [`DynTensor::mv`], or an error unless `self` is 2-D and `other` 1-D of matching size.
    ///
    /// ```
    /// let a = namedtensor::DynTensor::<f32>::zeros(&[2, 3]);
    /// assert!(a.try_mv(&namedtensor::DynTensor::zeros(&[2])).is_err());
    /// ```
    pub fn try_mv(&self, other: &DynTensor<E>) -> Result<DynTensor<E>> {
        expect_ranks("mv", "2-D and 1-D", self, other, [2, 1])?;
        self.matmul_as("mv", other)
    }

    /// The dot product of two 1-D tensors of equal size, as a 0-d tensor; panics where
    /// [`DynTensor::try_dot`] fails.
    ///
    /// ```
    /// let a = namedtensor::tensor!([1, 2, 3]; i64);
    /// assert_eq!(a.dot(&a).item(), 14);
    /// ```
    #[track_caller]
    pub fn dot(&self, other: &DynTensor<E>) -> DynTensor<E> {
        or_panic(self.try_dot(other))
    }

    /// [`DynTensor::dot`], or an error unless both are 1-D of equal size.
    ///
    /// ```
    /// let a = namedtensor::DynTensor::<f32>::zeros(&[3]);
    /// assert!(a.try_dot(&namedtensor::DynTensor::zeros(&[4])).is_err());
    /// ```
    pub fn try_dot(&self, other: &DynTensor<E>) -> Result<DynTensor<E>> {
        expect_ranks("dot", "1-D and 1-D", self, other, [1, 1])?;
        self.matmul_as("dot", other)
    }
}

impl<E: Float> DynTensor<E> {
    /// `self + bias` for a layer that adds a bias to its product (linear, convolution): in
    /// the autocast dtype inside an autocast region, as PyTorch runs those layers whole in
    /// it (the sum rounded to the low dtype, the bias's gradient reduced in it); else the
    /// plain addition.
    pub(crate) fn try_add_bias(&self, bias: &DynTensor<E>) -> Result<DynTensor<E>> {
        if E::DTYPE == DType::F32 {
            match crate::dtype::autocast::autocast_dtype() {
                Some(DType::BF16) => return self.add_in::<half::bf16>(bias),
                Some(DType::F16) => return self.add_in::<half::f16>(bias),
                _ => {}
            }
        }
        self.try_add(bias)
    }

    fn add_in<L: Float>(&self, bias: &DynTensor<E>) -> Result<DynTensor<E>> {
        let (a, b) = (self.try_to_dtype::<L>()?, bias.try_to_dtype::<L>()?);
        a.try_add(&b)?.try_to_dtype::<E>()
    }
}

fn expect_ranks<E: Element>(
    op: &'static str,
    what: &str,
    a: &DynTensor<E>,
    b: &DynTensor<E>,
    ranks: [usize; 2],
) -> Result<()> {
    if [a.dim(), b.dim()] != ranks {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!(
                "expects {what} tensors, got shapes {:?} and {:?} (matmul takes any ranks)",
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(a: &[usize], b: &[usize]) -> Result<Plan> {
        plan(
            "matmul",
            &Layout::contiguous(a).unwrap(),
            &Layout::contiguous(b).unwrap(),
        )
    }

    #[test]
    fn seed_shapes() {
        assert_eq!(
            plan_of(&[3, 4, 1, 2], &[1, 2, 3]).unwrap().out_shape,
            [3, 4, 1, 3]
        );
        assert_eq!(
            plan_of(&[5, 1, 6, 7], &[4, 7, 8]).unwrap().out_shape,
            [5, 4, 6, 8]
        );
        assert_eq!(plan_of(&[3], &[3]).unwrap().out_shape, [0usize; 0]);
        assert_eq!(plan_of(&[3], &[3, 4]).unwrap().out_shape, [4]);
        assert_eq!(plan_of(&[2, 3], &[3]).unwrap().out_shape, [2]);
        assert_eq!(plan_of(&[5, 2, 3], &[3]).unwrap().out_shape, [5, 2]);
        assert_eq!(plan_of(&[3], &[5, 3, 4]).unwrap().out_shape, [5, 4]);
    }

    #[test]
    fn empty_products_need_no_offsets() {
        let a = Layout::new(&[1 << 40, 0, 3], &[0, 3, 1], 0).unwrap();
        let p = plan("matmul", &a, &Layout::contiguous(&[3, 2]).unwrap()).unwrap();
        assert_eq!(p.out_shape, [1 << 40, 0, 2]);
    }

    #[test]
    fn errors_name_shapes_and_dims() {
        let e = plan_of(&[2, 3], &[4, 5]).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::ShapeMismatch);
        assert!(e.message().contains("dim 1 has size 3"), "{e}");
        assert!(e.message().contains("dim 0 has size 4"), "{e}");
        let e = plan_of(&[2, 2, 3], &[3, 3, 4]).err().unwrap();
        assert!(e.message().contains("batch dims [2] and [3]"), "{e}");
        let e = plan_of(&[], &[3]).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}
