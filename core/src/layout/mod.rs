//! Layout math: how a tensor's indices map to positions in its storage.
//!
//! A [`Layout`] is sizes, strides (in elements) and a storage offset: element `(i0, …, ik)`
//! lives at `offset + Σ i_d · stride_d`. Every view operation of the library is a pure function
//! from one layout to another, defined here without reference to element types or storage, so
//! it compiles once and can be property-tested on its own.
//!
//! Invariants of every `Layout` built by this module:
//! - `sizes.len() == strides.len()` (the rank);
//! - the element count `Π sizes` and the largest reachable storage index fit in `usize`;
//! - strides are non-negative (there are no flipped views).
//!
//! Whether the layout fits a particular storage is checked where the two meet
//! ([`Layout::required_storage_len`]).

mod blocks;
mod broadcast;
mod index;
mod relative;
mod view;
mod window;

pub use blocks::{Block, Coalesced, RowStarts, for_each_block};
pub use broadcast::broadcast_shapes;
pub use index::{normalize_dim, normalize_index};
#[doc(hidden)]
pub use index::{normalize_dim_0d, normalize_new_dim};
pub use view::infer_shape;
pub use window::Window2d;

use crate::error::{Error, Result};

/// Sizes, strides and storage offset of a strided tensor.
///
/// ```
/// use namedtensor::Layout;
/// let l = Layout::contiguous(&[3, 2]).unwrap();
/// assert_eq!(l.strides(), &[2, 1]);
/// let t = l.transpose(0, 1).unwrap();
/// assert_eq!((t.sizes(), t.strides()), (&[2, 3][..], &[1, 2][..]));
/// assert!(!t.is_contiguous());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    /// The sizes, then the strides (`2 · rank` entries): one allocation for both, since
    /// nearly every op builds a layout for its result.
    dims: Box<[usize]>,
    offset: usize,
}

impl Layout {
    /// The row-major (C-order) layout of `sizes`, starting at offset 0.
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[3, 4, 5]).unwrap();
    /// assert_eq!(l.strides(), &[20, 5, 1]);
    /// assert!(namedtensor::Layout::contiguous(&[usize::MAX, 2]).is_err());
    /// ```
    pub fn contiguous(sizes: &[usize]) -> Result<Layout> {
        checked_numel(sizes).ok_or_else(|| {
            Error::overflow("shape", format!("the element count of shape {sizes:?}"))
        })?;
        let r = sizes.len();
        let mut dims = zeroed(2 * r).into_boxed_slice();
        dims[..r].copy_from_slice(sizes);
        fill_contiguous_strides(sizes, &mut dims[r..]);
        Ok(Layout { dims, offset: 0 })
    }

    /// `sizes` all read from one element at offset 0 (stride 0 everywhere): a scalar broadcast
    /// to a shape.
    ///
    /// ```
    /// let l = namedtensor::Layout::repeated(&[2, 3]);
    /// assert_eq!((l.sizes(), l.strides(), l.required_storage_len()), (&[2, 3][..], &[0, 0][..], 1));
    /// ```
    pub fn repeated(sizes: &[usize]) -> Layout {
        Layout::from_pairs(sizes.iter().map(|&size| (size, 0)), 0)
    }

    /// A layout from raw parts, checked for equal lengths and for overflow of the largest
    /// reachable index. Whether it fits a storage is checked by the caller.
    ///
    /// ```
    /// let l = namedtensor::Layout::new(&[2, 2], &[1, 2], 3).unwrap();
    /// assert_eq!(l.required_storage_len(), 3 + 1 + 2 + 1);
    /// ```
    pub fn new(sizes: &[usize], strides: &[usize], offset: usize) -> Result<Layout> {
        if sizes.len() != strides.len() {
            return Err(Error::new(
                crate::ErrorKind::ShapeMismatch,
                "as_strided",
                format!(
                    "sizes {sizes:?} and strides {strides:?} have different lengths ({} and {})",
                    sizes.len(),
                    strides.len()
                ),
            ));
        }
        let layout = Layout::from_pairs(sizes.iter().copied().zip(strides.iter().copied()), offset);
        checked_numel(sizes)
            .ok_or_else(|| Error::overflow("as_strided", format!("shape {sizes:?}")))?;
        layout.checked_extent().ok_or_else(|| {
            Error::overflow(
                "as_strided",
                format!("offset {offset} with sizes {sizes:?} and strides {strides:?}"),
            )
        })?;
        Ok(layout)
    }

    /// The size of every dim.
    pub fn sizes(&self) -> &[usize] {
        &self.dims[..self.dims.len() / 2]
    }

    /// The stride of every dim, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.dims[self.dims.len() / 2..]
    }

    /// The storage index of element `(0, …, 0)`.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.dims.len() / 2
    }

    /// The number of elements (1 for rank 0).
    pub fn numel(&self) -> usize {
        // Checked when the layout was built.
        self.sizes().iter().product()
    }

    /// Whether the elements lie in row-major order without gaps (size-1 dims may have any
    /// stride, as in PyTorch).
    ///
    /// ```
    /// let l = namedtensor::Layout::new(&[2, 1, 3], &[3, 100, 1], 5).unwrap();
    /// assert!(l.is_contiguous());
    /// ```
    pub fn is_contiguous(&self) -> bool {
        // An empty layout is contiguous; checking it first also keeps the running product
        // below, which is bounded by the element count, from overflowing on a huge dim of an
        // empty tensor.
        if self.sizes().contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for (&size, &stride) in self.sizes().iter().zip(self.strides()).rev() {
            if size != 1 {
                if stride != expected {
                    return false;
                }
                expected *= size;
            }
        }
        true
    }

    /// Fails with [`ErrorKind::OutOfStorage`](crate::ErrorKind) unless every element lies
    /// within a buffer of `len` elements.
    ///
    /// ```
    /// use namedtensor::layout::Layout;
    /// let l = Layout::contiguous(&[2, 3]).unwrap();
    /// assert!(l.check_within("op", 6).is_ok());
    /// assert!(l.check_within("op", 5).is_err());
    /// ```
    pub fn check_within(&self, op: &'static str, len: usize) -> crate::error::Result<()> {
        let need = self.required_storage_len();
        if self.numel() > 0 && need > len {
            return Err(crate::error::Error::new(
                crate::error::ErrorKind::OutOfStorage,
                op,
                format!(
                    "sizes {:?} with strides {:?} and offset {} reach storage index {}, but \
                     the storage has {len} elements",
                    self.sizes(),
                    self.strides(),
                    self.offset,
                    need - 1
                ),
            ));
        }
        Ok(())
    }

    /// The storage length needed to hold every element: one past the largest reachable
    /// index (the offset itself for an empty tensor).
    pub fn required_storage_len(&self) -> usize {
        self.checked_extent()
            .expect("layout extent is checked at construction")
    }

    fn checked_extent(&self) -> Option<usize> {
        if self.sizes().contains(&0) {
            return Some(self.offset);
        }
        let mut last = self.offset;
        for (&size, &stride) in self.sizes().iter().zip(self.strides()) {
            last = last.checked_add((size - 1).checked_mul(stride)?)?;
        }
        last.checked_add(1)
    }

    /// The storage index of the element at `index` (one entry per dim, each in range).
    ///
    /// ```
    /// let l = namedtensor::Layout::new(&[3, 2], &[2, 1], 4).unwrap();
    /// assert_eq!(l.storage_index(&[2, 1]).unwrap(), 4 + 2 * 2 + 1);
    /// assert!(l.storage_index(&[3, 0]).is_err());
    /// ```
    pub fn storage_index(&self, index: &[usize]) -> Result<usize> {
        if index.len() != self.rank() {
            return Err(Error::new(
                crate::ErrorKind::IndexOutOfRange,
                "index",
                format!(
                    "{} indices given for a tensor of rank {} (shape {:?})",
                    index.len(),
                    self.rank(),
                    self.sizes()
                ),
            ));
        }
        let mut pos = self.offset;
        for (d, (&i, (&size, &stride))) in index
            .iter()
            .zip(self.sizes().iter().zip(self.strides()))
            .enumerate()
        {
            if i >= size {
                return Err(Error::new(
                    crate::ErrorKind::IndexOutOfRange,
                    "index",
                    format!(
                        "index {i} is out of range for dim {d} of size {size} (shape {:?})",
                        self.sizes()
                    ),
                ));
            }
            pos += i * stride;
        }
        Ok(pos)
    }

    /// Whether a dim of size > 1 has stride 0 (an expanded view), so that several indices
    /// reach one storage element. A cheap necessary condition for [`Layout::has_internal_overlap`].
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[3]).unwrap().expand(&[2, 3]).unwrap();
    /// assert!(l.has_broadcast_dim());
    /// ```
    pub fn has_broadcast_dim(&self) -> bool {
        self.sizes()
            .iter()
            .zip(self.strides())
            .any(|(&size, &stride)| size > 1 && stride == 0)
    }

    /// A sufficient test that every index maps to its own storage element: with the dims of
    /// size > 1 sorted by stride, each stride exceeds the largest position reachable through
    /// all the dims before it (`Σ stride·(size − 1)` over them). Two indices that differ first
    /// (from the largest stride down) in dim `k` then differ by at least `stride_k` minus that
    /// sum, which is positive. Writers may split such a layout across threads.
    ///
    /// Exact for every layout the view operations make; `as_strided` can make layouts that are
    /// free of overlap but fail this test (sizes `[2, 3]`, strides `[3, 2]`), which
    /// [`Layout::has_internal_overlap`] decides exactly.
    ///
    /// ```
    /// use namedtensor::Layout;
    /// assert!(Layout::new(&[2, 3], &[1, 2], 0).unwrap().is_provably_non_overlapping());
    /// assert!(!Layout::new(&[3, 3], &[1, 1], 0).unwrap().is_provably_non_overlapping());
    /// // (1, 1, 0) and (0, 0, 1) are both element 3
    /// assert!(!Layout::new(&[2, 2, 2], &[1, 2, 3], 0).unwrap().is_provably_non_overlapping());
    /// ```
    pub fn is_provably_non_overlapping(&self) -> bool {
        if self.sizes().contains(&0) {
            return true;
        }
        let mut dims: Vec<(usize, usize)> = self
            .strides()
            .iter()
            .zip(self.sizes())
            .filter(|&(_, &size)| size > 1)
            .map(|(&stride, &size)| (stride, size))
            .collect();
        dims.sort_unstable();
        // The furthest position reachable through the dims visited so far; it fits in
        // `usize` because the layout's extent was checked when it was built.
        let mut reach = 0usize;
        for (stride, size) in dims {
            if stride <= reach {
                return false;
            }
            reach += stride * (size - 1);
        }
        true
    }

    /// Whether two distinct indices reach the same storage element, decided exactly.
    ///
    /// Cheap for every layout the view operations make (they pass
    /// [`Layout::is_provably_non_overlapping`] or have a broadcast dim). Other `as_strided`
    /// layouts are decided by marking each reachable position in a bitmap of the layout's span,
    /// which is at most the storage's length: `O(numel + span / 64)` time, `span / 8` bytes.
    ///
    /// ```
    /// use namedtensor::Layout;
    /// assert!(!Layout::new(&[2, 3], &[3, 2], 0).unwrap().has_internal_overlap());
    /// assert!(Layout::new(&[2, 2, 2], &[1, 2, 3], 0).unwrap().has_internal_overlap());
    /// assert!(Layout::new(&[2], &[0], 0).unwrap().has_internal_overlap());
    /// ```
    pub fn has_internal_overlap(&self) -> bool {
        if self.is_provably_non_overlapping() {
            return false;
        }
        if self.has_broadcast_dim() {
            return true;
        }
        // Not empty (an empty layout is provably non-overlapping), so the span is > 0.
        let span = self.required_storage_len() - self.offset;
        if self.numel() > span {
            return true; // more indices than positions
        }
        let mut seen = vec![0u64; span.div_ceil(64)];
        let mut index = vec![0usize; self.rank()];
        let mut pos = 0usize;
        loop {
            let (word, bit) = (pos / 64, 1u64 << (pos % 64));
            if seen[word] & bit != 0 {
                return true;
            }
            seen[word] |= bit;
            // Next index in row-major order, keeping `pos` in step.
            let mut d = self.rank();
            loop {
                if d == 0 {
                    return false;
                }
                d -= 1;
                index[d] += 1;
                pos += self.strides()[d];
                if index[d] < self.sizes()[d] {
                    break;
                }
                pos -= self.strides()[d] * index[d];
                index[d] = 0;
            }
        }
    }

    /// The layout with every broadcast dim (stride 0) shrunk to size 1: the view's distinct
    /// elements, each once. Expanding the result back to [`Layout::sizes`] gives the view.
    ///
    /// ```
    /// use namedtensor::Layout;
    /// let wide = Layout::contiguous(&[3]).unwrap().expand(&[4, 3]).unwrap();
    /// assert_eq!(wide.collapse_broadcast().sizes(), &[1, 3]);
    /// ```
    pub fn collapse_broadcast(&self) -> Layout {
        let mut out = self.clone();
        let (sizes, strides) = out.parts_mut();
        for (size, &stride) in sizes.iter_mut().zip(strides.iter()) {
            if stride == 0 {
                *size = (*size).min(1);
            }
        }
        out
    }

    #[doc(hidden)]
    pub fn from_parts_unchecked(sizes: Vec<usize>, strides: Vec<usize>, offset: usize) -> Self {
        debug_assert_eq!(sizes.len(), strides.len());
        // The sizes' allocation grown in place where the allocator can, rather than a third.
        let mut dims = sizes;
        dims.reserve_exact(strides.len());
        dims.extend_from_slice(&strides);
        Layout {
            dims: dims.into_boxed_slice(),
            offset,
        }
    }

    /// Every dim's `(size, stride)`, in order.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + Clone + '_ {
        self.sizes()
            .iter()
            .copied()
            .zip(self.strides().iter().copied())
    }

    /// A layout of the dims `(size, stride)` that `dims` yields, in order, unchecked (the
    /// caller keeps the module's invariants): the one allocation filled in two passes.
    pub(crate) fn from_pairs(
        dims: impl Iterator<Item = (usize, usize)> + Clone,
        offset: usize,
    ) -> Self {
        let sizes = dims.clone().map(|(size, _)| size);
        let dims = sizes.chain(dims.map(|(_, stride)| stride)).collect();
        Layout { dims, offset }
    }

    /// The sizes and the strides, mutably (the rank stays).
    pub(crate) fn parts_mut(&mut self) -> (&mut [usize], &mut [usize]) {
        let r = self.rank();
        self.dims.split_at_mut(r)
    }

    /// This layout with dim `d` removed.
    pub(crate) fn without_dim(&self, d: usize) -> Layout {
        Layout::from_pairs(
            self.pairs().take(d).chain(self.pairs().skip(d + 1)),
            self.offset,
        )
    }
}

impl std::fmt::Debug for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Layout {{ sizes: {:?}, strides: {:?}, offset: {} }}",
            self.sizes(),
            self.strides(),
            self.offset
        )
    }
}

/// `Π sizes`, or `None` on overflow.
pub fn checked_numel(sizes: &[usize]) -> Option<usize> {
    sizes.iter().try_fold(1usize, |acc, &s| acc.checked_mul(s))
}

/// Row-major strides of `sizes`, or `None` if the element count overflows.
///
/// ```
/// assert_eq!(namedtensor::layout::contiguous_strides(&[2, 3, 4]), Some(vec![12, 4, 1]));
/// ```
pub fn contiguous_strides(sizes: &[usize]) -> Option<Vec<usize>> {
    checked_numel(sizes)?;
    let mut strides = zeroed(sizes.len());
    fill_contiguous_strides(sizes, &mut strides);
    Some(strides)
}

/// `n` zeros, written into a plain allocation: `vec![0; n]` asks the allocator for zeroed
/// memory, and glibc's `calloc` bypasses its per-thread cache of small blocks, which made it
/// a fifth of a tiny tensor's add, where these few words per layout are allocated
/// (BENCHMARKS.md, session 28). [`contiguous_strides`] shows it at work.
pub(crate) fn zeroed(n: usize) -> Vec<usize> {
    std::iter::repeat_n(0, n).collect()
}

/// Writes the row-major strides of `sizes` (whose element count fits `usize`) into `strides`.
fn fill_contiguous_strides(sizes: &[usize], strides: &mut [usize]) {
    let mut acc = 1usize;
    for (stride, &size) in strides.iter_mut().zip(sizes).rev() {
        *stride = acc;
        acc = acc.saturating_mul(size.max(1));
    }
    // A zero-size dim makes the product 0 while later strides may still be large; those
    // strides are only ever multiplied by an index < size, so they cannot overflow then.
}
