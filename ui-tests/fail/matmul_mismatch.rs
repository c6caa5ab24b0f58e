// `a.matmul(&b)` with a: (I, K), b: (J, K): `K` is not b's second-to-last dim.
use namedtensor::named::MatMul;

namedtensor::dims! { I, J, K }

fn main() {
    let _ = <(I, K) as MatMul<(J, K)>>::LHS;
}
