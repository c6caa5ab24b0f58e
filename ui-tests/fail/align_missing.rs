// `t.align_to::<(Batch, Channels)>()` would have to drop `Heads`.
use namedtensor::named::AlignTo;

namedtensor::dims! { Batch, Channels, Heads }

fn main() {
    let _ = <(Batch, Channels, Heads) as AlignTo<(Batch, Channels)>>::PLAN;
}
