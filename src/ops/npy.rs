//! NumPy's files: `.npy` (one array) and `.npz` (a zip archive of `.npy` members, as
//! `np.savez` and `np.savez_compressed` write them).
//!
//! An `.npy` file is the magic `\x93NUMPY`, a version (1.0: 2-byte header length; 2.0 and 3.0:
//! 4-byte), a header holding a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and a
//! newline so that the data starts at a multiple of 64 bytes, then the elements in C
//! (row-major) or Fortran (column-major) order with the byte order the descr gives.
//!
//! Invariants:
//! - What is written is byte for byte what NumPy 2.x's `np.save` writes for the same array
//!   (version 1.0 while the header fits, C order, little-endian, the growth-axis padding), so
//!   NumPy and every other reader read it back; `bfloat16` has no NumPy dtype and is refused.
//! - Reading accepts what NumPy writes on any machine: versions 1.0–3.0, either byte order,
//!   C and Fortran order. A Fortran-order file becomes a view with column-major strides (no
//!   copy beyond decoding). The header is parsed strictly: unknown keys, a structured or
//!   unsupported dtype, or a data length other than the shape's are errors naming the file.
//! - The zip container is the `zip` crate's (stored members when writing, as `np.savez`;
//!   stored or deflated when reading).

use super::save_tensor::{LeBytes, SaveTensor, distinct_names};
use super::serialize::{Source, decode, read_elements, read_plain};
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use std::io::{Read, Seek, Write};
use std::path::Path;

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// NumPy pads headers so that the data starts at a multiple of this.
const ALIGN: usize = 64;
/// NumPy leaves room for the growth axis (the first, in C order) to reach this many digits.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// NumPy's dtype string of `d` (little-endian where the size is above one byte), or `None`
/// for `bfloat16`, which NumPy lacks.
fn descr(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::BF16 => return None,
    })
}

/// Our dtype and whether the bytes are big-endian, for a NumPy dtype string.
fn parse_descr(s: &str) -> Option<(DType, bool)> {
    let (order, kind) = s.split_at_checked(1)?;
    let big = match order {
        "<" | "|" => false,
        ">" => true,
        "=" => cfg!(target_endian = "big"),
        _ => return None,
    };
    let dtype = DType::ALL
        .into_iter()
        .find(|&d| descr(d).is_some_and(|ours| &ours[1..] == kind))?;
    Some((dtype, big))
}

fn invalid(op: &'static str, source: &str, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, op, format!("{source}: {what}"))
}

/// The `.npy` bytes of `t`: NumPy's header, then the elements in row-major order.
/// The `.npy` file of `t`: NumPy's header (magic, version, length, padded dict) and the
/// element bytes, kept apart so that writers need no copy of the data joined to the header.
struct Npy {
    header: Vec<u8>,
    data: LeBytes,
}

impl Npy {
    fn len(&self) -> usize {
        self.header.len() + self.data.len()
    }

    fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.header)?;
        w.write_all(&self.data)
    }
}

fn to_npy(op: &'static str, t: &dyn SaveTensor) -> Result<Npy> {
    let descr = descr(t.dtype()).ok_or_else(|| {
        Error::new(
            ErrorKind::DTypeMismatch,
            op,
            "NumPy has no bfloat16 dtype; convert first (to_dtype::<f32>())".to_string(),
        )
    })?;
    let shape = t.shape();
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_repr = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_repr}, }}");
    if let Some(first) = dims.first() {
        header.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(first.len())));
    }
    // The padded header ends with a newline and makes the data start at a multiple of 64.
    // Version 1.0 stores its length in 2 bytes after 8 bytes of magic and version; 2.0, for
    // longer headers (thousands of dims), in 4.
    let padded = |prefix: usize| {
        let pad = (ALIGN - (prefix + header.len() + 1) % ALIGN) % ALIGN;
        header.len() + pad + 1
    };
    let (version, prefix) = if u16::try_from(padded(10)).is_ok() {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let len = padded(prefix);
    header.push_str(&" ".repeat(len - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(prefix + len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    match u16::try_from(len) {
        Ok(len) if version == 1 => out.extend_from_slice(&len.to_le_bytes()),
        _ => {
            let len = u32::try_from(len).map_err(|_| invalid(op, "<header>", "too long"))?;
            out.extend_from_slice(&len.to_le_bytes());
        }
    }
    out.extend_from_slice(header.as_bytes());
    Ok(Npy {
        header: out,
        data: t.to_le_bytes(),
    })
}

/// What an `.npy` header says.
#[derive(Debug, Clone, PartialEq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A value of the header's dict literal.
#[derive(Debug, PartialEq)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// Parses the dict literal NumPy writes (`{'key': value, …}` with string, `True`/`False`
/// and integer-tuple values; either quote; trailing commas), refusing anything else.
fn parse_header(text: &str) -> std::result::Result<Header, String> {
    let mut p = Literal { rest: text };
    p.expect('{')?;
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    while !p.eat('}') {
        let key = p.string()?;
        p.expect(':')?;
        let value = p.value()?;
        let slot = match (key.as_str(), value) {
            ("descr", Value::Str(s)) => descr.replace(s).is_some(),
            ("fortran_order", Value::Bool(b)) => fortran_order.replace(b).is_some(),
            ("shape", Value::Tuple(t)) => shape.replace(t).is_some(),
            (key @ ("descr" | "fortran_order" | "shape"), v) => {
                return Err(format!("header key '{key}' has an unexpected value {v:?}"));
            }
            (key, _) => return Err(format!("unexpected header key '{key}'")),
        };
        if slot {
            return Err(format!("header key '{key}' given twice"));
        }
        if !p.eat(',') {
            p.expect('}')?;
            break;
        }
    }
    if !p.rest.trim().is_empty() {
        return Err(format!(
            "unexpected text after the header's dict: {:?}",
            p.rest.trim()
        ));
    }
    match (descr, fortran_order, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(Header {
            descr,
            fortran_order,
            shape,
        }),
        _ => Err("the header lacks one of 'descr', 'fortran_order', 'shape'".to_string()),
    }
}

/// A cursor over a Python literal.
struct Literal<'a> {
    rest: &'a str,
}

impl Literal<'_> {
    fn eat(&mut self, c: char) -> bool {
        self.rest = self.rest.trim_start();
        match self.rest.strip_prefix(c) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, c: char) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{c}' in the header at {:?}", self.rest))
        }
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        self.rest = self.rest.trim_start();
        let quote = self
            .rest
            .chars()
            .next()
            .filter(|&q| q == '\'' || q == '"')
            .ok_or_else(|| format!("expected a string in the header at {:?}", self.rest))?;
        let body = &self.rest[1..];
        let end = body
            .find(quote)
            .ok_or_else(|| "unterminated string in the header".to_string())?;
        if body[..end].contains('\\') {
            return Err("escapes in header strings are not supported".to_string());
        }
        self.rest = &body[end + 1..];
        Ok(body[..end].to_string())
    }

    fn value(&mut self) -> std::result::Result<Value, String> {
        self.rest = self.rest.trim_start();
        for (word, b) in [("True", true), ("False", false)] {
            if let Some(r) = self.rest.strip_prefix(word) {
                self.rest = r;
                return Ok(Value::Bool(b));
            }
        }
        if self.eat('(') {
            let mut dims = Vec::new();
            while !self.eat(')') {
                let digits = self.rest.len()
                    - self
                        .rest
                        .trim_start_matches(|c: char| c.is_ascii_digit())
                        .len();
                let n = self.rest[..digits]
                    .parse()
                    .map_err(|_| format!("expected a size in the shape at {:?}", self.rest))?;
                self.rest = &self.rest[digits..];
                // Python 2 wrote long integers with an `L`.
                self.rest = self.rest.strip_prefix('L').unwrap_or(self.rest);
                dims.push(n);
                if !self.eat(',') {
                    self.expect(')')?;
                    break;
                }
            }
            return Ok(Value::Tuple(dims));
        }
        self.string().map(Value::Str)
    }
}

/// The longest header read. NumPy's own reader refuses headers over 10 000 bytes unless told
/// otherwise (`max_header_size`, since 1.24); a header states a dtype and a shape, and 1 MiB
/// is far above any real one. The bound keeps a stated length (up to 4 GiB in version 2) from
/// being allocated before a byte of it is read: in an `.npz` member the length of the
/// member itself is only a claim.
const MAX_HEADER: u64 = 1 << 20;

/// The tensor of the `.npy` file in `bytes` (`source` names it in errors). The header is read
/// first; then the elements go straight from the file into the tensor's new buffer where they
/// are stored in the machine's byte order (big-endian data goes through a byte buffer).
fn from_npy<E: Element>(
    op: &'static str,
    source: &str,
    bytes: &Source<'_>,
) -> Result<DynTensor<E>> {
    let bad = |what: &dyn std::fmt::Display| {
        invalid(op, source, format!("not a valid .npy file: {what}"))
    };
    let io = |e: std::io::Error| invalid(op, source, e);
    let file_len = bytes.len().map_err(io)?;
    let mut first = [0u8; 12];
    if file_len < 12 {
        return Err(bad(&"no NumPy magic string at the start"));
    }
    bytes.read_at(0, &mut first).map_err(io)?;
    if &first[..6] != MAGIC {
        return Err(bad(&"no NumPy magic string at the start"));
    }
    let (len, start) = match first[6] {
        1 => (u64::from(u16::from_le_bytes([first[8], first[9]])), 10u64),
        2 | 3 => (
            u64::from(u32::from_le_bytes([
                first[8], first[9], first[10], first[11],
            ])),
            12,
        ),
        v => return Err(bad(&format!("unsupported version {v}.{}", first[7]))),
    };
    if len > MAX_HEADER {
        return Err(bad(&format!(
            "a header of {len} bytes (more than the {MAX_HEADER} read)"
        )));
    }
    let end = start + len;
    if end > file_len {
        return Err(bad(&"the header runs past the end of the file"));
    }
    if end < first.len() as u64 {
        return Err(bad(&"the header is too short"));
    }
    // Read front to back (a compressed archive member is a stream): the first bytes again
    // from `first`, then the rest of the header, then the data.
    let mut head = vec![0u8; usize::try_from(end).map_err(|_| bad(&"header too long"))?];
    head[..first.len()].copy_from_slice(&first);
    bytes
        .read_at(first.len() as u64, &mut head[first.len()..])
        .map_err(io)?;
    let text =
        std::str::from_utf8(&head[start as usize..]).map_err(|_| bad(&"the header is not text"))?;
    let header = parse_header(text).map_err(|e| bad(&e))?;
    let (dtype, big_endian) = parse_descr(&header.descr).ok_or_else(|| {
        Error::new(
            ErrorKind::DTypeMismatch,
            op,
            format!(
                "{source}: NumPy dtype '{}' is not supported (bool, uint8, int8, int16, int32, \
                 int64, float16, float32, float64 are)",
                header.descr
            ),
        )
    })?;
    if dtype != E::DTYPE {
        return Err(Error::new(
            ErrorKind::DTypeMismatch,
            op,
            format!(
                "{source}: the array holds {dtype} ('{}'), but {} was asked for",
                header.descr,
                E::DTYPE
            ),
        ));
    }
    let numel = crate::layout::checked_numel(&header.shape)
        .ok_or_else(|| bad(&format!("shape {:?} overflows", header.shape)))?;
    let size = std::mem::size_of::<E>();
    let data_len = file_len - end;
    let needed: Option<u64> = numel.checked_mul(size).map(|n| n as u64);
    if needed != Some(data_len) {
        return Err(bad(&format!(
            "shape {:?} of {dtype} needs {numel}×{size} bytes of data, the file has {data_len}",
            header.shape,
        )));
    }
    let values = if big_endian && size > 1 {
        let mut data = read_plain::<u8>(bytes, end, numel * size).map_err(io)?;
        for element in data.chunks_exact_mut(size) {
            element.reverse();
        }
        decode(&data)
    } else {
        read_elements::<E>(bytes, end, numel).map_err(io)?
    };
    if header.fortran_order {
        // Column-major data is the row-major data of the reversed shape, transposed.
        let reversed: Vec<usize> = header.shape.iter().rev().copied().collect();
        let axes: Vec<isize> = (0..reversed.len() as isize).rev().collect();
        Ok(DynTensor::from_contiguous_vec(values, &reversed)?.permute(&axes))
    } else {
        DynTensor::from_contiguous_vec(values, &header.shape)
    }
}

fn io_error(op: &'static str, path: &Path, what: impl std::fmt::Display) -> Error {
    invalid(op, &path.display().to_string(), what)
}

impl<E: Element> DynTensor<E> {
    /// Writes this tensor to a NumPy `.npy` file at `path` (replacing it), byte for byte as
    /// `np.save` writes the same array; a view is saved as its elements in row-major order.
    /// Errors: [`ErrorKind::DTypeMismatch`] for `bf16` (NumPy has no such dtype),
    /// [`ErrorKind::Io`] when the file cannot be written.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let path = std::env::temp_dir().join(format!("nt-doc-npy-{}.npy", std::process::id()));
    /// let t = DynTensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).t();
    /// t.save_npy(&path).unwrap();
    /// let back = DynTensor::<i32>::load_npy(&path).unwrap();
    /// assert_eq!((back.shape(), back.to_vec()), (t.shape(), t.to_vec()));
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let npy = to_npy("save_npy", self)?;
        let write = || -> std::io::Result<()> {
            let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
            npy.write_to(&mut file)?;
            file.flush()
        };
        write().map_err(|e| io_error("save_npy", path, e))
    }

    /// Reads a NumPy `.npy` file (`np.save`'s output, any version, either byte order, C or
    /// Fortran order; a Fortran-order array becomes a column-major view). Errors:
    /// [`ErrorKind::Io`] for an unreadable or malformed file, [`ErrorKind::DTypeMismatch`]
    /// naming the file's dtype and `E`'s.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let path = std::env::temp_dir().join(format!("nt-doc-npy-load-{}.npy", std::process::id()));
    /// DynTensor::<f64>::ones(&[2]).save_npy(&path).unwrap();
    /// let err = DynTensor::<f32>::load_npy(&path).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    /// assert!(err.to_string().contains("holds float64 ('<f8'), but float32 was asked for"));
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load_npy(path: impl AsRef<Path>) -> Result<DynTensor<E>> {
        let path = path.as_ref();
        let bytes = Source::open(path).map_err(|e| io_error("load_npy", path, e))?;
        from_npy("load_npy", &path.display().to_string(), &bytes)
    }

    /// The `.npy` bytes of this tensor (what [`DynTensor::save_npy`] writes).
    pub fn to_npy_bytes(&self) -> Result<Vec<u8>> {
        let npy = to_npy("to_npy_bytes", self)?;
        let mut out = Vec::with_capacity(npy.len());
        npy.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        Ok(out)
    }

    /// The tensor of `.npy` bytes held in memory (as [`DynTensor::load_npy`] reads a file;
    /// errors name `<bytes>`).
    pub fn from_npy_bytes(bytes: &[u8]) -> Result<DynTensor<E>> {
        from_npy("from_npy_bytes", "<bytes>", &Source::Bytes(bytes.into()))
    }
}

/// Writes `arrays` under their names to a NumPy `.npz` archive at `path` (replacing it), as
/// `np.savez` does: one stored (uncompressed) member `name.npy` each, readable by `np.load`.
/// Arrays may differ in element type ([`SaveTensor`]). Names must be distinct and non-empty.
///
/// ```
/// use namedtensor::{save_npz, DynTensor, NpzFile};
/// let path = std::env::temp_dir().join(format!("nt-doc-npz-{}.npz", std::process::id()));
/// let w = DynTensor::<f32>::randn(&[3, 4], 0);
/// let ids = DynTensor::<i64>::arange(0, 3, 1);
/// save_npz(&path, &[("weight", &w), ("ids", &ids)]).unwrap();
/// let file = NpzFile::open(&path).unwrap();
/// assert_eq!(file.names(), ["ids", "weight"]);
/// assert_eq!(file.get::<i64>("ids").unwrap().to_vec(), vec![0, 1, 2]);
/// assert_eq!(file.get::<f32>("weight").unwrap().to_vec(), w.to_vec());
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn save_npz(path: impl AsRef<Path>, arrays: &[(&str, &dyn SaveTensor)]) -> Result<()> {
    let path = path.as_ref();
    let names = distinct_names("save_npz", arrays, "arrays")?;
    if names.first() == Some(&"") {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "save_npz",
            "an array has an empty name".to_string(),
        ));
    }
    // Encode everything before touching the file, so that a bad array leaves it as it was.
    let members = arrays
        .iter()
        .map(|(name, a)| Ok((format!("{name}.npy"), to_npy("save_npz", *a)?)))
        .collect::<Result<Vec<_>>>()?;
    let file = std::fs::File::create(path).map_err(|e| io_error("save_npz", path, e))?;
    write_npz(std::io::BufWriter::new(file), &members).map_err(|e| io_error("save_npz", path, e))
}

fn write_npz<W: Write + Seek>(w: W, members: &[(String, Npy)]) -> zip::result::ZipResult<()> {
    let mut zip = zip::ZipWriter::new(w);
    for (name, npy) in members {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(npy.len() as u64 >= u64::from(u32::MAX));
        zip.start_file(name.as_str(), options)?;
        npy.write_to(&mut zip)?;
    }
    zip.finish()?.flush()?;
    Ok(())
}

/// A NumPy `.npz` archive opened for reading (`np.load` of an `.npz`): the arrays' names,
/// and each array read on request with its element type checked. Members may be stored or
/// deflated (`np.savez_compressed`).
pub struct NpzFile {
    source: String,
    /// The archive over the file (read on request) or over bytes in memory.
    archive: std::sync::Mutex<zip::ZipArchive<Box<dyn ReadSeek>>>,
    /// Array names (member names without `.npy`) and member names, sorted by array name.
    members: Vec<(String, String)>,
}

/// What a zip archive reads from.
trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

impl std::fmt::Debug for NpzFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzFile")
            .field("source", &self.source)
            .field("names", &self.names())
            .finish()
    }
}

impl NpzFile {
    /// Opens the archive at `path`. Errors: [`ErrorKind::Io`] for an unreadable file or one
    /// that is not a zip archive.
    pub fn open(path: impl AsRef<Path>) -> Result<NpzFile> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| io_error("load_npz", path, e))?;
        NpzFile::from_reader(
            Box::new(std::io::BufReader::new(file)),
            path.display().to_string(),
        )
    }

    /// The archive held in memory (errors name `<bytes>`).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<NpzFile> {
        NpzFile::from_reader(Box::new(std::io::Cursor::new(bytes)), "<bytes>".to_string())
    }

    fn from_reader(reader: Box<dyn ReadSeek>, source: String) -> Result<NpzFile> {
        let archive = zip::ZipArchive::new(reader)
            .map_err(|e| invalid("load_npz", &source, format!("not a valid .npz file: {e}")))?;
        let mut members = archive
            .file_names()
            .map(|m| {
                let m = m.map_err(|e| {
                    invalid("load_npz", &source, format!("not a valid .npz file: {e}"))
                })?;
                Ok((
                    m.strip_suffix(".npy").unwrap_or(&m).to_string(),
                    m.to_string(),
                ))
            })
            .collect::<Result<Vec<(String, String)>>>()?;
        members.sort();
        Ok(NpzFile {
            source,
            archive: std::sync::Mutex::new(archive),
            members,
        })
    }

    /// The arrays' names, sorted (member names without their `.npy`, as `np.load` gives them).
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// Array `name` as a `DynTensor<E>`. Errors: [`ErrorKind::InvalidArgument`] naming the
    /// archive's arrays when there is none of that name, [`ErrorKind::DTypeMismatch`] naming
    /// both dtypes, [`ErrorKind::Io`] for a damaged member.
    pub fn get<E: Element>(&self, name: &str) -> Result<DynTensor<E>> {
        let member = self
            .members
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| m)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    "load_npz",
                    format!(
                        "{}: no array {name:?} (it has {:?})",
                        self.source,
                        self.names()
                    ),
                )
            })?;
        let where_ = format!("{}[{name:?}]", self.source);
        // A panic while the lock was held leaves the archive's reader position behind,
        // which `by_name` sets first.
        let mut archive = self
            .archive
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entry = archive
            .by_name(member)
            .map_err(|e| invalid("load_npz", &where_, e))?;
        // Decompressed straight into the tensor's buffer: no copy of the member's bytes.
        let len = entry.size();
        let t = from_npy("load_npz", &where_, &Source::stream(&mut entry, len))?;
        // Reading on to the end checks the member's CRC-32 (the zip reader verifies it when
        // the stream ends) and that no bytes follow the array's data.
        let mut more = [0u8; 1];
        match entry.read(&mut more) {
            Ok(0) => Ok(t),
            Ok(_) => Err(invalid(
                "load_npz",
                &where_,
                "the member holds more bytes than its array",
            )),
            Err(e) => Err(invalid("load_npz", &where_, e)),
        }
    }
}

/// Every array of a `.npz` archive, sorted by name; all must be of element type `E` (see
/// [`NpzFile`] for archives that mix types).
pub fn load_npz<E: Element>(path: impl AsRef<Path>) -> Result<Vec<(String, DynTensor<E>)>> {
    let file = NpzFile::open(path)?;
    file.names()
        .into_iter()
        .map(|name| Ok((name.to_string(), file.get(name)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parser_accepts_numpy_and_other_writers() {
        let want = Header {
            descr: "<f4".into(),
            fortran_order: false,
            shape: vec![2, 3],
        };
        for text in [
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }        \n",
            "{'shape': (2, 3, ), 'fortran_order': False, 'descr': '<f4'}\n",
            "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2L,3L)}",
        ] {
            assert_eq!(parse_header(text), Ok(want.clone()), "{text}");
        }
        let scalar =
            parse_header("{'descr': '|b1', 'fortran_order': True, 'shape': (), }").unwrap();
        assert_eq!((scalar.shape, scalar.fortran_order), (vec![], true));
        let one = parse_header("{'descr': '|b1', 'fortran_order': True, 'shape': (7,), }").unwrap();
        assert_eq!(one.shape, vec![7]);
    }

    #[test]
    fn header_parser_refuses_what_numpy_would_not_write() {
        for (text, why) in [
            ("{'descr': '<f4', 'fortran_order': False}", "lacks"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 'y'}",
                "unexpected header key 'x'",
            ),
            (
                "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                "given twice",
            ),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}",
                "expected a string",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
                "expected a string",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
                "expected a size",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",
                "expected ')'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x",
                "after the header",
            ),
            (
                "{'descr': '<f4, 'fortran_order': False, 'shape': ()}",
                "expected '}'",
            ),
        ] {
            let err = parse_header(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn descr_strings() {
        assert_eq!(parse_descr("<f8"), Some((DType::F64, false)));
        assert_eq!(parse_descr(">i2"), Some((DType::I16, true)));
        assert_eq!(parse_descr("|b1"), Some((DType::Bool, false)));
        assert_eq!(parse_descr("<u4"), None);
        assert_eq!(parse_descr("<c8"), None);
        assert_eq!(parse_descr(""), None);
        for d in DType::ALL {
            if let Some(s) = descr(d) {
                assert_eq!(parse_descr(s), Some((d, false)));
            }
        }
    }
}
