// `x.dot(Hidden, &w)` where `x` has no `Hidden`.
use namedtensor::named::Contract;

namedtensor::dims! { Batch, Seq, Hidden, Out }

fn main() {
    let _ = <(Batch, Seq) as Contract<Hidden, (Hidden, Out)>>::PLAN;
}
