// Two tensors masked differently cannot be combined.
use namedtensor::named::Broadcast;

namedtensor::dims! { Batch, Channels, Rows }

fn main() {
    // a.mask_to(Batch) + b.mask_to(Channels)
    let _ = <(Channels, Rows) as Broadcast<(Rows,), (Batch,), (Batch, Channels)>>::LHS;
}
