//! Copies that rearrange elements: `flip` (reversed dims) and the triangular masks of
//! `tril`/`triu`.

use super::host_buffer::HostBuffer;
use super::parallel::for_each_row_chunk;
use super::pool::take as take_buffer;
use crate::layout::Layout;

/// The elements of `layout` over `src` in row-major order, with the dims where `flip` is
/// true read backwards.
pub fn flip_to_vec<E: Copy + Send + Sync>(
    src: &[E],
    layout: &Layout,
    flip: &[bool],
) -> HostBuffer<E> {
    let n = layout.numel();
    if n == 0 {
        return HostBuffer::new();
    }
    // Output index 0 reads at `base`; a flipped dim walks its stride backwards.
    let mut base = layout.offset() as isize;
    let mut dims: Vec<(usize, isize)> = Vec::with_capacity(layout.rank());
    for ((&size, &stride), &f) in layout.sizes().iter().zip(layout.strides()).zip(flip) {
        let stride = stride as isize;
        if f {
            base += (size as isize - 1) * stride;
        }
        if size == 1 {
            continue;
        }
        let stride = if f { -stride } else { stride };
        // Merge with the previous dim where the two are one run (row-major coalescing).
        match dims.last_mut() {
            Some(last) if last.1 == stride * size as isize => *last = (last.0 * size, stride),
            _ => dims.push((size, stride)),
        }
    }
    let (row_len, step) = dims.pop().unwrap_or((1, 0));
    let rows = n / row_len;
    let mut out: HostBuffer<E> = take_buffer(n);
    for_each_row_chunk(
        &mut out.spare_capacity_mut()[..n],
        rows,
        row_len,
        |range, chunk| {
            for (r, dst) in range.zip(chunk.chunks_mut(row_len)) {
                let (mut rem, mut start) = (r, base);
                for &(size, stride) in dims.iter().rev() {
                    start += (rem % size) as isize * stride;
                    rem /= size;
                }
                for (i, d) in dst.iter_mut().enumerate() {
                    d.write(src[(start + i as isize * step) as usize]);
                }
            }
        },
    );
    // SAFETY: `rows · row_len == n`; the chunks cover every row once and each row writes
    // all of its `row_len` slots.
    unsafe { out.set_len(n) };
    out
}

/// Zeroes, in a row-major stack of `m × n` matrices, the elements above diagonal `k` (for
/// `lower`, as `tril` keeps `j ≤ i + k`) or below it (`triu` keeps `j ≥ i + k`).
pub fn mask_triangle<E: Copy + Send + Sync>(
    data: &mut [E],
    m: usize,
    n: usize,
    k: isize,
    lower: bool,
    zero: E,
) {
    if data.is_empty() {
        return;
    }
    let rows = data.len() / n;
    for_each_row_chunk(data, rows, n, |range, chunk| {
        for (r, row) in range.zip(chunk.chunks_mut(n)) {
            // Column `i + k` is on the diagonal; positions are clamped to 0..=n.
            let col = |offset: isize| ((r % m) as isize + k + offset).clamp(0, n as isize);
            if lower {
                row[col(1) as usize..].fill(zero);
            } else {
                row[..col(0) as usize].fill(zero);
            }
        }
    });
}
