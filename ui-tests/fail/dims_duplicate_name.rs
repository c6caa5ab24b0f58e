namedtensor::dims! { Batch, Rows, Batch }

fn main() {}
