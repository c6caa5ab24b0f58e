//! Python-style dim and index normalisation (negative values count from the end).

use crate::error::{Error, ErrorKind, Result};

/// Maps `dim` in `-rank..rank` to `0..rank`.
///
/// ```
/// use namedtensor::layout::normalize_dim;
/// assert_eq!(normalize_dim("sum", -1, 3).unwrap(), 2);
/// assert!(normalize_dim("sum", 3, 3).is_err());
/// ```
pub fn normalize_dim(op: &'static str, dim: isize, rank: usize) -> Result<usize> {
    let r = rank as isize;
    if dim >= r || dim < -r {
        return Err(Error::dim_out_of_range(op, dim, rank));
    }
    Ok(if dim < 0 {
        (dim + r) as usize
    } else {
        dim as usize
    })
}

/// Maps the position `dim` of a dim inserted into a tensor of rank `rank` (`unsqueeze`,
/// `stack`), in `-(rank + 1)..=rank`, to `0..=rank`.
#[doc(hidden)]
pub fn normalize_new_dim(op: &'static str, dim: isize, rank: usize) -> Result<usize> {
    normalize_dim(op, dim, rank + 1).map_err(|_| Error::new_dim_out_of_range(op, dim, rank))
}

/// Maps `dim` of a 0-d tensor that `op` takes as one entry along a single dim (PyTorch's
/// rule for `sort`, `topk`, `flatten`) to 0: only 0 and -1 are valid.
#[doc(hidden)]
pub fn normalize_dim_0d(op: &'static str, dim: isize) -> Result<usize> {
    match dim {
        0 | -1 => Ok(0),
        _ => Err(Error::dim_out_of_range_0d(op, dim)),
    }
}

/// Maps `index` in `-size..size` to `0..size` for dim `dim` of `shape`.
///
/// ```
/// use namedtensor::layout::normalize_index;
/// assert_eq!(normalize_index("select", -1, 0, &[4]).unwrap(), 3);
/// assert!(normalize_index("select", 4, 0, &[4]).is_err());
/// ```
pub fn normalize_index(
    op: &'static str,
    index: isize,
    dim: usize,
    shape: &[usize],
) -> Result<usize> {
    let size = shape[dim] as isize;
    if index >= size || index < -size {
        return Err(Error::new(
            ErrorKind::IndexOutOfRange,
            op,
            format!("index {index} is out of range for dim {dim} of size {size} (shape {shape:?})"),
        ));
    }
    Ok(if index < 0 {
        (index + size) as usize
    } else {
        index as usize
    })
}
