//! `einsum`: products and sums written as subscripts, `einsum("bij,bjk->bik", &[&a, &b])`,
//! with `torch.einsum`'s notation and rules.
//!
//! # Notation
//! - Each operand gets a term of letters (`a`–`z`, `A`–`Z`), one per dim; terms are separated
//!   by `,`. Spaces are ignored.
//! - `...` in a term stands for the dims its letters do not name. The ellipses of all
//!   operands are aligned at their right end and broadcast, like NumPy's shapes.
//! - `->` and the output's term are optional. Without them the output is the ellipsis' dims,
//!   then the letters that occur exactly once, in ASCII order (capitals first). With them,
//!   every output letter must occur in an input, once; an ellipsis that the output leaves out
//!   is summed over.
//! - A letter repeated in one term takes the diagonal (`"ii->i"`). Letters that the output
//!   lacks are summed over. A letter's dims must have equal sizes, except that a size of 1
//!   broadcasts.
//!
//! # Evaluation (invariants)
//! The result is built from tracked ops only (views, `sum_dims`, `mul`, `matmul`, `reshape`),
//! so it differentiates through autograd like they do. Each operand first loses its repeated
//! letters (a strided diagonal view) and the letters no other term uses (summed). The
//! operands are then combined left to right: letters both sides have that a later operand or
//! the output still needs are batch dims, the others are contracted, and the pair becomes one
//! batched matrix product (`matmul` through `gemm`; an elementwise product when nothing is
//! contracted). A letter is never contracted before the last operand that has it.

use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{DynTensor, or_panic};

/// One subscript: a letter, or the `k`-th dim of the aligned ellipsis (counted from its left
/// end). Ellipsis dims order before letters, as in an implicit output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    Ellipsis(usize),
    Letter(u8),
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Ellipsis(k) => write!(f, "dim {k} of `...`"),
            Label::Letter(c) => write!(f, "subscript `{}`", *c as char),
        }
    }
}

fn error(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, "einsum", message)
}

/// A term as written: the letters before and after its ellipsis (all of them in `before`
/// when it has none).
struct Term {
    before: Vec<u8>,
    ellipsis: bool,
    after: Vec<u8>,
}

/// Parses one term; `what` names it in errors ("operand 1", "the output").
fn parse_term(text: &str, what: &str) -> Result<Term> {
    let mut term = Term {
        before: Vec::new(),
        ellipsis: false,
        after: Vec::new(),
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() {
            if term.ellipsis {
                term.after.push(c);
            } else {
                term.before.push(c);
            }
            i += 1;
        } else if c == b'.' {
            if !text[i..].starts_with("...") {
                return Err(error(
                    ErrorKind::InvalidArgument,
                    format!("the term `{text}` of {what} has a `.` that is not part of `...`"),
                ));
            }
            if term.ellipsis {
                return Err(error(
                    ErrorKind::InvalidArgument,
                    format!("the term `{text}` of {what} has more than one `...`"),
                ));
            }
            term.ellipsis = true;
            i += 3;
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(error(
                ErrorKind::InvalidArgument,
                format!(
                    "the term `{text}` of {what} has `{ch}`: subscripts are the letters a-z \
                     and A-Z and `...`, terms are separated by `,`, the output follows `->`"
                ),
            ));
        }
    }
    Ok(term)
}

/// A checked equation: each operand's labels (one per dim, in order), the output's labels,
/// and every label's size after broadcasting.
struct Equation {
    inputs: Vec<Vec<Label>>,
    output: Vec<Label>,
    sizes: std::collections::BTreeMap<Label, usize>,
}

fn parse(equation: &str, shapes: &[&[usize]]) -> Result<Equation> {
    let compact: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match compact.split_once("->") {
        Some((_, r)) if r.contains("->") => {
            return Err(error(
                ErrorKind::InvalidArgument,
                format!("the equation `{equation}` has more than one `->`"),
            ));
        }
        Some((l, r)) => (l, Some(r)),
        None => (compact.as_str(), None),
    };
    let texts: Vec<&str> = lhs.split(',').collect();
    if texts.len() != shapes.len() {
        return Err(error(
            ErrorKind::InvalidArgument,
            format!(
                "the equation `{equation}` has {} operand terms but {} tensors were given",
                texts.len(),
                shapes.len()
            ),
        ));
    }
    let terms = texts
        .iter()
        .enumerate()
        .map(|(i, t)| parse_term(t, &format!("operand {i}")))
        .collect::<Result<Vec<_>>>()?;

    // How many dims each ellipsis covers, and the aligned ellipsis' rank.
    let mut covered = Vec::with_capacity(terms.len());
    for (i, (term, shape)) in terms.iter().zip(shapes).enumerate() {
        let letters = term.before.len() + term.after.len();
        let text = texts[i];
        let rank = shape.len();
        if term.ellipsis && letters > rank || !term.ellipsis && letters != rank {
            return Err(error(
                ErrorKind::ShapeMismatch,
                format!(
                    "operand {i} has {rank} dims (shape {shape:?}) but its term `{text}` names \
                     {letters}{}",
                    if term.ellipsis {
                        ""
                    } else {
                        " and has no `...` for the rest"
                    }
                ),
            ));
        }
        covered.push(if term.ellipsis { rank - letters } else { 0 });
    }
    let ell_rank = covered.iter().copied().max().unwrap_or(0);

    let labels_of = |term: &Term, covered: usize| -> Vec<Label> {
        let ell = (ell_rank - covered..ell_rank).map(Label::Ellipsis);
        let before = term.before.iter().map(|&c| Label::Letter(c));
        let after = term.after.iter().map(|&c| Label::Letter(c));
        before.chain(ell).chain(after).collect()
    };
    let inputs: Vec<Vec<Label>> = terms
        .iter()
        .zip(&covered)
        .map(|(t, &c)| labels_of(t, c))
        .collect();

    // Sizes: equal within a term (a diagonal), equal or 1 across terms.
    let mut sizes = std::collections::BTreeMap::new();
    let mut seen_in: std::collections::BTreeMap<Label, usize> = Default::default();
    for (i, (labels, shape)) in inputs.iter().zip(shapes).enumerate() {
        for (d, (&label, &size)) in labels.iter().zip(shape.iter()).enumerate() {
            if let Some(first) = labels[..d].iter().position(|&l| l == label) {
                if shape[first] != size {
                    return Err(error(
                        ErrorKind::ShapeMismatch,
                        format!(
                            "{label} is repeated in operand {i} (shape {shape:?}) \
                             but its dims {first} and {d} have sizes {} and {size}; a diagonal \
                             needs equal sizes",
                            shape[first]
                        ),
                    ));
                }
                continue;
            }
            match sizes.get(&label).copied() {
                Some(prev) if prev != size && prev != 1 && size != 1 => {
                    return Err(error(
                        ErrorKind::ShapeMismatch,
                        format!(
                            "{label} has size {size} in operand {i} but size {prev} in \
                             operand {}; sizes must be equal or 1 (shapes {:?})",
                            seen_in[&label], shapes
                        ),
                    ));
                }
                Some(prev) if prev != 1 => {}
                _ => {
                    sizes.insert(label, size);
                    seen_in.insert(label, i);
                }
            }
        }
    }

    let output = match rhs {
        Some(text) => {
            let term = parse_term(text, "the output")?;
            let labels = labels_of(&term, if term.ellipsis { ell_rank } else { 0 });
            for (d, &label) in labels.iter().enumerate() {
                if labels[..d].contains(&label) {
                    return Err(error(
                        ErrorKind::InvalidArgument,
                        format!("{label} appears more than once in the output `{text}`"),
                    ));
                }
                if !sizes.contains_key(&label) {
                    return Err(error(
                        ErrorKind::InvalidArgument,
                        format!(
                            "the output's {label} is in no operand's term \
                             (equation `{equation}`)"
                        ),
                    ));
                }
            }
            labels
        }
        None => {
            let count = |l: &Label| inputs.iter().flatten().filter(|&m| m == l).count();
            let mut letters: Vec<Label> = sizes
                .keys()
                .copied()
                .filter(|l| matches!(l, Label::Letter(_)) && count(l) == 1)
                .collect();
            letters.sort();
            (0..ell_rank).map(Label::Ellipsis).chain(letters).collect()
        }
    };
    Ok(Equation {
        inputs,
        output,
        sizes,
    })
}

/// Sums `t` over the dims at `dims` (none: `t` itself).
fn sum_over<E: Float>(t: DynTensor<E>, dims: &[usize], keepdim: bool) -> Result<DynTensor<E>> {
    if dims.is_empty() {
        return Ok(t);
    }
    let dims: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
    t.try_sum_dims(&dims, keepdim)
}

/// Operand `t` with each label once: a repeated label becomes the diagonal (one dim whose
/// stride is the sum of the repeats' strides), and the labels in `keep` only survive.
fn prepare<E: Float>(
    t: &DynTensor<E>,
    labels: &[Label],
    keep: impl Fn(Label) -> bool,
) -> Result<(DynTensor<E>, Vec<Label>)> {
    let mut unique: Vec<Label> = Vec::with_capacity(labels.len());
    for &l in labels {
        if !unique.contains(&l) {
            unique.push(l);
        }
    }
    let t = if unique.len() == labels.len() {
        t.shallow_clone()
    } else {
        // as_strided differentiates on a contiguous input (no copy when `t` is one).
        let base = t.try_contiguous()?;
        let (mut sizes, mut strides) = (Vec::new(), Vec::new());
        for &l in &unique {
            let dims = (0..labels.len()).filter(|&d| labels[d] == l);
            sizes.push(base.shape()[labels.iter().position(|&m| m == l).unwrap_or(0)]);
            strides.push(dims.map(|d| base.stride()[d]).sum());
        }
        base.try_as_strided(&sizes, &strides, base.storage_offset())?
    };
    let summed: Vec<usize> = (0..unique.len()).filter(|&d| !keep(unique[d])).collect();
    let kept = unique.iter().copied().filter(|&l| keep(l)).collect();
    Ok((sum_over(t, &summed, false)?, kept))
}

/// The position of each of `labels` in `of`.
fn positions(labels: &[Label], of: &[Label]) -> Vec<usize> {
    labels
        .iter()
        .map(|l| of.iter().position(|m| m == l).expect("label present"))
        .collect()
}

fn permuted<E: Float>(t: &DynTensor<E>, order: &[usize]) -> Result<DynTensor<E>> {
    let order: Vec<isize> = order.iter().map(|&d| d as isize).collect();
    t.try_permute(&order)
}

fn isizes(sizes: impl IntoIterator<Item = usize>) -> Vec<isize> {
    sizes.into_iter().map(|s| s as isize).collect()
}

/// The product of two prepared operands, summed over the labels they share that `needed`
/// does not hold; the result's labels are the shared kept ones, then `a`'s own, then `b`'s.
fn contract_pair<E: Float>(
    (a, la): (DynTensor<E>, Vec<Label>),
    (b, lb): (DynTensor<E>, Vec<Label>),
    needed: impl Fn(Label) -> bool,
) -> Result<(DynTensor<E>, Vec<Label>)> {
    let shared: Vec<Label> = la.iter().copied().filter(|l| lb.contains(l)).collect();
    let batch: Vec<Label> = shared.iter().copied().filter(|&l| needed(l)).collect();
    let contracted: Vec<Label> = shared.iter().copied().filter(|&l| !needed(l)).collect();
    let a_own: Vec<Label> = la.iter().copied().filter(|l| !lb.contains(l)).collect();
    let b_own: Vec<Label> = lb.iter().copied().filter(|l| !la.contains(l)).collect();

    // Size-1 broadcasting of shared labels: a contracted label is summed on the side where it
    // is longer (both then have size 1); a batch label is expanded on the side where it is 1.
    let size = |t: &DynTensor<E>, ls: &[Label], l: Label| t.shape()[positions(&[l], ls)[0]];
    let (mut sum_a, mut sum_b) = (Vec::new(), Vec::new());
    for &l in &contracted {
        let (sa, sb) = (size(&a, &la, l), size(&b, &lb, l));
        if sa > sb {
            sum_a.push(positions(&[l], &la)[0]);
        } else if sb > sa {
            sum_b.push(positions(&[l], &lb)[0]);
        }
    }
    let (mut a, mut b) = (sum_over(a, &sum_a, true)?, sum_over(b, &sum_b, true)?);
    let mut a_target: Vec<isize> = isizes(a.shape().iter().copied());
    let mut b_target: Vec<isize> = isizes(b.shape().iter().copied());
    for &l in &batch {
        let (pa, pb) = (positions(&[l], &la)[0], positions(&[l], &lb)[0]);
        let n = a_target[pa].max(b_target[pb]);
        (a_target[pa], b_target[pb]) = (n, n);
    }
    if a_target != a.shape().iter().map(|&s| s as isize).collect::<Vec<_>>() {
        a = a.try_expand(&a_target)?;
    }
    if b_target != b.shape().iter().map(|&s| s as isize).collect::<Vec<_>>() {
        b = b.try_expand(&b_target)?;
    }

    let a_order = [&batch[..], &a_own, &contracted].concat();
    let b_order = [&batch[..], &contracted, &b_own].concat();
    let a = permuted(&a, &positions(&a_order, &la))?;
    let b = permuted(&b, &positions(&b_order, &lb))?;
    let nb = batch.len();
    let batch_sizes = &a.shape()[..nb];
    let a_own_sizes = &a.shape()[nb..nb + a_own.len()];
    let b_own_sizes = &b.shape()[nb + contracted.len()..];
    let mut out_shape = isizes(batch_sizes.iter().copied());
    out_shape.extend(isizes(a_own_sizes.iter().copied()));
    out_shape.extend(isizes(b_own_sizes.iter().copied()));
    let labels = [&batch[..], &a_own, &b_own].concat();

    let product = if contracted.is_empty() {
        // Nothing to sum: an elementwise product, `a`'s own dims broadcast against `b`'s.
        let mut a = a;
        for _ in 0..b_own.len() {
            a = a.try_unsqueeze(-1)?;
        }
        let mut b = b;
        for _ in 0..a_own.len() {
            b = b.try_unsqueeze(nb as isize)?;
        }
        a.try_mul(&b)?
    } else {
        let m: usize = a_own_sizes.iter().product();
        let n: usize = b_own_sizes.iter().product();
        let k: usize = a.shape()[nb + a_own.len()..].iter().product();
        let mut a3 = isizes(batch_sizes.iter().copied());
        let mut b3 = a3.clone();
        a3.extend([m as isize, k as isize]);
        b3.extend([k as isize, n as isize]);
        a.try_reshape(&a3)?.try_matmul(&b.try_reshape(&b3)?)?
    };
    Ok((product.try_reshape(&out_shape)?, labels))
}

/// Products and sums written as subscripts, with `torch.einsum`'s notation (see the module
/// docs): `"ij,jk->ik"` is a matrix product, `"bhqd,bhkd->bhqk"` attention scores,
/// `"...chw,c->...hw"` a weighted sum of channels over any leading dims. Panics where
/// [`try_einsum`] fails.
///
/// ```
/// use namedtensor::{einsum, tensor, DynTensor};
/// let a = tensor!([[1., 2.], [3., 4.]]);
/// let b = tensor!([[5., 6.], [7., 8.]]);
/// assert_eq!(einsum("ij,jk->ik", &[&a, &b]).to_vec(), a.matmul(&b).to_vec());
/// assert_eq!(einsum("ii", &[&a]).item(), 5.0);                  // trace
/// assert_eq!(einsum("ij->ji", &[&a]).to_vec(), a.t().to_vec()); // a view, as in PyTorch
/// // seed 001: channels weighted and summed, any leading dims
/// let img = DynTensor::<f32>::ones(&[2, 5, 3, 4, 4]);
/// let weights = DynTensor::from_vec(vec![0.2f32, 0.3, 0.5], &[3]);
/// assert_eq!(einsum("...chw,c->...hw", &[&img, &weights]).shape(), &[2, 5, 4, 4]);
/// ```
#[track_caller]
pub fn einsum<E: Float>(equation: &str, operands: &[&DynTensor<E>]) -> DynTensor<E> {
    or_panic(try_einsum(equation, operands))
}

/// [`einsum`], or an error naming the problem: a character that is not a subscript, a term
/// whose letters do not match its operand's rank, a letter whose sizes are neither equal nor
/// 1, a repeated or unknown output letter, or a number of terms that is not the number of
/// operands.
///
/// ```
/// use namedtensor::{try_einsum, DynTensor};
/// let a = DynTensor::<f32>::ones(&[2, 3]);
/// let b = DynTensor::<f32>::ones(&[4, 5]);
/// let e = try_einsum("ij,jk->ik", &[&a, &b]).unwrap_err();
/// assert!(e.to_string().contains("subscript `j` has size 4 in operand 1 but size 3 in operand 0"));
/// assert!(try_einsum("ij->k", &[&a]).is_err());
/// ```
pub fn try_einsum<E: Float>(equation: &str, operands: &[&DynTensor<E>]) -> Result<DynTensor<E>> {
    let shapes: Vec<&[usize]> = operands.iter().map(|t| t.shape()).collect();
    let eq = parse(equation, &shapes)?;
    let n = operands.len();
    // Where each label is still needed: by the output or by operands from index i on.
    let needed_from = |i: usize, l: Label| {
        eq.output.contains(&l) || eq.inputs[i..].iter().any(|t| t.contains(&l))
    };
    let mut prepared = Vec::with_capacity(n);
    for (i, t) in operands.iter().enumerate() {
        let used_elsewhere = |l: Label| {
            eq.output.contains(&l)
                || eq
                    .inputs
                    .iter()
                    .enumerate()
                    .any(|(j, ls)| j != i && ls.contains(&l))
        };
        prepared.push(prepare(t, &eq.inputs[i], used_elsewhere)?);
    }
    let mut prepared = prepared.into_iter();
    let mut acc = prepared.next().expect("at least one operand");
    for (i, next) in prepared.enumerate() {
        acc = contract_pair(acc, next, |l| needed_from(i + 2, l))?;
    }
    // Every output label is now in `acc`, at its broadcast size: each operand that has it
    // was combined into `acc` with the label kept as a batch dim.
    let (t, labels) = acc;
    let t = permuted(&t, &positions(&eq.output, &labels))?;
    debug_assert!(
        eq.output
            .iter()
            .zip(t.shape())
            .all(|(l, &s)| eq.sizes[l] == s)
    );
    Ok(t)
}
