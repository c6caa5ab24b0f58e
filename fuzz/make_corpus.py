"""Writes the seed corpus of the `load_safetensors` fuzz target and the two reproducers.

Files are assembled from the format's specification (u64 little-endian header length, JSON
header, data), so no library is needed: `python3 fuzz/make_corpus.py`.
"""

import json
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def file(header, data=b""):
    text = json.dumps(header, separators=(",", ":")).encode() if isinstance(header, dict) else header
    return struct.pack("<Q", len(text)) + text + data


def entry(dtype, shape, start, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [start, end]}


seeds = {
    "f32_matrix": file({"w": entry("F32", [2, 2], 0, 16)}, struct.pack("<4f", 1.5, -2.0, 0.25, 8.0)),
    "f64_vector": file({"v": entry("F64", [3], 0, 24)}, struct.pack("<3d", 1.0, -0.0, 1e300)),
    "bf16_and_i64": file(
        {"__metadata__": {"format": "pt"}, "h": entry("BF16", [2], 0, 4), "ids": entry("I64", [1], 4, 12)},
        struct.pack("<2H", 0x3F80, 0xC000) + struct.pack("<q", -3),
    ),
    "u8_bool": file({"b": entry("BOOL", [3], 0, 3), "u": entry("U8", [2, 1], 3, 5)}, bytes([1, 0, 1, 7, 255])),
    "scalar": file({"s": entry("F32", [], 0, 4)}, struct.pack("<f", 3.0)),
    "empty": file({"e": entry("F32", [0, 5], 0, 0)}),
    "names_metadata_only": file({"__metadata__": {"dims": "rows,cols"}}),
    "duplicate_name": file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)),
    "gap": file({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}, bytes(12)),
    "truncated": file({"t": entry("F32", [4], 0, 16)}, bytes(12)),
}
reproducers = {
    # Empty tensors whose other dims are 2^63 and more: numel 0 passes the format's checks,
    # products of the sizes overflow (found by fuzzing; fixed in 08717c3).
    "empty_with_dim_2_63": file({"t": entry("F32", [0, 2**63, 4], 0, 0)}),
    "empty_after_huge_dims": file({"t": entry("I64", [3, 2**63, 2**63 - 1, 0], 0, 0), "u": entry("U8", [1], 0, 1)}, bytes(1)),
}
for name, data in seeds.items():
    with open(os.path.join(here, "corpus", "load_safetensors", name), "wb") as f:
        f.write(data)
for name, data in reproducers.items():
    with open(os.path.join(here, "reproducers", "load_safetensors", name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds, {len(reproducers)} reproducers")
