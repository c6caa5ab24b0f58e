// `x.dot(Hidden, &w)` where only `x` has `Hidden`.
use namedtensor::named::Contract;

namedtensor::dims! { Batch, Seq, Hidden, Out }

fn main() {
    let _ = <(Batch, Seq, Hidden) as Contract<Hidden, (Batch, Out)>>::PLAN;
}
