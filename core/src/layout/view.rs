//! View operations: each maps a layout to a new layout over the same storage elements.

use super::{
    Layout, checked_numel, contiguous_strides, normalize_dim, normalize_dim_0d, normalize_index,
    normalize_new_dim,
};
use crate::error::{Error, ErrorKind, Result};

impl Layout {
    /// Removes dim `dim`, fixing it at `index` (negative counts from the end).
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[3, 2]).unwrap().select(0, 1).unwrap();
    /// assert_eq!((l.sizes(), l.strides(), l.offset()), (&[2][..], &[1][..], 2));
    /// ```
    pub fn select(&self, dim: isize, index: isize) -> Result<Layout> {
        let d = normalize_dim("select", dim, self.rank())?;
        let i = normalize_index("select", index, d, self.sizes())?;
        let mut out = self.without_dim(d);
        out.offset += i * self.strides()[d];
        Ok(out)
    }

    /// Keeps `length` entries of dim `dim` starting at `start` (negative counts from the end).
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[4, 3]).unwrap().narrow(0, 1, 2).unwrap();
    /// assert_eq!((l.sizes(), l.offset()), (&[2, 3][..], 3));
    /// ```
    pub fn narrow(&self, dim: isize, start: isize, length: usize) -> Result<Layout> {
        let d = normalize_dim("narrow", dim, self.rank())?;
        let size = self.sizes()[d];
        let s = if start < 0 {
            start + size as isize
        } else {
            start
        };
        if s < 0 || s as usize > size || length > size - s as usize {
            return Err(Error::new(
                ErrorKind::IndexOutOfRange,
                "narrow",
                format!(
                    "start {start} with length {length} does not fit dim {d} of size {size} \
                     (shape {:?})",
                    self.sizes()
                ),
            ));
        }
        let mut out = self.clone();
        if length > 0 {
            out.offset += s as usize * self.strides()[d];
        }
        out.parts_mut().0[d] = length;
        Ok(out)
    }

    /// Python slicing `start..end` with `step` along `dim`: bounds may be negative (counted from
    /// the end) or absent, and are clamped to the dim like Python's; `step` must be positive.
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[10]).unwrap();
    /// let s = l.slice(0, Some(1), None, 3).unwrap(); // [1, 4, 7]
    /// assert_eq!((s.sizes(), s.strides(), s.offset()), (&[3][..], &[3][..], 1));
    /// ```
    pub fn slice(
        &self,
        dim: isize,
        start: Option<isize>,
        end: Option<isize>,
        step: usize,
    ) -> Result<Layout> {
        let d = normalize_dim("slice", dim, self.rank())?;
        if step == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "slice",
                "slice step must be positive, got 0",
            ));
        }
        let size = self.sizes()[d] as isize;
        let clamp = |v: isize| -> isize {
            let v = if v < 0 { v + size } else { v };
            v.clamp(0, size)
        };
        let s = start.map_or(0, clamp);
        let e = end.map_or(size, clamp);
        let len = if e > s {
            ((e - s) as usize).div_ceil(step)
        } else {
            0
        };
        let mut out = self.clone();
        if len > 0 {
            out.offset += s as usize * self.strides()[d];
        }
        let stride = self.strides()[d].checked_mul(step).ok_or_else(|| {
            Error::overflow(
                "slice",
                format!("stride {} × step {step}", self.strides()[d]),
            )
        })?;
        let (sizes, strides) = out.parts_mut();
        (sizes[d], strides[d]) = (len, stride);
        Ok(out)
    }

    /// Swaps two dims.
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[3, 4, 5]).unwrap().transpose(0, 2).unwrap();
    /// assert_eq!(l.strides(), &[1, 5, 20]);
    /// ```
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Layout> {
        let a = normalize_dim("transpose", dim0, self.rank())?;
        let b = normalize_dim("transpose", dim1, self.rank())?;
        let mut out = self.clone();
        let (sizes, strides) = out.parts_mut();
        sizes.swap(a, b);
        strides.swap(a, b);
        Ok(out)
    }

    /// [`Layout::permute`] for an `order` known to be a permutation of `0..rank` (the named
    /// layer's alignment plans are, by construction): no checks in release builds.
    #[doc(hidden)]
    pub fn permute_trusted(&self, order: &[isize]) -> Layout {
        debug_assert!(self.permute(order).is_ok(), "not a permutation: {order:?}");
        let (sizes, strides) = (self.sizes(), self.strides());
        let dims = order
            .iter()
            .map(|&d| (sizes[d as usize], strides[d as usize]));
        Layout::from_pairs(dims, self.offset)
    }

    /// Reorders the dims: dim `i` of the result is dim `order[i]` of `self`.
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[2, 3, 4]).unwrap().permute(&[2, 0, 1]).unwrap();
    /// assert_eq!((l.sizes(), l.strides()), (&[4, 2, 3][..], &[1, 12, 4][..]));
    /// ```
    pub fn permute(&self, order: &[isize]) -> Result<Layout> {
        let rank = self.rank();
        if order.len() != rank {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "permute",
                format!(
                    "order {order:?} has {} entries but the tensor has rank {rank} (shape {:?})",
                    order.len(),
                    self.sizes()
                ),
            ));
        }
        // Marks for the dims used so far, on the stack for every realistic rank.
        let (mut small, mut large) = ([false; 64], Vec::new());
        let seen: &mut [bool] = if rank <= small.len() {
            &mut small[..rank]
        } else {
            large.resize(rank, false);
            &mut large
        };
        let mut out = self.clone();
        let (sizes, strides) = out.parts_mut();
        for (i, &o) in order.iter().enumerate() {
            let d = normalize_dim("permute", o, rank)?;
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "permute",
                    format!("dim {d} appears more than once in order {order:?}"),
                ));
            }
            (sizes[i], strides[i]) = (self.sizes()[d], self.strides()[d]);
        }
        Ok(out)
    }

    /// Broadcasts to `sizes` without copying: dims of size 1 may grow (their stride becomes 0),
    /// new dims may be added on the left, and `-1` keeps a dim's size.
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[3, 1]).unwrap().expand(&[2, 3, 4]).unwrap();
    /// assert_eq!((l.sizes(), l.strides()), (&[2, 3, 4][..], &[0, 1, 0][..]));
    /// ```
    pub fn expand(&self, sizes: &[isize]) -> Result<Layout> {
        let rank = self.rank();
        let err = |why: String| {
            Error::new(
                ErrorKind::ShapeMismatch,
                "expand",
                format!("cannot expand shape {:?} to {sizes:?}: {why}", self.sizes()),
            )
        };
        if sizes.len() < rank {
            return Err(err(format!(
                "the target has {} dims, fewer than the tensor's {rank}",
                sizes.len()
            )));
        }
        let lead = sizes.len() - rank;
        let mut out = Layout {
            dims: super::zeroed(2 * sizes.len()).into_boxed_slice(),
            offset: self.offset,
        };
        let (out_sizes, out_strides) = out.parts_mut();
        for (i, &target) in sizes.iter().enumerate() {
            if i < lead {
                if target < 0 {
                    return Err(err(format!(
                        "-1 is not allowed for the new leading dim {i}"
                    )));
                }
                (out_sizes[i], out_strides[i]) = (target as usize, 0);
                continue;
            }
            let (size, stride) = (self.sizes()[i - lead], self.strides()[i - lead]);
            (out_sizes[i], out_strides[i]) = if target == -1 || target as usize == size {
                (size, stride)
            } else if target < 0 {
                return Err(err(format!("size {target} at dim {i} is negative")));
            } else if size == 1 {
                (target as usize, 0)
            } else {
                return Err(err(format!(
                    "dim {i} has size {size}, which is not 1 and differs from {target}"
                )));
            };
        }
        checked_numel(out.sizes())
            .ok_or_else(|| Error::overflow("expand", format!("shape {sizes:?}")))?;
        Ok(out)
    }

    /// Removes every dim of size 1.
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[1, 3, 1]).unwrap().squeeze();
    /// assert_eq!(l.sizes(), &[3]);
    /// ```
    pub fn squeeze(&self) -> Layout {
        let dims = self.pairs();
        Layout::from_pairs(dims.filter(|&(size, _)| size != 1), self.offset)
    }

    /// Removes dim `dim` if its size is 1 (otherwise returns the layout unchanged, like
    /// PyTorch).
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[1, 3]).unwrap();
    /// assert_eq!(l.squeeze_dim(0).unwrap().sizes(), &[3]);
    /// assert_eq!(l.squeeze_dim(1).unwrap().sizes(), &[1, 3]);
    /// ```
    pub fn squeeze_dim(&self, dim: isize) -> Result<Layout> {
        let d = normalize_dim("squeeze", dim, self.rank())?;
        if self.sizes()[d] == 1 {
            return Ok(self.without_dim(d));
        }
        Ok(self.clone())
    }

    /// Inserts a dim of size 1 at position `dim` (in `-(rank+1)..=rank`).
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[2, 3]).unwrap().unsqueeze(-1).unwrap();
    /// assert_eq!((l.sizes(), l.strides()), (&[2, 3, 1][..], &[3, 1, 1][..]));
    /// ```
    pub fn unsqueeze(&self, dim: isize) -> Result<Layout> {
        let d = normalize_new_dim("unsqueeze", dim, self.rank())?;
        let stride = if d < self.rank() {
            self.strides()[d] * self.sizes()[d]
        } else {
            1
        };
        let dims = self.pairs();
        let dims = dims
            .clone()
            .take(d)
            .chain([(1, stride)])
            .chain(dims.skip(d));
        Ok(Layout::from_pairs(dims, self.offset))
    }

    /// The same elements seen with shape `shape` (one entry may be `-1`, inferred), without
    /// copying. Fails with [`ErrorKind::NotViewable`] when the strides cannot express the new
    /// shape; [`ErrorKind::ElementCount`] when the element count differs.
    ///
    /// ```
    /// use namedtensor::{ErrorKind, Layout};
    /// let l = Layout::contiguous(&[2, 6]).unwrap();
    /// assert_eq!(l.view(&[3, -1]).unwrap().strides(), &[4, 1]);
    /// let t = l.transpose(0, 1).unwrap();
    /// assert_eq!(t.view(&[12]).unwrap_err().kind(), ErrorKind::NotViewable);
    /// ```
    pub fn view(&self, shape: &[isize]) -> Result<Layout> {
        let new_sizes = infer_shape("view", shape, self.sizes())?;
        match view_strides(self.sizes(), self.strides(), &new_sizes) {
            Some(strides) => Ok(Layout::from_parts_unchecked(
                new_sizes,
                strides,
                self.offset,
            )),
            None => Err(Error::new(
                ErrorKind::NotViewable,
                "view",
                format!(
                    "shape {:?} with strides {:?} cannot be viewed as {new_sizes:?} without \
                     copying: {}; use reshape() (copies only when needed) or call contiguous() \
                     first",
                    self.sizes(),
                    self.strides(),
                    explain_not_viewable(self.sizes(), self.strides())
                ),
            )),
        }
    }

    /// Merges dims `start..=end` into one, if the strides allow it without a copy.
    /// `None` means a copy is needed (see [`Layout::view`]).
    ///
    /// ```
    /// let l = namedtensor::Layout::contiguous(&[2, 3, 4]).unwrap();
    /// assert_eq!(l.flatten(1, 2).unwrap().unwrap().sizes(), &[2, 12]);
    /// ```
    pub fn flatten(&self, start: isize, end: isize) -> Result<Option<Layout>> {
        let shape = flatten_shape(self.sizes(), start, end)?;
        Ok(view_strides(self.sizes(), self.strides(), &shape)
            .map(|strides| Layout::from_parts_unchecked(shape, strides, self.offset)))
    }
}

/// The shape after merging dims `start..=end` (a rank-0 shape flattens to `[1]`).
#[doc(hidden)]
pub fn flatten_shape(sizes: &[usize], start: isize, end: isize) -> Result<Vec<usize>> {
    if sizes.is_empty() {
        normalize_dim_0d("flatten", start)?;
        normalize_dim_0d("flatten", end)?;
        return Ok(vec![1]);
    }
    let s = normalize_dim("flatten", start, sizes.len())?;
    let e = normalize_dim("flatten", end, sizes.len())?;
    if s > e {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "flatten",
            format!("start dim {start} comes after end dim {end} (shape {sizes:?})"),
        ));
    }
    let mut shape = sizes[..s].to_vec();
    shape.push(sizes[s..=e].iter().product());
    shape.extend_from_slice(&sizes[e + 1..]);
    Ok(shape)
}

/// Resolves a shape with at most one `-1` against the element count of `sizes`.
///
/// ```
/// use namedtensor::layout::infer_shape;
/// assert_eq!(infer_shape("view", &[-1, 2], &[3, 4]).unwrap(), vec![6, 2]);
/// assert!(infer_shape("view", &[5], &[3, 4]).is_err());
/// ```
pub fn infer_shape(op: &'static str, shape: &[isize], sizes: &[usize]) -> Result<Vec<usize>> {
    let numel: usize = sizes.iter().product();
    let mut infer_at = None;
    let mut known = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer_at.replace(i).is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    op,
                    format!("only one dim can be -1 in shape {shape:?}"),
                ));
            }
        } else if s < 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                op,
                format!("invalid size {s} at dim {i} of shape {shape:?}"),
            ));
        } else {
            known = known
                .checked_mul(s as usize)
                .ok_or_else(|| Error::overflow(op, format!("the element count of {shape:?}")))?;
        }
    }
    let count_error = || {
        Error::new(
            ErrorKind::ElementCount,
            op,
            format!(
                "shape {shape:?} is invalid for a tensor of shape {sizes:?} with {numel} elements"
            ),
        )
    };
    let mut out: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    match infer_at {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(count_error());
            }
            out[i] = numel / known;
        }
        None if known != numel => return Err(count_error()),
        None => {}
    }
    Ok(out)
}

/// Strides that make `new_sizes` address the same elements, in the same row-major order, as
/// `(sizes, strides)`; `None` if no such strides exist. Element counts must be equal.
///
/// Dims are grouped into maximal chunks that are contiguous with one another
/// (`stride[i] == stride[i+1] · size[i+1]`); each dim of the new shape must fall inside one
/// chunk.
#[doc(hidden)]
pub fn view_strides(sizes: &[usize], strides: &[usize], new_sizes: &[usize]) -> Option<Vec<usize>> {
    if sizes.is_empty() {
        return Some(vec![1; new_sizes.len()]);
    }
    if sizes.contains(&0) {
        return if sizes == new_sizes {
            Some(strides.to_vec())
        } else {
            contiguous_strides(new_sizes)
        };
    }
    let mut new_strides = super::zeroed(new_sizes.len());
    let mut view_d = new_sizes.len() as isize - 1;
    let mut chunk_base_stride = *strides.last().unwrap();
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..sizes.len()).rev() {
        tensor_numel *= sizes[tensor_d];
        let chunk_ends = tensor_d == 0
            || (sizes[tensor_d - 1] != 1
                && strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= new_sizes[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(new_strides)
}

/// The first pair of adjacent dims whose strides break row-major contiguity, in words.
fn explain_not_viewable(sizes: &[usize], strides: &[usize]) -> String {
    for i in 0..sizes.len().saturating_sub(1) {
        if sizes[i] != 1 && sizes[i + 1] != 1 && strides[i] != strides[i + 1] * sizes[i + 1] {
            return format!(
                "dims {i} and {} are not contiguous with each other (stride[{i}] = {} but \
                 stride[{}] × size[{}] = {})",
                i + 1,
                strides[i],
                i + 1,
                i + 1,
                strides[i + 1] * sizes[i + 1]
            );
        }
    }
    "the dims to merge are not contiguous with each other".to_string()
}
