//! Bad and extreme input through the public API: each case is an error of the right kind (or
//! the right result), never a panic in a `try_` form, an overflow, or a silently wrong value.

use namedtensor::{DynTensor, ErrorKind, Layout, NpzFile, Storage, load_npz};

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
    use namedtensor::nn::{Linear, Module, load_parameters};
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
    let layer = Linear::<In, Out>::new(3, 2, 0);
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
