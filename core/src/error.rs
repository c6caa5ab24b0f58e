//! The library's one error type.
//!
//! Every fallible operation returns [`Result<T>`]; the message names the operation and the
//! shapes, strides, dims or indices involved, so it can be shown to a user as it is. The
//! [`ErrorKind`] lets code match on the category without parsing text.

use std::fmt;

/// The category of an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A dimension index outside `-rank..rank`.
    DimOutOfRange,
    /// An element or slice index outside a dimension's size.
    IndexOutOfRange,
    /// Shapes that the operation cannot combine (broadcasting, matmul, cat, …).
    ShapeMismatch,
    /// `view` on strides that cannot express the requested shape without a copy.
    NotViewable,
    /// A new shape whose element count differs from the tensor's.
    ElementCount,
    /// Data whose length does not match the requested shape.
    DataLength,
    /// A view that would reach outside its storage.
    OutOfStorage,
    /// A write into a tensor in which several indices share one storage element.
    OverlappingWrite,
    /// A size or offset computation that overflows `usize`.
    Overflow,
    /// An argument outside the operation's domain (a zero step, an empty reduction, …).
    InvalidArgument,
    /// Tensors on different devices, or a device that is unavailable.
    Device,
    /// Elements of another type than the one asked for (e.g. loading a file).
    DTypeMismatch,
    /// Reading or writing a file failed.
    Io,
    /// An allocation the device (or the host) cannot make: the `try_` forms return this where
    /// the allocator would abort the process (PyTorch raises "not enough memory").
    OutOfMemory,
    /// A gradient that cannot be computed: `backward` on a tensor outside any graph, a graph
    /// already freed, a saved tensor modified in place, an in-place write into a tensor that
    /// requires grad, or an op without a gradient formula.
    Autograd,
    /// A write into a storage while a slice of its elements is borrowed
    /// (`DynTensor::as_slice`, `with_contiguous`): like a
    /// `RefCell`, the write is refused instead of changing elements under the reader.
    Borrowed,
    /// Processes that disagree on a collective (another operation, root, reduction or
    /// element count; a rank whose own part failed), or MPI that cannot start
    /// (`namedtensor::dist`, feature `mpi`).
    Distributed,
}

/// The error of every fallible namedtensor operation.
///
/// ```
/// use namedtensor::{DynTensor, ErrorKind};
/// let t = DynTensor::<f32>::zeros(&[2, 3]);
/// let err = t.try_select(1, 5).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::IndexOutOfRange);
/// assert_eq!(err.op(), "select");
/// println!("{err}"); // select: index 5 is out of range for dim 1 of size 3 (shape [2, 3])
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    op: &'static str,
    message: String,
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Builds an error of `kind` raised by operation `op`, explained by `message`.
    ///
    /// ```
    /// use namedtensor::{Error, ErrorKind};
    /// let e = Error::new(ErrorKind::InvalidArgument, "arange", "step must not be zero");
    /// assert_eq!(e.to_string(), "arange: step must not be zero");
    /// ```
    pub fn new(kind: ErrorKind, op: &'static str, message: impl Into<String>) -> Self {
        Error {
            kind,
            op,
            message: message.into(),
        }
    }

    /// The category of the error.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let e = DynTensor::<f32>::zeros(&[2]).try_view(&[3]).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::ElementCount);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The name of the operation that failed (`"view"`, `"matmul"`, …).
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let e = DynTensor::<f32>::zeros(&[2]).try_transpose(0, 3).unwrap_err();
    /// assert_eq!(e.op(), "transpose");
    /// ```
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The explanation, without the operation name.
    ///
    /// ```
    /// use namedtensor::Error;
    /// let e = Error::new(namedtensor::ErrorKind::Io, "save", "disk full");
    /// assert_eq!(e.message(), "disk full");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    #[doc(hidden)]
    pub fn dim_out_of_range(op: &'static str, dim: isize, rank: usize) -> Self {
        let valid = if rank == 0 {
            "a 0-d tensor has no dims".to_string()
        } else {
            format!("expected a dim in {}..{}", -(rank as isize), rank)
        };
        Error::new(
            ErrorKind::DimOutOfRange,
            op,
            format!("dim {dim} is out of range for a tensor of rank {rank} ({valid})"),
        )
    }

    /// `dim` is not a position for a new dim of a tensor of rank `rank` (`unsqueeze`,
    /// `stack`): the message names the tensor's rank, not the result's.
    #[doc(hidden)]
    pub fn new_dim_out_of_range(op: &'static str, dim: isize, rank: usize) -> Self {
        Error::new(
            ErrorKind::DimOutOfRange,
            op,
            format!(
                "dim {dim} is out of range for a new dim of a tensor of rank {rank} (expected a \
                 dim in {}..={rank})",
                -(rank as isize) - 1
            ),
        )
    }

    /// `dim` is neither 0 nor -1 for a 0-d tensor that `op` takes as one entry along a single
    /// dim (as PyTorch's `sort`, `topk` and `flatten` do): the message names rank 0, not 1.
    #[doc(hidden)]
    pub fn dim_out_of_range_0d(op: &'static str, dim: isize) -> Self {
        Error::new(
            ErrorKind::DimOutOfRange,
            op,
            format!(
                "dim {dim} is out of range for a 0-d tensor ({op} takes it as one entry along \
                 a single dim: expected 0 or -1)"
            ),
        )
    }

    #[doc(hidden)]
    pub fn overflow(op: &'static str, what: impl fmt::Display) -> Self {
        Error::new(
            ErrorKind::Overflow,
            op,
            format!("{what} overflows the address space"),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, "io", e.to_string())
    }
}

/// Unwraps a result, panicking with the error's message at the caller's location.
#[track_caller]
#[doc(hidden)]
pub fn or_panic<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}
