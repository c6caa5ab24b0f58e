//! Strided traversal: the loop structure every CPU kernel is built on.
//!
//! N operands that share a logical shape but have their own strides and offsets are walked
//! together in row-major order of that shape. Adjacent dims are first merged where they are
//! contiguous with each other in *every* operand and dims of size 1 are dropped, so a
//! contiguous tensor of any rank becomes a single row. The walk then hands out *rows*: the
//! innermost dim, as a start position per operand plus one shared length and one stride per
//! operand, which kernels turn into tight (vectorisable) loops.

use super::Layout;
use std::ops::Range;

/// One innermost run of elements: operand `k` visits storage positions
/// `starts[k] + i * strides[k]` for `i in 0..len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<const N: usize> {
    /// Storage position of the run's first element, per operand.
    pub starts: [usize; N],
    /// Number of elements in the run.
    pub len: usize,
    /// Step between consecutive elements, per operand.
    pub strides: [usize; N],
}

/// A shape with N stride sets, jointly coalesced for traversal.
///
/// ```
/// use namedtensor::layout::Coalesced;
/// // a contiguous [2, 3] and a transposed [2, 3]
/// let c = Coalesced::new(&[2, 3], [&[3, 1], &[1, 2]], [0, 0]);
/// assert_eq!((c.rows(), c.inner_len()), (2, 3));
/// let mut starts = vec![];
/// c.for_each_row(0..c.rows(), |s| starts.push(s));
/// assert_eq!(starts, vec![[0, 0], [3, 1]]);
/// ```
#[derive(Debug, Clone)]
pub struct Coalesced<const N: usize> {
    sizes: Vec<usize>,
    strides: [Vec<usize>; N],
    offsets: [usize; N],
    empty: bool,
}

impl<const N: usize> Coalesced<N> {
    /// Coalesces `sizes` seen through each operand's `strides`, starting at `offsets`.
    pub fn new(sizes: &[usize], strides: [&[usize]; N], offsets: [usize; N]) -> Self {
        let empty = sizes.contains(&0);
        let mut out_sizes: Vec<usize> = Vec::with_capacity(sizes.len());
        let mut out_strides: [Vec<usize>; N] = std::array::from_fn(|_| Vec::new());
        for (d, &size) in sizes.iter().enumerate() {
            if size == 1 {
                continue;
            }
            // Checked products: an empty tensor may have dims whose product overflows (its
            // element count is 0 whatever they are); such dims are simply not merged.
            if let Some(merged) = out_sizes.last().and_then(|&last| last.checked_mul(size)) {
                let mergeable = (0..N).all(|k| {
                    strides[k][d].checked_mul(size) == Some(*out_strides[k].last().unwrap())
                });
                if mergeable {
                    *out_sizes.last_mut().unwrap() = merged;
                    for k in 0..N {
                        *out_strides[k].last_mut().unwrap() = strides[k][d];
                    }
                    continue;
                }
            }
            out_sizes.push(size);
            for k in 0..N {
                out_strides[k].push(strides[k][d]);
            }
        }
        Coalesced {
            sizes: out_sizes,
            strides: out_strides,
            offsets,
            empty,
        }
    }

    /// Coalesces a single layout.
    pub fn of(layout: &Layout) -> Coalesced<1> {
        Coalesced::new(layout.sizes(), [layout.strides()], [layout.offset()])
    }

    /// Length of every row (1 for a rank-0 tensor).
    pub fn inner_len(&self) -> usize {
        if self.empty {
            0
        } else {
            self.sizes.last().copied().unwrap_or(1)
        }
    }

    /// Per-operand stride within a row.
    pub fn inner_strides(&self) -> [usize; N] {
        std::array::from_fn(|k| self.strides[k].last().copied().unwrap_or(0))
    }

    /// Number of rows (0 for an empty tensor).
    pub fn rows(&self) -> usize {
        if self.empty {
            return 0;
        }
        let r = self.sizes.len();
        self.sizes[..r.saturating_sub(1)].iter().product()
    }

    /// The coalesced sizes (size-1 dims dropped, mergeable dims merged).
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Operand `k`'s stride of every coalesced dim.
    ///
    /// ```
    /// use namedtensor::layout::Coalesced;
    /// let c = Coalesced::new(&[2, 1, 3], [&[3, 9, 1], &[1, 9, 2]], [0, 0]);
    /// assert_eq!((c.sizes(), c.strides(0), c.strides(1)), (&[2, 3][..], &[3, 1][..], &[1, 2][..]));
    /// ```
    pub fn strides(&self, k: usize) -> &[usize] {
        &self.strides[k]
    }

    /// The start position of every operand.
    ///
    /// ```
    /// use namedtensor::layout::Coalesced;
    /// let c = Coalesced::new(&[2, 3], [&[3, 1], &[1, 2]], [5, 0]);
    /// assert_eq!(c.offsets(), [5, 0]);
    /// ```
    pub fn offsets(&self) -> [usize; N] {
        self.offsets
    }

    /// Calls `f` with the per-operand start position of each row in `rows` (row indices in
    /// row-major order of the outer dims), in increasing row order.
    pub fn for_each_row(&self, rows: Range<usize>, mut f: impl FnMut([usize; N])) {
        // Only this loop is compiled per closure; the index arithmetic is [`RowStarts`]'.
        for pos in self.row_starts(rows) {
            f(pos);
        }
    }

    /// The per-operand start position of each row in `rows`, in increasing row order.
    ///
    /// ```
    /// use namedtensor::layout::Coalesced;
    /// let c = Coalesced::new(&[3, 2], [&[1, 3]], [0]); // a transposed [2, 3]
    /// assert_eq!(c.row_starts(1..3).collect::<Vec<_>>(), vec![[1], [2]]);
    /// ```
    pub fn row_starts(&self, rows: Range<usize>) -> RowStarts<'_, N> {
        if rows.is_empty() || self.empty {
            return RowStarts {
                walk: self,
                idx: Vec::new(),
                pos: self.offsets,
                left: 0,
            };
        }
        let (idx, pos) = self.row_start(rows.start);
        RowStarts {
            walk: self,
            idx,
            pos,
            left: rows.len(),
        }
    }

    /// The multi-index over the outer dims of row `row` and its start positions.
    fn row_start(&self, row: usize) -> (Vec<usize>, [usize; N]) {
        let outer = self.sizes.len().saturating_sub(1);
        let mut idx = super::zeroed(outer);
        let mut rem = row;
        for d in (0..outer).rev() {
            idx[d] = rem % self.sizes[d];
            rem /= self.sizes[d];
        }
        let mut pos = self.offsets;
        for (p, strides) in pos.iter_mut().zip(&self.strides) {
            *p += idx.iter().zip(strides).map(|(&i, &s)| i * s).sum::<usize>();
        }
        (idx, pos)
    }

    /// Advances `idx` and `pos` to the next row (an odometer increment over the outer dims).
    #[inline]
    fn next_row(&self, idx: &mut [usize], pos: &mut [usize; N]) {
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < self.sizes[d] {
                for (p, strides) in pos.iter_mut().zip(&self.strides) {
                    *p += strides[d];
                }
                return;
            }
            idx[d] = 0;
            for (p, strides) in pos.iter_mut().zip(&self.strides) {
                *p -= strides[d] * (self.sizes[d] - 1);
            }
        }
    }

    /// Calls `f` with every row as a [`Block`], in row-major order.
    pub fn for_each_block(&self, mut f: impl FnMut(Block<N>)) {
        let len = self.inner_len();
        let strides = self.inner_strides();
        self.for_each_row(0..self.rows(), |starts| {
            f(Block {
                starts,
                len,
                strides,
            })
        });
    }
}

/// The start positions of a range of rows of a [`Coalesced`] walk ([`Coalesced::row_starts`]).
#[derive(Debug, Clone)]
pub struct RowStarts<'a, const N: usize> {
    walk: &'a Coalesced<N>,
    /// The multi-index over the outer dims of the next row.
    idx: Vec<usize>,
    /// The next row's start positions.
    pos: [usize; N],
    /// Rows still to hand out.
    left: usize,
}

impl<const N: usize> Iterator for RowStarts<'_, N> {
    type Item = [usize; N];

    fn next(&mut self) -> Option<[usize; N]> {
        if self.left == 0 {
            return None;
        }
        let pos = self.pos;
        self.left -= 1;
        if self.left > 0 {
            self.walk.next_row(&mut self.idx, &mut self.pos);
        }
        Some(pos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Calls `f` with every row of `layout` as a [`Block`], in row-major order.
///
/// ```
/// use namedtensor::layout::{for_each_block, Layout};
/// let l = Layout::contiguous(&[2, 3]).unwrap().transpose(0, 1).unwrap(); // [3, 2]
/// let mut positions = vec![];
/// for_each_block(&l, |b| positions.extend((0..b.len).map(|i| b.starts[0] + i * b.strides[0])));
/// assert_eq!(positions, vec![0, 3, 1, 4, 2, 5]);
/// ```
pub fn for_each_block(layout: &Layout, f: impl FnMut(Block<1>)) {
    Coalesced::<1>::of(layout).for_each_block(f)
}
