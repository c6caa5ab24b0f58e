//! Where a view sits inside the tensor it was made from, in that tensor's own index space:
//! what autograd needs to send a gradient between a view and its base, whatever the base's
//! strides are.

use super::{Layout, contiguous_strides};

impl Layout {
    /// This layout's elements as a view of a *contiguous* tensor of `base`'s shape, where both
    /// layouts index one storage: the layout `rel` such that element `i` of this view is
    /// element `rel(i)` of `base`'s row-major order. `None` when `base` may reach one element
    /// twice (it must pass [`Layout::is_provably_non_overlapping`]), when this view reaches an
    /// element outside `base`, or when its positions do not map linearly into `base`'s index
    /// space (an `as_strided` view across the dims of a strided `base`).
    ///
    /// For a contiguous `base` the map is a shift. Otherwise every storage position that
    /// `base` reaches has one index in it: with `base`'s dims
    /// of size > 1 taken from the largest stride down, each stride exceeds the positions all
    /// smaller ones reach together, so dividing by the strides in that order finds the index
    /// digit by digit. A view maps linearly when its offset and each of its strides decompose
    /// so, and no sum of them along the view carries past a dim of `base`.
    ///
    /// ```
    /// use namedtensor::Layout;
    /// let base = Layout::contiguous(&[4, 3]).unwrap().transpose(0, 1).unwrap(); // [3, 4]
    /// let column = base.select(1, 2).unwrap();               // base[:, 2]
    /// let rel = column.relative_to(&base).unwrap();
    /// assert_eq!((rel.sizes(), rel.strides(), rel.offset()), (&[3][..], &[4][..], 2));
    /// // Storage positions 1, 2 are base[1, 0] and base[2, 0]: four apart in row-major order.
    /// let skew = Layout::new(&[2], &[1], 1).unwrap().relative_to(&base).unwrap();
    /// assert_eq!((skew.strides(), skew.offset()), (&[4][..], 4));
    /// // Position 12 is past base's last element (11).
    /// assert!(Layout::new(&[2], &[2], 10).unwrap().relative_to(&base).is_none());
    /// ```
    pub fn relative_to(&self, base: &Layout) -> Option<Layout> {
        if self.numel() == 0 {
            return Some(Layout::repeated(self.sizes()));
        }
        if base.numel() == 0 || !base.is_provably_non_overlapping() {
            return None;
        }
        // A contiguous base's row-major order is its storage order: any view inside it (a
        // reshape across its dims included) is the same layout, shifted.
        if base.is_contiguous() {
            let offset = self.offset.checked_sub(base.offset)?;
            let rel = Layout::new(self.sizes(), self.strides(), offset).ok()?;
            return (rel.required_storage_len() <= base.numel()).then_some(rel);
        }
        let contiguous = contiguous_strides(base.sizes())?;
        // Base dims of size > 1 from the largest stride down, with their row-major strides.
        let mut dims: Vec<(usize, usize, usize)> = (0..base.rank())
            .filter(|&d| base.sizes()[d] > 1)
            .map(|d| (base.strides()[d], base.sizes()[d], contiguous[d]))
            .collect();
        dims.sort_unstable_by_key(|&(stride, _, _)| std::cmp::Reverse(stride));
        // The digits of a distance from the base's offset, one per entry of `dims`.
        let digits = |mut distance: usize| -> Option<Vec<usize>> {
            let out = dims
                .iter()
                .map(|&(stride, _, _)| {
                    let digit = distance / stride;
                    distance -= digit * stride;
                    digit
                })
                .collect();
            (distance == 0).then_some(out)
        };
        let row_major = |ds: &[usize]| -> usize {
            ds.iter()
                .zip(&dims)
                .map(|(&digit, &(_, _, c))| digit * c)
                .sum()
        };
        let start = digits(self.offset.checked_sub(base.offset)?)?;
        // The furthest digit the view reaches in each base dim.
        let mut reach = start.clone();
        let mut strides = Vec::with_capacity(self.rank());
        for (&size, &stride) in self.sizes().iter().zip(self.strides()) {
            if size == 1 {
                strides.push(0);
                continue;
            }
            let step = digits(stride)?;
            for (r, s) in reach.iter_mut().zip(&step) {
                *r = r.checked_add(s.checked_mul(size - 1)?)?;
            }
            strides.push(row_major(&step));
        }
        if reach.iter().zip(&dims).any(|(&r, &(_, size, _))| r >= size) {
            return None;
        }
        Layout::new(self.sizes(), &strides, row_major(&start)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of `view` against the row-major position `rel` gives it in `base`, found
    /// by searching `base`'s indices.
    fn check(view: &Layout, base: &Layout) {
        let rel = view.relative_to(base).expect("relatable");
        let base_positions: Vec<usize> = indices(base.sizes())
            .map(|i| base.storage_index(&i).unwrap())
            .collect();
        for i in indices(view.sizes()) {
            let pos = view.storage_index(&i).unwrap();
            assert_eq!(base_positions[rel.storage_index(&i).unwrap()], pos);
        }
    }

    fn indices(sizes: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
        let n: usize = sizes.iter().product();
        (0..n).map(move |mut k| {
            let mut i = vec![0; sizes.len()];
            for d in (0..sizes.len()).rev() {
                i[d] = k % sizes[d];
                k /= sizes[d];
            }
            i
        })
    }

    #[test]
    fn the_view_ops_of_a_strided_base_relate() {
        let c = Layout::contiguous(&[4, 5, 3]).unwrap();
        let bases = [
            c.clone(),
            c.permute(&[2, 0, 1]).unwrap(),
            c.narrow(1, 1, 3).unwrap(),
            c.narrow(2, 1, 2).unwrap().transpose(0, 2).unwrap(),
            Layout::new(&[3, 4], &[9, 2], 7).unwrap(),
        ];
        // A reshape across a contiguous base's dims, and a narrow of it.
        let flat = c.view(&[60]).unwrap();
        check(&flat, &c);
        check(&flat.narrow(0, 7, 20).unwrap(), &c);
        for base in &bases {
            let views = [
                base.clone(),
                base.select(0, 1).unwrap(),
                base.narrow(1, 1, 2).unwrap(),
                base.transpose(0, 1).unwrap(),
                base.narrow(0, 1, 1).unwrap().select(-1, 1).unwrap(),
                base.unsqueeze(1).unwrap(),
                base.slice(0, None, None, 2).unwrap(),
            ];
            for v in &views {
                check(v, base);
            }
        }
    }

    #[test]
    fn views_that_leave_their_base_or_do_not_map_linearly_do_not_relate() {
        let base = Layout::contiguous(&[4, 5])
            .unwrap()
            .narrow(1, 0, 3)
            .unwrap();
        // Position 3 is in the storage but not in base (its row holds columns 0..3).
        assert!(
            Layout::new(&[1], &[1], 3)
                .unwrap()
                .relative_to(&base)
                .is_none()
        );
        // Positions 1, 3, 5: the second is outside base.
        assert!(
            Layout::new(&[3], &[2], 1)
                .unwrap()
                .relative_to(&base)
                .is_none()
        );
        // Before base's offset.
        let late = Layout::contiguous(&[4, 5]).unwrap().select(0, 1).unwrap();
        assert!(
            Layout::new(&[1], &[1], 0)
                .unwrap()
                .relative_to(&late)
                .is_none()
        );
        // An overlapping base.
        let wide = Layout::contiguous(&[3]).unwrap().expand(&[2, 3]).unwrap();
        assert!(wide.relative_to(&wide).is_none());
        // Empty views relate to anything; nothing non-empty relates to an empty base.
        assert!(base.narrow(0, 1, 0).unwrap().relative_to(&base).is_some());
        let empty = Layout::new(&[1, 2, 0], &[6, 0, 7], 1).unwrap();
        assert!(
            Layout::new(&[1], &[1], 1)
                .unwrap()
                .relative_to(&empty)
                .is_none()
        );
        let empty = Layout::new(&[2, 0], &[5, 0], 5).unwrap();
        assert!(
            Layout::new(&[2, 2], &[5, 0], 5)
                .unwrap()
                .relative_to(&empty)
                .is_none()
        );
        // Past the end of a contiguous base.
        let c = Layout::contiguous(&[2, 3]).unwrap();
        assert!(
            Layout::new(&[2], &[1], 5)
                .unwrap()
                .relative_to(&c)
                .is_none()
        );
    }
}
