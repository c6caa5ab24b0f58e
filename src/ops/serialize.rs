//! Saving and loading tensors in the [safetensors](https://huggingface.co/docs/safetensors)
//! format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
//! shape and byte range, then the elements in row-major order, little-endian. Files written
//! here are read by every safetensors reader (PyTorch's `safetensors.torch.load_file`,
//! candle, …) and the other way round.
//!
//! The `safetensors` crate writes the container and validates a file's header (offsets in
//! bounds, contiguous, no overlap, sizes matching the shapes); this module maps element types
//! and moves the elements. Invariants:
//! - Loading reads the header, then each tensor's bytes from the file straight into the new
//!   tensor's buffer ([`SafetensorsFile`]): its memory is the tensors' and nothing more (before,
//!   a copy of the file and a decoding pass held three times a tensor's size at once).
//! - Saving makes one row-major copy of each tensor and hands its bytes to the writer
//!   ([`SaveTensor::to_le_bytes`]; no second, byte-converted copy on little-endian machines).

use super::save_tensor::{SaveTensor, distinct_names};
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use half::{bf16, f16};
use safetensors::tensor::Metadata;
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
/// are saved as their elements in row-major order. Names must be distinct; element types may
/// differ ([`SaveTensor`]: `f32` weights beside `i64` buffers; read such a file back with
/// [`SafetensorsFile`]).
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
///
/// let steps = DynTensor::<i64>::from_vec(vec![1000], &[1]);
/// save_tensors(&path, &[("weight", &w), ("steps", &steps)]).unwrap();
/// assert_eq!(load_tensors::<f32>(&path).unwrap_err().kind(), namedtensor::ErrorKind::DTypeMismatch);
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn save_tensors(path: impl AsRef<Path>, tensors: &[(&str, &dyn SaveTensor)]) -> Result<()> {
    save_with_metadata(path.as_ref(), tensors, None)
}

/// [`save_tensors`] with text `metadata` in the file's header (`__metadata__`).
pub(crate) fn save_with_metadata(
    path: &Path,
    tensors: &[(&str, &dyn SaveTensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    distinct_names("save", tensors, "tensors")?;
    let bytes: Vec<_> = tensors.iter().map(|(_, t)| t.to_le_bytes()).collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, t), b)| {
            TensorView::new(to_safetensors(t.dtype()), t.shape().to_vec(), b)
                .map(|v| (*name, v))
                .map_err(|e| io_error("save", path, e))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, metadata, path).map_err(|e| io_error("save", path, e))
}

/// Reads every tensor of a safetensors file, sorted by name. All must be of element type `E`
/// (see [`SafetensorsFile`] for files that mix types).
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
    SafetensorsFile::open(path)?.reader.get_all()
}

/// A file's tensors by name and its text metadata.
pub(crate) type WithMetadata<E> = (Vec<(String, DynTensor<E>)>, HashMap<String, String>);

/// [`load_tensors`] with the file's text metadata (empty when it has none).
pub(crate) fn load_with_metadata<E: Element>(path: &Path) -> Result<WithMetadata<E>> {
    let file = SafetensorsFile::open(path)?;
    Ok((file.reader.get_all()?, file.reader.metadata))
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
    let source = Source::Bytes(std::borrow::Cow::Borrowed(bytes));
    Reader::new(source, "<bytes>".into())?.get_all()
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
        let file = SafetensorsFile::open(path)?;
        match file.names()[..] {
            [name] => file.get(name),
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
        SafetensorsFile::open(path)?.get(name)
    }
}

/// A safetensors file opened for reading (Python's `safe_open`): its tensors' names, dtypes
/// and shapes and its text metadata, and each tensor on request with its element type
/// checked: the way to read a file whose tensors differ in type.
///
/// Opening reads and validates the header only; [`SafetensorsFile::get`] reads one tensor's
/// bytes from the file straight into the tensor's new buffer, so loading needs the memory of
/// the tensors and nothing more (no copy of the file, no intermediate buffer).
///
/// ```
/// use namedtensor::{save_tensors, DType, DynTensor, SafetensorsFile};
/// let path = std::env::temp_dir().join(format!("nt-doc-safe-open-{}.safetensors", std::process::id()));
/// let w = DynTensor::<f32>::randn(&[3, 4], 0);
/// let steps = DynTensor::<i64>::from_vec(vec![1000], &[1]);
/// save_tensors(&path, &[("weight", &w), ("steps", &steps)]).unwrap();
/// let file = SafetensorsFile::open(&path).unwrap();
/// assert_eq!(file.names(), ["steps", "weight"]);
/// assert_eq!(file.dtype("steps"), Some(DType::I64));
/// assert_eq!(file.shape("weight"), Some(&[3, 4][..]));
/// assert_eq!(file.get::<i64>("steps").unwrap().to_vec(), vec![1000]);
/// assert_eq!(file.get::<f32>("weight").unwrap().to_vec(), w.to_vec());
/// assert!(file.get::<f32>("steps").is_err()); // it holds int64
/// std::fs::remove_file(&path).unwrap();
/// ```
pub struct SafetensorsFile {
    reader: Reader<'static>,
}

/// A validated safetensors header over the file's bytes.
struct Reader<'a> {
    /// The file's path, or `<bytes>`, for errors.
    source: std::path::PathBuf,
    bytes: Source<'a>,
    /// Where the data section starts (after the 8-byte length and the header).
    data_start: u64,
    /// Name, dtype (`None`: a safetensors dtype the library lacks), shape and byte range in
    /// the data section, sorted by name.
    entries: Vec<Entry>,
    metadata: HashMap<String, String>,
}

struct Entry {
    name: String,
    stored: Dtype,
    dtype: Option<DType>,
    shape: Vec<usize>,
    offsets: (usize, usize),
}

/// Where a file's bytes are (a safetensors or `.npy` file).
pub(super) enum Source<'a> {
    /// An open file, read at the offsets asked for (the lock serialises seek + read).
    File(std::sync::Mutex<std::fs::File>),
    /// Bytes in memory.
    Bytes(std::borrow::Cow<'a, [u8]>),
    /// A stream of `len` bytes read front to back (a compressed archive member): each read
    /// must start at or after the end of the previous one, so nothing is buffered twice.
    Stream(std::sync::Mutex<Stream<'a>>),
}

/// The state of a [`Source::Stream`].
pub(super) struct Stream<'a> {
    reader: Box<dyn std::io::Read + 'a>,
    /// Bytes read (or skipped) so far.
    pos: u64,
    len: u64,
}

impl<'a> Source<'a> {
    /// A stream of `len` bytes.
    pub(super) fn stream(reader: impl std::io::Read + 'a, len: u64) -> Source<'a> {
        Source::Stream(std::sync::Mutex::new(Stream {
            reader: Box::new(reader),
            pos: 0,
            len,
        }))
    }
}

impl Source<'_> {
    pub(super) fn open(path: &Path) -> std::io::Result<Source<'static>> {
        Ok(Source::File(std::sync::Mutex::new(std::fs::File::open(
            path,
        )?)))
    }

    pub(super) fn len(&self) -> std::io::Result<u64> {
        match self {
            Source::File(f) => Ok(lock(f).metadata()?.len()),
            Source::Bytes(b) => Ok(b.len() as u64),
            Source::Stream(s) => Ok(lock(s).len),
        }
    }

    /// Fills `buf` with the bytes from `offset` on (the caller checked they exist).
    pub(super) fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        match self {
            Source::File(f) => {
                let mut f = lock(f);
                f.seek(SeekFrom::Start(offset))?;
                f.read_exact(buf)
            }
            Source::Bytes(b) => {
                let start = usize::try_from(offset).map_err(std::io::Error::other)?;
                let bytes = start
                    .checked_add(buf.len())
                    .and_then(|end| b.get(start..end))
                    .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
                buf.copy_from_slice(bytes);
                Ok(())
            }
            Source::Stream(s) => {
                let mut s = lock(s);
                let skip = offset.checked_sub(s.pos).ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::Unsupported,
                        "a stream cannot be read backwards",
                    )
                })?;
                let skipped = std::io::copy(&mut (&mut s.reader).take(skip), &mut std::io::sink())?;
                if skipped < skip {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                s.reader.read_exact(buf).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        std::io::Error::new(
                            e.kind(),
                            format!(
                                "the data ends before byte {} of the {} its header states",
                                offset + buf.len() as u64,
                                s.len
                            ),
                        )
                    } else {
                        e
                    }
                })?;
                s.pos = offset + buf.len() as u64;
                Ok(())
            }
        }
    }
}

fn lock<T>(f: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while the lock was held leaves only a read position behind: a file's is set by
    // every read first, a stream's is counted after each complete read (a stream interrupted
    // by a panic fails its next read instead of returning wrong bytes).
    f.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The format's limit on the header's size (the `safetensors` crate's).
const MAX_HEADER: u64 = 100_000_000;

impl std::fmt::Debug for SafetensorsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafetensorsFile")
            .field("source", &self.reader.source)
            .field("names", &self.names())
            .finish()
    }
}

impl SafetensorsFile {
    /// Opens the file at `path` and validates its header (offsets in bounds, back to back,
    /// sizes matching the shapes, the data section filling the rest of the file). Errors:
    /// [`ErrorKind::Io`] for an unreadable file or one that is not valid safetensors.
    pub fn open(path: impl AsRef<Path>) -> Result<SafetensorsFile> {
        let path = path.as_ref();
        let bytes = Source::open(path).map_err(|e| io_error("load", path, e))?;
        let reader = Reader::new(bytes, path.to_path_buf())?;
        Ok(SafetensorsFile { reader })
    }

    /// A safetensors file held in memory (errors name `<bytes>`).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<SafetensorsFile> {
        let reader = Reader::new(Source::Bytes(bytes.into()), "<bytes>".into())?;
        Ok(SafetensorsFile { reader })
    }

    /// The tensors' names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.reader
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .collect()
    }

    /// The dtype of tensor `name`; `None` when there is no such tensor or its dtype is not
    /// one of the library's.
    pub fn dtype(&self, name: &str) -> Option<DType> {
        self.reader.entry(name).and_then(|e| e.dtype)
    }

    /// The shape of tensor `name`, if there is one.
    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.reader.entry(name).map(|e| e.shape.as_slice())
    }

    /// The file's text metadata (`__metadata__`; empty when it has none).
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.reader.metadata
    }

    /// Tensor `name` as a `DynTensor<E>`, read from the file into its buffer. Errors:
    /// [`ErrorKind::Io`] when there is no tensor of that name or the file cannot be read,
    /// [`ErrorKind::DTypeMismatch`] naming both dtypes.
    pub fn get<E: Element>(&self, name: &str) -> Result<DynTensor<E>> {
        self.reader.get(name)
    }
}

impl<'a> Reader<'a> {
    fn new(bytes: Source<'a>, source: std::path::PathBuf) -> Result<Reader<'a>> {
        let io = |e: std::io::Error| io_error("load", &source, e);
        let len = bytes.len().map_err(io)?;
        // The length, the header, and no data: the `safetensors` crate validates the header
        // from these bytes (then stops at the missing data, checked below with the length).
        let mut first = [0u8; 8];
        let stated = if len >= 8 {
            bytes.read_at(0, &mut first).map_err(io)?;
            u64::from_le_bytes(first)
        } else {
            0
        };
        let head_len = if stated > MAX_HEADER {
            8
        } else {
            len.min(8 + stated)
        };
        let mut head =
            vec![0u8; usize::try_from(head_len).map_err(|e| io(std::io::Error::other(e)))?];
        bytes.read_at(0, &mut head).map_err(io)?;
        let invalid = |e: &SafeTensorError| {
            let why = describe(e, &head);
            io_error(
                "load",
                &source,
                format!("not a valid safetensors file: {why}"),
            )
        };
        let header = match SafeTensors::read_metadata(&head) {
            Ok((_, header)) => header,
            Err(SafeTensorError::MetadataIncompleteBuffer) => {
                serde_json::from_slice::<Metadata>(&head[8..])
                    .map_err(|e| invalid(&SafeTensorError::InvalidHeaderDeserialization(e)))?
            }
            Err(e) => return Err(invalid(&e)),
        };
        if Some(len) != head_len.checked_add(header.data_len() as u64) {
            return Err(invalid(&SafeTensorError::MetadataIncompleteBuffer));
        }
        let mut entries: Vec<Entry> = header
            .tensors()
            .into_iter()
            .map(|(name, info)| Entry {
                name,
                stored: info.dtype,
                dtype: from_safetensors(info.dtype),
                shape: info.shape.clone(),
                offsets: info.data_offsets,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let metadata = header.metadata().clone().unwrap_or_default();
        Ok(Reader {
            source,
            bytes,
            data_start: head_len,
            entries,
            metadata,
        })
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    fn get<E: Element>(&self, name: &str) -> Result<DynTensor<E>> {
        let path = &self.source;
        let entry = self
            .entry(name)
            .ok_or_else(|| io_error("load", path, format!("it has no tensor named {name:?}")))?;
        if entry.dtype != Some(E::DTYPE) {
            return Err(Error::new(
                ErrorKind::DTypeMismatch,
                "load",
                format!(
                    "{}: tensor {name:?} holds {}, but {} was asked for",
                    path.display(),
                    entry.dtype.map_or_else(
                        || format!("{:?} (not supported)", entry.stored),
                        |d| d.to_string()
                    ),
                    E::DTYPE
                ),
            ));
        }
        let numel = entry.shape.iter().product();
        let offset = self.data_start + entry.offsets.0 as u64;
        let values = read_elements::<E>(&self.bytes, offset, numel)
            .map_err(|e| io_error("load", path, e))?;
        DynTensor::from_contiguous_vec(values, &entry.shape)
    }

    /// Every tensor, sorted by name; all must be of element type `E`.
    fn get_all<E: Element>(&self) -> Result<Vec<(String, DynTensor<E>)>> {
        self.entries
            .iter()
            .map(|e| Ok((e.name.clone(), self.get(&e.name)?)))
            .collect()
    }
}

/// `n` elements stored little-endian from `offset` of `bytes`, read straight into the new
/// vector's memory (one pass, no intermediate buffer) on little-endian machines; `bool`
/// (whose bytes must be checked) and big-endian machines go through a byte buffer.
pub(super) fn read_elements<E: Element>(
    bytes: &Source<'_>,
    offset: u64,
    n: usize,
) -> std::io::Result<Vec<E>> {
    macro_rules! direct {
        ($t:ty) => {
            Box::new(read_plain::<$t>(bytes, offset, n)?) as Box<dyn Any>
        };
    }
    if cfg!(target_endian = "big") || E::DTYPE == DType::Bool {
        let len = n
            .checked_mul(std::mem::size_of::<E>())
            .ok_or_else(|| std::io::Error::other(format!("{n} elements overflow usize bytes")))?;
        return Ok(decode(&read_plain::<u8>(bytes, offset, len)?));
    }
    let values: Box<dyn Any> = match E::DTYPE {
        DType::Bool => unreachable!("read through a byte buffer above"),
        DType::U8 => direct!(u8),
        DType::I8 => direct!(i8),
        DType::I16 => direct!(i16),
        DType::I32 => direct!(i32),
        DType::I64 => direct!(i64),
        DType::F16 => direct!(f16),
        DType::BF16 => direct!(bf16),
        DType::F32 => direct!(f32),
        DType::F64 => direct!(f64),
    };
    Ok(*values
        .downcast::<Vec<E>>()
        .expect("the dtype names the type"))
}

/// How far a vector read from a [`Source::Stream`] grows ahead of the bytes that have
/// arrived: 16 MiB at first, then as much as it already holds.
const STREAM_PIECE: usize = 16 << 20;

/// `n` plain values from `offset` of `bytes`, in a new vector.
///
/// A file's or a byte slice's length is real (the callers checked `n` against it), so the
/// vector is allocated at once, zeroed by the allocator (`calloc`). A stream's length is the
/// claim of a zip member's header, which a 200-byte file can make 4 TiB: there the vector
/// grows in pieces as the bytes arrive, so what is allocated stays within twice what the
/// stream really holds, and a stream that ends early is an error, not an abort.
pub(super) fn read_plain<T: bytemuck::Pod>(
    bytes: &Source<'_>,
    offset: u64,
    n: usize,
) -> std::io::Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    if !matches!(bytes, Source::Stream(_)) {
        let mut v: Vec<T> = bytemuck::try_zeroed_vec(n).map_err(|()| {
            std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!("cannot allocate {n} elements of {size} bytes"),
            )
        })?;
        bytes.read_at(offset, bytemuck::cast_slice_mut(&mut v))?;
        return Ok(v);
    }
    let piece = (STREAM_PIECE / size).max(1);
    let mut v: Vec<T> = Vec::new();
    while v.len() < n {
        let start = v.len();
        let end = n.min(start.saturating_add(piece.max(start)));
        v.resize(end, T::zeroed());
        // `start * size` fits: `start` elements are allocated.
        bytes.read_at(
            offset + (start * size) as u64,
            bytemuck::cast_slice_mut(&mut v[start..]),
        )?;
    }
    Ok(v)
}
