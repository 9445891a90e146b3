#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora under tests/fuzz/seeds/<target>/ (committed; rerun to regenerate).

Readers of whole files get small valid files of each kind; the HDF5 targets, whose input is a list of edits to a
valid file (hdf5_edits.h), get the empty input (no edit) and a few fixed pseudo-random edit lists.
"""
import json
import pathlib
import random
import shutil
import struct

HERE = pathlib.Path(__file__).resolve().parent
SEEDS = HERE / "seeds"
PIPELINES = HERE.parent.parent / "pipelines"


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, value):
    """(type id, payload) of one metadata value; kind: u32, i32, f32, bool, str, u64, f64, or (array, kind)."""
    scalars = {"u8": (0, "<B"), "i32": (5, "<i"), "u32": (4, "<I"), "f32": (6, "<f"), "bool": (7, "<?"),
               "u64": (10, "<Q"), "i64": (11, "<q"), "f64": (12, "<d")}
    if kind == "str":
        return 8, gguf_string(value)
    if isinstance(kind, tuple):
        elem_type, _ = gguf_value(kind[1], value[0])
        body = b"".join(gguf_value(kind[1], v)[1] for v in value)
        return 9, struct.pack("<IQ", elem_type, len(value)) + body
    type_id, fmt = scalars[kind]
    return type_id, struct.pack(fmt, value)


def gguf(metadata, tensors, version=3):
    """A GGUF file: metadata [(key, kind, value)], tensors [(name, ggml type, ne, data bytes)], alignment 32."""
    out = struct.pack("<IIQQ", 0x46554747, version, len(tensors), len(metadata))
    for key, kind, value in metadata:
        type_id, payload = gguf_value(kind, value)
        out += gguf_string(key) + struct.pack("<I", type_id) + payload
    offset = 0
    for name, ggml_type, ne, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ggml_type, offset)
        offset += (len(data) + 31) // 32 * 32
    out += b"\0" * (-len(out) % 32)
    for _, _, _, data in tensors:
        out += data + b"\0" * (-len(data) % 32)
    return out


def gguf_seeds():
    f32 = struct.pack("<8f", *[0.5 * i for i in range(8)])
    q8_0 = struct.pack("<e", 0.25) + bytes(range(32))  # one Q8_0 block: f16 scale, 32 int8
    yield "tensors-gguf.seed", gguf([("general.architecture", "str", "test"), ("general.alignment", "u32", 32),
                                ("test.values", ("array", "f32"), [1.0, 2.5]),
                                ("test.nested", ("array", ("array", "i32")), [[1, 2], [3]])],
                               [("a", 0, [4, 2], f32), ("b", 8, [32, 1], q8_0)])
    tokens = ["a", "b", "ab", "<s>", "</s>"]
    arch = "llama"
    yield "llama-gguf.seed", gguf([
        ("general.architecture", "str", arch), (f"{arch}.block_count", "u32", 1),
        (f"{arch}.embedding_length", "u32", 8), (f"{arch}.attention.head_count", "u32", 2),
        (f"{arch}.attention.head_count_kv", "u32", 1), (f"{arch}.feed_forward_length", "u32", 16),
        (f"{arch}.context_length", "u32", 64), (f"{arch}.rope.freq_base", "f32", 10000.0),
        (f"{arch}.attention.layer_norm_rms_epsilon", "f32", 1e-5),
        ("tokenizer.ggml.model", "str", "gpt2"), ("tokenizer.ggml.tokens", ("array", "str"), tokens),
        ("tokenizer.ggml.token_type", ("array", "i32"), [1, 1, 1, 3, 3]),
        ("tokenizer.ggml.merges", ("array", "str"), ["a b"]), ("tokenizer.ggml.bos_token_id", "u32", 3),
        ("tokenizer.ggml.eos_token_id", "u32", 4), ("tokenizer.ggml.add_bos_token", "bool", False),
        ("tokenizer.chat_template", "str", "{% for m in messages %}{{ m['content'] }}{% endfor %}")],
        [("token_embd.weight", 0, [8, 5], struct.pack("<40f", *[0.01 * i for i in range(40)]))], version=2)


def safetensors(tensors, metadata):
    header, data = {"__metadata__": metadata}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    yield "two-safetensors.seed", safetensors([("w", "F32", [2, 2], struct.pack("<4f", 1, -2, 3.5, 0)),
                                          ("h", "F16", [3], struct.pack("<3e", 0.5, 1, -1)),
                                          ("b", "BF16", [1], b"\x80\x3f")], {"format": "pt"})
    yield "empty-safetensors.seed", safetensors([("z", "I64", [0], b"")], {})


def manifest_seeds():
    base = {"magic": "kvfuse-store", "format_version": 1, "model_fingerprint": "1f0c6f0e5a2b9d47",
            "tokenizer_hash": "8c3e1d5a0b7f2e64", "model_name": "m.gguf",
            "settings": {"chunking": {"chunk_tokens": 256, "max_tokens": 320, "rendering_version": 2}},
            "stages": [{"stage": "chunk", "completed_at": "2025-01-31T12:00:00Z", "inputs_hash": "5d41402abc4b2a76",
                        "counts": {"documents": 3, "chunks": 4}}],
            "files": [{"path": "chunks.h5", "bytes": 2712, "xxh3": "0a1b2c3d4e5f6071"}]}
    yield "chunked.json", json.dumps(base, indent=1).encode()
    base["files"].append({"path": "kv/independent-00000.h5", "bytes": 9, "xxh3": "0000000000000001",
                          "previous": {"bytes": 8, "xxh3": "00000000000000ff"}})
    yield "replacing.json", json.dumps(base).encode()


def corpus_seeds():
    yield "docs.jsonl", (
        '{"id": "a", "title": "Saturn", "text": "Saturn has rings.\\n\\nIt is far."}\n'
        '{"id": 7, "title": null, "text": "Tea comes from China. \\u00e9t\\u00e9"}\n\n'
        '{"id": "c", "text": "   "}\n').encode()
    yield "duplicate.jsonl", b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y", "extra": [1]}\n'


def pipeline_seeds():
    for p in sorted(PIPELINES.glob("*.yaml")):
        yield p.name, p.read_bytes()


def hdf5_edit_seeds(seed):
    rng = random.Random(seed)
    yield "no-edit", b""
    for n in (4, 12, 32, 64):
        yield f"edits-{n}", bytes(rng.randrange(256) for _ in range(n))


def main():
    targets = {"gguf": gguf_seeds(), "safetensors": safetensors_seeds(), "manifest": manifest_seeds(),
               "corpus": corpus_seeds(), "pipeline": pipeline_seeds()}
    for i, name in enumerate(["chunk_table", "embedding_table", "neighbor_table", "kv_shard"]):
        targets[name] = hdf5_edit_seeds(i)
    shutil.rmtree(SEEDS, ignore_errors=True)
    for target, seeds in targets.items():
        (SEEDS / target).mkdir(parents=True)
        for name, data in seeds:
            (SEEDS / target / name).write_bytes(data)


if __name__ == "__main__":
    main()
