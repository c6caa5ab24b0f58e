// `a.matmul(&b)` with a: (Seq, Hidden), b: (Hidden, Seq) would give (Seq, Seq).
use namedtensor::named::MatMul;

namedtensor::dims! { Seq, Hidden }

fn main() {
    let _ = <(Seq, Hidden) as MatMul<(Hidden, Seq)>>::LHS;
}
