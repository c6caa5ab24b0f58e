//! Helpers shared by the integration tests: operands seen through every kind of view.
#![allow(dead_code)] // each test file uses a part

use namedtensor::{DynTensor, Element};

/// Small integers (−8..8) that every element type holds exactly, a different sequence per
/// `seed`.
pub fn values<E: Element>(n: usize, seed: u64) -> Vec<E> {
    (0..n as u64)
        .map(|i| {
            let v = (i
                .wrapping_mul(7919)
                .wrapping_add(seed.wrapping_mul(104_729))
                % 17) as f64;
            E::from_f64(if E::DTYPE == namedtensor::DType::U8 {
                v
            } else {
                v - 8.0
            })
        })
        .collect()
}

/// How a test operand is laid out in its storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// Row-major from offset 0.
    Contiguous,
    /// The last two dims swapped (a transposed matrix).
    Transposed,
    /// Dims in reverse order (a full permutation).
    Reversed,
    /// Narrowed out of a larger storage: a non-zero offset and gaps between rows.
    Offset,
    /// Every second element of the last dim and every third of the first (step slicing).
    Stepped,
    /// Dims of size > 1 before the last two expanded from size 1 (stride 0), plus the row
    /// dim when it is the only other choice.
    Expanded,
}

pub const VIEW_KINDS: [ViewKind; 6] = [
    ViewKind::Contiguous,
    ViewKind::Transposed,
    ViewKind::Reversed,
    ViewKind::Offset,
    ViewKind::Stepped,
    ViewKind::Expanded,
];

/// A tensor of logical `shape` whose layout is of the given kind, filled from `values`.
pub fn make_view<E: Element>(shape: &[usize], kind: ViewKind, seed: u64) -> DynTensor<E> {
    let r = shape.len();
    let base = |s: &[usize]| DynTensor::from_vec(values::<E>(s.iter().product(), seed), s);
    match kind {
        ViewKind::Transposed if r >= 2 => {
            let mut s = shape.to_vec();
            s.swap(r - 1, r - 2);
            base(&s).transpose(-1, -2)
        }
        ViewKind::Reversed if r >= 2 => {
            let s: Vec<usize> = shape.iter().rev().copied().collect();
            let order: Vec<isize> = (0..r as isize).rev().collect();
            base(&s).permute(&order)
        }
        ViewKind::Offset if r == 1 => base(&[shape[0] + 3]).narrow(0, 2, shape[0]),
        ViewKind::Offset if r >= 2 => {
            let mut s = shape.to_vec();
            s[0] += 2;
            s[r - 1] += 3;
            base(&s).narrow(0, 1, shape[0]).narrow(-1, 2, shape[r - 1])
        }
        ViewKind::Stepped if r == 1 => base(&[2 * shape[0] + 1]).slice(0, Some(1), None, 2),
        ViewKind::Stepped if r >= 2 => {
            let mut s = shape.to_vec();
            s[r - 1] = 2 * s[r - 1] + 1;
            s[0] = 3 * s[0] + 1;
            let t = base(&s).slice(-1, Some(1), None, 2);
            t.slice(0, None, None, 3).narrow(0, 0, shape[0])
        }
        ViewKind::Expanded if r >= 1 => {
            // Expand every batch dim; for a matrix, its row dim; for a vector, the vector.
            let expand_dims: Vec<usize> = match r {
                1 => vec![0],
                2 => vec![0],
                _ => (0..r - 2).collect(),
            };
            let mut s = shape.to_vec();
            for &d in &expand_dims {
                s[d] = 1;
            }
            let target: Vec<isize> = shape.iter().map(|&x| x as isize).collect();
            base(&s).expand(&target)
        }
        _ => base(shape),
    }
}

/// `t`'s elements in row-major order, as `f64`.
pub fn to_f64<E: Element>(t: &DynTensor<E>) -> Vec<f64> {
    t.to_vec().into_iter().map(|x| x.to_f64()).collect()
}

/// Every multi-index of `shape`, in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut flat| {
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = flat % shape[d];
                flat /= shape[d];
            }
            idx
        })
        .collect()
}

/// A strategy for a shape of rank `ranks` with sizes in `sizes`.
pub fn shape(
    ranks: std::ops::RangeInclusive<usize>,
    sizes: std::ops::Range<usize>,
) -> impl proptest::strategy::Strategy<Value = Vec<usize>> {
    proptest::collection::vec(sizes, ranks)
}

/// Strategy for one of [`VIEW_KINDS`].
pub fn view_kind() -> impl proptest::strategy::Strategy<Value = ViewKind> {
    proptest::sample::select(VIEW_KINDS.to_vec())
}
