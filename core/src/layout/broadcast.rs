//! PyTorch/NumPy broadcasting of shapes.

use crate::error::{Error, ErrorKind, Result};

/// The broadcast shape of `a` and `b`: shapes are right-aligned, and each pair of sizes must be
/// equal or contain a 1.
///
/// ```
/// use namedtensor::layout::broadcast_shapes;
/// assert_eq!(broadcast_shapes("add", &[5, 1, 4, 1], &[3, 1, 1]).unwrap(), vec![5, 3, 4, 1]);
/// assert!(broadcast_shapes("add", &[5, 2, 4, 1], &[3, 1, 1]).is_err());
/// ```
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = super::zeroed(rank);
    for i in 0..rank {
        let sa = if i < a.len() { a[a.len() - 1 - i] } else { 1 };
        let sb = if i < b.len() { b[b.len() - 1 - i] } else { 1 };
        out[rank - 1 - i] = if sa == sb || sb == 1 {
            sa
        } else if sa == 1 {
            sb
        } else {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                op,
                format!(
                    "shapes {a:?} and {b:?} cannot be broadcast: size {sa} (dim {} of the first) \
                     and size {sb} (dim {} of the second) differ and neither is 1",
                    a.len() as isize - 1 - i as isize,
                    b.len() as isize - 1 - i as isize
                ),
            ));
        };
    }
    Ok(out)
}
