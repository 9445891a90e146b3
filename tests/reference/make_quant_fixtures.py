#!/usr/bin/env python3
"""Independent reference for the GGUF reader and ggml (de)quantization, made with the PyPI `gguf` package.

Writes into tests/fixtures/quant/:
  reference.gguf.fixture   metadata of every GGUF value type, an F32 source tensor, that source quantized by gguf.quants
                   (F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1), random-byte Q4_K / Q6_K / Q2_K blocks, a 3-D tensor
  expected.json    the metadata values and, per tensor, its type, shape and place in expected.f32
  expected.f32     gguf.quants.dequantize of every tensor, little-endian f32
  smollm2_rows.json  rows of the real SmolLM2 GGUF dequantized by gguf.quants (when that file is present)

Run: python3 tests/reference/make_quant_fixtures.py [--smollm2 PATH]   (needs `pip install gguf numpy`)
"""
import argparse
import json
import os
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T, GGUFReader, GGUFValueType as V, GGUFWriter, quants

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "quant"
SMOLLM2 = Path(os.environ.get("KVFUSE_HOME", Path.home() / ".cache" / "kvfuse")) / "models" / "smollm2" / \
    "SmolLM2-135M-Instruct.Q4_1.gguf"

# key -> (type, value, element type for arrays)
METADATA = {
    "test.u8": (V.UINT8, 200, None),
    "test.i8": (V.INT8, -100, None),
    "test.u16": (V.UINT16, 60000, None),
    "test.i16": (V.INT16, -30000, None),
    "test.u32": (V.UINT32, 4000000000, None),
    "test.i32": (V.INT32, -2000000000, None),
    "test.f32": (V.FLOAT32, 3.14159, None),
    "test.bool": (V.BOOL, True, None),
    "test.string": (V.STRING, "h\u00e9llo w\u00f6rld \u2713", None),
    "test.empty_string": (V.STRING, "", None),
    "test.u64": (V.UINT64, 2**40 + 7, None),
    "test.i64": (V.INT64, -(2**40) - 3, None),
    "test.f64": (V.FLOAT64, 2.718281828459045, None),
    "test.arr_u8": (V.ARRAY, [1, 2, 255], V.UINT8),
    "test.arr_i16": (V.ARRAY, [-5, 7], V.INT16),
    "test.arr_i32": (V.ARRAY, [1, -2, 3], V.INT32),
    "test.arr_u64": (V.ARRAY, [0, 2**33], V.UINT64),
    "test.arr_f32": (V.ARRAY, [0.5, -1.25, 1e-3], V.FLOAT32),
    "test.arr_f64": (V.ARRAY, [1e-300, -2.5], V.FLOAT64),
    "test.arr_bool": (V.ARRAY, [True, False, True], V.BOOL),
    "test.arr_str": (V.ARRAY, ["a", "", "\u00fcn\u00ef"], V.STRING),
    "test.arr_nested": (V.ARRAY, [[1, 2], [3]], V.ARRAY),  # inner arrays: gguf-py infers INT32
}


def value_json(vtype, value, sub):
    """The value as the reader should see it: f32 values rounded to f32, arrays item by item."""
    if vtype == V.ARRAY:
        items = [value_json(sub, v, V.INT32) for v in value]  # only nested arrays use the INT32
        return {"type": vtype.name, "elem": sub.name, "items": items}
    if vtype == V.FLOAT32:
        value = float(np.float32(value))
    return {"type": vtype.name, "value": value}


def source(rng):
    """4 rows of 256 with the cases quantizers treat specially: all-zero and constant blocks, wide ranges."""
    x = rng.standard_normal((4, 256)).astype(np.float32)
    x[1] *= 0.01
    x[1, :32] = 0.0
    x[1, 32:64] = 0.5
    x[2] = rng.uniform(-1000, 1000, 256).astype(np.float32)
    x[3, :64] = rng.uniform(-1e-5, 1e-5, 64).astype(np.float32)  # f16 subnormals
    return x


def random_blocks(rng, qtype, rows, d_offsets):
    """Random K-quant blocks with finite, moderate f16 super-block scales at the given byte offsets."""
    block_elems, block_bytes = quants.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, (rows, 256 // block_elems * block_bytes), dtype=np.uint8)
    for b in range(blocks.shape[1] // block_bytes):
        for off in d_offsets:
            d = np.array([rng.uniform(0.001, 0.1)], dtype=np.float16).view(np.uint8)
            blocks[:, b * block_bytes + off:b * block_bytes + off + 2] = d
    return blocks


def write_reference(out):
    rng = np.random.default_rng(20240611)
    src = source(rng)
    src3d = rng.standard_normal((2, 3, 32)).astype(np.float32)
    tensors = [("src", T.F32, src)]
    for qtype in (T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
        tensors.append((qtype.name.lower(), qtype, quants.quantize(src, qtype)))
    tensors.append(("q4_k", T.Q4_K, random_blocks(rng, T.Q4_K, 4, [0, 2])))
    tensors.append(("q6_k", T.Q6_K, random_blocks(rng, T.Q6_K, 4, [208])))
    tensors.append(("q2_k", T.Q2_K, random_blocks(rng, T.Q2_K, 4, [80, 82])))
    tensors.append(("q8_0_3d", T.Q8_0, quants.quantize(src3d, T.Q8_0)))

    w = GGUFWriter(str(out / "reference.gguf.fixture"), "kvf-test")
    w.add_custom_alignment(64)
    for key, (vtype, value, sub) in METADATA.items():
        w.add_key_value(key, value, vtype, sub_type=sub)
    expected = {"metadata": {k: value_json(*v) for k, v in METADATA.items()}, "tensors": {}}
    floats = []
    offset = 0
    for name, qtype, data in tensors:
        if qtype == T.F32 or qtype == T.F16:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=qtype)
        shape = list(reversed(quants.quant_shape_from_byte_shape(data.shape, qtype) if data.dtype == np.uint8
                              else data.shape))
        info = {"type": qtype.name, "ne": shape}
        if qtype != T.Q2_K:  # left for the "cannot convert" test
            values = quants.dequantize(data, qtype).astype(np.float32).ravel()
            info.update(offset=offset, count=int(values.size))
            floats.append(values)
            offset += values.size
        expected["tensors"][name] = info
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    np.concatenate(floats).astype("<f4").tofile(out / "expected.f32")
    (out / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


def write_smollm2_rows(path, out):
    reader = GGUFReader(str(path))
    rows = {}
    for t in reader.tensors:
        if t.name not in ("token_embd.weight", "blk.0.attn_q.weight"):
            continue
        data = np.asarray(t.data)
        picks = {"0": data[:1], "last": data[-1:]}
        rows[t.name] = {"type": t.tensor_type.name, "ne": [int(n) for n in t.shape],
                        **{k: [float(v) for v in quants.dequantize(r, t.tensor_type).ravel()] for k, r in picks.items()}}
    (out / "smollm2_rows.json").write_text(json.dumps(rows) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smollm2", type=Path, default=SMOLLM2)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    write_reference(OUT)
    if args.smollm2.exists():
        write_smollm2_rows(args.smollm2, OUT)
    else:
        print(f"{args.smollm2} not found: smollm2_rows.json left as it is")


if __name__ == "__main__":
    main()
