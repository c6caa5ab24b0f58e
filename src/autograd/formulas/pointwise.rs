//! Gradients of the pointwise ops: one arm per op token, so a new token does not compile
//! until its derivative is written.

use super::{OP, Temp, bin, bin_c, cast_back, mul, mul_c, some, sum_to, un};
use crate::autograd::node::{Meta, Node, Saved};
use crate::autograd::record::{Input, input, node, record};
use crate::backend::op::{BinaryOp, CompareOp, UnaryOp};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::DynTensor;
use std::f64::consts::PI;
use std::sync::Arc;

/// What a unary op's formula reads.
enum Needs {
    Nothing,
    Input,
    Output,
}

fn unary_needs(u: UnaryOp) -> Needs {
    use UnaryOp::*;
    match u {
        Neg | Sign | Floor | Ceil | Round | Trunc => Needs::Nothing,
        Exp | Expm1 | Sqrt | Rsqrt | Tanh | Sigmoid | Recip | Relu => Needs::Output,
        Abs | Square | Log | Log1p | Sin | Cos | Tan | Erf | Gelu | GeluGrad | GeluTanh | Silu => {
            Needs::Input
        }
    }
}

/// `g · u'(x)`, from the input `x` or the output `y` (whichever [`unary_needs`] saved).
fn unary_grad<E: Element>(
    u: UnaryOp,
    g: &DynTensor<E>,
    x: Option<&DynTensor<E>>,
    y: Option<&DynTensor<E>>,
) -> Result<DynTensor<E>> {
    use UnaryOp::*;
    let x = || x.expect("the formula's input was saved");
    let y = || y.expect("the formula's output was saved");
    match u {
        Neg => un(Neg, g),
        // Zeros, not `g · 0`, so that an infinite or NaN `g` does not become NaN (PyTorch).
        Sign | Floor | Ceil | Round | Trunc => DynTensor::full_on(g.shape(), E::ZERO, g.device()),
        Abs => mul(g, &un(Sign, x())?),
        Square => mul(g, &mul_c(x(), 2.0)?),
        Relu => bin(BinaryOp::ReluGrad, g, y()),
        Exp => mul(g, y()),
        Expm1 => mul(g, &bin_c(BinaryOp::Add, y(), 1.0)?),
        Log => bin(BinaryOp::Div, g, x()),
        Log1p => bin(BinaryOp::Div, g, &bin_c(BinaryOp::Add, x(), 1.0)?),
        Sqrt => bin(BinaryOp::Div, g, &mul_c(y(), 2.0)?),
        // d/dx x^-1/2 = -1/2 x^-3/2 = -y³/2
        Rsqrt => mul(g, &mul_c(&mul(&un(Square, y())?, y())?, -0.5)?),
        Sin => mul(g, &un(Cos, x())?),
        Cos => mul(g, &un(Neg, &un(Sin, x())?)?),
        // 1 + tan² x
        Tan => mul(g, &bin_c(BinaryOp::Add, &un(Square, &un(Tan, x())?)?, 1.0)?),
        Tanh => Ok(Temp::new(un(Square, y())?).rsub_c(1.0)?.mul(g)?.done()),
        // 2/√π e^{-x²}
        Erf => {
            let e = Temp::new(un(Square, x())?).un(Neg)?.un(Exp)?;
            Ok(e.bin_c(BinaryOp::Mul, 2.0 / PI.sqrt())?.mul(g)?.done())
        }
        Sigmoid => Ok(Temp::new(one_minus(y())?).mul(y())?.mul(g)?.done()),
        Recip => mul(g, &un(Neg, &un(Square, y())?)?),
        // Φ(x) + x φ(x), one kernel (differentiable: its own formula below)
        Gelu => mul(g, &un(GeluGrad, x())?),
        // d/dx (Φ(x) + x φ(x)) = φ(x) (2 − x²)
        GeluGrad => {
            let x = x();
            let pdf = Temp::new(un(Square, x)?)
                .bin_c(BinaryOp::Mul, -0.5)?
                .un(Exp)?
                .bin_c(BinaryOp::Mul, 1.0 / (2.0 * PI).sqrt())?;
            let two_minus = Temp::new(un(Square, x)?)
                .bin_c(BinaryOp::Mul, -1.0)?
                .bin_c(BinaryOp::Add, 2.0)?;
            Ok(pdf.mul(&two_minus.done())?.mul(g)?.done())
        }
        // ½(1 + t) + ½ x (1 − t²) k (1 + 3c x²), t = tanh(k (x + c x³))
        GeluTanh => {
            let (k, c) = ((2.0 / PI).sqrt(), 0.044715);
            let x = x();
            let x2 = un(Square, x)?;
            let inner = mul_c(&bin(BinaryOp::Add, x, &mul_c(&mul(&x2, x)?, c)?)?, k)?;
            let t = un(Tanh, &inner)?;
            let left = mul_c(&bin_c(BinaryOp::Add, &t, 1.0)?, 0.5)?;
            let slope = mul_c(&bin_c(BinaryOp::Add, &mul_c(&x2, 3.0 * c)?, 1.0)?, k)?;
            let right = mul(
                &mul_c(x, 0.5)?,
                &mul(&one_minus(&un(Square, &t)?)?, &slope)?,
            )?;
            mul(g, &bin(BinaryOp::Add, &left, &right)?)
        }
        // s (1 + x (1 − s)), s = sigmoid(x)
        Silu => {
            let s = un(Sigmoid, x())?;
            let inner = Temp::new(one_minus(&s)?)
                .mul(x())?
                .bin_c(BinaryOp::Add, 1.0)?;
            Ok(inner.mul(&s)?.mul(g)?.done())
        }
    }
}

/// `1 - t`.
fn one_minus<E: Element>(t: &DynTensor<E>) -> Result<DynTensor<E>> {
    crate::ops::binary_scalar::<E, E>(OP, BinaryOp::Sub, t, Element::from_f64(1.0), true)
}

/// Records `y = u(x)`.
pub(crate) fn unary<E: Element>(u: UnaryOp, x: &DynTensor<E>, y: DynTensor<E>) -> DynTensor<E> {
    let needs = unary_needs(u);
    let saved_x = matches!(needs, Needs::Input).then(|| Saved::input(x));
    let saved_y = matches!(needs, Needs::Output).then(|| Saved::output(&y));
    match unary_node(u, input(x), y.shape(), saved_x, saved_y) {
        Some(n) => y.with_meta(Some(Meta::interior(n))),
        None => y,
    }
}

/// The node of `u` written in place through `dst` by `write`, when `u`'s formula does not
/// read its input (it reads its output, which is `dst` after the write, or nothing): its
/// input is `dst`'s value before the write. `None`, with nothing written, when the formula
/// reads the input; the caller then records the op on a copy.
pub(crate) fn unary_in_place<E: Element>(
    u: UnaryOp,
    dst: &DynTensor<E>,
    write: impl FnOnce() -> Result<()>,
) -> Result<Option<Arc<Node>>> {
    let needs = unary_needs(u);
    if matches!(needs, Needs::Input) {
        return Ok(None);
    }
    let edge = input(dst);
    write()?;
    let saved_y = matches!(needs, Needs::Output).then(|| Saved::output(dst));
    let node = unary_node(u, edge, dst.shape(), None, saved_y);
    Ok(Some(node.expect("a float tensor of a graph has an edge")))
}

/// The node of `u` over `x` (its edge), with what its formula reads saved.
fn unary_node<E: Element>(
    u: UnaryOp,
    x: Input,
    shape: &[usize],
    saved_x: Option<Saved<E>>,
    saved_y: Option<Saved<E>>,
) -> Option<Arc<Node>> {
    let frees = saved_x.is_some() || saved_y.is_some();
    node::<E>(u.name(), shape, vec![x], frees, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let x = saved_x.as_ref().map(|s| s.get(node)).transpose()?;
        let y = saved_y.as_ref().map(|s| s.get(node)).transpose()?;
        Ok(vec![some(unary_grad(u, &g, x.as_ref(), y.as_ref())?)])
    })
}

/// Records `out = b(a, c)`, computed in `O` from `a: A` and `c: B` (broadcast, promoted).
pub(crate) fn binary<A: Element, B: Element, O: Element>(
    b: BinaryOp,
    a: &DynTensor<A>,
    c: &DynTensor<B>,
    out: DynTensor<O>,
) -> DynTensor<O> {
    use BinaryOp::*;
    let saves = !matches!(b, Add | Sub);
    let sa = saves.then(|| Saved::input(a));
    let sc = saves.then(|| Saved::input(c));
    let so = matches!(b, Pow).then(|| Saved::output(&out));
    let (shape_a, shape_c) = (a.shape().to_vec(), c.shape().to_vec());
    record(
        b.name(),
        out,
        vec![input(a), input(c)],
        saves,
        move |g, node| {
            let g = g.into_typed::<O>(node.name)?;
            let (want_a, want_c) = (node.next[0].is_some(), node.next[1].is_some());
            let x = sa.as_ref().map(|s| s.get(node)).transpose()?;
            let y = sc.as_ref().map(|s| s.get(node)).transpose()?;
            let x = x.map(|x| cast_back::<A, O>(x)).transpose()?;
            let y = y.map(|y| cast_back::<B, O>(y)).transpose()?;
            let out = so.as_ref().map(|s| s.get(node)).transpose()?;
            let (ga, gc) =
                binary_grads(b, &g, x.as_ref(), y.as_ref(), out.as_ref(), want_a, want_c)?;
            let ga = match ga {
                Some(ga) if want_a => some(cast_back::<O, A>(sum_to(ga, &shape_a)?)?),
                _ => None,
            };
            let gc = match gc {
                Some(gc) if want_c => some(cast_back::<O, B>(sum_to(gc, &shape_c)?)?),
                _ => None,
            };
            Ok(vec![ga, gc])
        },
    )
}

type Pair<E> = (Option<DynTensor<E>>, Option<DynTensor<E>>);

/// The gradients of `b(x, y)` at the output's shape (before summing over broadcast dims).
fn binary_grads<E: Element>(
    b: BinaryOp,
    g: &DynTensor<E>,
    x: Option<&DynTensor<E>>,
    y: Option<&DynTensor<E>>,
    out: Option<&DynTensor<E>>,
    want_x: bool,
    want_y: bool,
) -> Result<Pair<E>> {
    use BinaryOp::*;
    let x = || x.expect("saved");
    let y = || y.expect("saved");
    let when = |want: bool, f: &dyn Fn() -> Result<DynTensor<E>>| want.then(f).transpose();
    Ok(match b {
        Add => (
            when(want_x, &|| Ok(g.shallow_clone()))?,
            when(want_y, &|| Ok(g.shallow_clone()))?,
        ),
        Sub => (
            when(want_x, &|| Ok(g.shallow_clone()))?,
            when(want_y, &|| un(UnaryOp::Neg, g))?,
        ),
        Mul => (
            when(want_x, &|| mul(g, y()))?,
            when(want_y, &|| mul(g, x()))?,
        ),
        // d/dy x/y = -x/y²
        Div => (
            when(want_x, &|| bin(Div, g, y()))?,
            when(want_y, &|| {
                un(
                    UnaryOp::Neg,
                    &bin(Div, &mul(g, x())?, &un(UnaryOp::Square, y())?)?,
                )
            })?,
        ),
        // d/dx x^y = y x^(y-1); d/dy x^y = x^y ln x, taken as 0 where x = 0 and y ≥ 0
        Pow => (
            when(want_x, &|| {
                // 0 where the exponent is 0 (PyTorch), not `0 · 0^-1 = NaN` at x = 0.
                let p = bin(Pow, x(), &bin_c(Sub, y(), 1.0)?)?;
                let d = mul(g, &mul(y(), &p)?)?;
                let flat = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, y(), 0.0)?;
                let nil = crate::ops::scalar_on(E::ZERO, g.device())?;
                crate::ops::select(OP, &flat, &nil, &d)
            })?,
            when(want_y, &|| {
                let out = out.expect("saved");
                let ln = un(UnaryOp::Log, x())?;
                let zero_base = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, x(), 0.0)?;
                let nonneg = crate::ops::compare_scalar::<E>(OP, CompareOp::Ge, y(), 0.0)?;
                let mask = crate::ops::compare::<bool, bool, bool>(
                    OP,
                    CompareOp::LogicalAnd,
                    &zero_base,
                    &nonneg,
                )?;
                let nil = crate::ops::scalar_on(E::ZERO, g.device())?;
                let ln = crate::ops::select(OP, &mask, &nil, &ln)?;
                mul(g, &mul(out, &ln)?)
            })?,
        ),
        // The larger (smaller) operand gets the gradient; ties split it in halves.
        Maximum | Minimum => {
            let (win, tie) = (
                if b == Maximum {
                    CompareOp::Gt
                } else {
                    CompareOp::Lt
                },
                CompareOp::Eq,
            );
            let share = |p: &DynTensor<E>, q: &DynTensor<E>| -> Result<DynTensor<E>> {
                let wins = crate::ops::compare::<E, E, E>(OP, win, p, q)?.try_to_dtype::<E>()?;
                let ties = crate::ops::compare::<E, E, E>(OP, tie, p, q)?.try_to_dtype::<E>()?;
                mul(g, &bin(Add, &wins, &mul_c(&ties, 0.5)?)?)
            };
            (
                when(want_x, &|| share(x(), y()))?,
                when(want_y, &|| share(y(), x()))?,
            )
        }
        // `x` where `y > 0`: linear in `x`, piecewise constant in `y`.
        ReluGrad => (
            when(want_x, &|| bin(ReluGrad, g, y()))?,
            when(want_y, &|| {
                DynTensor::full_on(y().shape(), E::ZERO, g.device())
            })?,
        ),
        // x - y·floor(x/y) and x - y·trunc(x/y): the rounded quotient is piecewise constant.
        Remainder | Fmod => {
            let round = if b == Remainder {
                UnaryOp::Floor
            } else {
                UnaryOp::Trunc
            };
            (
                when(want_x, &|| Ok(g.shallow_clone()))?,
                when(want_y, &|| {
                    let q = un(round, &bin(Div, x(), y())?)?;
                    un(UnaryOp::Neg, &mul(g, &q)?)
                })?,
            )
        }
    })
}

/// Records `out = cond ? a : b` (broadcast): each operand gets the gradient where it was
/// chosen, zero elsewhere.
pub(crate) fn select<E: Element>(
    cond: &DynTensor<bool>,
    a: &DynTensor<E>,
    b: &DynTensor<E>,
    out: DynTensor<E>,
) -> DynTensor<E> {
    let cond = Saved::input(cond);
    let (shape_a, shape_b) = (a.shape().to_vec(), b.shape().to_vec());
    record(
        "where",
        out,
        vec![input(a), input(b)],
        true,
        move |g, node| {
            let g = g.into_typed::<E>(node.name)?;
            let cond = cond.get(node)?;
            let zero = crate::ops::scalar_on(E::ZERO, g.device())?;
            let ga = match node.next[0] {
                Some(_) => some(sum_to(crate::ops::select(OP, &cond, &g, &zero)?, &shape_a)?),
                None => None,
            };
            let gb = match node.next[1] {
                Some(_) => some(sum_to(crate::ops::select(OP, &cond, &zero, &g)?, &shape_b)?),
                None => None,
            };
            Ok(vec![ga, gb])
        },
    )
}

/// Records `y = √v` as the last step of `std` or a 2-norm, with PyTorch's rule for those
/// ops: where `y` is 0 the gradient is 0 (not `g / 0`).
pub(crate) fn root<E: Element>(
    op: &'static str,
    v: &DynTensor<E>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let sy = Saved::output(&y);
    record(op, y, vec![input(v)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let y = sy.get(node)?;
        let zero = crate::ops::compare_scalar::<E>(OP, CompareOp::Eq, &y, 0.0)?;
        let twice = mul_c(&y, 2.0)?;
        let one = crate::ops::scalar_on(E::ONE, y.device())?;
        let safe = crate::ops::select(OP, &zero, &one, &twice)?;
        let q = bin(BinaryOp::Div, &g, &safe)?;
        let nil = crate::ops::scalar_on(E::ZERO, y.device())?;
        Ok(vec![some(crate::ops::select(OP, &zero, &nil, &q)?)])
    })
}

/// Records `y = clamp(x, lo, hi)` (either bound may be absent): the gradient passes where
/// `lo ≤ x ≤ hi`, bounds included, and is 0 elsewhere (PyTorch's rule; the maximum/minimum it
/// is computed with would halve it at a bound).
pub(crate) fn clamp<E: Element>(
    op: &'static str,
    x: &DynTensor<E>,
    lo: Option<f64>,
    hi: Option<f64>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let sx = Saved::input(x);
    record(op, y, vec![input(x)], true, move |g, node| {
        let g = g.into_typed::<E>(node.name)?;
        let x = sx.get(node)?;
        let mut inside: Option<DynTensor<bool>> = None;
        for (bound, cop) in [(lo, CompareOp::Ge), (hi, CompareOp::Le)] {
            let Some(b) = bound else { continue };
            let ok = crate::ops::compare_scalar::<E>(OP, cop, &x, b)?;
            inside = Some(match inside {
                None => ok,
                Some(prev) => {
                    crate::ops::compare::<bool, bool, bool>(OP, CompareOp::LogicalAnd, &prev, &ok)?
                }
            });
        }
        let gx = match inside {
            Some(mask) => mul(&g, &mask.try_to_dtype::<E>()?)?,
            None => g,
        };
        Ok(vec![some(gx)])
    })
}

/// Records `y`, a function of `x` that is constant in it (the 0-norm, a reduction over no
/// element): its gradient is zero, and `y` still belongs to the graph.
pub(crate) fn constant<A: Element, E: Element>(
    op: &'static str,
    x: &DynTensor<A>,
    y: DynTensor<E>,
) -> DynTensor<E> {
    let (shape, device) = (x.shape().to_vec(), x.device());
    record(op, y, vec![input(x)], false, move |_, _| {
        Ok(vec![some(DynTensor::<A>::full_on(
            &shape,
            A::ZERO,
            device,
        )?)])
    })
}
