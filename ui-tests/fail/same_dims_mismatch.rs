// The strict elementwise form refuses to broadcast.
use namedtensor::named::SameDims;

namedtensor::dims! { Batch, Hidden, Hidden2 }

fn main() {
    let _ = <(Batch, Hidden) as SameDims<(Batch, Hidden2)>>::RHS;
}
