//! Gradients against central finite differences in f64, for every op with a gradient, on
//! inputs laid out contiguously, transposed, at an offset, stepped and expanded (stride 0),
//! over random shapes and values (proptest).
//!
//! The checker takes a function of some tensors, makes each input a leaf with the asked-for
//! layout, backpropagates `Σ y ⊙ r` for a fixed random `r`, and compares each input's
//! gradient with `(L(x + ε eᵢ) − L(x − ε eᵢ)) / 2ε` computed under `no_grad` on contiguous
//! copies (ε = 1e-6).

use crate::common;

use namedtensor::autograd::no_grad;
use namedtensor::{DynTensor, Idx};
use proptest::prelude::*;

type T = DynTensor<f64>;
/// A named function of one tensor.
type Unary<'a> = (&'a str, &'a dyn Fn(&T) -> T);
/// A named function of two tensors.
type Binary<'a> = (&'a str, &'a dyn Fn(&T, &T) -> T);

/// How a leaf's elements sit in its storage.
#[derive(Clone, Copy, Debug)]
enum Lay {
    Contiguous,
    Transposed,
    Offset,
    Stepped,
    Expanded,
}

fn lay() -> impl Strategy<Value = Lay> {
    prop_oneof![
        Just(Lay::Contiguous),
        Just(Lay::Transposed),
        Just(Lay::Offset),
        Just(Lay::Stepped),
        Just(Lay::Expanded),
    ]
}

/// A leaf of `shape` with values `v` (row-major), laid out as `lay`. For `Expanded`, dim 0 is
/// a stride-0 broadcast of the first row, so the values repeat along it.
fn make(v: &[f64], shape: &[usize], lay: Lay) -> T {
    let c = DynTensor::from_vec(v.to_vec(), shape);
    let n = v.len();
    let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    let t = match lay {
        Lay::Contiguous => c,
        Lay::Transposed => {
            let rev: Vec<isize> = (0..shape.len() as isize).rev().collect();
            c.permute(&rev).contiguous().permute(&rev)
        }
        Lay::Offset => {
            let big = DynTensor::<f64>::zeros(&[n + 3]);
            big.narrow(0, 3, n).copy_(&c.reshape(&[-1]));
            big.narrow(0, 3, n).view(&sizes)
        }
        Lay::Stepped => {
            let big = DynTensor::<f64>::zeros(&[2 * n.max(1)]);
            let s = big.slice(0, Some(0), None, 2);
            s.copy_(&c.reshape(&[-1]));
            s.reshape(&sizes)
        }
        Lay::Expanded if !shape.is_empty() => c.narrow(0, 0, 1.min(shape[0])).expand(&sizes),
        Lay::Expanded => c,
    };
    assert_eq!(t.shape(), shape);
    t.detach().requires_grad_(true)
}

/// Deterministic pseudo-random values in (-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    common::floats(n, seed, -1.0, 1.0)
}

/// Checks the gradients of `f` at `inputs` (each a leaf made by [`make`]).
fn check(name: &str, inputs: &[T], f: &dyn Fn(&[T]) -> T) {
    let y = f(inputs);
    let r = DynTensor::from_vec(values(y.numel(), 99), y.shape());
    (&y * &r).sum().backward();
    let loss = |xs: &[T]| -> f64 { no_grad(|| (&f(xs) * &r).sum().item()) };
    let eps = 1e-6;
    for (i, x) in inputs.iter().enumerate() {
        let g = x
            .grad()
            .unwrap_or_else(|| DynTensor::zeros(x.shape()))
            .to_vec();
        let base: Vec<T> = inputs.iter().map(|t| t.detach().contiguous()).collect();
        let flat = base[i].to_vec();
        for j in 0..flat.len() {
            let at = |d: f64| {
                let mut v = flat.clone();
                v[j] += d;
                let mut xs = base.clone();
                xs[i] = DynTensor::from_vec(v, x.shape());
                loss(&xs)
            };
            let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
            let tol = 1e-6 + 1e-5 * numeric.abs();
            assert!(
                (g[j] - numeric).abs() <= tol,
                "{name}: d/d input {i} element {j}: autograd {} vs finite differences {numeric} \
                 (shape {:?}, strides {:?})",
                g[j],
                x.shape(),
                x.stride()
            );
        }
    }
}

fn shape(max_rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..4, 1..=max_rank)
}

/// `n` distinct values (no ties inside a pooling window or a norm group, where a derivative
/// jumps or a finite difference straddles a kink).
fn spread(n: usize, seed: u64) -> Vec<f64> {
    values(n, seed)
        .iter()
        .enumerate()
        .map(|(i, x)| x + i as f64 * 0.37)
        .collect()
}

/// Values kept away from the kinks and poles of the ops under test.
fn positive(n: usize, seed: u64) -> Vec<f64> {
    values(n, seed).iter().map(|v| 0.3 + v.abs()).collect()
}

proptest! {
    #![proptest_config(common::proptest_cases(64))]

    #[test]
    fn unary_ops(shape in shape(3), l in lay(), seed in 0u64..1000) {
        let n: usize = shape.iter().product();
        let x = make(&values(n, seed), &shape, l);
        let p = make(&positive(n, seed), &shape, l);
        let ops: [Unary<'_>; 18] = [
            ("exp", &|x| x.exp()), ("neg", &|x| x.neg()), ("sin", &|x| x.sin()),
            ("cos", &|x| x.cos()), ("tan", &|x| x.tan()), ("tanh", &|x| x.tanh()),
            ("sigmoid", &|x| x.sigmoid()), ("erf", &|x| x.erf()), ("gelu", &|x| x.gelu()),
            ("gelu_tanh", &|x| x.gelu_tanh()), ("silu", &|x| x.silu()),
            ("expm1", &|x| x.expm1()), ("square", &|x| x.square()),
            ("relu", &|x| (x + 2.0).relu()),
            ("abs", &|x| (x + 2.0).abs()), ("clamp", &|x| x.clamp(-0.5, 0.5)),
            ("powf", &|x| (x + 2.0).powf(1.7)), ("floor", &|x| x.floor()),
        ];
        for (name, f) in ops {
            x.zero_grad();
            check(name, std::slice::from_ref(&x), &|xs| f(&xs[0]));
        }
        let pos: [Unary<'_>; 5] = [
            ("log", &|x| x.log()), ("log1p", &|x| x.log1p()), ("sqrt", &|x| x.sqrt()),
            ("rsqrt", &|x| x.rsqrt()), ("recip", &|x| x.recip()),
        ];
        for (name, f) in pos {
            p.zero_grad();
            check(name, std::slice::from_ref(&p), &|xs| f(&xs[0]));
        }
    }

    #[test]
    fn binary_ops_broadcast(
        shape in shape(3), l1 in lay(), l2 in lay(), keep in prop::collection::vec(any::<bool>(), 3),
        drop_lead in any::<bool>(), seed in 0u64..1000,
    ) {
        // The second operand broadcasts: some dims of size 1, maybe fewer dims.
        let mut other: Vec<usize> = shape.iter().zip(&keep).map(|(&s, &k)| if k { s } else { 1 }).collect();
        if drop_lead && other.len() > 1 {
            other.remove(0);
        }
        let n1: usize = shape.iter().product();
        let n2: usize = other.iter().product();
        let a = make(&values(n1, seed), &shape, l1);
        let b = make(&positive(n2, seed + 1), &other, l2);
        let ops: [Binary<'_>; 8] = [
            ("add", &|a, b| a + b), ("sub", &|a, b| a - b), ("mul", &|a, b| a * b),
            ("div", &|a, b| a / b), ("pow", &|a, b| (a + 2.0).pow(b)),
            ("maximum", &|a, b| a.maximum(b)), ("minimum", &|a, b| a.minimum(b)),
            ("scalar forms", &|a, b| (2.0 - a) * 3.0 + b / 2.0 - 1.0 / b),
        ];
        for (name, f) in ops {
            a.zero_grad();
            b.zero_grad();
            check(name, &[a.shallow_clone(), b.shallow_clone()], &|xs| f(&xs[0], &xs[1]));
        }
    }

    #[test]
    fn reductions(shape in shape(3), l in lay(), keepdim in any::<bool>(), d in 0usize..3, seed in 0u64..1000) {
        let n: usize = shape.iter().product();
        let x = make(&values(n, seed), &shape, l);
        let d = (d % shape.len()) as isize;
        let ops: [Unary<'_>; 18] = [
            ("prod", &|x| x.prod_dims(&[d], keepdim)),
            ("prod_all", &|x| x.prod_dims(&[], keepdim)),
            ("prod_two", &|x| x.prod_dims(&[0, -1], keepdim)),
            ("norm_3", &|x| x.norm_dims(3.0, &[d], keepdim)),
            // |x|^0.5 in the gradient is steep at 0: elements a few ε from 0 make central
            // differences miss by 0.2% (CI found one), so keep |x| ≥ 1/4, both signs kept.
            ("norm_1.5", &|x| (x + &(x.sign() * 0.25)).norm_dims(1.5, &[0, -1], keepdim)),
            // p < 1 away from 0, where |x|^(p-1) is steep
            ("norm_0.5", &|x| (x + 2.0).norm_dims(0.5, &[d], keepdim)),
            ("norm_-1.5", &|x| (x + 2.0).norm(-1.5)),
            ("sum", &|x| x.sum()),
            ("sum_dim", &|x| x.sum_dim(d, keepdim)),
            ("mean_dim", &|x| x.mean_dim(d, keepdim)),
            ("mean", &|x| x.mean()),
            ("var_dims", &|x| x.var_dims(&[d], 1, keepdim)),
            ("std_dims", &|x| x.std_dims(&[d], 1, keepdim)),
            ("logsumexp", &|x| x.logsumexp_dims(&[d], keepdim)),
            ("norm", &|x| x.norm_dims(2.0, &[d], keepdim)),
            ("amax", &|x| x.amax_dims(&[d], keepdim)),
            ("max_dim", &|x| x.max_dim(d, keepdim).0),
            ("min", &|x| x.min()),
        ];
        for (name, f) in ops {
            if (name.starts_with("var") || name.starts_with("std")) && shape[d as usize] < 2 {
                continue;
            }
            if matches!(name, "prod_two" | "norm_1.5") && shape.len() < 2 {
                continue; // dims 0 and -1 are one dim
            }
            // An expanded input repeats its values: the extremes tie, where finite differences
            // are one-sided (ties are checked against PyTorch's rule below).
            let picks = matches!(name, "amax" | "max_dim" | "min");
            if picks && matches!(l, Lay::Expanded) {
                continue;
            }
            x.zero_grad();
            check(name, std::slice::from_ref(&x), &|xs| f(&xs[0]));
        }
    }

    #[test]
    fn along_one_dim(shape in shape(3), l in lay(), d in 0usize..3, seed in 0u64..1000) {
        let n: usize = shape.iter().product();
        let x = make(&values(n, seed), &shape, l);
        let d = (d % shape.len()) as isize;
        let ops: [Unary<'_>; 5] = [
            ("softmax", &|x| x.softmax(d)),
            ("log_softmax", &|x| x.log_softmax(d)),
            ("cumsum", &|x| x.cumsum(d)),
            ("cumprod", &|x| x.cumprod(d)),
            ("flip", &|x| x.flip(&[d])),
        ];
        for (name, f) in ops {
            x.zero_grad();
            check(name, std::slice::from_ref(&x), &|xs| f(&xs[0]));
        }
        // Sorting: each value's gradient goes back to where it came from. Entries at least
        // 0.08 apart (their random order kept), so that no step of the finite differences
        // reorders them; an expanded leaf has equal entries, where sorting is not
        // differentiable.
        let v = values(n, seed);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut spaced = vec![0.0; n];
        for (rank, &i) in order.iter().enumerate() {
            spaced[i] = 0.1 * rank as f64 + 0.01 * v[i];
        }
        let x = make(&spaced, &shape, if matches!(l, Lay::Expanded) { Lay::Contiguous } else { l });
        let k = shape[d as usize].div_ceil(2);
        let ops: [Unary<'_>; 4] = [
            ("sort", &|x| x.sort(d, false).0),
            ("sort descending", &|x| x.sort(d, true).0),
            ("topk largest", &|x| x.topk(k, d, true).0),
            ("topk smallest", &|x| x.topk(k, d, false).0),
        ];
        for (name, f) in ops {
            x.zero_grad();
            check(name, std::slice::from_ref(&x), &|xs| f(&xs[0]));
        }
    }

    #[test]
    fn views(shape in shape(3), l in lay(), d in 0usize..3, seed in 0u64..1000) {
        let n: usize = shape.iter().product();
        let x = make(&values(n, seed), &shape, l);
        let r = shape.len() as isize;
        let d = (d % shape.len()) as isize;
        let size = shape[d as usize] as isize;
        let ops: [Unary<'_>; 16] = [
            ("reshape", &|x| x.reshape(&[-1])),
            ("transpose", &|x| x.transpose(0, r - 1)),
            ("permute", &|x| x.permute(&(0..r).rev().collect::<Vec<_>>())),
            ("unsqueeze+expand", &|x| x.unsqueeze(0).expand(&[&[2], x.shape()].concat().iter().map(|&s| s as isize).collect::<Vec<_>>())),
            ("squeeze", &|x| x.unsqueeze(1).squeeze()),
            ("narrow", &|x| x.narrow(d, size - 1, 1)),
            ("select", &|x| x.select(d, 0)),
            ("slice", &|x| x.slice(d, Some(0), None, 2)),
            ("i", &|x| x.i((Idx::step(.., 2), namedtensor::NewAxis))),
            ("flatten", &|x| x.flatten(0, -1)),
            ("contiguous", &|x| x.t_all().contiguous()),
            ("clone", &|x| x.clone()),
            ("to_dtype", &|x| x.to_dtype::<f64>()),
            ("repeat", &|x| x.repeat(&[2, 1, 1, 1][..x.dim() + 1])),
            ("triu", &|x| x.reshape(&[1, -1]).expand(&[3, x.numel() as isize]).triu(1)),
            ("as_strided", &|x| { let c = x.contiguous(); c.as_strided(&[x.numel().min(2)], &[1], c.storage_offset()) }),
        ];
        for (name, f) in ops {
            x.zero_grad();
            check(name, std::slice::from_ref(&x), &|xs| f(&xs[0]));
        }
    }

    #[test]
    fn joins_and_selections(shape in shape(3), l1 in lay(), l2 in lay(), d in 0usize..3, seed in 0u64..1000) {
        let n: usize = shape.iter().product();
        let a = make(&values(n, seed), &shape, l1);
        let b = make(&values(n, seed + 7), &shape, l2);
        let d = (d % shape.len()) as isize;
        let ops: [Binary<'_>; 6] = [
            ("cat", &|a, b| DynTensor::cat(&[a, b], d)),
            ("stack", &|a, b| DynTensor::stack(&[a, b], d)),
            ("split", &|a, b| { let p = a.split(1, d); &p[0] * &p[p.len() - 1] + b }),
            ("unbind", &|a, b| { let p = a.unbind(d); &p[0] + &b.select(d, 0) }),
            ("where", &|a, b| a.where_(&a.gt_scalar(0.0), b)),
            ("masked_fill", &|a, b| a.masked_fill(&b.gt_scalar(0.0), 0.5) * b),
        ];
        for (name, f) in ops {
            a.zero_grad();
            b.zero_grad();
            check(name, &[a.shallow_clone(), b.shallow_clone()], &|xs| f(&xs[0], &xs[1]));
        }
    }

    #[test]
    fn indexed_reads_and_adds(
        shape in shape(3),
        l1 in lay(),
        l2 in lay(),
        d in 0usize..3,
        picks in 1usize..5,
        seed in 0u64..1000,
    ) {
        // Indices with repeats (so that gradients accumulate), some read through a reversed
        // view; sources and bases both require grad.
        let d = d % shape.len();
        let n: usize = shape.iter().product();
        let size = shape[d];
        let x = make(&values(n, seed), &shape, l1);
        let raw = |k: usize, salt: u64| -> Vec<i64> {
            common::data(k, seed + salt, 0, size as i64 - 1).iter().map(|&v| v as i64).collect()
        };
        let list = DynTensor::from_vec(raw(picks, 1), &[picks]).flip(&[0]);
        let mut ishape = shape.clone();
        ishape[d] = picks;
        let k: usize = ishape.iter().product();
        let index = DynTensor::from_vec(raw(k, 2), &ishape);
        let src = make(&values(k, seed + 3), &ishape, l2);
        let dd = d as isize;
        check("index_select", std::slice::from_ref(&x), &|xs| xs[0].index_select(dd, &list));
        x.zero_grad();
        // gather from a source larger than the index in the gathered dim.
        check("gather", std::slice::from_ref(&x), &|xs| xs[0].gather(dd, &index));
        x.zero_grad();
        check("scatter_add", &[x.shallow_clone(), src.shallow_clone()], &|xs| {
            xs[0].scatter_add(dd, &index, &xs[1])
        });
        x.zero_grad();
        src.zero_grad();
        check("index_add", &[x.shallow_clone(), src.shallow_clone()], &|xs| {
            xs[0].index_add(dd, &list, &xs[1])
        });
    }

    #[test]
    fn matmul_rank_rules(
        m in 1usize..4, k in 1usize..4, n in 1usize..4, batch in 1usize..3,
        case in 0usize..7, l1 in lay(), l2 in lay(), seed in 0u64..1000,
    ) {
        let (sa, sb): (Vec<usize>, Vec<usize>) = match case {
            0 => (vec![k], vec![k]),
            1 => (vec![m, k], vec![k, n]),
            2 => (vec![k], vec![k, n]),
            3 => (vec![m, k], vec![k]),
            4 => (vec![batch, m, k], vec![batch, k, n]),
            5 => (vec![batch, 1, m, k], vec![2, k, n]),  // broadcast batch dims
            _ => (vec![batch, m, k], vec![k]),
        };
        let a = make(&values(sa.iter().product(), seed), &sa, l1);
        let b = make(&values(sb.iter().product(), seed + 3), &sb, l2);
        check("matmul", &[a, b], &|xs| xs[0].matmul(&xs[1]));
    }

    #[test]
    fn einsum_equations(
        sizes in prop::collection::vec(1usize..4, 4), case in 0usize..7,
        l1 in lay(), l2 in lay(), seed in 0u64..1000,
    ) {
        let [i, j, k, b] = [sizes[0], sizes[1], sizes[2], sizes[3]];
        // Products, a diagonal, a sum over a letter one operand lacks, size-1 broadcasting
        // and an ellipsis.
        let (eq, sa, sb): (&str, Vec<usize>, Vec<usize>) = match case {
            0 => ("ij,jk->ik", vec![i, j], vec![j, k]),
            1 => ("bij,bkj->bki", vec![b, i, j], vec![b, k, j]),
            2 => ("ii,ij->j", vec![i, i], vec![i, j]),
            3 => ("ij,k->ik", vec![i, j], vec![k]),
            4 => ("ij,kj->ik", vec![i, j], vec![k, 1]),
            5 => ("i,j->ij", vec![i], vec![j]),
            _ => ("...ij,...j->...i", vec![b, i, j], vec![j]),
        };
        let a = make(&values(sa.iter().product(), seed), &sa, l1);
        let c = make(&values(sb.iter().product(), seed + 3), &sb, l2);
        check(eq, &[a, c], &|xs| namedtensor::einsum(eq, &[&xs[0], &xs[1]]));
    }
}

/// `t` with its dims reversed (a view).
trait TAll {
    fn t_all(&self) -> Self;
}

impl TAll for T {
    fn t_all(&self) -> T {
        self.permute(&(0..self.dim() as isize).rev().collect::<Vec<_>>())
    }
}

#[test]
fn softmax_of_a_zero_dim_tensor_has_a_zero_gradient() {
    // A 0-d tensor takes dim 0 or -1 (as in PyTorch); its softmax is 1 and its log_softmax
    // 0 whatever x is, so the gradient is 0, with and without create_graph.
    use namedtensor::autograd::{BackwardOptions, grad};
    for log in [false, true] {
        for d in [0, -1] {
            for options in [BackwardOptions::default(), BackwardOptions::create_graph()] {
                let x = DynTensor::scalar(2.5f64).requires_grad_(true);
                let y = if log { x.log_softmax(d) } else { x.softmax(d) };
                assert_eq!(y.to_vec(), vec![if log { 0.0 } else { 1.0 }]);
                let g = grad(&[&(&y * 3.0)], None, &[&x], options).unwrap()[0]
                    .clone()
                    .unwrap();
                assert_eq!(g.shape(), &[] as &[usize]);
                assert_eq!(g.to_vec(), vec![0.0], "log {log}, dim {d}");
            }
        }
    }
}

#[test]
fn second_derivatives_through_create_graph() {
    use namedtensor::autograd::{BackwardOptions, grad};
    // d²/dx² of Σ tanh(x)·x² against finite differences of the first derivative.
    let v = vec![0.3, -0.7, 1.1];
    let x = DynTensor::from_vec(v.clone(), &[3]).requires_grad_(true);
    let f = |x: &T| (&x.tanh() * &x.square()).sum();
    let g = grad(&[&f(&x)], None, &[&x], BackwardOptions::create_graph()).unwrap();
    let g = g[0].clone().unwrap();
    let h = grad(&[&g.sum()], None, &[&x], BackwardOptions::default()).unwrap()[0]
        .clone()
        .unwrap()
        .to_vec();
    let first = |v: &[f64]| -> Vec<f64> {
        let x = DynTensor::from_vec(v.to_vec(), &[3]).requires_grad_(true);
        f(&x).backward();
        x.grad().unwrap().to_vec()
    };
    for i in 0..3 {
        let (mut p, mut m) = (v.clone(), v.clone());
        p[i] += 1e-6;
        m[i] -= 1e-6;
        let (gp, gm) = (first(&p), first(&m));
        // Σ_j ∂g_j/∂x_i, the gradient of g.sum()
        let numeric: f64 = (0..3).map(|j| (gp[j] - gm[j]) / 2e-6).sum();
        assert!((h[i] - numeric).abs() < 1e-5, "{i}: {} vs {numeric}", h[i]);
    }
}

#[test]
fn ties_share_the_gradient_like_pytorch() {
    // amax over ties: evenly split; max_dim: the chosen index only; maximum: halves.
    let x = DynTensor::from_vec(vec![1.0f64, 3.0, 3.0], &[3]).requires_grad_(true);
    x.amax_dims(&[0], false).backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 0.5, 0.5]);
    x.zero_grad();
    x.max_dim(0, false).0.backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 1.0, 0.0]);
    let y = DynTensor::from_vec(vec![1.0f64, 3.0, 2.0], &[3]).requires_grad_(true);
    x.zero_grad();
    x.maximum(&y).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.5, 0.5, 1.0]);
    assert_eq!(y.grad().unwrap().to_vec(), vec![0.5, 0.5, 0.0]);
}

#[test]
fn mixed_dtypes_cast_gradients_back() {
    let a = DynTensor::from_vec(vec![1.0f32, 2.0], &[2]).requires_grad_(true);
    let b = DynTensor::from_vec(vec![3.0f64, 4.0], &[2]).requires_grad_(true);
    let y = &a * &b; // f64
    y.sum().backward();
    let ga: DynTensor<f32> = a.grad().unwrap();
    assert_eq!(ga.to_vec(), vec![3.0, 4.0]);
    assert_eq!(b.grad().unwrap().to_vec(), vec![1.0, 2.0]);
    // Integer operands take no gradient but still combine.
    let i = DynTensor::from_vec(vec![2i64, 5], &[2]);
    a.zero_grad();
    (&a * &i).sum().backward();
    assert_eq!(a.grad().unwrap().to_vec(), vec![2.0, 5.0]);
    // f16 leaves get f16 gradients.
    let h = DynTensor::from_vec(vec![half::f16::from_f32(2.0)], &[1]).requires_grad_(true);
    h.square().sum().backward();
    assert_eq!(h.grad().unwrap().to_vec(), vec![half::f16::from_f32(4.0)]);
}

#[test]
fn prod_with_zeros() {
    // Lanes (rows) with no zero, one zero and two zeros; a product is a polynomial, so
    // finite differences are exact enough at the zeros too.
    let v = vec![0.5, -2.0, 1.5, 0.0, 3.0, 0.7, 0.0, 0.0, 1.2];
    for lay in [Lay::Contiguous, Lay::Transposed, Lay::Stepped] {
        let x = make(&v, &[3, 3], lay);
        check("prod_dim", std::slice::from_ref(&x), &|xs| {
            xs[0].prod_dim(1, false)
        });
        let x = make(&v, &[3, 3], lay);
        check("prod", std::slice::from_ref(&x), &|xs| {
            xs[0].prod_dims(&[], false)
        });
    }
}

#[test]
fn cumprod_with_zeros() {
    // Lanes with no zero, a zero first, a zero inside, two zeros, a zero last; a running
    // product is a polynomial, so finite differences are exact at the zeros too.
    let v = vec![
        0.5, -2.0, 1.5, 0.8, //
        0.0, 3.0, 0.7, 1.1, //
        0.9, 0.0, 1.2, -0.6, //
        1.3, 0.0, 2.0, 0.0, //
        0.4, 1.7, -0.9, 0.0,
    ];
    for lay in [Lay::Contiguous, Lay::Transposed, Lay::Stepped] {
        let x = make(&v, &[5, 4], lay);
        check("cumprod", std::slice::from_ref(&x), &|xs| xs[0].cumprod(1));
        let x = make(&v, &[5, 4], lay);
        check("cumprod (dim 0)", std::slice::from_ref(&x), &|xs| {
            xs[0].cumprod(0)
        });
    }
    // Second derivative through create_graph, at a zero: d/dx of the gradient of
    // Σ cumprod(x) for x = [a, 0, c]: ∂L/∂x₁ = a + a·c, whose gradient in a is 1 + c.
    use namedtensor::autograd::{BackwardOptions, grad};
    let x = DynTensor::from_vec(vec![2.0f64, 0.0, 3.0], &[3]).requires_grad_(true);
    let g = grad(
        &[&x.cumprod(0).sum()],
        None,
        &[&x],
        BackwardOptions::create_graph(),
    )
    .unwrap();
    let g = g[0].clone().unwrap();
    // First order: [1 + 0 + 0, a + a·c, 0] = [1, 8, 0].
    assert_eq!(g.to_vec(), vec![1.0, 8.0, 0.0]);
    let h = grad(&[&g.i(1)], None, &[&x], BackwardOptions::default()).unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(h.to_vec(), vec![4.0, 0.0, 2.0]);
}

#[test]
fn scatter_gradients_accumulate_repeated_indices() {
    // An embedding lookup with a repeated id: its row's gradient is the sum of both uses.
    let table = DynTensor::from_vec(vec![0.0f64; 6], &[3, 2]).requires_grad_(true);
    let ids = DynTensor::from_vec(vec![2i64, 0, 2], &[3]);
    let rows = table.index_select(0, &ids);
    let weights = DynTensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    (&rows * &weights).sum().backward();
    assert_eq!(
        table.grad().unwrap().to_vec(),
        vec![3.0, 4.0, 0.0, 0.0, 6.0, 8.0]
    );
    // gather as cross-entropy uses it: one pick per row, a repeated pick sums.
    let logits = DynTensor::from_vec(vec![0.0f64; 4], &[2, 2]).requires_grad_(true);
    let picks = DynTensor::from_vec(vec![1i64, 1, 0, 0], &[2, 2]);
    logits.gather(1, &picks).sum().backward();
    assert_eq!(logits.grad().unwrap().to_vec(), vec![0.0, 2.0, 2.0, 0.0]);
}

#[test]
fn prod_second_derivatives_with_zeros() {
    use namedtensor::autograd::{BackwardOptions, grad};
    // ∂²(Π x)/∂xᵢ∂xⱼ is the product of the elements other than i and j: not 0 in a lane with
    // zeros unless a third zero remains.
    let hessian_row = |v: Vec<f64>, i: usize| -> (Vec<f64>, Vec<f64>) {
        let x = DynTensor::from_vec(v.clone(), &[v.len()]).requires_grad_(true);
        let g = grad(&[&x.prod()], None, &[&x], BackwardOptions::create_graph()).unwrap()[0]
            .clone()
            .unwrap();
        let h = grad(&[&g.i(i)], None, &[&x], BackwardOptions::default()).unwrap()[0]
            .clone()
            .unwrap();
        (g.to_vec(), h.to_vec())
    };
    // one zero: g = [0, 6, 0]; ∂g₀/∂x = [0, x₂, x₁] = [0, 3, 0]
    assert_eq!(
        hessian_row(vec![2.0, 0.0, 3.0], 0),
        (vec![0.0, 6.0, 0.0], vec![0.0, 3.0, 0.0])
    );
    // two zeros: g = 0; ∂g₁/∂x = [x₂x₃, 0, x₀x₃, x₀x₂] = [0, 0, 6, 0]
    assert_eq!(
        hessian_row(vec![2.0, 0.0, 0.0, 3.0], 1),
        (vec![0.0; 4], vec![0.0, 0.0, 6.0, 0.0])
    );
    // no zero: ∂g₀/∂x = [0, x₂, x₁]
    assert_eq!(hessian_row(vec![2.0, 5.0, 3.0], 0).1, vec![0.0, 3.0, 5.0]);
}

#[test]
fn general_norms_at_zero_as_pytorch() {
    // A lane of zeros has a zero gradient for every p (PyTorch's masked_fill where the norm
    // is 0); for p < 1 a zero element has a zero gradient and the others are finite.
    let x =
        DynTensor::from_vec(vec![0.0f64, 0.0, 0.0, 3.0, 0.0, -4.0], &[2, 3]).requires_grad_(true);
    for p in [3.0, 1.5, 0.5, -1.5] {
        x.zero_grad();
        x.norm_dims(p, &[1], false).sum().backward();
        let g = x.grad().unwrap().to_vec();
        assert!(g.iter().all(|v| v.is_finite()), "p = {p}: {g:?}");
        assert_eq!(&g[..3], &[0.0, 0.0, 0.0], "p = {p}");
        if p > 0.0 {
            assert_eq!(g[4], 0.0, "p = {p}");
            // d/dx₃ (|3|ᵖ + |4|ᵖ)^(1/p) = 3ᵖ⁻¹ / yᵖ⁻¹
            let y: f64 = (3f64.powf(p) + 4f64.powf(p)).powf(1.0 / p);
            assert!((g[3] - (3.0 / y).powf(p - 1.0)).abs() < 1e-12, "p = {p}");
            assert!((g[5] + (4.0 / y).powf(p - 1.0)).abs() < 1e-12, "p = {p}");
        }
    }
}

#[test]
fn edge_rules_as_pytorch() {
    // pow at a zero base: no NaN, for the base (exponent 0) or the exponent (base 0).
    let x = DynTensor::from_vec(vec![0.0f64, 2.0], &[2]).requires_grad_(true);
    let p = DynTensor::from_vec(vec![2.0f64, 0.0], &[2]).requires_grad_(true);
    x.pow(&p).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 0.0]);
    assert_eq!(p.grad().unwrap().to_vec(), vec![0.0, 2f64.ln()]);
    let z = DynTensor::from_vec(vec![0.0f64, 3.0], &[2]).requires_grad_(true);
    z.powf(0.0).sum().backward();
    assert_eq!(z.grad().unwrap().to_vec(), vec![0.0, 0.0]);
    // clamp passes the whole gradient at its bounds.
    let c = DynTensor::from_vec(vec![0.0f64, 0.5, 1.0, 1.5, -1.0], &[5]).requires_grad_(true);
    c.clamp(0.0, 1.0).sum().backward();
    assert_eq!(c.grad().unwrap().to_vec(), vec![1.0, 1.0, 1.0, 0.0, 0.0]);
    c.zero_grad();
    c.clamp_min(0.0).sum().backward();
    assert_eq!(c.grad().unwrap().to_vec(), vec![1.0, 1.0, 1.0, 1.0, 0.0]);
    c.zero_grad();
    c.clamp_max(1.0).sum().backward();
    assert_eq!(c.grad().unwrap().to_vec(), vec![1.0, 1.0, 1.0, 0.0, 1.0]);
    // Piecewise-constant ops give zeros even for an infinite incoming gradient.
    let f = DynTensor::from_vec(vec![0.5f64, 1.5], &[2]).requires_grad_(true);
    (&f.floor() * f64::INFINITY).sum().backward();
    assert_eq!(f.grad().unwrap().to_vec(), vec![0.0, 0.0]);
    // The 0-norm and an empty norm stay in the graph with zero gradient.
    let n = DynTensor::from_vec(vec![0.0f64, 3.0], &[2]).requires_grad_(true);
    let n0 = n.norm(0.0);
    assert!(n0.requires_grad());
    n0.backward();
    assert_eq!(n.grad().unwrap().to_vec(), vec![0.0, 0.0]);
    let e = DynTensor::<f64>::zeros(&[0]).requires_grad_(true);
    assert!(e.norm(2.0).requires_grad());
    // A recorded product with an empty contracted dim.
    let a = DynTensor::<f64>::zeros(&[2, 3, 0]).requires_grad_(true);
    let b = DynTensor::<f64>::zeros(&[0, 5]).requires_grad_(true);
    let y = a.matmul(&b);
    assert_eq!(y.shape(), &[2, 3, 5]);
    y.sum().backward();
    assert_eq!(b.grad().unwrap().shape(), &[0, 5]);
    // cumsum of a 0-d tensor.
    let s = DynTensor::scalar(2.0f64).requires_grad_(true);
    s.cumsum(0).sum().backward();
    assert_eq!(s.grad().unwrap().to_vec(), vec![1.0]);
}

#[test]
fn gradients_never_share_storage() {
    let a = DynTensor::from_vec(vec![1.0f64, 2.0], &[2]).requires_grad_(true);
    let b = DynTensor::from_vec(vec![3.0f64, 4.0], &[2]).requires_grad_(true);
    (&a + &b).sum().backward(); // both get the same incoming gradient
    a.grad().unwrap().mul_scalar_(10.0);
    assert_eq!(b.grad().unwrap().to_vec(), vec![1.0, 1.0]);
    // A gradient passed to backward_with stays the caller's.
    let x = DynTensor::from_vec(vec![1.0f64, 2.0], &[2]).requires_grad_(true);
    let g = DynTensor::from_vec(vec![5.0f64, 6.0], &[2]);
    x.view(&[2]).backward_with(&g, Default::default()).unwrap();
    g.fill_(0.0);
    assert_eq!(x.grad().unwrap().to_vec(), vec![5.0, 6.0]);
    // grad() leaves retained gradients alone.
    let h = x.exp();
    h.retain_grad();
    let loss = h.sum();
    namedtensor::autograd::grad(&[&loss], None, &[&x], Default::default()).unwrap();
    assert!(h.grad().is_none());
}

#[test]
fn second_derivatives_of_the_fused_formulas() {
    // The formulas that update a temporary in place when the pass does not record must keep
    // the recorded (out-of-place) path under create_graph: d²/dx² against finite differences
    // of the first derivative.
    use namedtensor::autograd::{BackwardOptions, grad};
    let v = vec![0.3, -0.7, 1.1, 2.0];
    let ops: [Unary<'_>; 6] = [
        ("tanh", &|x| x.tanh()),
        ("sigmoid", &|x| x.sigmoid()),
        ("silu", &|x| x.silu()),
        ("gelu", &|x| x.gelu()),
        ("erf", &|x| x.erf()),
        ("relu·x²", &|x| &x.relu() * &x.square()),
    ];
    for (name, f) in ops {
        let first = |v: &[f64]| -> Vec<f64> {
            let x = DynTensor::from_vec(v.to_vec(), &[4]).requires_grad_(true);
            f(&x).sum().backward();
            x.grad().unwrap().to_vec()
        };
        let x = DynTensor::from_vec(v.clone(), &[4]).requires_grad_(true);
        let g = grad(
            &[&f(&x).sum()],
            None,
            &[&x],
            BackwardOptions::create_graph(),
        )
        .unwrap();
        let g = g[0].clone().unwrap();
        assert_eq!(g.to_vec(), first(&v), "{name}: first derivative");
        let h = grad(&[&g.sum()], None, &[&x], BackwardOptions::default()).unwrap()[0]
            .clone()
            .unwrap()
            .to_vec();
        for i in 0..4 {
            let (mut p, mut m) = (v.clone(), v.clone());
            p[i] += 1e-6;
            m[i] -= 1e-6;
            let numeric = (first(&p)[i] - first(&m)[i]) / 2e-6;
            assert!(
                (h[i] - numeric).abs() < 1e-5,
                "{name} [{i}]: {} vs {numeric}",
                h[i]
            );
        }
    }
}

namedtensor::dims! { NormA, NormB, NormC, NormD }

/// `LayerNorm` (`center`) or `RmsNorm` along dim `d` of a rank-3 tensor, with random weight
/// and bias, as a function of the positional input.
fn norm_along(d: usize, center: bool, size: usize, seed: u64) -> impl Fn(&T) -> T {
    let w = DynTensor::from_vec(positive(size, seed + 7), &[size]);
    let b = DynTensor::from_vec(values(size, seed + 8), &[size]);
    move |x: &T| norm_with(x, d, center, Some((&w, &b)))
}

/// `LayerNorm` (`center`, weight and bias `affine`) or `RmsNorm` (weight `affine.0`) along
/// dim `d` of a rank-3 tensor; without `affine` the layers' initial parameters (ones and
/// zeros: the normalisation alone).
fn norm_with<E: namedtensor::Float>(
    x: &DynTensor<E>,
    d: usize,
    center: bool,
    affine: Option<(&DynTensor<E>, &DynTensor<E>)>,
) -> DynTensor<E> {
    use namedtensor::nn::{LayerNorm, RmsNorm};
    let x = x.shallow_clone().refine_names::<(NormA, NormB, NormC)>();
    let size = x.as_dyn().shape()[d];
    macro_rules! apply {
        ($dim:ty) => {
            if center {
                let mut n = LayerNorm::<$dim, E>::new(size);
                if let Some((w, b)) = affine {
                    (n.weight, n.bias) = (
                        w.shallow_clone().refine_names(),
                        b.shallow_clone().refine_names(),
                    );
                }
                n.forward(&x).into_dyn()
            } else {
                let mut n = RmsNorm::<$dim, E>::new(size);
                if let Some((w, _)) = affine {
                    n.weight = w.shallow_clone().refine_names();
                }
                n.forward(&x).into_dyn()
            }
        };
    }
    match d {
        0 => apply!(NormA),
        1 => apply!(NormB),
        _ => apply!(NormC),
    }
}

proptest! {
    #![proptest_config(common::proptest_cases(48))]

    /// The fused normalisation node (one formula for LayerNorm's and RmsNorm's core) against
    /// finite differences, along every dim, over every layout (an expanded input included,
    /// whose lanes along dim 0 repeat).
    #[test]
    fn layer_and_rms_norm(
        shape in prop::collection::vec(1usize..5, 3), l in lay(), d in 0usize..3,
        center in any::<bool>(), seed in 0u64..1000,
    ) {
        let n: usize = shape.iter().product();
        // Spread values, so that no lane is nearly constant (its rstd ~ 1/sqrt(eps) would
        // make central differences inexact).
        let v: Vec<f64> = values(n, seed).iter().enumerate().map(|(i, x)| x + i as f64 * 0.37).collect();
        let x = make(&v, &shape, l);
        let f = norm_along(d, center, shape[d], seed);
        check(if center { "layer_norm" } else { "rms_norm" }, std::slice::from_ref(&x), &|xs| f(&xs[0]));
    }
}

/// `BatchNorm` over the channel dim `d` of a rank-3 tensor, a function of the input, the
/// weight and the bias: in training (the batch's statistics, one multi-dim normalisation
/// node) or in evaluation (fixed running statistics, plain recorded ops).
fn batch_norm_over(d: usize, training: bool, size: usize, seed: u64) -> impl Fn(&[T]) -> T {
    use namedtensor::nn::{BatchNorm, Module};
    let mean = values(size, seed + 9);
    let var = positive(size, seed + 10);
    move |xs: &[T]| {
        let x = xs[0]
            .shallow_clone()
            .refine_names::<(NormA, NormB, NormC)>();
        macro_rules! apply {
            ($dim:ty) => {{
                let mut n = BatchNorm::<$dim, f64>::new(size);
                n.weight = Some(xs[1].shallow_clone().refine_names());
                n.bias = Some(xs[2].shallow_clone().refine_names());
                n.running_mean = DynTensor::from_vec(mean.clone(), &[size]).refine_names();
                n.running_var = DynTensor::from_vec(var.clone(), &[size]).refine_names();
                if !training {
                    n.eval();
                }
                n.forward(&x).into_dyn()
            }};
        }
        match d {
            0 => apply!(NormA),
            1 => apply!(NormB),
            _ => apply!(NormC),
        }
    }
}

proptest! {
    #![proptest_config(common::proptest_cases(32))]

    /// BatchNorm's gradients (input, weight, bias) against finite differences, for every
    /// channel dim and layout, in training and in evaluation.
    #[test]
    fn batch_norm(
        shape in prop::collection::vec(2usize..5, 3), l in lay(), d in 0usize..3,
        training in any::<bool>(), seed in 0u64..1000,
    ) {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = values(n, seed).iter().enumerate().map(|(i, x)| x + i as f64 * 0.37).collect();
        let x = make(&v, &shape, l);
        let c = shape[d];
        let w = DynTensor::from_vec(positive(c, seed + 7), &[c]).requires_grad_(true);
        let b = DynTensor::from_vec(values(c, seed + 8), &[c]).requires_grad_(true);
        check("batch_norm", &[x, w, b], &batch_norm_over(d, training, c, seed));
    }
}

/// An LSTM or GRU over the middle dim of a `(2, steps, 3)` input with 4 hidden units, as a
/// function of the input and its four parameters.
fn recurrent<C: namedtensor::nn::RecurrentCell>(xs: &[T]) -> T {
    use namedtensor::nn::Recurrent;
    let mut layer = Recurrent::<NormC, NormD, C, f64>::seeded(3, 4, 0);
    layer.weight_ih = xs[1].shallow_clone().refine_names();
    layer.weight_hh = xs[2].shallow_clone().refine_names();
    layer.bias_ih = Some(xs[3].shallow_clone().refine_names());
    layer.bias_hh = Some(xs[4].shallow_clone().refine_names());
    let x = xs[0]
        .shallow_clone()
        .refine_names::<(NormA, NormB, NormC)>();
    layer.forward(&x, NormB).into_dyn()
}

#[test]
fn lstm_and_gru_gradients_match_finite_differences() {
    use namedtensor::nn::{GruCell, LstmCell};
    for (gates, f) in [
        (4, recurrent::<LstmCell> as fn(&[T]) -> T),
        (3, recurrent::<GruCell>),
    ] {
        let input = |n: usize, seed: u64, shape: &[usize]| {
            DynTensor::from_vec(values(n, seed), shape).requires_grad_(true)
        };
        let xs = [
            input(2 * 3 * 3, 1, &[2, 3, 3]),
            input(gates * 4 * 3, 2, &[gates * 4, 3]),
            input(gates * 4 * 4, 3, &[gates * 4, 4]),
            input(gates * 4, 4, &[gates * 4]),
            input(gates * 4, 5, &[gates * 4]),
        ];
        check(if gates == 4 { "lstm" } else { "gru" }, &xs, &f);
    }
}

#[test]
fn group_norm_conv1d_and_adaptive_pool_gradients_match_finite_differences() {
    use namedtensor::nn::{AdaptiveAvgPool2d, Conv1d, GroupNorm};
    type Abc = (NormA, NormB, NormC);
    let leaf = |v: Vec<f64>, shape: &[usize]| DynTensor::from_vec(v, shape).requires_grad_(true);
    let x = || leaf(spread(40, 1), &[2, 4, 5]);
    check(
        "group_norm",
        &[x(), leaf(positive(4, 2), &[4]), leaf(values(4, 3), &[4])],
        &|xs| {
            let mut n = GroupNorm::<NormA, NormB, f64>::new(2, 4);
            n.weight = Some(xs[1].shallow_clone().refine_names());
            n.bias = Some(xs[2].shallow_clone().refine_names());
            n.forward(&xs[0].shallow_clone().refine_names::<Abc>())
                .into_dyn()
        },
    );
    check(
        "conv1d",
        &[
            x(),
            leaf(values(24, 4), &[3, 4, 2]),
            leaf(values(3, 5), &[3]),
        ],
        &|xs| {
            let mut c = Conv1d::<NormB, NormD, NormC, f64>::seeded(4, 3, 2, 0)
                .padding(1)
                .stride(2);
            c.weight = xs[1].shallow_clone().refine_names();
            c.bias = Some(xs[2].shallow_clone().refine_names());
            c.forward(&xs[0].shallow_clone().refine_names::<Abc>())
                .into_dyn()
        },
    );
    check(
        "adaptive_avg_pool2d",
        &[leaf(values(70, 6), &[2, 5, 7])],
        &|xs| {
            let pool = AdaptiveAvgPool2d::<NormB, NormC>::new(3, 4);
            pool.forward(&xs[0].shallow_clone().refine_names::<Abc>())
                .into_dyn()
        },
    );
}

#[test]
fn second_derivatives_of_layer_and_rms_norm() {
    // The fused normalisation recomputes its pieces with recorded ops under create_graph:
    // d/dx of Σ (∂L/∂x)·r against finite differences of the first derivative.
    use namedtensor::autograd::{BackwardOptions, grad};
    let v = vec![0.3, -0.7, 1.1, 2.0, -0.2, 0.9];
    let r = DynTensor::from_vec(vec![0.5, -1.0, 0.25, 2.0, 1.5, -0.75], &[1, 2, 3]);
    for (d, center) in [(2, true), (1, true), (2, false), (1, false)] {
        let f = norm_along(d, center, [1, 2, 3][d], 3);
        // A loss whose second derivative is not zero: Σ y³.
        let loss = |x: &T| f(x).powf(3.0).sum();
        let first = |v: &[f64]| -> Vec<f64> {
            let x = DynTensor::from_vec(v.to_vec(), &[1, 2, 3]).requires_grad_(true);
            loss(&x).backward();
            x.grad().unwrap().to_vec()
        };
        let x = DynTensor::from_vec(v.clone(), &[1, 2, 3]).requires_grad_(true);
        let g = grad(&[&loss(&x)], None, &[&x], BackwardOptions::create_graph()).unwrap();
        let g = g[0].clone().unwrap();
        let fast = first(&v);
        for (a, b) in g.to_vec().iter().zip(&fast) {
            assert!(
                (a - b).abs() < 1e-12,
                "d={d} center={center}: first derivative {a} vs {b}"
            );
        }
        let h = grad(&[&(&g * &r).sum()], None, &[&x], BackwardOptions::default()).unwrap()[0]
            .clone()
            .unwrap()
            .to_vec();
        let rv = r.to_vec();
        for i in 0..6 {
            let (mut p, mut m) = (v.clone(), v.clone());
            p[i] += 1e-6;
            m[i] -= 1e-6;
            let (gp, gm) = (first(&p), first(&m));
            let numeric: f64 = (0..6).map(|j| rv[j] * (gp[j] - gm[j]) / 2e-6).sum();
            assert!(
                (h[i] - numeric).abs() < 1e-5 * (1.0 + numeric.abs()),
                "d={d} center={center} [{i}]: {} vs {numeric}",
                h[i]
            );
        }
    }
}

#[test]
fn window_op_gradients_match_finite_differences() {
    use namedtensor::ops::Window2d;
    let leaf = |v: Vec<f64>, shape: &[usize]| DynTensor::from_vec(v, shape).requires_grad_(true);
    let x = || leaf(spread(60, 1), &[2, 1, 5, 6]);
    let mut strided = Window2d::new(3, 2).stride(2).padding(1);
    strided.dilation = (1, 2);
    check(
        "conv2d",
        &[
            leaf(spread(120, 1), &[2, 2, 5, 6]),
            leaf(values(36, 2), &[3, 2, 3, 2]),
            leaf(values(3, 3), &[3]),
        ],
        &|xs| xs[0].conv2d(&xs[1], Some(&xs[2]), strided),
    );
    let overlapping = Window2d::new(3, 3).stride(2).padding(1);
    check("max_pool2d", &[x()], &|xs| xs[0].max_pool2d(overlapping));
    check("avg_pool2d", &[x()], &|xs| xs[0].avg_pool2d(overlapping));
    let (oh, ow) = overlapping.output_size(5, 6).unwrap();
    check(
        "fold2d",
        &[leaf(spread(2 * 9 * oh * ow, 4), &[2, 3, 3, oh, ow])],
        &|xs| xs[0].fold2d(overlapping, (5, 6)),
    );
    // max_pool2d's gradient is itself differentiable (a fold of the winners): the second
    // derivative of Σ y³ against finite differences of the first derivative.
    use namedtensor::autograd::{BackwardOptions, grad};
    let v = spread(60, 5);
    let loss = |x: &T| x.max_pool2d(overlapping).powf(3.0).sum();
    let first = |v: &[f64]| -> Vec<f64> {
        let x = leaf(v.to_vec(), &[2, 1, 5, 6]);
        loss(&x).backward();
        x.grad().unwrap().to_vec()
    };
    let xg = leaf(v.clone(), &[2, 1, 5, 6]);
    let g = grad(&[&loss(&xg)], None, &[&xg], BackwardOptions::create_graph()).unwrap()[0]
        .clone()
        .unwrap();
    let r = DynTensor::from_vec(spread(60, 6), &[2, 1, 5, 6]);
    let h = grad(
        &[&(&g * &r).sum()],
        None,
        &[&xg],
        BackwardOptions::default(),
    )
    .unwrap()[0]
        .clone()
        .unwrap()
        .to_vec();
    let rv = r.to_vec();
    for i in 0..v.len() {
        let (mut p, mut m) = (v.clone(), v.clone());
        p[i] += 1e-6;
        m[i] -= 1e-6;
        let (gp, gm) = (first(&p), first(&m));
        let numeric: f64 = (0..v.len()).map(|j| rv[j] * (gp[j] - gm[j]) / 2e-6).sum();
        assert!(
            (h[i] - numeric).abs() < 1e-4 * (1.0 + numeric.abs()),
            "max_pool2d second derivative [{i}]: {} vs {numeric}",
            h[i]
        );
    }
}

proptest! {
    #![proptest_config(common::proptest_cases(48))]

    /// The normalisation kernels (forward, and the backward that `backward` runs) against the
    /// formula composed of ops in f64 on the same input values, along every dim of views of
    /// every kind for both the input and the incoming gradient, in f64, f32 and bf16 (computed
    /// in f32). Errors are measured against the scale of the terms (`r · |x|`, `r · |g|`, `r`
    /// the lane's `1 / sqrt(var + eps)`), which cancel.
    #[test]
    fn prop_norm_kernels_are_the_composed_formula(
        shape in prop::collection::vec(1usize..=7, 3),
        kinds in (
            prop::sample::select(common::KINDS.to_vec()),
            prop::sample::select(common::KINDS.to_vec()),
        ),
        d in 0usize..3,
        center in any::<bool>(),
        seed in any::<u64>(),
    ) {
        fn case<E: namedtensor::Float>(
            shape: &[usize], kinds: (common::Kind, common::Kind), d: usize, center: bool,
            seed: u64, tol: f64,
        ) -> Result<(), TestCaseError> {
            let n = shape.iter().product();
            let x = common::view::<E>(&common::floats(n, seed, -3.0, 3.0), shape, kinds.0)
                .requires_grad_(true);
            let g = common::view::<E>(&common::floats(n, seed ^ 0x5eed, -2.0, 2.0), shape, kinds.1);
            let y = norm_with(&x, d, center, None);
            y.backward_with(&g, namedtensor::autograd::BackwardOptions::default()).unwrap();
            let got_gx = common::elems_f64(&x.grad().unwrap());
            let eps = if center { 1e-5 } else { 0.5f64.powi(E::MANTISSA_DIGITS as i32 - 1) };
            let (xf, gf) = (x.detach().to_dtype::<f64>(), g.to_dtype::<f64>());
            let di = d as isize;
            let xc = if center { &xf - &xf.mean_dim(di, true) } else { xf.shallow_clone() };
            let r = (&xc * &xc).mean_dim(di, true).add_scalar(eps).rsqrt();
            let want_y = &xc * &r;
            let mg = if center { gf.mean_dim(di, true) } else { gf.mul_scalar(0.0) };
            let want_gx = &r * &(&(&gf - &mg) - &(&want_y * &(&gf * &want_y).mean_dim(di, true)));
            let full: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
            let scale = common::elems_f64(&r.expand(&full).contiguous());
            let what = |t: &str, i: usize, a: f64, b: f64| format!(
                "{} {} {:?} {:?} dim {} center {}: element {} is {} against {}",
                t, E::DTYPE, shape, kinds, d, center, i, a, b
            );
            // A lane of equal entries has `r = 1 / sqrt(eps)`: the mean's rounding (relative
            // to |x| ≤ 3) is scaled by it.
            let ys = common::elems_f64(&y).into_iter().zip(common::elems_f64(&want_y));
            for (i, ((a, b), r)) in ys.zip(&scale).enumerate() {
                prop_assert!((a - b).abs() <= tol * (1.0 + b.abs() + 3.0 * r), "{}", what("y", i, a, b));
            }
            // The gradient's terms depend on `y` through `r · g · y`, so the mean's rounding
            // (`3u` for |x| ≤ 3, `u` the element type's unit roundoff) reaches them scaled by
            // `r²` (up to 4 · r² · 3u with |g|, |y| ≤ 2): a lane whose spread is near `eps`
            // loses digits in any implementation, the composed ops included.
            let u = 0.5f64.powi(E::MANTISSA_DIGITS as i32);
            let want = common::elems_f64(&want_gx);
            for (i, ((a, b), r)) in got_gx.into_iter().zip(want).zip(scale).enumerate() {
                let bound = tol * (1.0 + b.abs() + 2.0 * r) + 12.0 * r * r * u;
                prop_assert!((a - b).abs() <= bound, "{}", what("gx", i, a, b));
            }
            Ok(())
        }
        case::<f64>(&shape, kinds, d, center, seed, 1e-12)?;
        case::<f32>(&shape, kinds, d, center, seed, 1e-5)?;
        case::<half::bf16>(&shape, kinds, d, center, seed, 2e-2)?;
    }
}

/// A lane of no entries normalises to nothing (and so has no gradient); a lane of one entry
/// to 0 under `LayerNorm`, whose gradient is then 0.
#[test]
fn norm_of_empty_and_single_entry_lanes() {
    let x = DynTensor::<f32>::zeros(&[2, 0, 3]).requires_grad_(true);
    for d in 0..3 {
        let y = norm_with(&x, d, true, None);
        assert_eq!(y.shape(), &[2, 0, 3]);
        y.sum().backward();
    }
    let x = DynTensor::from_vec(vec![1.5f32, -2.0, 7.0], &[3, 1, 1]).requires_grad_(true);
    let y = norm_with(&x, 2, true, None);
    assert_eq!(y.to_vec(), vec![0.0; 3]);
    (&y * &DynTensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3, 1, 1]))
        .sum()
        .backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0; 3]);
}

/// ReLU's gradient is 0 where the output is not positive, even for an infinite or NaN
/// incoming gradient, and the incoming gradient elsewhere, a NaN output included (PyTorch's
/// `threshold_backward`: `y <= 0 ? 0 : g`); on a transposed view and in f64 and bf16 alike.
#[test]
fn relu_gradient_is_zero_where_the_output_is_not_positive() {
    fn case<E: namedtensor::Float>() {
        let v = |xs: &[f64]| xs.iter().map(|&x| E::from_f64(x)).collect::<Vec<E>>();
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        // stored [3, 2], seen as its transpose [2, 3]
        let x = DynTensor::from_vec(v(&[-1.0, nan, 0.0, 3.0, 2.0, -0.0]), &[3, 2])
            .t()
            .requires_grad_(true);
        let g = DynTensor::from_vec(v(&[inf, nan, 5.0, 1.0, -inf, 7.0]), &[2, 3]);
        x.relu()
            .backward_with(&g, namedtensor::autograd::BackwardOptions::default())
            .unwrap();
        let got: Vec<f64> = x
            .grad()
            .unwrap()
            .to_vec()
            .iter()
            .map(|e| e.to_f64())
            .collect();
        // x (row-major [2, 3]) is [-1, 0, 2, NaN, 3, -0]
        assert_eq!(got[..3], [0.0, 0.0, 5.0], "{}", E::DTYPE);
        assert_eq!(got[4..], [-inf, 0.0], "{}", E::DTYPE);
        assert_eq!(
            got[3],
            1.0,
            "a NaN output passes the gradient ({})",
            E::DTYPE
        );
    }
    case::<f32>();
    case::<f64>();
    case::<half::bf16>();
}
