//! Bad input: every case gives a clear error (or the documented panic of the non-`try_`
//! form) naming the op and the values involved, and leaves every input unchanged.

use namedtensor::{DynTensor, Error, ErrorKind, Idx};

type Snapshot = (Vec<usize>, Vec<usize>, usize, Vec<f32>);

fn snapshot(t: &DynTensor) -> Snapshot {
    (
        t.shape().to_vec(),
        t.stride().to_vec(),
        t.storage_offset(),
        t.storage().to_vec(),
    )
}

fn sample() -> DynTensor {
    DynTensor::<f32>::arange(0.0, 24.0, 1.0).view(&[2, 3, 4])
}

/// Runs `f` on a fresh sample, checks the error's kind, op and message fragments, and that
/// the sample is unchanged.
fn expect_err(
    f: impl Fn(&DynTensor) -> Result<(), Error>,
    kind: ErrorKind,
    op: &str,
    fragments: &[&str],
) {
    let t = sample();
    let before = snapshot(&t);
    let err = f(&t).expect_err("expected an error");
    assert_eq!(err.kind(), kind, "{err}");
    assert_eq!(err.op(), op, "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("{op}: ")), "{msg}");
    for frag in fragments {
        assert!(msg.contains(frag), "`{msg}` should mention `{frag}`");
    }
    assert_eq!(snapshot(&t), before, "input changed by a failing op");
}

#[test]
fn index_out_of_range() {
    expect_err(
        |t| t.try_select(1, 3).map(drop),
        ErrorKind::IndexOutOfRange,
        "select",
        &["index 3", "dim 1", "size 3", "[2, 3, 4]"],
    );
    expect_err(
        |t| t.try_select(0, -3).map(drop),
        ErrorKind::IndexOutOfRange,
        "select",
        &["index -3"],
    );
    expect_err(
        |t| t.try_get(&[1, 3, 0]).map(drop),
        ErrorKind::IndexOutOfRange,
        "index",
        &["index 3", "dim 1"],
    );
    expect_err(
        |t| t.try_get(&[1, 2]).map(drop),
        ErrorKind::IndexOutOfRange,
        "index",
        &["2 indices", "rank 3"],
    );
    expect_err(
        |t| t.try_set(&[2, 0, 0], 1.0),
        ErrorKind::IndexOutOfRange,
        "index",
        &["index 2", "dim 0"],
    );
    expect_err(
        |t| t.try_i((0, 0, 4)).map(drop),
        ErrorKind::IndexOutOfRange,
        "index",
        &["index 4"],
    );
    expect_err(
        |t| t.try_i((0, 0, 0, 0)).map(drop),
        ErrorKind::IndexOutOfRange,
        "index",
        &["too many indices"],
    );
    expect_err(
        |t| t.try_i((Idx::Ellipsis, Idx::Ellipsis)).map(drop),
        ErrorKind::IndexOutOfRange,
        "index",
        &["one ellipsis"],
    );
    expect_err(
        |t| t.try_narrow(2, 3, 2).map(drop),
        ErrorKind::IndexOutOfRange,
        "narrow",
        &["start 3", "length 2", "size 4"],
    );
    expect_err(
        |t| t.try_item().map(drop),
        ErrorKind::InvalidArgument,
        "item",
        &["24 elements"],
    );
}

#[test]
fn dim_out_of_range() {
    expect_err(
        |t| t.try_transpose(0, 3).map(drop),
        ErrorKind::DimOutOfRange,
        "transpose",
        &["dim 3", "rank 3", "-3..3"],
    );
    expect_err(
        |t| t.try_size(-4).map(drop),
        ErrorKind::DimOutOfRange,
        "size",
        &["dim -4"],
    );
    expect_err(
        |t| t.try_unsqueeze(5).map(drop),
        ErrorKind::DimOutOfRange,
        "unsqueeze",
        &["dim 5", "new dim of a tensor of rank 3", "-4..=3"],
    );
    expect_err(
        |t| t.try_squeeze_dim(3).map(drop),
        ErrorKind::DimOutOfRange,
        "squeeze",
        &["dim 3"],
    );
    expect_err(
        |t| t.try_flatten(2, 0).map(drop),
        ErrorKind::InvalidArgument,
        "flatten",
        &["start dim 2"],
    );
    expect_err(
        |t| t.try_permute(&[0, 1]).map(drop),
        ErrorKind::ShapeMismatch,
        "permute",
        &["rank 3"],
    );
    expect_err(
        |t| t.try_permute(&[0, 1, 1]).map(drop),
        ErrorKind::InvalidArgument,
        "permute",
        &["more than once"],
    );
    expect_err(
        |t| t.try_t().map(drop),
        ErrorKind::InvalidArgument,
        "t",
        &["rank 3", "transpose"],
    );
}

#[test]
fn views_that_cannot_exist() {
    expect_err(
        |t| t.try_as_strided(&[5, 5], &[5, 1], 0).map(drop),
        ErrorKind::OutOfStorage,
        "as_strided",
        &["storage index 24", "24 elements"],
    );
    expect_err(
        |t| t.try_as_strided(&[2], &[1], 23).map(drop),
        ErrorKind::OutOfStorage,
        "as_strided",
        &["offset 23"],
    );
    expect_err(
        |t| t.try_as_strided(&[2, 2], &[1], 0).map(drop),
        ErrorKind::ShapeMismatch,
        "as_strided",
        &["different lengths"],
    );
    expect_err(
        |t| t.try_as_strided(&[usize::MAX, 2], &[1, 1], 0).map(drop),
        ErrorKind::Overflow,
        "as_strided",
        &["overflows"],
    );
    expect_err(
        |t| t.transpose(0, 2).try_view(&[-1]).map(drop),
        ErrorKind::NotViewable,
        "view",
        &["reshape", "contiguous"],
    );
    expect_err(
        |t| t.try_view(&[5, -1]).map(drop),
        ErrorKind::ElementCount,
        "view",
        &["[5, -1]", "24 elements"],
    );
    expect_err(
        |t| t.try_view(&[-1, -1]).map(drop),
        ErrorKind::InvalidArgument,
        "view",
        &["only one dim"],
    );
    expect_err(
        |t| t.try_reshape(&[7]).map(drop),
        ErrorKind::ElementCount,
        "reshape",
        &["[7]"],
    );
    expect_err(
        |t| t.t_err_transposed_reshape(),
        ErrorKind::ElementCount,
        "reshape",
        &["[5]"],
    );
    expect_err(
        |t| t.try_expand(&[2, 3, 5]).map(drop),
        ErrorKind::ShapeMismatch,
        "expand",
        &["size 4", "5"],
    );
    expect_err(
        |t| t.try_expand(&[3, 4]).map(drop),
        ErrorKind::ShapeMismatch,
        "expand",
        &["fewer"],
    );
    expect_err(
        |t| t.try_slice(0, None, None, 0).map(drop),
        ErrorKind::InvalidArgument,
        "slice",
        &["step"],
    );
}

trait TransposedReshape {
    fn t_err_transposed_reshape(&self) -> Result<(), Error>;
}
impl TransposedReshape for DynTensor {
    fn t_err_transposed_reshape(&self) -> Result<(), Error> {
        self.transpose(0, 2).try_reshape(&[5]).map(drop)
    }
}

#[test]
fn overflowing_sizes() {
    let e = DynTensor::<f32>::try_full(&[usize::MAX / 2, 3], 0.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overflow);
    assert!(e.to_string().contains("overflows"), "{e}");
    expect_err(
        |t| t.try_expand(&[isize::MAX, 2, 3, 4]).map(drop),
        ErrorKind::Overflow,
        "expand",
        &[],
    );
    expect_err(
        |t| t.try_view(&[isize::MAX, isize::MAX]).map(drop),
        ErrorKind::Overflow,
        "view",
        &[],
    );
}

#[test]
fn data_of_the_wrong_length() {
    let e = DynTensor::try_from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataLength);
    assert_eq!(
        e.to_string(),
        "from_vec: 5 elements given for shape [2, 3], which holds 6"
    );
}

#[test]
fn writes_that_are_refused() {
    expect_err(
        |t| t.expand(&[2, 2, 3, 4]).try_fill_(1.0).map(drop),
        ErrorKind::OverlappingWrite,
        "fill_",
        &["stride 0", "expand"],
    );
    expect_err(
        |t| t.try_copy_(&DynTensor::<f32>::zeros(&[3, 3])).map(drop),
        ErrorKind::ShapeMismatch,
        "copy_",
        &["[3, 3]", "[2, 3, 4]"],
    );
}

#[test]
fn bad_creation_arguments() {
    let e = DynTensor::<f32>::try_arange(0.0, 1.0, 0.0).unwrap_err();
    assert_eq!((e.kind(), e.op()), (ErrorKind::InvalidArgument, "arange"));
    let e = DynTensor::<i32>::try_arange(0, 5, -1).unwrap_err();
    assert!(e.to_string().contains("points away"), "{e}");
    let e = DynTensor::<f32>::try_normal(&[2], 0.0, -1.0, 0).unwrap_err();
    assert_eq!((e.kind(), e.op()), (ErrorKind::InvalidArgument, "normal"));
}

#[test]
#[should_panic(expected = "select: index 9 is out of range for dim 0 of size 2")]
fn panicking_forms_panic_with_the_same_message() {
    sample().select(0, 9);
}

#[test]
fn errors_are_std_errors() {
    let e: Box<dyn std::error::Error> = Box::new(sample().try_select(0, 9).unwrap_err());
    assert!(e.to_string().contains("select"));
}
