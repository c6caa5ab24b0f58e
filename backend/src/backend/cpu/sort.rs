//! Sorting along one dim: each lane's entries in order, with the positions they came from.
//!
//! # Invariants
//! - The order is PyTorch's: numbers by value (`-0.0` equal to `0.0`), NaN above every number
//!   and equal to every NaN, so NaNs come last ascending and first descending.
//! - The sort is stable in both directions: equal entries keep their input order (a
//!   descending sort is not a reversed ascending one).
//! - The lanes are made rows (`dim` moved last) by one strided copy, sorted as
//!   `(entry, position)` pairs, several rows per task on the pool, and put back in the input's
//!   dim order by one more copy unless `dim` was already last.

use super::copy::gather_to_vec;
use super::host_buffer::HostBuffer;
use super::parallel::{for_each_chunk_mut, task_count};
use crate::dtype::Element;
use crate::layout::{Layout, contiguous_strides};
use std::cmp::Ordering;

/// PyTorch's ascending order of two entries (see the invariants).
#[allow(clippy::eq_op)] // `a != a`: only NaN differs from itself
pub fn ascending<E: PartialOrd>(a: &E, b: &E) -> Ordering {
    // Only NaN is unordered.
    a.partial_cmp(b).unwrap_or_else(|| (a != a).cmp(&(b != b)))
}

/// `(values, indices)`: the entries of `layout` over `src` sorted along `dim`, and their
/// positions along `dim`, both row-major in the layout's shape.
pub fn sort<E: Element>(
    src: &[E],
    layout: &Layout,
    dim: usize,
    descending: bool,
) -> (HostBuffer<E>, HostBuffer<i64>) {
    let rank = layout.rank();
    let n = layout.sizes()[dim];
    // The input with `dim` moved last: every lane a row of `n`.
    let order: Vec<usize> = (0..rank).filter(|&d| d != dim).chain([dim]).collect();
    let row_sizes: Vec<usize> = order.iter().map(|&d| layout.sizes()[d]).collect();
    let rows_view = Layout::from_parts_unchecked(
        row_sizes.clone(),
        order.iter().map(|&d| layout.strides()[d]).collect(),
        layout.offset(),
    );
    let mut pairs: Vec<(E, i64)> = gather_to_vec(src, &rows_view)
        .iter()
        .copied()
        .zip((0..n as i64).cycle())
        .collect();
    if n > 1 {
        let tasks = task_count(pairs.len(), 1 << 12).min(pairs.len() / n);
        for_each_chunk_mut(&mut pairs, tasks, n, |_, rows| {
            for lane in rows.chunks_mut(n) {
                if descending {
                    lane.sort_by(|a, b| ascending(&b.0, &a.0));
                } else {
                    lane.sort_by(|a, b| ascending(&a.0, &b.0));
                }
            }
        });
    }
    let (values, indices): (Vec<E>, Vec<i64>) = pairs.into_iter().unzip();
    let (values, indices) = (HostBuffer::from(values), HostBuffer::from(indices));
    if dim + 1 == rank {
        return (values, indices);
    }
    // Back to the input's dim order: the rows seen with `dim` in its place.
    let row_strides = contiguous_strides(&row_sizes).expect("the sizes of an existing layout");
    let mut strides = vec![0; rank];
    for (k, &d) in order.iter().enumerate() {
        strides[d] = row_strides[k];
    }
    let back = Layout::from_parts_unchecked(layout.sizes().to_vec(), strides, 0);
    (
        gather_to_vec(&values, &back),
        gather_to_vec(&indices, &back),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_is_above_every_number_and_zeros_are_equal() {
        assert_eq!(ascending(&f32::NAN, &f32::INFINITY), Ordering::Greater);
        assert_eq!(ascending(&f32::NEG_INFINITY, &f32::NAN), Ordering::Less);
        assert_eq!(ascending(&f64::NAN, &-f64::NAN), Ordering::Equal);
        assert_eq!(ascending(&-0.0f32, &0.0), Ordering::Equal);
        assert_eq!(ascending(&i64::MIN, &i64::MAX), Ordering::Less);
        assert_eq!(ascending(&true, &false), Ordering::Greater);
    }

    #[test]
    fn lanes_along_a_middle_dim_of_a_transposed_view() {
        // src is [[3, 1], [2, 5], [1, 4]] stored transposed: sizes [3, 2], strides [1, 3].
        let src = [3, 2, 1, 1, 5, 4];
        let layout = Layout::new(&[3, 2], &[1, 3], 0).unwrap();
        let (v, i) = sort(&src, &layout, 0, false);
        assert_eq!(v, [1, 1, 2, 4, 3, 5]);
        assert_eq!(i, [2, 0, 1, 2, 0, 1]);
        let (v, i) = sort(&src, &layout, 1, true);
        assert_eq!(v, [3, 1, 5, 2, 4, 1]);
        assert_eq!(i, [0, 1, 1, 0, 1, 0]);
    }
}
