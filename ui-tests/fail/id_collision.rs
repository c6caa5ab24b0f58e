// Two different dims declared with the same explicit id.
namedtensor::dims! { Rows = 0x42 }
namedtensor::dims! { Cols = 0x42 }

fn main() {
    let _ = namedtensor::named::names::<(Rows, Cols)>();
}
