//! Property tests: random shapes (rank 0–6, sizes including 0 and 1) and random chains of
//! views, checked element by element against a model that never looks at strides.
//!
//! The base tensor holds its own storage positions (`arange`), so every element read through
//! a view tells which storage slot the view reached. The model keeps, for each logical index
//! in row-major order, the storage position it must reach, and transforms that table by plain
//! index arithmetic for each view op.

use crate::common;

use namedtensor::{DynTensor, ErrorKind};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Model {
    shape: Vec<usize>,
    pos: Vec<i64>,
}

fn row_major_index(shape: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &s)| acc * s + i)
}

fn all_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut lin| {
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = lin % shape[d];
                lin /= shape[d];
            }
            idx
        })
        .collect()
}

impl Model {
    fn remap(&self, shape: Vec<usize>, old_index: impl Fn(&[usize]) -> Vec<usize>) -> Model {
        let pos = all_indices(&shape)
            .iter()
            .map(|idx| self.pos[row_major_index(&self.shape, &old_index(idx))])
            .collect();
        Model { shape, pos }
    }
}

/// Applies one random view op (chosen and parameterised by `seed`) to both.
fn step(
    t: &DynTensor<i64>,
    m: &Model,
    storage_len: usize,
    seed: u64,
) -> (DynTensor<i64>, Model, String) {
    let rank = m.shape.len();
    let pick = |k: u64, n: usize| -> usize {
        if n == 0 {
            0
        } else {
            ((seed >> (8 * k)) % n as u64) as usize
        }
    };
    match seed % 9 {
        0 if rank > 0 => {
            // permute: a rotation by a random amount, then a swap
            let r = pick(1, rank);
            let mut order: Vec<usize> = (0..rank).map(|i| (i + r) % rank).collect();
            order.swap(pick(2, rank), pick(3, rank));
            let o: Vec<isize> = order.iter().map(|&d| d as isize).collect();
            let shape: Vec<usize> = order.iter().map(|&d| m.shape[d]).collect();
            let model = m.remap(shape, |idx| {
                let mut old = vec![0; rank];
                for (i, &d) in order.iter().enumerate() {
                    old[d] = idx[i];
                }
                old
            });
            (t.permute(&o), model, format!("permute({o:?})"))
        }
        1 if rank > 0 => {
            let d = pick(1, rank);
            let size = m.shape[d];
            let start = pick(2, size + 1);
            let len = pick(3, size - start + 1);
            let mut shape = m.shape.clone();
            shape[d] = len;
            let model = m.remap(shape, |idx| {
                let mut old = idx.to_vec();
                old[d] += start;
                old
            });
            (
                t.narrow(d as isize, start as isize, len),
                model,
                format!("narrow({d}, {start}, {len})"),
            )
        }
        2 if rank > 0 => {
            let d = pick(1, rank);
            let size = m.shape[d];
            let start = pick(2, size + 1);
            let end = start + pick(3, size - start + 1);
            let stepn = 1 + pick(4, 3);
            let len = (end - start).div_ceil(stepn);
            let mut shape = m.shape.clone();
            shape[d] = len;
            let model = m.remap(shape, |idx| {
                let mut old = idx.to_vec();
                old[d] = start + idx[d] * stepn;
                old
            });
            (
                t.slice(d as isize, Some(start as isize), Some(end as isize), stepn),
                model,
                format!("slice({d}, {start}..{end}, step {stepn})"),
            )
        }
        3 => {
            // expand: size-1 dims grow, and maybe one new leading dim
            let lead = pick(1, 2);
            let mut target: Vec<isize> = vec![1 + pick(2, 3) as isize; lead];
            for (i, &s) in m.shape.iter().enumerate() {
                target.push(if s == 1 {
                    1 + pick(3 + i as u64 % 4, 3) as isize
                } else {
                    -1
                });
            }
            let shape: Vec<usize> = target
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    if s == -1 {
                        m.shape[i - lead]
                    } else {
                        s as usize
                    }
                })
                .collect();
            let model = m.remap(shape, |idx| {
                idx[lead..]
                    .iter()
                    .zip(&m.shape)
                    .map(|(&i, &s)| if s == 1 { 0 } else { i })
                    .collect()
            });
            (t.expand(&target), model, format!("expand({target:?})"))
        }
        4 if rank > 0 && m.shape.iter().all(|&s| s > 0) => {
            let d = pick(1, rank);
            let i = pick(2, m.shape[d]);
            let mut shape = m.shape.clone();
            shape.remove(d);
            let model = m.remap(shape, |idx| {
                let mut old = idx.to_vec();
                old.insert(d, i);
                old
            });
            (
                t.select(d as isize, i as isize),
                model,
                format!("select({d}, {i})"),
            )
        }
        5 if rank < 6 => {
            let d = pick(1, rank + 1);
            let mut shape = m.shape.clone();
            shape.insert(d, 1);
            let model = m.remap(shape, |idx| {
                let mut old = idx.to_vec();
                old.remove(d);
                old
            });
            (t.unsqueeze(d as isize), model, format!("unsqueeze({d})"))
        }
        6 if rank > 1 => {
            let (a, b) = (pick(1, rank), pick(2, rank));
            let mut shape = m.shape.clone();
            shape.swap(a, b);
            let model = m.remap(shape, |idx| {
                let mut old = idx.to_vec();
                old.swap(a, b);
                old
            });
            (
                t.transpose(a as isize, b as isize),
                model,
                format!("transpose({a}, {b})"),
            )
        }
        7 if rank > 0 => {
            let d = pick(1, rank);
            if m.shape[d] != 1 {
                return (
                    t.squeeze_dim(d as isize),
                    m.clone(),
                    format!("squeeze({d}) no-op"),
                );
            }
            let mut shape = m.shape.clone();
            shape.remove(d);
            let model = m.remap(shape, |idx| {
                let mut old = idx.to_vec();
                old.insert(d, 0);
                old
            });
            (t.squeeze_dim(d as isize), model, format!("squeeze({d})"))
        }
        8 => {
            // as_strided over the whole storage: positions follow the definition directly
            let r = pick(1, 4);
            let sizes: Vec<usize> = (0..r).map(|i| 1 + pick(2 + i as u64, 3)).collect();
            let strides: Vec<usize> = (0..r).map(|i| pick(5 + i as u64 % 3, 5)).collect();
            let reach: usize = sizes
                .iter()
                .zip(&strides)
                .map(|(&s, &st)| (s - 1) * st)
                .sum();
            if reach >= storage_len {
                return (t.shallow_clone(), m.clone(), "as_strided skipped".into());
            }
            let offset = pick(7, storage_len - reach);
            let pos = all_indices(&sizes)
                .iter()
                .map(|idx| {
                    (offset
                        + idx
                            .iter()
                            .zip(&strides)
                            .map(|(&i, &s)| i * s)
                            .sum::<usize>()) as i64
                })
                .collect();
            (
                t.as_strided(&sizes, &strides, offset),
                Model {
                    shape: sizes.clone(),
                    pos,
                },
                format!("as_strided({sizes:?}, {strides:?}, {offset})"),
            )
        }
        _ => (t.shallow_clone(), m.clone(), "noop".into()),
    }
}

fn check(t: &DynTensor<i64>, m: &Model, trace: &[String]) {
    assert_eq!(t.shape(), &m.shape[..], "shape after {trace:?}");
    assert_eq!(t.to_vec(), m.pos, "elements after {trace:?}");
    for (k, idx) in all_indices(&m.shape).iter().enumerate().step_by(7) {
        assert_eq!(t.get(idx), m.pos[k], "get({idx:?}) after {trace:?}");
    }
}

fn shapes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![Just(0usize), Just(1), 2usize..5], 0..=6)
        .prop_filter("keep tests small", |s| s.iter().product::<usize>() <= 4096)
}

proptest! {
    #![proptest_config(common::proptest_cases(1500))]

    #[test]
    fn view_chains_reach_the_right_storage_slots(shape in shapes(), seeds in prop::collection::vec(any::<u64>(), 0..8)) {
        let n: usize = shape.iter().product();
        let storage_len = n.max(1);
        let base = DynTensor::<i64>::arange(0, storage_len as i64, 1);
        let mut t = if n == 0 {
            base.narrow(0, 0, 0).reshape(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>())
        } else {
            base.view(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>())
        };
        let mut m = Model { shape: shape.clone(), pos: (0..n as i64).collect() };
        let mut trace = vec![];
        check(&t, &m, &trace);
        for &seed in &seeds {
            let (t2, m2, what) = step(&t, &m, storage_len, seed);
            trace.push(what);
            check(&t2, &m2, &trace);
            prop_assert!(t2.numel() == 0 || t2.shares_storage(&base) || n == 0);
            t = t2;
            m = m2;
        }

        // contiguous: same elements; no copy when already contiguous
        let c = t.contiguous();
        prop_assert!(c.is_contiguous());
        prop_assert_eq!(c.to_vec(), m.pos.clone());
        if t.is_contiguous() {
            prop_assert!(c.shares_storage(&t));
        }
        // reshape to a flat vector and back: same elements in the same order
        let flat = t.reshape(&[-1]);
        prop_assert_eq!(flat.to_vec(), m.pos.clone());
        let shape_back: Vec<isize> = m.shape.iter().map(|&s| s as isize).collect();
        prop_assert_eq!(flat.reshape(&shape_back).to_vec(), m.pos.clone());
        // view either works with the same elements, or says why and reshape still works
        match t.try_view(&[-1]) {
            Ok(v) => {
                prop_assert_eq!(v.to_vec(), m.pos.clone());
                prop_assert!(v.shares_storage(&t));
            }
            Err(e) => {
                prop_assert_eq!(e.kind(), ErrorKind::NotViewable);
                prop_assert!(!t.is_contiguous());
                prop_assert!(e.to_string().contains("reshape"));
            }
        }
        // a contiguous tensor can always be viewed
        prop_assert_eq!(c.view(&[-1]).to_vec(), m.pos.clone());
        // a borrowed slice exactly when contiguous, holding exactly the view's elements;
        // with_contiguous reads the same elements either way
        match t.as_slice() {
            Some(s) => {
                prop_assert!(t.is_contiguous());
                prop_assert_eq!(&*s, &m.pos[..]);
            }
            None => prop_assert!(!t.is_contiguous()),
        }
        prop_assert_eq!(t.with_contiguous(|s| s.to_vec()), m.pos.clone());
        // flatten of all dims equals reshape(-1)
        prop_assert_eq!(t.flatten(0, -1).to_vec(), m.pos.clone());
        // clone is a deep, contiguous copy with equal elements
        let cl = t.clone();
        prop_assert!(!cl.shares_storage(&t));
        prop_assert_eq!(cl.to_vec(), m.pos);
    }

    #[test]
    fn view_succeeds_exactly_when_a_split_of_mergeable_dims(rows in 1usize..5, cols in 1usize..5, k in 1usize..4) {
        // [rows, cols*k] viewed as [rows, cols, k] always works; its transpose merges only
        // when one side has size 1.
        let t = DynTensor::<i64>::arange(0, (rows * cols * k) as i64, 1).view(&[rows as isize, (cols * k) as isize]);
        let v = t.view(&[rows as isize, cols as isize, k as isize]);
        prop_assert_eq!(v.stride(), &[cols * k, k, 1][..]);
        let tt = t.t();
        let merged = tt.try_view(&[-1]);
        prop_assert_eq!(merged.is_ok(), rows == 1 || cols * k == 1);
    }
}

/// Storage positions of every index of a layout, in row-major order (the oracle).
fn positions(sizes: &[usize], strides: &[usize], offset: usize) -> Vec<usize> {
    all_indices(sizes)
        .iter()
        .map(|idx| offset + idx.iter().zip(strides).map(|(&i, &s)| i * s).sum::<usize>())
        .collect()
}

proptest! {
    #![proptest_config(common::proptest_cases(3000))]

    /// `has_internal_overlap` agrees with a brute-force search for a repeated position, and
    /// `is_provably_non_overlapping` never vouches for a layout that overlaps.
    #[test]
    fn overlap_checks_agree_with_brute_force(
        dims in prop::collection::vec((0usize..=4, 0usize..=13), 0..=5),
        offset in 0usize..3,
    ) {
        let sizes: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let strides: Vec<usize> = dims.iter().map(|d| d.1).collect();
        let layout = namedtensor::Layout::new(&sizes, &strides, offset).unwrap();
        let pos = positions(&sizes, &strides, offset);
        let mut sorted = pos.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let overlaps = sorted.len() != pos.len();
        prop_assert_eq!(layout.has_internal_overlap(), overlaps, "{:?}", layout);
        if layout.is_provably_non_overlapping() {
            prop_assert!(!overlaps, "vouched for an overlapping {:?}", layout);
        }
    }

    /// An in-place op through an `as_strided` view either adds 1 to each element it reaches
    /// exactly once (a view without overlap) or is refused and changes nothing.
    #[test]
    fn in_place_ops_through_strided_views_write_each_element_once_or_refuse(
        dims in prop::collection::vec((1usize..=4, 0usize..=9), 0..=5),
        offset in 0usize..3,
    ) {
        let sizes: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let strides: Vec<usize> = dims.iter().map(|d| d.1).collect();
        let pos = positions(&sizes, &strides, offset);
        let len = pos.iter().max().map_or(offset, |&p| p + 1);
        let base = DynTensor::<i64>::zeros(&[len]);
        let view = base.as_strided(&sizes, &strides, offset);
        let mut want = vec![0i64; len];
        let mut overlaps = false;
        for &p in &pos {
            want[p] += 1;
            overlaps |= want[p] > 1;
        }
        match view.try_add_scalar_(1) {
            Ok(_) => {
                prop_assert!(!overlaps);
                prop_assert_eq!(base.to_vec(), want);
            }
            Err(e) => {
                prop_assert!(overlaps);
                prop_assert_eq!(e.kind(), ErrorKind::OverlappingWrite);
                prop_assert_eq!(base.to_vec(), vec![0i64; len]);
            }
        }
    }
}

proptest! {
    /// Nested vectors and iteration read any view as indexing it element by element does:
    /// `to_vec2()[i][j] == t[i][j]`, `to_vec3` likewise, and `iter` yields `select(0, i)`.
    #[test]
    fn nested_vectors_and_iteration_follow_indexing(
        a in 0usize..4, b in 0usize..4, c in 1usize..4,
        transpose in any::<bool>(), offset in 0usize..2,
    ) {
        let base = DynTensor::<i64>::arange(0, ((a + offset) * b * c) as i64, 1)
            .view(&[(a + offset) as isize, b as isize, c as isize]);
        let t = base.narrow(0, offset as isize, a);
        let t = if transpose { t.transpose(0, 2) } else { t };
        let v3 = t.to_vec3();
        let s = t.shape().to_vec();
        prop_assert_eq!(v3.len(), s[0]);
        for (i, m) in v3.iter().enumerate() {
            prop_assert_eq!(m.len(), s[1]);
            for (j, row) in m.iter().enumerate() {
                for (k, &x) in row.iter().enumerate() {
                    let want = t.select(0, i as isize).select(0, j as isize).select(0, k as isize).item();
                    prop_assert_eq!(x, want);
                }
            }
        }
        let rows: Vec<DynTensor<i64>> = t.iter().collect();
        prop_assert_eq!(rows.len(), s[0]);
        for (i, r) in rows.iter().enumerate() {
            prop_assert_eq!(r.to_vec2(), v3[i].clone());
            prop_assert_eq!(Vec::<Vec<i64>>::try_from(r).unwrap(), v3[i].clone());
        }
        prop_assert!(t.try_to_vec2().is_err());
        prop_assert!(Vec::<i64>::try_from(&t).is_err());
    }
}

#[test]
fn a_zero_dim_tensor_does_not_iterate() {
    let t = DynTensor::<f32>::from_vec(vec![1.0], &[]);
    let err = t.try_iter().err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("0-dim"), "{err}");
}
