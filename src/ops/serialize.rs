//! Saving and loading tensors in the [safetensors](https://huggingface.co/docs/safetensors)
//! format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
//! shape and byte range, then the elements in row-major order, little-endian. Files written
//! here are read by every safetensors reader (PyTorch's `safetensors.torch.load_file`,
//! candle, …) and the other way round.
//!
//! The reading and writing of the container is the `safetensors` crate's (it validates the
//! header: offsets in bounds, contiguous, no overlap, sizes matching the shapes); this module
//! maps element types and converts elements to and from little-endian bytes.

use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use half::{bf16, f16};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensorError, SafeTensors};
use std::any::Any;
use std::collections::HashMap;
use std::path::Path;

/// The safetensors name of a dtype.
fn to_safetensors(d: DType) -> Dtype {
    match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
    }
}

/// The dtype of a safetensors dtype, if it is one of ours.
fn from_safetensors(d: Dtype) -> Option<DType> {
    DType::ALL
        .into_iter()
        .find(|&ours| to_safetensors(ours) == d)
}

/// `values` as little-endian bytes.
pub(super) fn encode<E: Element>(values: Vec<E>) -> Vec<u8> {
    let values: Box<dyn Any> = Box::new(values);
    macro_rules! le {
        ($t:ty) => {{
            let values = values
                .downcast::<Vec<$t>>()
                .expect("the dtype names the type");
            let mut out = Vec::with_capacity(values.len() * std::mem::size_of::<$t>());
            for x in values.iter() {
                out.extend_from_slice(&x.to_le_bytes());
            }
            out
        }};
    }
    match E::DTYPE {
        DType::Bool => le!(bool),
        DType::U8 => le!(u8),
        DType::I8 => le!(i8),
        DType::I16 => le!(i16),
        DType::I32 => le!(i32),
        DType::I64 => le!(i64),
        DType::F16 => le!(f16),
        DType::BF16 => le!(bf16),
        DType::F32 => le!(f32),
        DType::F64 => le!(f64),
    }
}

/// Little-endian `bytes` as elements (the length is a multiple of the size: checked by the
/// container against the shape).
pub(super) fn decode<E: Element>(bytes: &[u8]) -> Vec<E> {
    macro_rules! le {
        ($t:ty) => {{
            let v: Vec<$t> = bytes
                .chunks_exact(std::mem::size_of::<$t>())
                .map(|c| <$t>::from_le_bytes(c.try_into().expect("exact chunks")))
                .collect();
            Box::new(v) as Box<dyn Any>
        }};
    }
    let values = match E::DTYPE {
        DType::Bool => Box::new(bytes.iter().map(|&b| b != 0).collect::<Vec<bool>>()),
        DType::U8 => le!(u8),
        DType::I8 => le!(i8),
        DType::I16 => le!(i16),
        DType::I32 => le!(i32),
        DType::I64 => le!(i64),
        DType::F16 => le!(f16),
        DType::BF16 => le!(bf16),
        DType::F32 => le!(f32),
        DType::F64 => le!(f64),
    };
    *values
        .downcast::<Vec<E>>()
        .expect("the dtype names the type")
}

/// Trait so that `bool` has the `to_le_bytes` of the other types.
trait ToLeBytes {
    fn to_le_bytes(self) -> [u8; 1];
}

impl ToLeBytes for bool {
    fn to_le_bytes(self) -> [u8; 1] {
        [u8::from(self)]
    }
}

fn io_error(op: &'static str, path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, op, format!("{}: {what}", path.display()))
}

/// Writes `tensors` under their names to a safetensors file at `path` (replacing it). Views
/// are saved as their elements in row-major order. Names must be distinct.
///
/// ```
/// use namedtensor::{load_tensors, save_tensors, DynTensor};
/// let dir = std::env::temp_dir().join(format!("nt-doc-save-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("model.safetensors");
/// let w = DynTensor::<f32>::randn(&[3, 4], 0);
/// let b = DynTensor::<f32>::zeros(&[4]);
/// save_tensors(&path, &[("weight", &w.t()), ("bias", &b)]).unwrap();
/// let loaded = load_tensors::<f32>(&path).unwrap();
/// assert_eq!(loaded[0].0, "bias");
/// assert_eq!(loaded[1].1.to_vec(), w.t().to_vec());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn save_tensors<E: Element>(
    path: impl AsRef<Path>,
    tensors: &[(&str, &DynTensor<E>)],
) -> Result<()> {
    save_with_metadata(path.as_ref(), tensors, None)
}

/// [`save_tensors`] with text `metadata` in the file's header (`__metadata__`).
pub(crate) fn save_with_metadata<E: Element>(
    path: &Path,
    tensors: &[(&str, &DynTensor<E>)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let mut names: Vec<&str> = tensors.iter().map(|t| t.0).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "save",
            format!("the name {:?} is given to two tensors", w[0]),
        ));
    }
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|(_, t)| encode(t.to_vec())).collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, t), b)| {
            TensorView::new(to_safetensors(E::DTYPE), t.shape().to_vec(), b)
                .map(|v| (*name, v))
                .map_err(|e| io_error("save", path, e))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, metadata, path).map_err(|e| io_error("save", path, e))
}

/// Reads every tensor of a safetensors file, sorted by name. All must be of element type `E`
/// (see [`DynTensor::load_named`] for files that mix types).
///
/// Errors: [`ErrorKind::Io`] when the file cannot be read or is not a valid safetensors
/// file; [`ErrorKind::DTypeMismatch`] naming the tensor, its dtype and `E`'s.
///
/// ```
/// use namedtensor::{load_tensors, DynTensor, ErrorKind};
/// let err = load_tensors::<f32>("/no/such/file.safetensors").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Io);
/// ```
pub fn load_tensors<E: Element>(path: impl AsRef<Path>) -> Result<Vec<(String, DynTensor<E>)>> {
    let path = path.as_ref();
    let buffer = std::fs::read(path).map_err(|e| io_error("load", path, e))?;
    tensors_of(path, &buffer)
}

/// A file's tensors by name and its text metadata.
pub(crate) type WithMetadata<E> = (Vec<(String, DynTensor<E>)>, HashMap<String, String>);

/// [`load_tensors`] with the file's text metadata (empty when it has none).
pub(crate) fn load_with_metadata<E: Element>(path: &Path) -> Result<WithMetadata<E>> {
    let buffer = std::fs::read(path).map_err(|e| io_error("load", path, e))?;
    let tensors = tensors_of(path, &buffer)?;
    let (_, header) = SafeTensors::read_metadata(&buffer).map_err(|e| {
        io_error(
            "load",
            path,
            format!("not a valid safetensors file: {}", describe(&e, &buffer)),
        )
    })?;
    Ok((tensors, header.metadata().clone().unwrap_or_default()))
}

/// The tensors of a safetensors file held in memory (the bytes of a file, a network reply),
/// as [`load_tensors`] reads them from a file; errors name `<bytes>` where they would name
/// the file. Python's `safetensors.torch.load`.
///
/// ```
/// use namedtensor::{load_tensors_from_bytes, ErrorKind};
/// let header = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
/// let mut file = (header.len() as u64).to_le_bytes().to_vec();
/// file.extend_from_slice(header);
/// file.extend([1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()));
/// let tensors = load_tensors_from_bytes::<f32>(&file).unwrap();
/// assert_eq!(tensors[0].0, "w");
/// assert_eq!(tensors[0].1.to_vec(), vec![1.5, -2.0]);
/// let err = load_tensors_from_bytes::<f32>(&file[..20]).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Io);
/// ```
pub fn load_tensors_from_bytes<E: Element>(bytes: &[u8]) -> Result<Vec<(String, DynTensor<E>)>> {
    tensors_of(Path::new("<bytes>"), bytes)
}

/// Every tensor of the safetensors `buffer` (read from `path`), sorted by name.
fn tensors_of<E: Element>(path: &Path, buffer: &[u8]) -> Result<Vec<(String, DynTensor<E>)>> {
    let file = parse(path, buffer)?;
    let mut names = file.names();
    names.sort_unstable();
    names
        .into_iter()
        .map(|name| Ok((name.to_string(), tensor_of(path, &file, name)?)))
        .collect()
}

fn parse<'a>(path: &Path, buffer: &'a [u8]) -> Result<SafeTensors<'a>> {
    SafeTensors::deserialize(buffer).map_err(|e| {
        let why = describe(&e, buffer);
        io_error("load", path, format!("not a valid safetensors file: {why}"))
    })
}

/// What is wrong with a file the `safetensors` crate rejected, in this library's words (the
/// crate's own messages, such as "invalid offset for tensor `a`" for a name listed twice,
/// describe its checks rather than the file).
fn describe(e: &SafeTensorError, file: &[u8]) -> String {
    use SafeTensorError as S;
    match e {
        S::HeaderTooSmall => "it is shorter than the 8-byte length that starts the format".into(),
        S::InvalidHeaderLength => format!(
            "the header length in its first 8 bytes ({}) reaches past the end of the file \
             ({} bytes)",
            header_len(file).unwrap_or(0),
            file.len()
        ),
        S::HeaderTooLarge => "its header is larger than the format's limit of 100 MB".into(),
        S::InvalidHeader(e) => format!("its header is not UTF-8 text ({e})"),
        S::InvalidHeaderDeserialization(e) => {
            format!("its header is not the format's JSON ({e})")
        }
        S::InvalidOffset(name) => match header_text(file) {
            Some(h) if key_count(h, name) > 1 => {
                format!("the tensor name {name:?} appears more than once in the header")
            }
            _ => format!(
                "the bytes of tensor {name:?} do not start where the previous tensor's bytes \
                 end (tensors are stored back to back, in the order of their offsets)"
            ),
        },
        S::TensorInvalidInfo => "a tensor's byte range does not match its shape and dtype".into(),
        S::InvalidTensorView(dtype, shape, bytes) => {
            format!("a tensor of dtype {dtype:?} and shape {shape:?} cannot be {bytes} bytes long")
        }
        S::MetadataIncompleteBuffer => {
            "the tensors' bytes do not cover its data section exactly (the file is truncated \
             or holds bytes no tensor owns)"
                .into()
        }
        S::ValidationOverflow => {
            "a tensor's element count or byte size overflows (a corrupt shape)".into()
        }
        S::TensorNotFound(name) => format!("it has no tensor named {name:?}"),
        other => other.to_string(),
    }
}

/// The header length the file's first 8 bytes state.
fn header_len(file: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(file.get(..8)?.try_into().ok()?))
}

/// The header's text, if the file has one that is UTF-8.
fn header_text(file: &[u8]) -> Option<&str> {
    let n = usize::try_from(header_len(file)?).ok()?;
    std::str::from_utf8(file.get(8..8usize.checked_add(n)?)?).ok()
}

/// How often `name` occurs as an object key (a JSON string followed by `:`) in `header`.
fn key_count(header: &str, name: &str) -> usize {
    let quoted = format!("\"{name}\"");
    header
        .match_indices(&quoted)
        .filter(|(at, _)| header[at + quoted.len()..].trim_start().starts_with(':'))
        .count()
}

/// Tensor `name` of `file` as a `DynTensor<E>`.
fn tensor_of<E: Element>(path: &Path, file: &SafeTensors<'_>, name: &str) -> Result<DynTensor<E>> {
    let view = file.tensor(name).map_err(|e| io_error("load", path, e))?;
    match from_safetensors(view.dtype()) {
        Some(d) if d == E::DTYPE => {
            DynTensor::from_contiguous_vec(decode(view.data()), view.shape())
        }
        found => Err(Error::new(
            ErrorKind::DTypeMismatch,
            "load",
            format!(
                "{}: tensor {name:?} holds {}, but {} was asked for",
                path.display(),
                found.map_or_else(
                    || format!("{:?} (not supported)", view.dtype()),
                    |d| d.to_string()
                ),
                E::DTYPE
            ),
        )),
    }
}

impl<E: Element> DynTensor<E> {
    /// Writes this tensor to a safetensors file at `path` (replacing it), under the name
    /// `"tensor"`; a view is saved as its elements in row-major order. See [`save_tensors`]
    /// for several tensors.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let path = std::env::temp_dir().join(format!("nt-doc-one-{}.safetensors", std::process::id()));
    /// let t = DynTensor::from_vec(vec![1i16, 2, 3, 4, 5, 6], &[2, 3]).t();
    /// t.save(&path).unwrap();
    /// let back = DynTensor::<i16>::load(&path).unwrap();
    /// assert_eq!((back.shape(), back.to_vec()), (t.shape(), t.to_vec()));
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_tensors(path, &[("tensor", self)])
    }

    /// Reads the one tensor of a safetensors file (whatever its name). Errors:
    /// [`ErrorKind::Io`] for an unreadable or invalid file, [`ErrorKind::InvalidArgument`] for
    /// a file holding several tensors (the message lists them; see
    /// [`DynTensor::load_named`]), [`ErrorKind::DTypeMismatch`] naming both dtypes.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let path = std::env::temp_dir().join(format!("nt-doc-load-{}.safetensors", std::process::id()));
    /// DynTensor::<f64>::ones(&[2]).save(&path).unwrap();
    /// let err = DynTensor::<f32>::load(&path).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    /// assert!(err.to_string().contains("holds float64, but float32 was asked for"));
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<DynTensor<E>> {
        let path = path.as_ref();
        let buffer = std::fs::read(path).map_err(|e| io_error("load", path, e))?;
        let file = parse(path, &buffer)?;
        match file.names()[..] {
            [name] => tensor_of(path, &file, name),
            ref names => Err(Error::new(
                ErrorKind::InvalidArgument,
                "load",
                format!(
                    "{}: expected one tensor, found {} ({names:?}); use load_named or \
                     load_tensors",
                    path.display(),
                    names.len()
                ),
            )),
        }
    }

    /// Reads tensor `name` of a safetensors file (which may hold tensors of other types).
    /// Errors as for [`DynTensor::load`], and [`ErrorKind::Io`] when there is no tensor of
    /// that name.
    ///
    /// ```
    /// use namedtensor::{save_tensors, DynTensor};
    /// let path = std::env::temp_dir().join(format!("nt-doc-named-{}.safetensors", std::process::id()));
    /// let ids = DynTensor::<i64>::arange(0, 3, 1);
    /// save_tensors(&path, &[("ids", &ids), ("more", &ids)]).unwrap();
    /// assert_eq!(DynTensor::<i64>::load_named(&path, "ids").unwrap().to_vec(), vec![0, 1, 2]);
    /// assert!(DynTensor::<i64>::load_named(&path, "nope").is_err());
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load_named(path: impl AsRef<Path>, name: &str) -> Result<DynTensor<E>> {
        let path = path.as_ref();
        let buffer = std::fs::read(path).map_err(|e| io_error("load", path, e))?;
        tensor_of(path, &parse(path, &buffer)?, name)
    }
}
