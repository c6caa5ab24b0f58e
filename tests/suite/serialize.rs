//! save/load in the safetensors format: round trips of every dtype and of views, files
//! written by hand from the format's specification, and the errors.

use crate::common;

use common::{VIEW_KINDS, ViewKind, make_view};
use half::{bf16, f16};
use namedtensor::{DynTensor, Element, ErrorKind, load_tensors, save_tensors};
use std::path::PathBuf;

/// A fresh path in a per-test directory (removed when the guard drops).
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("namedtensor-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn round_trip<E: Element>(dir: &TempDir, extremes: &[E]) {
    let name = format!("{}.safetensors", E::DTYPE);
    let path = dir.file(&name);
    for kind in VIEW_KINDS {
        let t = make_view::<E>(&[3, 4, 5], kind, 7);
        t.save(&path).unwrap();
        let back = DynTensor::<E>::load(&path).unwrap();
        assert_eq!(back.shape(), t.shape(), "{kind:?}");
        assert_eq!(back.to_vec(), t.to_vec(), "{} {kind:?}", E::DTYPE);
    }
    for t in [
        DynTensor::<E>::from_slice(extremes),
        DynTensor::<E>::scalar(extremes[0]),
        DynTensor::<E>::zeros(&[2, 0, 3]),
    ] {
        t.save(&path).unwrap();
        let back = DynTensor::<E>::load(&path).unwrap();
        assert_eq!((back.shape(), back.to_vec()), (t.shape(), t.to_vec()));
    }
}

#[test]
fn every_dtype_round_trips() {
    let dir = TempDir::new("round-trip");
    round_trip(&dir, &[true, false]);
    round_trip(&dir, &[u8::MIN, u8::MAX, 7]);
    round_trip(&dir, &[i8::MIN, i8::MAX, -1]);
    round_trip(&dir, &[i16::MIN, i16::MAX, -1]);
    round_trip(&dir, &[i32::MIN, i32::MAX, -1]);
    round_trip(&dir, &[i64::MIN, i64::MAX, -1]);
    round_trip(
        &dir,
        &[
            f16::MIN,
            f16::MAX,
            f16::MIN_POSITIVE_SUBNORMAL,
            f16::NEG_INFINITY,
        ],
    );
    round_trip(
        &dir,
        &[
            bf16::MIN,
            bf16::MAX,
            bf16::MIN_POSITIVE_SUBNORMAL,
            bf16::INFINITY,
        ],
    );
    round_trip(&dir, &[f32::MIN, f32::MAX, f32::MIN_POSITIVE, -0.0]);
    round_trip(&dir, &[f64::MIN, f64::MAX, 5e-324, -0.0]);
    // NaN payloads survive bit for bit.
    let nan = f32::from_bits(0x7fc0_1234);
    let path = dir.file("nan.safetensors");
    DynTensor::from_slice(&[nan]).save(&path).unwrap();
    assert_eq!(
        DynTensor::<f32>::load(&path).unwrap().item().to_bits(),
        0x7fc0_1234
    );
}

#[test]
fn several_tensors_in_one_file() {
    let dir = TempDir::new("several");
    let path = dir.file("model.safetensors");
    let w = make_view::<bf16>(&[4, 3], ViewKind::Transposed, 1);
    let b = make_view::<bf16>(&[3], ViewKind::Stepped, 2);
    let e = make_view::<bf16>(&[2, 3, 4], ViewKind::Expanded, 3);
    save_tensors(
        &path,
        &[("layer.weight", &w), ("layer.bias", &b), ("emb", &e)],
    )
    .unwrap();
    let loaded = load_tensors::<bf16>(&path).unwrap();
    let names: Vec<&str> = loaded.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["emb", "layer.bias", "layer.weight"]);
    for ((_, got), want) in loaded.iter().zip([&e, &b, &w]) {
        assert_eq!((got.shape(), got.to_vec()), (want.shape(), want.to_vec()));
    }
    assert_eq!(
        DynTensor::<bf16>::load_named(&path, "layer.bias")
            .unwrap()
            .to_vec(),
        b.to_vec()
    );
    let err = DynTensor::<bf16>::load(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("found 3"), "{err}");
    let err = DynTensor::<bf16>::load_named(&path, "missing").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    let err = save_tensors(&path, &[("a", &w), ("a", &b)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

/// A safetensors file assembled by hand from the format's specification: u64 little-endian
/// header size, JSON header, data.
fn handmade(header: &str, data: &[u8]) -> Vec<u8> {
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(data);
    file
}

#[test]
fn files_follow_the_format() {
    let dir = TempDir::new("format");
    // Our file, read by hand.
    let path = dir.file("ours.safetensors");
    DynTensor::from_vec(vec![1.5f32, -2.0, 0.25, 8.0], &[2, 2])
        .t()
        .save(&path)
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    assert!(
        header.contains(r#""tensor":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}"#),
        "{header}"
    );
    let data: Vec<f32> = bytes[8 + n..]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(data, [1.5, 0.25, -2.0, 8.0]); // row-major order of the transposed view

    // A file written by hand, read by us: two dtypes, a `__metadata__` entry.
    let ids: Vec<u8> = [3i64, -1].iter().flat_map(|x| x.to_le_bytes()).collect();
    let half: Vec<u8> = [1.0f32, -0.5, 2.0]
        .iter()
        .flat_map(|&x| f16::from_f32(x).to_le_bytes())
        .collect();
    let header = r#"{"__metadata__":{"format":"pt"},"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},"h":{"dtype":"F16","shape":[3,1],"data_offsets":[16,22]}}"#;
    let path = dir.file("handmade.safetensors");
    std::fs::write(&path, handmade(header, &[ids, half].concat())).unwrap();
    assert_eq!(
        DynTensor::<i64>::load_named(&path, "ids").unwrap().to_vec(),
        vec![3, -1]
    );
    let h = DynTensor::<f16>::load_named(&path, "h").unwrap();
    assert_eq!(h.shape(), &[3, 1]);
    assert_eq!(h.to_vec(), [1.0, -0.5, 2.0].map(f16::from_f32).to_vec());
    let err = load_tensors::<i64>(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    assert!(
        err.message()
            .contains(r#"tensor "h" holds float16, but int64 was asked for"#),
        "{err}"
    );

    // A dtype namedtensor does not have.
    let header = r#"{"u":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}}"#;
    std::fs::write(&path, handmade(header, &[0; 4])).unwrap();
    let err = DynTensor::<i32>::load(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DTypeMismatch);
    assert!(err.message().contains("U32 (not supported)"), "{err}");
}

#[test]
fn bad_files_are_io_errors() {
    let dir = TempDir::new("bad");
    let path = dir.file("bad.safetensors");
    let missing = DynTensor::<f32>::load(dir.file("missing.safetensors")).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Io);
    assert!(
        missing.message().contains("missing.safetensors"),
        "{missing}"
    );
    let header = r#"{"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    for contents in [
        b"not a safetensors file".to_vec(),
        vec![],
        handmade(header, &[0; 12]), // data too short
        handmade(r#"{"t":{"dtype":"F32","shape":[4]}}"#, &[0; 16]), // no offsets
        handmade("{not json", &[]),
    ] {
        std::fs::write(&path, &contents).unwrap();
        let err = DynTensor::<f32>::load(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "{err}");
        assert!(
            err.message().contains("not a valid safetensors file"),
            "{err}"
        );
    }
    // What the message says, for each way a file can be malformed.
    let two = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    let gap = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#;
    let mut long_header = handmade(header, &[0; 16]);
    long_header[..8].copy_from_slice(&1000u64.to_le_bytes());
    let cases: [(&str, Vec<u8>, &str); 7] = [
        ("tiny", b"abc".to_vec(), "shorter than the 8-byte length"),
        (
            "header length",
            long_header,
            "the header length in its first 8 bytes (1000) reaches past the end of the file (79 bytes)",
        ),
        (
            "not JSON",
            handmade("{not json", &[]),
            "its header is not the format's JSON",
        ),
        (
            "duplicate name",
            handmade(two, &[0; 8]),
            r#"the tensor name "a" appears more than once in the header"#,
        ),
        (
            "gap",
            handmade(gap, &[0; 12]),
            r#"the bytes of tensor "b" do not start where the previous tensor's bytes end"#,
        ),
        (
            "truncated",
            handmade(header, &[0; 12]),
            "do not cover its data section exactly",
        ),
        (
            "shape",
            handmade(
                r#"{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}"#,
                &[0; 16],
            ),
            "does not match its shape and dtype",
        ),
    ];
    for (what, contents, says) in cases {
        std::fs::write(&path, &contents).unwrap();
        let err = DynTensor::<f32>::load(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "{what}: {err}");
        assert!(
            err.message()
                .contains("bad.safetensors: not a valid safetensors file: "),
            "{what}: {err}"
        );
        assert!(err.message().contains(says), "{what}: {err}");
    }
    // Saving into a directory that does not exist.
    let err = DynTensor::<f32>::zeros(&[1])
        .save(dir.file("no/such/dir/x.safetensors"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
}

/// The checks each fuzz target runs on one input (`fuzz/`), replayed here on stable.
#[path = "../../fuzz/src/checks.rs"]
mod fuzz_checks;

/// Every seed and every reproducer of the fuzz targets, replayed on stable through the checks
/// the targets run: each loader gives an error or usable tensors, never a panic, and a failed
/// `load_parameters` leaves the model as it was.
#[test]
fn fuzz_seeds_and_reproducers_load_without_panicking() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = |dir: &str| -> Vec<Vec<u8>> {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
    };
    let replay = |dirs: &[&str], check: &dyn Fn(&[u8]) -> usize| -> (usize, usize) {
        let inputs: Vec<Vec<u8>> = dirs.iter().flat_map(|d| files(d)).collect();
        (inputs.len(), inputs.iter().map(|d| check(d)).sum())
    };
    let (n, loaded) = replay(
        &[
            "fuzz/corpus/load_safetensors",
            "fuzz/reproducers/load_safetensors",
        ],
        &fuzz_checks::load_safetensors,
    );
    assert!(n >= 12 && loaded >= 5, "{n} files, {loaded} tensors"); // the one-dtype seeds load
    // NumPy's files (tests/fixtures/make_npy.py): all but the uint32 and structured arrays.
    let (n, loaded) = replay(&["tests/fixtures/npy"], &fuzz_checks::load_npy);
    assert!(n >= 30 && loaded >= 26, "{n} files, {loaded} arrays");
    // Two archives of three arrays each, and the archives that claim 4 TiB (issue 36).
    let (n, loaded) = replay(
        &["tests/fixtures/npy", "fuzz/reproducers/load_npz"],
        &fuzz_checks::load_npz,
    );
    assert!(n >= 32 && loaded == 6, "{n} files, {loaded} arrays");
    let dir = std::env::temp_dir().join(format!("nt-fuzz-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (n, loaded) = replay(&["fuzz/corpus/load_safetensors", "tests/fixtures"], &|d| {
        usize::from(fuzz_checks::load_parameters_into_mlp(d, &dir))
    });
    assert!(n >= 12 && loaded == 1, "{n} files, {loaded} loaded"); // PyTorch's state dict
    std::fs::remove_dir_all(&dir).unwrap();
    let data =
        std::fs::read(root.join("fuzz/reproducers/load_safetensors/empty_with_dim_2_63")).unwrap();
    let t = &namedtensor::load_tensors_from_bytes::<f32>(&data).unwrap()[0].1;
    assert_eq!(t.shape(), &[0, 1 << 63, 4]);
}
