mod literal {
    namedtensor::dims! { Batch, "Rows" }
}
mod path {
    namedtensor::dims! { Batch, std::Rows }
}
mod keyword {
    namedtensor::dims! { Batch, type }
}

fn main() {}
