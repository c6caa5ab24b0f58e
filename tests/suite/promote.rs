//! Type promotion for every pair of the ten element types, checked against an independent
//! statement of PyTorch's rules, and through real operations (the result's dtype and values).

use half::{bf16, f16};
use namedtensor::{
    DType, DivOutput, DynTensor, Element, Promote, Promoted, ScalarDivOutput, ScalarPromote,
    ScalarPromoted, SumOutput,
};

/// PyTorch's `promote_types`, written from its rules: category bool < int < float; same
/// category: the wider type, where u8 with a signed type needs a signed type wider than 8 bits,
/// and f16 with bf16 needs f32.
fn expected(a: DType, b: DType) -> DType {
    use DType::*;
    let cat = |d: DType| match d {
        Bool => 0,
        U8 | I8 | I16 | I32 | I64 => 1,
        _ => 2,
    };
    if a == b {
        return a;
    }
    if cat(a) != cat(b) {
        return if cat(a) > cat(b) { a } else { b };
    }
    match (a, b) {
        (U8, I8) | (I8, U8) => I16,
        (U8, x) | (x, U8) => x, // i16, i32, i64 hold every u8
        (F16, BF16) | (BF16, F16) => F32,
        _ => {
            let bits = |d: DType| d.size_in_bytes();
            if bits(a) >= bits(b) { a } else { b }
        }
    }
}

fn expected_scalar(t: DType, scalar_kind: u8) -> DType {
    // 0: bool scalar, 1: integer, 2: float
    let cat = match t {
        DType::Bool => 0,
        d if d.is_float() => 2,
        _ => 1,
    };
    if scalar_kind <= cat {
        t
    } else if scalar_kind == 1 {
        DType::I64
    } else {
        DType::F32
    }
}

fn value<E: Element>(v: f64) -> E {
    E::from_f64(v)
}

fn check_pair<A: Promote<B>, B: Element>(count: &mut usize) {
    let want = expected(A::DTYPE, B::DTYPE);
    assert_eq!(
        <Promoted<A, B> as Element>::DTYPE,
        want,
        "{}·{}",
        A::DTYPE,
        B::DTYPE
    );
    // The table is symmetric.
    assert_eq!(want, expected(B::DTYPE, A::DTYPE));
    // True division: integer (and bool) results become f32.
    let div_want = if want.is_float() { want } else { DType::F32 };
    assert_eq!(<DivOutput<A, B> as Element>::DTYPE, div_want);
    // Through real operations: dtypes and values. Values 0/1 exist in every type.
    let a = DynTensor::from_vec(
        vec![value::<A>(1.0), value::<A>(0.0), value::<A>(1.0)],
        &[3],
    );
    let b = DynTensor::from_vec(vec![value::<B>(1.0), value::<B>(1.0)], &[2, 1]);
    let s = &a + &b;
    assert_eq!(s.dtype(), want);
    assert_eq!(s.shape(), &[2, 3]);
    let sum_want = if want == DType::Bool {
        [1.0, 1.0, 1.0]
    } else {
        [2.0, 1.0, 2.0]
    };
    assert_eq!(
        s.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
        [sum_want, sum_want].concat()
    );
    let p = &a * &b;
    assert_eq!(p.dtype(), want);
    assert_eq!(
        p.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
        vec![1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    );
    assert_eq!(a.maximum(&b).dtype(), want);
    let q = &a / &b;
    assert_eq!(q.dtype(), div_want);
    assert_eq!(
        q.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
        vec![1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    );
    // Comparisons promote first, then give bool.
    assert_eq!(
        a.eq(&b).to_vec(),
        vec![true, false, true, true, false, true]
    );
    *count += 1;
}

fn check_scalars<E: Element + ScalarPromote<bool> + ScalarPromote<i64> + ScalarPromote<f64>>() {
    assert_eq!(
        <ScalarPromoted<E, bool> as Element>::DTYPE,
        expected_scalar(E::DTYPE, 0)
    );
    assert_eq!(
        <ScalarPromoted<E, i64> as Element>::DTYPE,
        expected_scalar(E::DTYPE, 1)
    );
    assert_eq!(
        <ScalarPromoted<E, f64> as Element>::DTYPE,
        expected_scalar(E::DTYPE, 2)
    );
    let f = expected_scalar(E::DTYPE, 2);
    assert_eq!(
        <ScalarDivOutput<E, i64> as Element>::DTYPE,
        if E::DTYPE.is_float() {
            E::DTYPE
        } else {
            DType::F32
        }
    );
    assert_eq!(<ScalarDivOutput<E, f64> as Element>::DTYPE, f);
    let t = DynTensor::from_vec(vec![E::from_f64(1.0)], &[1]);
    assert_eq!(t.add_scalar(1.0).dtype(), f);
    assert_eq!(t.mul_scalar(2).dtype(), expected_scalar(E::DTYPE, 1));
    assert_eq!(t.mul_scalar(true).dtype(), E::DTYPE);
    assert_eq!(t.add_scalar(0.5).item().to_f64(), 1.5);
    let sum = if E::DTYPE.is_float() {
        E::DTYPE
    } else {
        DType::I64
    };
    assert_eq!(<SumOutput<E> as Element>::DTYPE, sum);
    assert_eq!(t.sum().dtype(), sum);
}

macro_rules! all_pairs {
    ($count:ident; $($a:ty),*) => {
        $( all_pairs!(@row $count, $a; bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64); )*
    };
    (@row $count:ident, $a:ty; $($b:ty),*) => {
        $( check_pair::<$a, $b>(&mut $count); )*
    };
}

#[test]
fn every_pair_promotes_as_pytorch() {
    let mut count = 0;
    all_pairs!(count; bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64);
    assert_eq!(count, 100);
}

#[test]
fn named_examples() {
    assert_eq!(<Promoted<f64, i16> as Element>::DTYPE, DType::F64);
    assert_eq!(<Promoted<f32, i64> as Element>::DTYPE, DType::F32);
    assert_eq!(<Promoted<u8, i8> as Element>::DTYPE, DType::I16);
    assert_eq!(<Promoted<f16, bf16> as Element>::DTYPE, DType::F32);
    assert_eq!(<Promoted<bool, i32> as Element>::DTYPE, DType::I32);
    assert_eq!(<Promoted<i64, f16> as Element>::DTYPE, DType::F16);
    assert_eq!(<DivOutput<i32, i32> as Element>::DTYPE, DType::F32);
}

#[test]
fn every_type_with_scalars() {
    check_scalars::<bool>();
    check_scalars::<u8>();
    check_scalars::<i8>();
    check_scalars::<i16>();
    check_scalars::<i32>();
    check_scalars::<i64>();
    check_scalars::<f16>();
    check_scalars::<bf16>();
    check_scalars::<f32>();
    check_scalars::<f64>();
}

#[test]
fn promoted_values_are_exact() {
    // u8 200 + i8 -100 in i16: no wrap in either operand's type.
    let a = DynTensor::from_vec(vec![200u8], &[1]);
    let b = DynTensor::from_vec(vec![-100i8], &[1]);
    assert_eq!((&a + &b).item(), 100i16);
    assert_eq!((&a - &b).item(), 300i16);
    // i64 beyond f32's exact range is rounded once into f32.
    let big = DynTensor::from_vec(vec![(1i64 << 40) + 1], &[1]);
    let f = DynTensor::from_vec(vec![0.0f32], &[1]);
    assert_eq!((&big + &f).item(), (1u64 << 40) as f32);
    // f16 · bf16 computed and stored in f32.
    let h = DynTensor::from_vec(vec![f16::from_f32(1.0 / 3.0)], &[1]);
    let g = DynTensor::from_vec(vec![bf16::from_f32(3.0)], &[1]);
    assert_eq!((&h * &g).item(), f16::from_f32(1.0 / 3.0).to_f32() * 3.0);
}
