//! NumPy files against NumPy: tests/fixtures/npy/ holds files written by NumPy 2.4
//! (tests/fixtures/make_npy.py, which documents the value formula repeated here). Every dtype
//! in C order, Fortran order and big-endian is read back to the formula's values; what the
//! library writes for the same arrays is byte for byte NumPy's file; `.npz` archives
//! (stored and deflated, mixed dtypes) read and round-trip; bad files are errors.

use half::f16;
use namedtensor::{DynTensor, Element, ErrorKind, NpzFile, load_npz, save_npz};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/npy")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nt-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Element `i` of the fixture arrays, by the generator's formula.
trait Formula: Element {
    const NAME: &'static str;
    fn at(i: usize) -> Self;
}

macro_rules! signed {
    ($($t:ty: $name:literal),*) => {$(
        impl Formula for $t {
            const NAME: &'static str = $name;
            fn at(i: usize) -> Self {
                ((7 * i) % 11) as $t - 5
            }
        }
    )*};
}
signed!(i8: "int8", i16: "int16", i32: "int32", i64: "int64");

macro_rules! float {
    ($($t:ty: $name:literal),*) => {$(
        impl Formula for $t {
            const NAME: &'static str = $name;
            fn at(i: usize) -> Self {
                (((7 * i) % 11) as f64 - 5.0) as $t / 4.0
            }
        }
    )*};
}
float!(f32: "float32", f64: "float64");

impl Formula for f16 {
    const NAME: &'static str = "float16";
    fn at(i: usize) -> Self {
        f16::from_f64(f64::at(i))
    }
}

impl Formula for u8 {
    const NAME: &'static str = "uint8";
    fn at(i: usize) -> Self {
        ((37 * i) % 256) as u8
    }
}

impl Formula for bool {
    const NAME: &'static str = "bool";
    fn at(i: usize) -> Self {
        i.is_multiple_of(3)
    }
}

fn expected<E: Formula>(shape: &[usize]) -> DynTensor<E> {
    let n = shape.iter().product();
    DynTensor::from_vec((0..n).map(E::at).collect(), shape)
}

fn check_dtype<E: Formula + std::fmt::Debug>() {
    let want = expected::<E>(&[2, 3, 4]);
    let orders: &[&str] = if std::mem::size_of::<E>() > 1 {
        &["c", "f", "be"]
    } else {
        &["c", "f"]
    };
    for order in orders {
        let name = format!("{}_{order}.npy", E::NAME);
        let got = DynTensor::<E>::load_npy(fixture(&name)).unwrap();
        assert_eq!(got.shape(), &[2, 3, 4], "{name}");
        assert_eq!(got.to_vec(), want.to_vec(), "{name}");
        // A Fortran-order file is a column-major view of its data, not a copy.
        assert_eq!(got.is_contiguous(), *order != "f", "{name}");
    }
    // What we write is NumPy's file, from a contiguous tensor and from a view alike.
    let numpy = std::fs::read(fixture(&format!("{}_c.npy", E::NAME))).unwrap();
    assert_eq!(want.to_npy_bytes().unwrap(), numpy, "{}", E::NAME);
    let view = want.permute(&[2, 1, 0]).contiguous().permute(&[2, 1, 0]);
    assert!(!view.is_contiguous());
    assert_eq!(view.to_npy_bytes().unwrap(), numpy, "{} view", E::NAME);
    let path = scratch(&format!("{}.npy", E::NAME));
    view.save_npy(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), numpy);
}

#[test]
fn every_dtype_in_every_order_reads_as_numpy_wrote_it_and_writes_as_numpy_does() {
    check_dtype::<bool>();
    check_dtype::<u8>();
    check_dtype::<i8>();
    check_dtype::<i16>();
    check_dtype::<i32>();
    check_dtype::<i64>();
    check_dtype::<f16>();
    check_dtype::<f32>();
    check_dtype::<f64>();
}

#[test]
fn scalars_empty_vectors_and_later_format_versions() {
    let scalar = DynTensor::<f64>::load_npy(fixture("float64_scalar.npy")).unwrap();
    assert_eq!((scalar.shape(), scalar.to_vec()), (&[][..], vec![2.5]));
    let empty = DynTensor::<i64>::load_npy(fixture("int64_empty.npy")).unwrap();
    assert_eq!(empty.shape(), &[0, 3]);
    let vector = DynTensor::<f32>::load_npy(fixture("float32_vector.npy")).unwrap();
    assert_eq!(vector.to_vec(), expected::<f32>(&[5]).to_vec());
    assert_eq!(
        scalar.to_npy_bytes().unwrap(),
        std::fs::read(fixture("float64_scalar.npy")).unwrap()
    );
    assert_eq!(
        empty.to_npy_bytes().unwrap(),
        std::fs::read(fixture("int64_empty.npy")).unwrap()
    );
    assert_eq!(
        vector.to_npy_bytes().unwrap(),
        std::fs::read(fixture("float32_vector.npy")).unwrap()
    );
    for version in ["v2", "v3"] {
        let t = DynTensor::<f32>::load_npy(fixture(&format!("float32_{version}.npy"))).unwrap();
        assert_eq!(
            t.to_vec(),
            expected::<f32>(&[2, 3, 4]).to_vec(),
            "{version}"
        );
    }
}

#[test]
fn npz_archives_with_mixed_dtypes_stored_or_deflated() {
    for name in ["mixed.npz", "mixed_compressed.npz"] {
        let file = NpzFile::open(fixture(name)).unwrap();
        assert_eq!(file.names(), ["ids", "mask", "weight"], "{name}");
        assert_eq!(
            file.get::<f32>("weight").unwrap().to_vec(),
            expected::<f32>(&[2, 3, 4]).to_vec()
        );
        assert_eq!(
            file.get::<i64>("ids").unwrap().to_vec(),
            expected::<i64>(&[5]).to_vec()
        );
        assert_eq!(
            file.get::<bool>("mask").unwrap().to_vec(),
            expected::<bool>(&[2, 3, 4]).to_vec()
        );
        let err = file.get::<f64>("weight").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
        assert!(
            err.to_string()
                .contains("holds float32 ('<f4'), but float64"),
            "{err}"
        );
        let err = file.get::<f32>("bias").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("no array \"bias\""), "{err}");
        assert!(
            err.to_string().contains("[\"ids\", \"mask\", \"weight\"]"),
            "{err}"
        );
    }
    // Ours: the same arrays, read back by our reader; each member is NumPy's .npy bytes.
    let (w, ids, mask) = (
        expected::<f32>(&[2, 3, 4]),
        expected::<i64>(&[5]),
        expected::<bool>(&[2, 3, 4]),
    );
    let path = scratch("mixed.npz");
    let wt = w.permute(&[2, 1, 0]); // a view: saved in row-major order of its own shape
    save_npz(&path, &[("weight", &wt), ("ids", &ids), ("mask", &mask)]).unwrap();
    let file = NpzFile::open(&path).unwrap();
    assert_eq!(file.names(), ["ids", "mask", "weight"]);
    assert_eq!(file.get::<f32>("weight").unwrap().to_vec(), wt.to_vec());
    assert_eq!(file.get::<f32>("weight").unwrap().shape(), &[4, 3, 2]);
    assert_eq!(file.get::<bool>("mask").unwrap().to_vec(), mask.to_vec());
    let all = load_npz::<i64>(&path);
    assert_eq!(all.unwrap_err().kind(), ErrorKind::DTypeMismatch);
    save_npz(&path, &[("a", &ids), ("b", &(-&ids))]).unwrap();
    let all = load_npz::<i64>(&path).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        (all[1].0.as_str(), all[1].1.to_vec()),
        ("b", (-&ids).to_vec())
    );
}

#[test]
fn bad_files_and_arguments_are_errors_that_name_them() {
    let err = DynTensor::<u8>::load_npy(fixture("uint32.npy")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    assert!(
        err.to_string()
            .contains("uint32.npy: NumPy dtype '<u4' is not supported"),
        "{err}"
    );
    let err = DynTensor::<f32>::load_npy(fixture("structured.npy")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(
        err.to_string()
            .contains("structured.npy: not a valid .npy file"),
        "{err}"
    );
    let err = DynTensor::<f32>::load_npy(fixture("no_such.npy")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);

    // Truncated data, a header past the end, no magic: errors, never a panic.
    let good = std::fs::read(fixture("float32_c.npy")).unwrap();
    for cut in [0, 5, 9, 11, 40, good.len() - 1] {
        let err = DynTensor::<f32>::from_npy_bytes(&good[..cut]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "cut at {cut}");
    }
    let mut longer = good.clone();
    longer.push(0);
    let err = DynTensor::<f32>::from_npy_bytes(&longer).unwrap_err();
    assert!(
        err.to_string()
            .contains("needs 24×4 bytes of data, the file has 97"),
        "{err}"
    );

    let bf = DynTensor::<half::bf16>::zeros(&[2]);
    let err = bf.save_npy(scratch("bf16.npy")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    assert!(err.to_string().contains("NumPy has no bfloat16"), "{err}");

    // save_npz refuses duplicate names and unsavable arrays before touching the file.
    let path = scratch("keep.npz");
    let x = DynTensor::<f32>::ones(&[2]);
    save_npz(&path, &[("x", &x)]).unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = save_npz(&path, &[("x", &x), ("x", &x)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.to_string().contains("\"x\" is given to two arrays"),
        "{err}"
    );
    let err = save_npz(&path, &[("x", &x), ("y", &bf)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let err = NpzFile::open(fixture("float32_c.npy")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.to_string().contains("not a valid .npz file"), "{err}");
}

#[test]
fn random_bytes_never_panic() {
    // A deterministic sweep of corruptions of a valid file: every byte of the header changed.
    let good = std::fs::read(fixture("int16_f.npy")).unwrap();
    for at in 0..128.min(good.len()) {
        for value in [0u8, b' ', b'(', b')', b',', b'\'', b'9', 0xff] {
            let mut bad = good.clone();
            bad[at] = value;
            let _ = DynTensor::<i16>::from_npy_bytes(&bad);
        }
    }
}

namedtensor::dims! { Rows, Cols, Depth }

#[test]
fn named_tensors_keep_their_names_in_safetensors_and_their_rank_in_npy() {
    use namedtensor::Tensor;
    let path = scratch("named.safetensors");
    let t = Tensor::<f32, (Rows, Cols)>::from_vec(expected::<f32>(&[6]).to_vec(), [2, 3]);
    t.save(&path).unwrap();
    let back = Tensor::<f32, (Rows, Cols)>::load(&path).unwrap();
    assert_eq!((back.shape(), back.to_vec()), (t.shape(), t.to_vec()));
    // Same rank, sizes that would fit transposed: refused by name, not transposed.
    let square = Tensor::<f32, (Rows, Cols)>::zeros([3, 3]);
    square.save(&path).unwrap();
    let err = Tensor::<f32, (Cols, Rows)>::load(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(
        err.to_string()
            .contains("saved with dims (Rows,Cols), not (Cols,Rows)"),
        "{err}"
    );
    // A file without names (PyTorch's, or a positional save) loads when the rank fits.
    t.as_dyn().save(&path).unwrap();
    assert!(Tensor::<f32, (Cols, Rows)>::load(&path).is_ok());
    let err = Tensor::<f32, (Rows,)>::load(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(err.to_string().contains("named.safetensors"), "{err}");

    let cube = Tensor::<f32, (Rows, Cols, Depth)>::load_npy(fixture("float32_f.npy")).unwrap();
    assert_eq!(cube.to_vec(), expected::<f32>(&[2, 3, 4]).to_vec());
    let err = Tensor::<f32, (Rows, Cols)>::load_npy(fixture("float32_c.npy")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(
        err.to_string()
            .contains("float32_c.npy: a tensor of rank 3"),
        "{err}"
    );
    let npy = scratch("named.npy");
    cube.save_npy(&npy).unwrap();
    assert_eq!(
        std::fs::read(&npy).unwrap(),
        std::fs::read(fixture("float32_c.npy")).unwrap()
    );
}

#[test]
fn a_safetensors_file_of_mixed_dtypes_reads_and_writes_in_one_call() {
    use namedtensor::{DType, SafetensorsFile, save_tensors};
    let (w, ids, mask) = (
        expected::<f32>(&[2, 3, 4]),
        expected::<i64>(&[5]),
        expected::<bool>(&[2, 3, 4]),
    );
    let check = |file: &SafetensorsFile, what: &str| {
        assert_eq!(file.names(), ["ids", "mask", "weight"], "{what}");
        assert_eq!(file.dtype("ids"), Some(DType::I64), "{what}");
        assert_eq!(file.dtype("mask"), Some(DType::Bool), "{what}");
        assert_eq!(file.dtype("nope"), None, "{what}");
        assert_eq!(file.shape("weight"), Some(&[2, 3, 4][..]), "{what}");
        assert_eq!(
            file.get::<f32>("weight").unwrap().to_vec(),
            w.to_vec(),
            "{what}"
        );
        assert_eq!(
            file.get::<i64>("ids").unwrap().to_vec(),
            ids.to_vec(),
            "{what}"
        );
        assert_eq!(
            file.get::<bool>("mask").unwrap().to_vec(),
            mask.to_vec(),
            "{what}"
        );
        let err = file.get::<f32>("ids").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DTypeMismatch, "{what}");
        assert!(
            err.to_string().contains("holds int64, but float32"),
            "{err}"
        );
    };
    // Written by safetensors.numpy.save_file (tests/fixtures/make_npy.py).
    let numpy = SafetensorsFile::open(fixture("mixed.safetensors")).unwrap();
    check(&numpy, "NumPy's file");
    assert_eq!(numpy.metadata()["written_by"], "numpy");
    // Ours: one call for three dtypes (a view among them).
    let path = scratch("mixed.safetensors");
    let wt = w.permute(&[2, 1, 0]).contiguous().permute(&[2, 1, 0]);
    save_tensors(&path, &[("weight", &wt), ("ids", &ids), ("mask", &mask)]).unwrap();
    let ours = SafetensorsFile::open(&path).unwrap();
    check(&ours, "our file");
    assert!(ours.metadata().is_empty());
    let bytes = std::fs::read(&path).unwrap();
    check(
        &SafetensorsFile::from_bytes(bytes.clone()).unwrap(),
        "bytes",
    );
    let err = SafetensorsFile::from_bytes(bytes[..bytes.len() - 1].to_vec()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.to_string().contains("<bytes>"), "{err}");
}

/// Members are decoded as a stream straight into the tensor; the member's CRC-32 is still
/// checked (at the end of the stream), so a damaged data byte is an error, not a wrong value.
#[test]
fn a_damaged_npz_member_is_an_error() {
    let w = expected::<f32>(&[64, 16]);
    let path = scratch("damaged.npz");
    save_npz(&path, &[("w", &w)]).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let member = w.to_npy_bytes().unwrap();
    let at = bytes
        .windows(member.len())
        .position(|win| win == member.as_slice())
        .expect("save_npz stores members uncompressed");
    bytes[at + member.len() - 3] ^= 0x40; // a byte of the last element
    std::fs::write(&path, &bytes).unwrap();
    let err = NpzFile::open(&path).unwrap().get::<f32>("w").unwrap_err();
    assert!(err.to_string().to_lowercase().contains("checksum"), "{err}");
    // Undamaged, the same archive reads back.
    bytes[at + member.len() - 3] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(
        NpzFile::open(&path)
            .unwrap()
            .get::<f32>("w")
            .unwrap()
            .to_vec(),
        w.to_vec()
    );
}
