//! Bad and extreme input through the public API: each case is an error of the right kind (or
//! the right result), never a panic in a `try_` form, an overflow, or a silently wrong value.

use namedtensor::data::{DataLoader, Dataset};
use namedtensor::nn::init::derive_seed;
use namedtensor::nn::loss::{CrossEntropy, Nll};
use namedtensor::nn::{AvgPool2d, Conv2d, Embedding, Linear, MaxPool2d, Module};
use namedtensor::ops::Window2d;
use namedtensor::optim::{
    Adam, AdamConfig, CosineAnnealingLr, LinearLr, LrScheduler, Optimizer, Sgd, SgdConfig, StepLr,
    clip_grad_norm_,
};
use namedtensor::{DynTensor, Error, ErrorKind, Layout, NpzFile, Storage, Tensor, dims, load_npz};

dims! { Batch, Rows, Cols, Channels, Features }

/// The text of a panic's payload.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p.downcast_ref::<&str>().unwrap_or(&"?").to_string(),
    }
}

/// Asserts that `r` failed with `kind` and that its message contains each of `words`.
#[track_caller]
fn assert_error<T>(r: namedtensor::Result<T>, kind: ErrorKind, words: &[&str]) -> Error {
    let Err(e) = r else {
        panic!("expected a {kind:?} error containing {words:?}, got a value")
    };
    assert_eq!(e.kind(), kind, "{e}");
    for w in words {
        assert!(e.to_string().contains(w), "{w:?} is not in: {e}");
    }
    e
}

#[test]
fn empty_tensors_with_huge_dims_do_not_overflow() {
    // Element count 0 whatever the other dims are; the fuzzer found such headers in
    // safetensors files. Products of the sizes overflow usize.
    let huge = 1usize << 63;
    let mut built = 0;
    for (sizes, strides) in [
        (vec![0, huge, 4], vec![4, 4, 1]),
        (vec![huge, 0, 4], vec![4, 4, 1]),
        (vec![huge, 4, 0], vec![0, 0, 1]),
        (vec![3, huge, huge, 0], vec![1, 1, 1, 1]),
    ] {
        let layout = match Layout::new(&sizes, &strides, 0) {
            Ok(l) => l,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Overflow, "{sizes:?}");
                continue;
            }
        };
        assert!(layout.is_contiguous(), "{sizes:?}");
        let t = DynTensor::try_from_parts(Storage::from_vec(Vec::<f32>::new()), layout).unwrap();
        assert_eq!(t.numel(), 0);
        assert!(t.try_to_vec().unwrap().is_empty());
        assert_eq!(t.try_sum_dims(&[], false).unwrap().item(), 0.0);
        assert_eq!(t.try_contiguous().unwrap().numel(), 0);
        assert_eq!(t.exp().numel(), 0);
        let c = namedtensor::layout::Coalesced::new(&sizes, [&strides[..]], [0]);
        assert_eq!(c.rows(), 0);
        built += 1;
    }
    assert!(built >= 2, "only {built} of the layouts were accepted");
}

#[test]
fn tril_and_triu_with_extreme_diagonals() {
    let t = DynTensor::<i32>::ones(&[3, 4]);
    for k in [isize::MAX, isize::MAX - 1, 1 << 40] {
        assert_eq!(t.try_tril(k).unwrap().to_vec(), vec![1; 12], "tril({k})");
        assert_eq!(t.try_triu(k).unwrap().to_vec(), vec![0; 12], "triu({k})");
    }
    for k in [isize::MIN, isize::MIN + 1, -(1 << 40)] {
        assert_eq!(t.try_tril(k).unwrap().to_vec(), vec![0; 12], "tril({k})");
        assert_eq!(t.try_triu(k).unwrap().to_vec(), vec![1; 12], "triu({k})");
    }
    // The edges of the clamp itself: k = n keeps everything in tril, k = -m clears it.
    assert_eq!(t.tril(4).to_vec(), vec![1; 12]);
    assert_eq!(t.tril(-3).to_vec(), vec![0; 12]);
    assert_eq!(t.triu(-2).to_vec(), vec![1; 12]);
    assert_eq!(t.triu(4).to_vec(), vec![0; 12]);
}

#[test]
fn indices_beyond_isize_are_out_of_range_not_wrapped() {
    let t = DynTensor::<i64>::arange(0, 5, 1);
    let e = t.try_i(usize::MAX).unwrap_err(); // not the last element
    assert_eq!(e.kind(), ErrorKind::IndexOutOfRange);
    assert_eq!(
        t.try_i(0isize..=isize::MAX).unwrap().to_vec(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        t.try_i(..=isize::MAX).unwrap().to_vec(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(t.try_i(usize::MAX..).unwrap().numel(), 0);
    assert_eq!(t.try_i(2..usize::MAX).unwrap().to_vec(), vec![2, 3, 4]);
}

#[test]
fn integer_pow_with_a_negative_exponent_is_an_error() {
    let a = DynTensor::from_vec(vec![2i64, 3], &[2]);
    for r in [
        a.try_pow_scalar(-1i64),
        a.try_pow(&DynTensor::from_vec(vec![1i64, -2], &[2])),
        DynTensor::<i64>::scalar(2).try_pow(&a.neg()),
    ] {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("negative integer powers"), "{e}");
    }
    assert!(a.try_pow_scalar_(-1i64).is_err());
    assert_eq!(a.to_vec(), vec![2, 3]); // untouched
    // Float results take negative exponents.
    assert_eq!(
        a.to_dtype::<f64>().pow_scalar(-1.0).to_vec(),
        vec![0.5, 1.0 / 3.0]
    );
}

#[test]
fn allocations_that_cannot_be_made_are_errors_not_aborts() {
    // Terabytes: more than any CI machine's memory (and its overcommit allowance), so the
    // allocator refuses; a `try_` form reports it instead of aborting the process.
    let huge = 1usize << 42;
    let oom = |what: &str, r: namedtensor::Result<DynTensor<f32>>| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{what}: {e}");
        assert!(e.to_string().contains("cannot allocate"), "{what}: {e}");
    };
    oom("full", DynTensor::try_full(&[huge], 1.0));
    oom("zeros 2-D", DynTensor::try_full(&[1 << 21, 1 << 21], 0.0));
    oom("arange", DynTensor::try_arange(0.0, huge as f32, 1.0));
    oom("normal", DynTensor::try_normal(&[huge], 0.0, 1.0, 7));
    let one = DynTensor::<f32>::ones(&[1]);
    let wide = one.try_expand(&[huge as isize]).unwrap(); // a view: nothing allocated
    oom("contiguous of an expanded view", wide.try_contiguous());
    oom("repeat", one.try_repeat(&[huge]));
    oom("clamp of an expanded view", wide.try_clamp(0.0f32, 0.5f32));
    oom("add of expanded views", wide.try_add(&wide));
    oom(
        "cast",
        wide.try_to_dtype::<f64>().map(|t| t.to_dtype::<f32>()),
    );
    let col = one.try_expand(&[1 << 21, 1]).unwrap();
    let row = one.try_expand(&[1, 1 << 21]).unwrap();
    oom("matmul", col.try_matmul(&row));
    // i64::MAX elements: the byte count itself overflows.
    let e = DynTensor::<i64>::try_arange(0, i64::MAX, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
    // The failed attempts left nothing behind, and ordinary allocations still work.
    assert!(namedtensor::storage::buffer_pool_bytes() < 1 << 30);
    assert_eq!(
        DynTensor::<f32>::full(&[1 << 20], 2.0).sum().item(),
        (1 << 21) as f32
    );
}

// Files whose headers lie about sizes: a size a file states is checked against what the file
// (or zip member) really holds before it is allocated, or read in bounded pieces.

/// The bytes of `hex`.
fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// CRC-32 (zip's, bit by bit).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A zip archive with one stored member `name` holding `data`, whose headers state `stated`
/// bytes as its uncompressed size (zip64 fields, as in the file the fuzzer found).
fn stored_zip(name: &str, data: &[u8], stated: u64) -> Vec<u8> {
    let u16s = |v: u16| v.to_le_bytes().to_vec();
    let u32s = |v: u32| v.to_le_bytes().to_vec();
    let mut extra = [u16s(1), u16s(16)].concat();
    extra.extend(stated.to_le_bytes());
    extra.extend((data.len() as u64).to_le_bytes());
    let common = [
        u16s(45),                 // version needed: zip64
        u16s(0),                  // flags
        u16s(0),                  // stored
        u32s(0),                  // time, date
        u32s(crc32(data)),        // CRC-32
        u32s(u32::MAX),           // compressed size: in the zip64 field
        u32s(u32::MAX),           // uncompressed size: in the zip64 field
        u16s(name.len() as u16),  // name length
        u16s(extra.len() as u16), // extra length
    ]
    .concat();
    let mut zip = [u32s(0x0403_4b50), common.clone()].concat();
    zip.extend(name.as_bytes());
    zip.extend(&extra);
    zip.extend(data);
    let central_at = zip.len() as u32;
    zip.extend([u32s(0x0201_4b50), u16s(45)].concat()); // made by
    zip.extend(common);
    zip.extend([u16s(0), u16s(0), u16s(0), u32s(0), u32s(0)].concat()); // comment, disk, attrs, offset 0
    zip.extend(name.as_bytes());
    zip.extend(&extra);
    let central_len = zip.len() as u32 - central_at;
    zip.extend(
        [
            u32s(0x0605_4b50),
            u16s(0),
            u16s(0),
            u16s(1),
            u16s(1),
            u32s(central_len),
            u32s(central_at),
            u16s(0),
        ]
        .concat(),
    );
    zip
}

/// A version-1 `.npy` header for `descr` and `shape` (no data).
fn npy_header(descr: &str, shape: &str) -> Vec<u8> {
    let text = format!("{{'descr':'{descr}','fortran_order':False,'shape':({shape}),}}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text.as_bytes());
    out
}

#[test]
fn npz_members_that_claim_terabytes_are_errors_not_aborts() {
    // The 212-byte archive of issue 36: a member stated as 4 TiB + 72 bytes holding a 72-byte
    // header for 2^40 float32 elements. It panicked (little-endian: bytemuck's zeroed vector
    // of 4 TiB) or aborted the process (big-endian: a 4 TiB byte buffer).
    let little = from_hex(
        "504b03042d0000000000000000009fca47daffffffffffffffff05001400782e6e70790100100048000000\
         000400004800000000000000934e554d505901003e007b276465736372273a273c6634272c27666f7274\
         72616e5f6f72646572273a46616c73652c277368617065273a28313039393531313632373737362c297d\
         504b01022d002d0000000000000000009fca47daffffffffffffffff0500140000000000000000000000\
         00000000782e6e7079010010004800000000040000504b0506000000000100010047000000\
         7f0000000000",
    );
    assert_eq!(little.len(), 212);
    let mut big = little.clone();
    let at = big.windows(3).position(|w| w == b"<f4").unwrap();
    big[at] = b'>';
    let dir = std::env::temp_dir().join(format!("nt-bad-npz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (what, bytes) in [("<f4", little), (">f4", big)] {
        let file = NpzFile::from_bytes(bytes.clone()).unwrap();
        assert_eq!(file.names(), ["x"]);
        let e = file.get::<f32>("x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
        // Its CRC-32 is not its data's: the zip reader says so when the short member ends.
        assert!(
            e.to_string()
                .contains("load_npz: <bytes>[\"x\"]: Invalid checksum"),
            "{what}: {e}"
        );
        let path = dir.join("claims_4_tib.npz");
        std::fs::write(&path, &bytes).unwrap();
        let e = load_npz::<f32>(&path).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
        assert!(e.to_string().contains("claims_4_tib.npz"), "{what}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();

    // The same made here, for every element type and both byte orders, and a member that
    // holds half of what its array needs: the data is read in pieces and the stream's end
    // is an error whatever the claim.
    for descr in ["<f4", ">f4", "<f8", ">i8", "|u1", "|b1", "<f2"] {
        let data = npy_header(descr, "1099511627776,");
        let item: u64 = descr[2..].parse().unwrap();
        let zip = stored_zip("x.npy", &data, data.len() as u64 + (item << 40));
        let file = NpzFile::from_bytes(zip).unwrap();
        let e = match descr {
            "<f4" | ">f4" => file.get::<f32>("x").unwrap_err(),
            "<f8" => file.get::<f64>("x").unwrap_err(),
            ">i8" => file.get::<i64>("x").unwrap_err(),
            "|u1" => file.get::<u8>("x").unwrap_err(),
            "|b1" => file.get::<bool>("x").unwrap_err(),
            _ => file.get::<half::f16>("x").unwrap_err(),
        };
        assert_eq!(e.kind(), ErrorKind::Io, "{descr}: {e}");
        assert!(
            e.to_string().contains("the data ends before"),
            "{descr}: {e}"
        );
    }
    let mut half_data = npy_header("<f4", "64,");
    half_data.extend([0u8; 128]);
    let claimed = half_data.len() as u64 + 128;
    let e = NpzFile::from_bytes(stored_zip("x.npy", &half_data, claimed))
        .unwrap()
        .get::<f32>("x")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("the data ends before"), "{e}");
    // A member that states its size truly loads (the builder above is a valid archive).
    let mut whole = npy_header("<f4", "2,");
    whole.extend(1.5f32.to_le_bytes());
    whole.extend((-2.0f32).to_le_bytes());
    let t = NpzFile::from_bytes(stored_zip("x.npy", &whole, whole.len() as u64))
        .unwrap()
        .get::<f32>("x")
        .unwrap();
    assert_eq!(t.to_vec(), [1.5, -2.0]);
}

#[test]
fn npy_headers_that_claim_gigabytes_are_errors_not_allocations() {
    // A version-2 header stating 4 GiB - 1 bytes: in a file or in memory the file's length
    // bounds it; in an archive member only the member's claim did, so the header was
    // allocated at its stated size before a byte of it was read.
    let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
    v2.extend(u32::MAX.to_le_bytes());
    v2.extend(b"{'descr':'<f4','fortran_order':False,'shape':(1,),}\n");
    let e = DynTensor::<f32>::from_npy_bytes(&v2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("4294967295 bytes"), "{e}");
    let zip = stored_zip("x.npy", &v2, 1 << 40);
    let e = NpzFile::from_bytes(zip)
        .unwrap()
        .get::<f32>("x")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(
        e.to_string()
            .contains("not a valid .npy file: a header of 4294967295 bytes"),
        "{e}"
    );
}

#[test]
fn safetensors_and_parameter_files_that_claim_more_than_they_hold() {
    use namedtensor::nn::load_parameters;
    namedtensor::dims!(In, Out);
    // The header's length and the tensors' offsets are checked against the file's length
    // before anything is allocated for them.
    let header = |json: &str, stated: u64| {
        let mut out = stated.to_le_bytes().to_vec();
        out.extend(json.as_bytes());
        out
    };
    let huge =
        r#"{"weight":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}"#;
    let cases = [
        ("header length 2^63", header(huge, 1 << 63)),
        ("header length u64::MAX", header(huge, u64::MAX)),
        (
            "a 4 TiB tensor in a tiny file",
            header(huge, huge.len() as u64),
        ),
        (
            "a shape whose product overflows",
            header(
                r#"{"weight":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}}"#,
                86,
            ),
        ),
    ];
    let dir = std::env::temp_dir().join(format!("nt-bad-st-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lies.safetensors");
    let layer = Linear::<In, Out>::seeded(3, 2, 0);
    let before: Vec<Vec<f32>> = layer
        .parameters()
        .iter()
        .map(|p| p.tensor.to_vec())
        .collect();
    for (what, bytes) in cases {
        let e = namedtensor::load_tensors_from_bytes::<f32>(&bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
        assert!(
            e.to_string().contains("not a valid safetensors file"),
            "{what}: {e}"
        );
        std::fs::write(&path, &bytes).unwrap();
        let e = load_parameters(&layer, &path).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
        assert!(e.to_string().contains("lies.safetensors"), "{what}: {e}");
        let after: Vec<Vec<f32>> = layer
            .parameters()
            .iter()
            .map(|p| p.tensor.to_vec())
            .collect();
        assert_eq!(before, after, "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn window_sizes_and_schedules_that_overflow_are_errors() {
    let huge = 1usize << 63;
    let x = DynTensor::<f32>::ones(&[1, 4, 4]);
    let named = Tensor::<f32, (Batch, Rows, Cols)>::ones([1, 4, 4]);
    let cases = [
        (
            Window2d::new(2, 2).padding(huge),
            "4 + 2 × padding 9223372036854775808",
        ),
        (
            Window2d::new(3, 3).dilation(huge),
            "dilation 9223372036854775808 × (kernel 3 − 1)",
        ),
    ];
    for (window, words) in cases {
        assert_error(
            x.try_max_pool2d(window),
            ErrorKind::Overflow,
            &["max_pool2d:", words],
        );
        assert_error(
            x.try_avg_pool2d(window),
            ErrorKind::Overflow,
            &["avg_pool2d:", words],
        );
        assert_error(
            x.try_unfold2d(window, 0.0),
            ErrorKind::Overflow,
            &["unfold2d:", words],
        );
        assert_error(window.output_size(4, 4), ErrorKind::Overflow, &[words]);
        let pool = MaxPool2d::<Rows, Cols>::with_window(window);
        assert_error(pool.try_forward(&named), ErrorKind::Overflow, &[words]);
        let pool = AvgPool2d::<Rows, Cols>::with_window(window);
        assert_error(pool.try_forward(&named), ErrorKind::Overflow, &[words]);
        let w = DynTensor::<f32>::ones(&[1, 1, window.kernel.0, window.kernel.1]);
        let e = x.try_conv2d(&w, None, window);
        assert_error(e, ErrorKind::Overflow, &["conv2d:", words]);
    }
    // Padding whose padded size fits, but whose window count does not: 2^41 + 4 positions per
    // row and per column.
    let wide = Window2d::new(1, 1).padding(1 << 40);
    assert_error(
        x.try_max_pool2d(wide),
        ErrorKind::Overflow,
        &["max_pool2d:", "number of windows"],
    );
    // The same with no leading entries: the windows per plane still overflow (the kernels size
    // a plane on its own), an error rather than an overflow inside them.
    let empty = DynTensor::<f32>::zeros(&[0, 4, 4]);
    assert_error(
        empty.try_max_pool2d(wide),
        ErrorKind::Overflow,
        &["max_pool2d:", "number of windows"],
    );
    assert_error(
        empty.try_unfold2d(wide, 0.0),
        ErrorKind::Overflow,
        &["unfold2d:", "number of window entries"],
    );
    // A window count that fits but whose windows (2^42 taps of 4 bytes) the host cannot hold:
    // an allocation error, not an abort.
    let padded = Window2d::new(1, 1).padding(1 << 20);
    assert_error(
        x.try_avg_pool2d(padded),
        ErrorKind::OutOfMemory,
        &["avg_pool2d:", "cannot allocate"],
    );
    // The panicking form says the same.
    let pool = std::panic::AssertUnwindSafe(|| x.max_pool2d(cases[0].0));
    let message = panic_message(std::panic::catch_unwind(pool).unwrap_err());
    assert!(
        message.starts_with("max_pool2d:") && message.contains(cases[0].1),
        "{message}"
    );
    assert_eq!(x.to_vec(), vec![1.0; 16]); // untouched

    // Conv2d's fan-in in · kh · kw overflows; a fan-in that fits may still be a weight the host
    // cannot hold (4 × 2^20 × 2^20 floats: 16 TiB).
    type Conv = Conv2d<Channels, Features, Rows, Cols>;
    let kernel = Window2d::new(1 << 32, 1 << 32);
    let e = Conv::try_seeded(3, 8, kernel, 0);
    assert_error(
        e,
        ErrorKind::Overflow,
        &["Conv2d:", "fan-in", "3 × 4294967296 × 4294967296"],
    );
    let e = Conv::try_seeded(4, 1, Window2d::new(1 << 20, 1 << 20), 0);
    assert_error(
        e,
        ErrorKind::OutOfMemory,
        &["Conv2d:", "cannot allocate", "weight"],
    );
    assert_eq!(
        Conv::try_seeded(3, 8, Window2d::new(3, 3), 0)
            .unwrap()
            .weight
            .shape(),
        &[8, 3, 3, 3]
    );

    // CosineAnnealingLR's period 2·t_max overflows i64 from t_max = 2^62; the schedule is
    // still defined (the rate barely moves over the first steps).
    for t_max in [1 << 62, usize::MAX] {
        let fc = Linear::<Rows, Cols>::seeded(2, 2, 0);
        let mut opt = Sgd::new(
            fc.parameters(),
            SgdConfig {
                lr: 0.5,
                ..SgdConfig::default()
            },
        );
        let mut s = CosineAnnealingLr::new(&mut opt, t_max, 0.0).unwrap();
        for _ in 0..3 {
            s.step(&mut opt).unwrap();
        }
        assert_eq!(opt.lr(), 0.5, "t_max = {t_max}");
        assert_eq!(s.last_epoch(), 3);
    }

    // With eta_min = 0 the schedule ends at a rate of 0, which an optimiser accepts (as
    // PyTorch's do); beyond t_max it climbs again: (1 + cos(5π/4)) / 2 · 0.5 at epoch 5.
    let fc = Linear::<Rows, Cols>::seeded(2, 2, 0);
    let config = AdamConfig {
        lr: 0.5,
        ..AdamConfig::adamw()
    };
    let mut opt = Adam::new(fc.parameters(), config);
    let mut s = CosineAnnealingLr::new(&mut opt, 4, 0.0).unwrap();
    for _ in 0..4 {
        s.step(&mut opt).unwrap();
    }
    assert!(opt.lr().abs() < 1e-15, "{}", opt.lr());
    opt.step().unwrap();
    s.step(&mut opt).unwrap();
    let want = 0.5 * (1.0 + (5.0 * std::f64::consts::PI / 4.0).cos()) / 2.0;
    assert!((opt.lr() - want).abs() < 1e-12, "{} vs {want}", opt.lr());
    assert!(Adam::try_new(fc.parameters(), AdamConfig { lr: 0.0, ..config }).is_ok());
}

/// `len` items that are their own indices (nothing is stored); the length can change
/// between epochs.
struct Indices(std::cell::Cell<usize>);

impl Dataset for Indices {
    type Batch = Vec<i64>;
    fn len(&self) -> usize {
        self.0.get()
    }
    fn batch(&self, indices: &DynTensor<i64>) -> namedtensor::Result<Vec<i64>> {
        indices.try_to_vec()
    }
}

fn indices(len: usize) -> Indices {
    Indices(std::cell::Cell::new(len))
}

#[test]
fn epochs_over_huge_datasets_are_errors_or_lazy_never_aborts() {
    // More items than i64 indices address: one error, in order or shuffled.
    for n in [usize::MAX, i64::MAX as usize + 1] {
        for shuffle in [false, true] {
            let loader = DataLoader::new(indices(n), 4).unwrap();
            let mut loader = if shuffle { loader.shuffle(7) } else { loader };
            let mut items: Vec<_> = loader.epoch().collect();
            assert_eq!(items.len(), 1, "{n} items, shuffle {shuffle}");
            let words = ["DataLoader:", &n.to_string(), "i64::MAX"];
            assert_error(items.remove(0), ErrorKind::Overflow, &words);
        }
    }
    // 2^62 items in order: each batch's indices are made when it is fetched.
    let mut loader = DataLoader::new(indices(1 << 62), 3).unwrap();
    assert_eq!(loader.num_batches(), (1usize << 62).div_ceil(3));
    let mut epoch = loader.epoch();
    assert_eq!(epoch.next().unwrap().unwrap(), vec![0, 1, 2]);
    assert_eq!(epoch.next().unwrap().unwrap(), vec![3, 4, 5]);
    // Shuffled, the permutation of 2^40 or 2^62 indices cannot be allocated: one error, and the
    // epoch is not counted (the next one draws epoch 0's permutation).
    let mut loader = DataLoader::new(indices(1 << 40), 4).unwrap().shuffle(7);
    for n in [1usize << 40, 1 << 62] {
        loader.dataset().0.set(n);
        let mut items: Vec<_> = loader.epoch().collect();
        assert_eq!(items.len(), 1, "{n} items");
        let words = ["DataLoader:", "shuffling", "cannot allocate"];
        assert_error(items.remove(0), ErrorKind::OutOfMemory, &words);
    }
    loader.dataset().0.set(10);
    let first: Vec<i64> = loader.epoch().flat_map(|b| b.unwrap()).collect();
    assert_eq!(first, DynTensor::randperm(10, derive_seed(7, 0)).to_vec());

    // randperm itself: an error, and the panicking form panics with its message.
    let e = DynTensor::try_randperm(1 << 40, 0);
    assert_error(
        e,
        ErrorKind::OutOfMemory,
        &["randperm:", "cannot allocate 1099511627776"],
    );
    let e = DynTensor::try_randperm(usize::MAX, 0);
    assert_error(e, ErrorKind::OutOfMemory, &["randperm:"]);
    let message =
        panic_message(std::panic::catch_unwind(|| DynTensor::randperm(1 << 40, 0)).unwrap_err());
    assert!(
        message.starts_with("randperm: cannot allocate"),
        "{message}"
    );
    assert_eq!(DynTensor::try_randperm(0, 0).unwrap().numel(), 0);
}

#[test]
fn optimiser_and_schedule_options_must_be_finite_and_messages_say_what_is_wrong() {
    let fc = Linear::<Rows, Cols, f64>::seeded(2, 2, 0);
    let before: Vec<Vec<f64>> = fc.parameters().iter().map(|p| p.tensor.to_vec()).collect();
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let sgd = |c: SgdConfig| Sgd::try_new(fc.parameters(), c).map(|_| ());
    let base = SgdConfig::default();
    for v in [inf, nan, -1.0] {
        let rule = format!("= {v} must be a finite number ≥ 0");
        let e = sgd(SgdConfig {
            momentum: v,
            ..base
        });
        let e = assert_error(e, ErrorKind::InvalidArgument, &["SGD:", "momentum", &rule]);
        assert!(!e.to_string().contains("negative"), "{e}");
        let e = sgd(SgdConfig {
            weight_decay: v,
            ..base
        });
        assert_error(
            e,
            ErrorKind::InvalidArgument,
            &["SGD:", "weight_decay", &rule],
        );
        let e = sgd(SgdConfig { lr: v, ..base });
        let words = [
            "SGD:",
            "learning rate",
            &format!("= {v} must be a finite number ≥ 0"),
        ];
        assert_error(e, ErrorKind::InvalidArgument, &words);
    }
    let e = sgd(SgdConfig {
        dampening: nan,
        ..base
    });
    assert_error(
        e,
        ErrorKind::InvalidArgument,
        &["dampening = NaN must be in [0, 1]"],
    );
    let e = sgd(SgdConfig {
        nesterov: true,
        dampening: 0.5,
        momentum: 0.9,
        ..base
    });
    assert_error(
        e,
        ErrorKind::InvalidArgument,
        &["Nesterov", "momentum = 0.9 and dampening = 0.5"],
    );
    for (adam, op) in [
        (AdamConfig::default(), "Adam:"),
        (AdamConfig::adamw(), "AdamW:"),
    ] {
        let try_adam = |c: AdamConfig| Adam::try_new(fc.parameters(), c).map(|_| ());
        for v in [inf, nan] {
            let rule = format!("= {v} must be a finite number ≥ 0");
            let e = try_adam(AdamConfig { eps: v, ..adam });
            assert_error(e, ErrorKind::InvalidArgument, &[op, "eps", &rule]);
            let e = try_adam(AdamConfig {
                weight_decay: v,
                ..adam
            });
            assert_error(e, ErrorKind::InvalidArgument, &[op, "weight_decay", &rule]);
            let e = try_adam(AdamConfig {
                betas: (v, 0.999),
                ..adam
            });
            assert_error(
                e,
                ErrorKind::InvalidArgument,
                &[op, &format!("beta1 = {v} must be in [0, 1)")],
            );
        }
    }

    // Schedules: each option on its own, the optimiser's rate left as it was.
    let mut opt = Sgd::new(fc.parameters(), SgdConfig { lr: 0.5, ..base });
    for gamma in [0.0, -1.0, inf, nan] {
        let e = StepLr::new(&mut opt, 2, gamma);
        let words = [
            "StepLR:",
            &format!("gamma = {gamma} must be a finite number > 0"),
        ];
        let e = assert_error(e, ErrorKind::InvalidArgument, &words);
        assert!(!e.to_string().contains("step_size"), "{e}");
    }
    let e = StepLr::new(&mut opt, 0, 0.5);
    let e = assert_error(
        e,
        ErrorKind::InvalidArgument,
        &["StepLR:", "step_size = 0 must be at least 1"],
    );
    assert!(!e.to_string().contains("gamma"), "{e}");
    for eta_min in [-1.0, inf, nan] {
        let e = CosineAnnealingLr::new(&mut opt, 10, eta_min);
        let words = [
            "CosineAnnealingLR:",
            &format!("eta_min = {eta_min} must be a finite number ≥ 0"),
        ];
        assert_error(e, ErrorKind::InvalidArgument, &words);
    }
    let e = CosineAnnealingLr::new(&mut opt, 0, 0.0);
    assert_error(
        e,
        ErrorKind::InvalidArgument,
        &["t_max = 0 must be at least 1"],
    );
    for (start, end, words) in [
        (nan, 1.0, "start_factor = NaN must be in (0, 1]"),
        (0.0, 1.0, "start_factor = 0 must be in (0, 1]"),
        (0.5, inf, "end_factor = inf must be in [0, 1]"),
    ] {
        let e = LinearLr::new(&mut opt, start, end, 3);
        assert_error(e, ErrorKind::InvalidArgument, &["LinearLR:", words]);
    }
    assert_eq!(opt.lr(), 0.5);
    let e = opt.set_lr(inf);
    assert_error(
        e,
        ErrorKind::InvalidArgument,
        &["learning rate lr = inf must be a finite number ≥ 0"],
    );
    assert_eq!(opt.lr(), 0.5);
    let e = clip_grad_norm_(&fc.parameters(), nan);
    assert_error(
        e,
        ErrorKind::InvalidArgument,
        &["max_norm = NaN must be a number ≥ 0"],
    );
    let after: Vec<Vec<f64>> = fc.parameters().iter().map(|p| p.tensor.to_vec()).collect();
    assert_eq!(before, after); // untouched
}

#[test]
fn errors_name_the_callers_input_not_an_internal_step() {
    // A class dim of size 0 with every label ignored: nothing to gather from.
    let logits = Tensor::<f32, (Batch, Features)>::zeros([2, 0]);
    let labels = Tensor::<i64, (Batch,)>::from_vec(vec![-100, -100], [2]);
    let words = ["class dim `Features`", "shape [2, 0]", "size 0"];
    let ce = CrossEntropy::default();
    for e in [
        ce.try_forward(&logits, Features, &labels).map(|_| ()),
        ce.try_per_item(&logits, Features, &labels).map(|_| ()),
        Nll::default()
            .try_forward(&logits, Features, &labels)
            .map(|_| ()),
    ] {
        let e = assert_error(e, ErrorKind::InvalidArgument, &words);
        assert!(!e.to_string().contains("gather"), "{e}");
        assert!(e.op() == "cross_entropy" || e.op() == "nll_loss", "{e}");
    }

    // An embedding id out of range names the layer, the id and the vocabulary.
    let emb = Embedding::<Features, Channels>::seeded(5, 2, 0);
    let table = emb.weight.to_vec();
    for id in [5, -1, i64::MAX, i64::MIN] {
        let ids = Tensor::<i64, (Batch,)>::from_vec(vec![0, id, 1], [3]);
        let words = [
            "Embedding:",
            &format!("id {id} is out of range"),
            "5 entries of the vocabulary `Features`",
            "0..5",
        ];
        let e = assert_error(emb.try_forward(&ids), ErrorKind::IndexOutOfRange, &words);
        assert!(!e.to_string().contains("index_select"), "{e}");
    }
    assert_eq!(emb.weight.to_vec(), table); // untouched

    // A 0-d tensor is one entry along dim 0 (or -1) for sort, argsort, topk and flatten; the
    // message says 0-d, not "rank 1".
    let s = DynTensor::<f32>::scalar(1.0);
    for (op, e) in [
        ("sort", s.try_sort(1, false).map(|_| ())),
        ("argsort", s.try_argsort(1, false).map(|_| ())),
        ("topk", s.try_topk(1, 1, true).map(|_| ())),
        ("flatten", s.try_flatten(0, -2).map(|_| ())),
    ] {
        let words = [
            &format!("{op}:")[..],
            "dim ",
            "0-d tensor",
            "expected 0 or -1",
        ];
        let e = assert_error(e, ErrorKind::DimOutOfRange, &words);
        assert!(!e.to_string().contains("rank 1"), "{e}");
    }
    assert_eq!(s.try_sort(-1, true).unwrap().0.item(), 1.0);
    assert_eq!(s.try_topk(1, 0, true).unwrap().1.item(), 0);

    // A new dim's position is out of range for the tensor the caller has (rank 2), not for
    // the result (rank 3).
    let mut t = DynTensor::<f32>::zeros(&[2, 3]);
    for dim in [isize::MIN, 3, -4, isize::MAX] {
        let words = [
            &format!("dim {dim} is out of range")[..],
            "rank 2",
            "-3..=2",
        ];
        for (op, e) in [
            ("unsqueeze", t.try_unsqueeze(dim).map(|_| ())),
            ("stack", DynTensor::try_stack(&[&t, &t], dim).map(|_| ())),
            ("unsqueeze", t.try_unsqueeze_(dim).map(|_| ())),
        ] {
            let e = assert_error(e, ErrorKind::DimOutOfRange, &words);
            assert_eq!(e.op(), op, "{e}");
            assert!(!e.to_string().contains("rank 3"), "{e}");
        }
    }
    assert_eq!(t.shape(), &[2, 3]); // untouched
    assert_eq!(t.try_unsqueeze(-3).unwrap().shape(), &[1, 2, 3]);
    assert_eq!(t.try_unsqueeze(2).unwrap().shape(), &[2, 3, 1]);
}

/// The storage's internals that a caller can reach through `DynTensor::storage()` (hidden
/// from the docs, not API) check the layouts they are handed: one beyond the buffer, or a
/// copy between different sizes, is an error, never an access outside the buffer.
#[test]
fn storage_internals_reachable_from_a_tensor_check_their_layouts() {
    let t = DynTensor::<f32>::zeros(&[4]);
    let beyond = Layout::new(&[4], &[1], 2).unwrap();
    let strided = Layout::new(&[3], &[2], 0).unwrap();
    let guard = t.storage().read();
    assert_error(
        guard.gather_to_vec("test", &beyond),
        ErrorKind::OutOfStorage,
        &["storage index 5", "4 elements"],
    );
    assert_error(
        guard.cast::<f64>("test", &strided),
        ErrorKind::OutOfStorage,
        &["storage index 4"],
    );
    assert_error(
        guard.to_device("test", &beyond, namedtensor::Device::Cpu),
        ErrorKind::OutOfStorage,
        &["storage index 5"],
    );
    drop(guard);
    let src = DynTensor::<f32>::ones(&[2]);
    let s = src.storage().read();
    // SAFETY: the copy below is refused before anything is written.
    let mut dst = unsafe { t.storage().write("test") }.unwrap();
    assert_error(
        dst.copy_from(
            "test",
            &Layout::contiguous(&[4]).unwrap(),
            &s,
            &Layout::contiguous(&[2]).unwrap(),
        ),
        ErrorKind::ShapeMismatch,
        &["sizes [2] into sizes [4]"],
    );
    assert_error(
        dst.fill("test", &beyond, 1.0),
        ErrorKind::OutOfStorage,
        &["storage index 5"],
    );
    drop((dst, s));
    assert_eq!(t.to_vec(), vec![0.0; 4], "nothing was written");
}
