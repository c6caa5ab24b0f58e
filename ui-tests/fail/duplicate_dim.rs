// A shape that names a dim twice.
namedtensor::dims! { Rows, Channels }

fn main() {
    let _ = namedtensor::named::names::<(Rows, Channels, Rows)>();
}
