// The name algebra's idioms compile and give the expected dims and axes.
use namedtensor::Dim;
use namedtensor::named::{
    AlignTo, Broadcast, Contract, DimTuple, HasDim, MaskTo, MatMul, MergeDims, PermuteTo,
    ReduceOver, RemoveDim, Rename, ReplaceDim, Stack, Unmask, axis_of, names,
};

namedtensor::dims! {
    /// Images in a batch.
    pub Batch,
    pub Channels,
    pub(crate) Rows,
    Cols,
    Pixels,
    Frames = 0xf4a3e5,
}

type Image = (Batch, Channels, Rows, Cols);

/// Generic code names what it needs as a bound on the whole shape.
fn pooled<S: ReduceOver<(Rows, Cols)>>() -> &'static [&'static str] {
    <S as ReduceOver<(Rows, Cols)>>::Out::NAMES
}

/// Masked dims are invisible to generic code: it works for any private dims `P`.
fn per_example<S: HasDim<Cols, P>, P>() -> isize {
    <S as HasDim<Cols, P>>::AXIS
}

fn main() {
    // Dims are unit values (for `t.sum(Channels)`-style calls) and carry their name.
    let marker: (Batch, Channels) = (Batch, Channels);
    assert_eq!(format!("{marker:?}"), "(Batch, Channels)");
    assert_eq!(Frames::ID, 0xf4a3e5);

    assert_eq!(axis_of::<Image, Rows>(), 2);
    assert_eq!(<Image as ReduceOver<(Cols, Channels)>>::AXES, [1, 3]);
    assert_eq!(pooled::<Image>(), ["Batch", "Channels"]);
    assert_eq!(
        names::<<Image as RemoveDim<Batch>>::Out>(),
        ["Channels", "Rows", "Cols"]
    );
    assert_eq!(
        <Image as PermuteTo<(Batch, Rows, Cols, Channels)>>::PERM,
        [0, 2, 3, 1]
    );
    assert_eq!(<(Cols, Rows) as AlignTo<Image>>::PLAN.insert, [0, 1]);
    assert_eq!(
        names::<<(Rows, Cols) as Broadcast<(Channels, Cols)>>::Out>(),
        ["Rows", "Cols", "Channels"]
    );
    assert_eq!(
        names::<<Image as Contract<Cols, (Cols, Pixels)>>::Out>(),
        ["Batch", "Channels", "Rows", "Pixels"]
    );
    assert_eq!(
        names::<<(Batch, Rows, Cols) as MatMul<(Cols, Pixels)>>::Out>(),
        ["Batch", "Rows", "Pixels"]
    );
    assert_eq!(
        names::<<Image as Rename<Cols, Pixels>>::Out>(),
        ["Batch", "Channels", "Rows", "Pixels"]
    );

    // Split and merge round-trip.
    type Flat = <Image as MergeDims<(Rows, Cols), Pixels>>::Out;
    assert_eq!(names::<Flat>(), ["Batch", "Channels", "Pixels"]);
    assert_eq!(
        names::<<Flat as ReplaceDim<Pixels, (Rows, Cols)>>::Out>(),
        names::<Image>()
    );
    assert_eq!(
        names::<<Image as Stack<Frames>>::Out>(),
        ["Frames", "Batch", "Channels", "Rows", "Cols"]
    );

    // Mask `Batch` and `Channels`, work on the rest, unmask.
    type Visible = <Image as MaskTo<Channels>>::Out;
    type Private = <Image as MaskTo<Channels>>::Private;
    assert_eq!(names::<Visible>(), ["Rows", "Cols"]);
    assert_eq!(per_example::<Visible, Private>(), 3);
    // An unmasked operand broadcasts over the private dims: (Cols,) + masked (Rows, Cols)
    // gives visible (Cols, Rows), full (Batch, Channels, Cols, Rows).
    type Sum = <(Cols,) as Broadcast<Visible, (), Private>>::Out;
    assert_eq!(names::<Sum>(), ["Cols", "Rows"]);
    let plan = <(Cols,) as Broadcast<Visible, (), Private>>::LHS;
    assert_eq!(plan.perm, [0]);
    assert_eq!(plan.insert, [0, 1, 3]);
    assert_eq!(
        names::<<Visible as Unmask<Private>>::Out>(),
        names::<Image>()
    );
}
