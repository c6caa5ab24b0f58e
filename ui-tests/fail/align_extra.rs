// `w.align_as(&img)` where `w` has a dim `img` lacks.
use namedtensor::named::AlignTo;

namedtensor::dims! { Batch, Channels, Heads, Rows, Cols }

type Image = (Batch, Channels, Rows, Cols);

fn main() {
    let _ = <(Channels, Heads) as AlignTo<Image>>::PLAN;
}
