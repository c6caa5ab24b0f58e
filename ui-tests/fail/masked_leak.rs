// `x.mask_to(Batch) + b` where the unmasked `b` has `Batch` as a visible dim.
use namedtensor::named::Broadcast;

namedtensor::dims! { Batch, Channels }

fn main() {
    // lhs: visible (Channels,), private (Batch,); rhs: visible (Batch,), no private dims.
    let _ = <(Channels,) as Broadcast<(Batch,), (Batch,), ()>>::LHS;
}
