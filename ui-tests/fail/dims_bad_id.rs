mod string {
    namedtensor::dims! { Rows = "0x12" }
}
mod too_large {
    namedtensor::dims! { Rows = 0x1_0000_0000_0000_0000 }
}
mod signed {
    namedtensor::dims! { Rows = 5i32 }
}
mod negative {
    namedtensor::dims! { Rows = -5 }
}
mod same_call {
    namedtensor::dims! { Rows = 7, Cols = 7 }
}

fn main() {}
