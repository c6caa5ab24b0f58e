//! `einsum` against a naive loop over every assignment of the subscripts (written here, in
//! f64), on contiguous and strided inputs, with PyTorch's values for a few equations, its
//! implicit-output rules, ellipsis alignment and size-1 broadcasting, and its errors.

use crate::common;

use namedtensor::{DynTensor, ErrorKind, einsum, try_einsum};
use proptest::prelude::*;

/// The reference: for an equation of letters only with an explicit output, sums the product
/// of the operands' elements over every assignment of the letters (a size-1 dim reads index
/// 0 for any value of its letter: broadcasting).
fn naive(equation: &str, ops: &[(Vec<f64>, Vec<usize>)]) -> (Vec<f64>, Vec<usize>) {
    let (lhs, out) = equation.split_once("->").expect("explicit output");
    let terms: Vec<&[u8]> = lhs.split(',').map(str::as_bytes).collect();
    let mut letters: Vec<u8> = terms.concat();
    letters.sort();
    letters.dedup();
    let size = |c: u8| {
        terms
            .iter()
            .zip(ops)
            .flat_map(|(t, (_, shape))| t.iter().zip(shape).filter(move |(l, _)| **l == c))
            .map(|(_, &s)| s)
            .max()
            .unwrap()
    };
    let sizes: Vec<usize> = letters.iter().map(|&c| size(c)).collect();
    let out = out.as_bytes();
    let out_shape: Vec<usize> = out.iter().map(|&c| size(c)).collect();
    let mut result = vec![0.0; out_shape.iter().product()];
    let at = |c: u8, idx: &[usize]| idx[letters.iter().position(|&l| l == c).unwrap()];
    let mut idx = vec![0usize; letters.len()];
    if sizes.contains(&0) {
        return (result, out_shape);
    }
    loop {
        let mut p = 1.0;
        for (t, (data, shape)) in terms.iter().zip(ops) {
            let mut flat = 0;
            for (&c, &s) in t.iter().zip(shape) {
                flat = flat * s + if s == 1 { 0 } else { at(c, &idx) };
            }
            p *= data[flat];
        }
        let mut o = 0;
        for (&c, &s) in out.iter().zip(&out_shape) {
            o = o * s + at(c, &idx);
        }
        result[o] += p;
        // Next assignment (odometer).
        let mut d = letters.len();
        loop {
            if d == 0 {
                return (result, out_shape);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < sizes[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn operands(shapes: &[&[usize]], seed: u64) -> Vec<(Vec<f64>, Vec<usize>)> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let n = s.iter().product();
            (common::floats(n, seed + i as u64, -2.0, 2.0), s.to_vec())
        })
        .collect()
}

fn tensors(ops: &[(Vec<f64>, Vec<usize>)]) -> Vec<DynTensor<f64>> {
    ops.iter()
        .map(|(v, s)| DynTensor::from_vec(v.clone(), s))
        .collect()
}

fn assert_close(got: &DynTensor<f64>, want: &(Vec<f64>, Vec<usize>), what: &str) {
    assert_eq!(got.shape(), &want.1[..], "{what}: shape");
    for (i, (g, w)) in got.to_vec().iter().zip(&want.0).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
            "{what}: element {i}: {g} vs {w}"
        );
    }
}

/// Letters-only equations with explicit outputs, each checked against the naive loop.
const CASES: &[(&str, &[&[usize]])] = &[
    ("ij,jk->ik", &[&[2, 3], &[3, 4]]),
    ("bij,bjk->bik", &[&[2, 3, 4], &[2, 4, 5]]),
    ("bhqd,bhkd->bhqk", &[&[2, 2, 3, 4], &[2, 2, 5, 4]]),
    ("ii->", &[&[3, 3]]),
    ("ii->i", &[&[4, 4]]),
    ("bii->bi", &[&[2, 3, 3]]),
    ("iij->j", &[&[2, 2, 4]]),
    ("iji->ij", &[&[3, 2, 3]]),
    ("i,j->ij", &[&[2], &[3]]),
    ("ij,ij->ij", &[&[2, 3], &[2, 3]]),
    ("ij,ij->", &[&[2, 3], &[2, 3]]),
    ("ij->", &[&[2, 3]]),
    ("ij->j", &[&[2, 3]]),
    ("ijk->kji", &[&[2, 3, 4]]),
    ("ij,jk,kl->il", &[&[2, 3], &[3, 4], &[4, 2]]),
    ("bn,anm,bm->ba", &[&[2, 3], &[4, 3, 5], &[2, 5]]),
    ("ij,kj->ik", &[&[2, 3], &[4, 1]]),
    ("ij,jk->ik", &[&[2, 1], &[3, 4]]),
    ("ij,ij->ij", &[&[2, 3], &[1, 3]]),
    ("abc,cd,de->abe", &[&[2, 1, 3], &[3, 2], &[2, 2]]),
    ("ijk,jil->kl", &[&[2, 3, 4], &[3, 2, 5]]),
    ("i,i,i->i", &[&[3], &[3], &[3]]),
    ("i,i,i->", &[&[3], &[1], &[3]]),
    ("ab,cd->abcd", &[&[2, 1], &[1, 3]]),
    ("ij,jk->ik", &[&[0, 3], &[3, 2]]),
    ("ij,jk->ik", &[&[2, 0], &[0, 2]]),
    ("->", &[&[]]),
    (",->", &[&[], &[]]),
];

#[test]
fn equations_match_a_naive_loop() {
    for (k, (eq, shapes)) in CASES.iter().enumerate() {
        let ops = operands(shapes, 10 * k as u64);
        let ts = tensors(&ops);
        let refs: Vec<&DynTensor<f64>> = ts.iter().collect();
        assert_close(&einsum(eq, &refs), &naive(eq, &ops), eq);
    }
}

#[test]
fn ellipses_align_at_the_right_and_broadcast() {
    // Each pair: an equation with `...` and the same with the ellipsis' dims spelled out.
    let cases: &[(&str, &str, &[&[usize]])] = &[
        (
            "...ij,...jk->...ik",
            "xyij,yjk->xyik",
            &[&[2, 1, 3, 4], &[5, 4, 2]],
        ),
        (
            "...chw,c->...hw",
            "xychw,c->xyhw",
            &[&[2, 3, 4, 2, 2], &[4]],
        ),
        ("b...,b...->b...", "bxy,bxy->bxy", &[&[2, 3, 1], &[2, 3, 4]]),
        ("i...,i...->i...", "ixy,iy->ixy", &[&[2, 1, 3], &[2, 3]]),
        ("...i,...i->...", "xyi,yi->xy", &[&[2, 1, 3], &[5, 3]]),
        ("...ij->...ji", "xij->xji", &[&[4, 2, 3]]),
        ("...ij->ji", "xij->ji", &[&[4, 2, 3]]),
        ("a...b,...b->a...", "axb,xb->ax", &[&[2, 3, 4], &[3, 4]]),
        ("...ii->...i", "xii->xi", &[&[2, 3, 3]]),
    ];
    for (k, (eq, spelled, shapes)) in cases.iter().enumerate() {
        let ops = operands(shapes, 100 + k as u64);
        let ts = tensors(&ops);
        let refs: Vec<&DynTensor<f64>> = ts.iter().collect();
        assert_close(&einsum(eq, &refs), &naive(spelled, &ops), eq);
    }
    // The ellipsis may cover no dims, and the output may have one that no input fills.
    let v = DynTensor::from_vec(vec![1.0, 2.0], &[2]);
    assert_eq!(einsum("...i,...i", &[&v, &v]).item(), 5.0);
    assert_eq!(einsum("i->i...", &[&v]).to_vec(), vec![1.0, 2.0]);
}

#[test]
fn implicit_outputs_follow_pytorch() {
    // Values and shapes printed by torch.einsum (PyTorch 2.x).
    let a = DynTensor::<f64>::arange(0.0, 6.0, 1.0).view(&[2, 3]);
    let at = a.t();
    assert_eq!(
        einsum("ij,jk", &[&a, &at]).to_vec(),
        vec![5.0, 14.0, 14.0, 50.0]
    );
    assert_eq!(
        einsum("ij, jk -> ik", &[&a, &at]).to_vec(),
        vec![5.0, 14.0, 14.0, 50.0]
    );
    assert_eq!(einsum("ij,jk->", &[&a, &at]).item(), 83.0);
    let abc = einsum("ij,jk,kl->il", &[&a, &at, &a]);
    assert_eq!(abc.to_vec(), vec![42.0, 61.0, 80.0, 150.0, 214.0, 278.0]);
    // Output letters in ASCII order, capitals first.
    assert_eq!(einsum("ba", &[&a]).shape(), &[3, 2]);
    assert_eq!(
        einsum("ba", &[&a]).to_vec(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    assert_eq!(einsum("Ba", &[&a]).to_vec(), a.to_vec());
    assert_eq!(einsum("aB", &[&a]).shape(), &[3, 2]);
    let m = DynTensor::<f64>::arange(0.0, 9.0, 1.0).view(&[3, 3]);
    assert_eq!(einsum("ii", &[&m]).item(), 12.0);
    assert_eq!(einsum("ii->i", &[&m]).to_vec(), vec![0.0, 4.0, 8.0]);
    assert_eq!(
        einsum("...ij->ji", &[&DynTensor::<f64>::ones(&[4, 2, 3])]).to_vec(),
        vec![4.0; 6]
    );
    // A permutation is a view of the operand, as in PyTorch.
    assert!(einsum("ij->ji", &[&a]).shares_storage(&a));
}

#[test]
fn strided_inputs_give_the_contiguous_result() {
    let ops = operands(&[&[3, 4], &[4, 3]], 7);
    let ts = tensors(&ops);
    let want = einsum("ij,jk->ik", &[&ts[0], &ts[1]]).to_vec();
    // The first operand transposed twice (strides [1, 3]), the second at an offset, stepped.
    let a = ts[0].t().contiguous().t();
    let big = DynTensor::<f64>::zeros(&[30]);
    let b = big.narrow(0, 5, 24).slice(0, None, None, 2).view(&[4, 3]);
    b.copy_(&ts[1]);
    assert_eq!(a.stride(), &[1, 3]);
    assert_eq!(b.stride(), &[6, 2]);
    let got = einsum("ij,jk->ik", &[&a, &b]).to_vec();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12);
    }
    // A diagonal of a transposed view, and an expanded (stride-0) operand.
    let m = DynTensor::<f64>::arange(0.0, 9.0, 1.0).view(&[3, 3]);
    assert_eq!(einsum("ii->i", &[&m.t()]).to_vec(), vec![0.0, 4.0, 8.0]);
    let row = DynTensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]).expand(&[4, 3]);
    assert_eq!(einsum("ij->i", &[&row]).to_vec(), vec![6.0; 4]);
    assert_eq!(einsum("ij,ij->", &[&row, &row]).item(), 56.0);
}

#[test]
fn bad_equations_are_errors_naming_the_problem() {
    let a = DynTensor::<f32>::ones(&[2, 3]);
    let b = DynTensor::<f32>::ones(&[4, 5]);
    let sq = DynTensor::<f32>::ones(&[2, 3, 4]);
    let cases: &[(&str, &[&DynTensor<f32>], ErrorKind, &str)] = &[
        (
            "ij,jk->ik",
            &[&a, &b],
            ErrorKind::ShapeMismatch,
            "subscript `j` has size 4 in operand 1 but size 3 in operand 0",
        ),
        (
            "ij,jk",
            &[&a],
            ErrorKind::InvalidArgument,
            "has 2 operand terms but 1 tensors were given",
        ),
        (
            "i",
            &[&a],
            ErrorKind::ShapeMismatch,
            "operand 0 has 2 dims (shape [2, 3]) but its term `i` names 1 and has no `...`",
        ),
        ("ijk...", &[&a], ErrorKind::ShapeMismatch, "names 3"),
        (
            "i.j",
            &[&a],
            ErrorKind::InvalidArgument,
            "a `.` that is not part of `...`",
        ),
        (
            "...i...",
            &[&a],
            ErrorKind::InvalidArgument,
            "more than one `...`",
        ),
        (
            "i1",
            &[&a],
            ErrorKind::InvalidArgument,
            "has `1`: subscripts are the letters",
        ),
        (
            "ij->iij",
            &[&a],
            ErrorKind::InvalidArgument,
            "subscript `i` appears more than once in the output",
        ),
        (
            "ij->k",
            &[&a],
            ErrorKind::InvalidArgument,
            "the output's subscript `k` is in no operand's term",
        ),
        (
            "ij->i->j",
            &[&a],
            ErrorKind::InvalidArgument,
            "more than one `->`",
        ),
        (
            "iij->j",
            &[&sq],
            ErrorKind::ShapeMismatch,
            "subscript `i` is repeated in operand 0",
        ),
        (
            "...i,...i->...",
            &[&sq, &b],
            ErrorKind::ShapeMismatch,
            "dim 1 of `...` has size 4 in operand 1 but size 3 in operand 0",
        ),
    ];
    for (eq, ops, kind, message) in cases {
        let e = try_einsum(eq, ops).unwrap_err();
        assert_eq!(e.kind(), *kind, "{eq}: {e}");
        assert!(e.to_string().contains("einsum"), "{eq}: {e}");
        assert!(e.to_string().contains(message), "{eq}: {e}");
    }
    assert!(try_einsum::<f32>("", &[]).is_err());
    assert_eq!(a.to_vec(), vec![1.0; 6], "inputs untouched");
}

/// Equations over random sizes (1 to 3, with size-1 dims broadcasting), with random layouts.
const RANDOM: &[&str] = &[
    "ij,jk->ik",
    "bij,bjk->bik",
    "ij,kj->ki",
    "ijk,ikl,lm->jm",
    "ab,ab->a",
    "ii,ij->j",
    "abc->cab",
    "a,b,c->abc",
];

proptest! {
    #![proptest_config(common::proptest_cases(64))]

    #[test]
    fn random_sizes_and_layouts_match_the_naive_loop(
        which in 0..RANDOM.len(),
        sizes in prop::collection::vec(1usize..4, 13),
        transpose in prop::collection::vec(any::<bool>(), 3),
        seed in 0u64..1000,
    ) {
        let eq = RANDOM[which];
        let lhs = eq.split_once("->").unwrap().0;
        let size = |c: u8| sizes[(c - b'a') as usize];
        let shapes: Vec<Vec<usize>> =
            lhs.split(',').map(|t| t.bytes().map(size).collect()).collect();
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let ops = operands(&refs, seed);
        // Transposed layouts: the same values read through reversed strides.
        let ts: Vec<DynTensor<f64>> = tensors(&ops)
            .into_iter()
            .zip(&transpose)
            .map(|(t, &tr)| {
                if tr && t.dim() > 1 {
                    let rev: Vec<isize> = (0..t.dim() as isize).rev().collect();
                    t.permute(&rev).contiguous().permute(&rev)
                } else {
                    t
                }
            })
            .collect();
        let trefs: Vec<&DynTensor<f64>> = ts.iter().collect();
        assert_close(&einsum(eq, &trefs), &naive(eq, &ops), eq);
    }
}
