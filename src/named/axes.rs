//! Axis positions computed at compile time.
//!
//! Once the types have proved an operation valid, the positions it needs are computed
//! by `const fn`s from the shapes' [`IDS`](super::DimTuple::IDS) and stored in the operation
//! traits' associated constants. A runtime wrapper reads them and calls the positional
//! operation; nothing is looked up at run time.
//!
//! Positions are `isize`, like the positional API's dimension arguments, and index the
//! *full* tensor: the private (masked) dimensions first, then the visible ones.

use super::shape::MAX_RANK;
use core::fmt;
use core::ops::Deref;

/// The most axes a plan can describe: a tensor's private and visible dimensions.
///
/// ```
/// assert_eq!(namedtensor::named::MAX_AXES, 2 * namedtensor::named::MAX_RANK);
/// ```
pub const MAX_AXES: usize = 2 * MAX_RANK;

/// A short list of axis positions, usable as a `&[isize]` (it dereferences to one).
///
/// ```
/// use namedtensor::named::PermuteTo;
/// namedtensor::dims! { Batch, Rows, Cols }
/// let perm = <(Batch, Rows, Cols) as PermuteTo<(Cols, Batch, Rows)>>::PERM;
/// assert_eq!(perm, [2, 0, 1]);
/// let as_slice: &[isize] = &perm;
/// assert_eq!(as_slice.len(), 3);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Axes {
    len: usize,
    buf: [isize; MAX_AXES],
}

impl Axes {
    /// No axes.
    ///
    /// ```
    /// assert!(namedtensor::named::Axes::EMPTY.is_empty());
    /// ```
    pub const EMPTY: Axes = Axes {
        len: 0,
        buf: [0; MAX_AXES],
    };

    /// The positions as a slice.
    ///
    /// ```
    /// use namedtensor::named::ReduceOver;
    /// namedtensor::dims! { Batch, Rows, Cols }
    /// let axes = <(Batch, Rows, Cols) as ReduceOver<(Cols, Batch)>>::AXES;
    /// assert_eq!(axes.as_slice(), &[0, 2]);
    /// ```
    pub const fn as_slice(&self) -> &[isize] {
        self.buf.split_at(self.len).0
    }

    /// Number of positions.
    ///
    /// ```
    /// assert_eq!(namedtensor::named::Axes::EMPTY.len(), 0);
    /// ```
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no positions.
    ///
    /// ```
    /// assert!(namedtensor::named::Axes::EMPTY.is_empty());
    /// ```
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the positions are `0, 1, 2, …` (a permutation that changes nothing).
    ///
    /// ```
    /// use namedtensor::named::PermuteTo;
    /// namedtensor::dims! { Rows, Cols }
    /// assert!(<(Rows, Cols) as PermuteTo<(Rows, Cols)>>::PERM.is_identity());
    /// assert!(!<(Rows, Cols) as PermuteTo<(Cols, Rows)>>::PERM.is_identity());
    /// ```
    pub const fn is_identity(&self) -> bool {
        let mut i = 0;
        while i < self.len {
            if self.buf[i] != i as isize {
                return false;
            }
            i += 1;
        }
        true
    }

    const fn push(mut self, axis: isize) -> Axes {
        self.buf[self.len] = axis;
        self.len += 1;
        self
    }
}

impl Deref for Axes {
    type Target = [isize];
    fn deref(&self) -> &[isize] {
        self.as_slice()
    }
}

impl fmt::Debug for Axes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<const N: usize> PartialEq<[isize; N]> for Axes {
    fn eq(&self, other: &[isize; N]) -> bool {
        self.as_slice() == other
    }
}

/// How to bring an operand's axes into the order of a result that may have more
/// dimensions: `permute(&perm)`, then `unsqueeze(d)` for each `d` of `insert` in turn.
/// The inserted axes have size 1 and broadcast.
///
/// ```
/// use namedtensor::named::AlignTo;
/// namedtensor::dims! { Batch, Channels, Rows, Cols }
/// // (Cols, Channels) -> (Batch, Channels, Rows, Cols)
/// let plan = <(Cols, Channels) as AlignTo<(Batch, Channels, Rows, Cols)>>::PLAN;
/// assert_eq!(plan.perm, [1, 0]); // now (Channels, Cols)
/// assert_eq!(plan.insert, [0, 2]); // then (1, Channels, 1, Cols)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Alignment {
    /// A permutation of the operand's axes: the order its dimensions have in the result.
    pub perm: Axes,
    /// Positions in the result, ascending, where the operand has no dimension.
    pub insert: Axes,
}

impl Alignment {
    /// Whether the operand already has the result's layout.
    ///
    /// ```
    /// use namedtensor::named::Broadcast;
    /// namedtensor::dims! { Rows, Cols }
    /// assert!(<(Rows, Cols) as Broadcast<(Cols,)>>::LHS.is_identity());
    /// assert!(!<(Rows, Cols) as Broadcast<(Cols,)>>::RHS.is_identity());
    /// ```
    pub const fn is_identity(&self) -> bool {
        self.perm.is_identity() && self.insert.is_empty()
    }

    /// Whether PyTorch's positional broadcasting already lines the operand up with the
    /// result: its axes keep their order and the missing ones all come first (positional
    /// broadcasting aligns shapes from the right), so no view needs to be made.
    ///
    /// ```
    /// use namedtensor::named::Broadcast;
    /// namedtensor::dims! { Batch, Rows, Cols }
    /// // (Cols,) against (Batch, Rows, Cols): two leading axes inserted.
    /// assert!(<(Batch, Rows, Cols) as Broadcast<(Cols,)>>::RHS.broadcasts_positionally());
    /// // (Rows,) needs a trailing axis for Cols: a view is needed.
    /// assert!(!<(Batch, Rows, Cols) as Broadcast<(Rows,)>>::RHS.broadcasts_positionally());
    /// ```
    pub const fn broadcasts_positionally(&self) -> bool {
        if !self.perm.is_identity() {
            return false;
        }
        let inserted = self.insert.as_slice();
        let mut i = 0;
        while i < inserted.len() {
            if inserted[i] != i as isize {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// A short list of dimension ids, the input of the plans.
#[derive(Clone, Copy)]
pub(crate) struct Ids {
    len: usize,
    buf: [u64; MAX_AXES],
}

impl Ids {
    /// The ids of `a` followed by those of `b`.
    pub(crate) const fn concat(a: &[u64], b: &[u64]) -> Ids {
        let mut out = Ids {
            len: 0,
            buf: [0; MAX_AXES],
        };
        let mut i = 0;
        while i < a.len() {
            out = out.push(a[i]);
            i += 1;
        }
        let mut j = 0;
        while j < b.len() {
            out = out.push(b[j]);
            j += 1;
        }
        out
    }

    /// The ids of `ids` that are (`keep == true`) or are not in `set`, in order.
    pub(crate) const fn filter(ids: &[u64], set: &[u64], keep: bool) -> Ids {
        let mut out = Ids {
            len: 0,
            buf: [0; MAX_AXES],
        };
        let mut i = 0;
        while i < ids.len() {
            if contains(set, ids[i]) == keep {
                out = out.push(ids[i]);
            }
            i += 1;
        }
        out
    }

    pub(crate) const fn as_slice(&self) -> &[u64] {
        self.buf.split_at(self.len).0
    }

    const fn push(mut self, id: u64) -> Ids {
        self.buf[self.len] = id;
        self.len += 1;
        self
    }
}

const fn contains(ids: &[u64], id: u64) -> bool {
    let mut i = 0;
    while i < ids.len() {
        if ids[i] == id {
            return true;
        }
        i += 1;
    }
    false
}

/// Position of `id` in `ids`. The types have already proved it present.
pub(crate) const fn position(ids: &[u64], id: u64) -> isize {
    let mut i = 0;
    while i < ids.len() {
        if ids[i] == id {
            return i as isize;
        }
        i += 1;
    }
    panic!("namedtensor: internal error: a dimension checked at compile time has no position")
}

/// Positions (plus `offset`) of the ids of `ids` that are in `set`, ascending.
pub(crate) const fn positions_in(ids: &[u64], set: &[u64], offset: usize) -> Axes {
    let mut out = Axes::EMPTY;
    let mut i = 0;
    while i < ids.len() {
        if contains(set, ids[i]) {
            out = out.push((i + offset) as isize);
        }
        i += 1;
    }
    out
}

/// Positions in `src` of the ids of `dst`, in `dst`'s order (`dst` a permutation of `src`).
pub(crate) const fn permutation(src: &[u64], dst: &[u64]) -> Axes {
    let mut out = Axes::EMPTY;
    let mut i = 0;
    while i < dst.len() {
        out = out.push(position(src, dst[i]));
        i += 1;
    }
    out
}

/// The [`Alignment`] taking axes with ids `src` to the layout `dst` (`src` ⊆ `dst`).
pub(crate) const fn alignment(src: &[u64], dst: &[u64]) -> Alignment {
    let mut perm = Axes::EMPTY;
    let mut insert = Axes::EMPTY;
    let mut i = 0;
    while i < dst.len() {
        if contains(src, dst[i]) {
            perm = perm.push(position(src, dst[i]));
        } else {
            insert = insert.push(i as isize);
        }
        i += 1;
    }
    Alignment { perm, insert }
}
