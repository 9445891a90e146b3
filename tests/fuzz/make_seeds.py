#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora under tests/fuzz/seeds/<target>/ (committed; rerun to regenerate).

Readers of whole files get small valid files of each kind; the HDF5 targets, whose input is a list of edits to a
valid file (hdf5_edits.h), get the empty input (no edit) and a few fixed pseudo-random edit lists.
  tests/fuzz/make_seeds.py                 # every target (the folder is rewritten)
  tests/fuzz/make_seeds.py TARGET...       # only these targets' folders
"""
import gzip
import json
import pathlib
import random
import shutil
import struct
import sys

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
    # Regression: a store path the file system refuses (a name over 255 bytes) is a kvf::Error, not an escape.
    yield "store-name-too-long.yaml", f"store: stores/{'G' * 300}\ncorpus: stores/demo/foldoc.jsonl\n".encode()


def hf_config_seeds():
    base = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 97, "max_position_embeddings": 512,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True, "bos_token_id": 1,
            "eos_token_id": 2}
    yield "llama.json", json.dumps(base, indent=2).encode()
    yield "qwen2.json", json.dumps({**base, "model_type": "qwen2", "rope_theta": 1000000.0, "sliding_window": 4096,
                                    "tie_word_embeddings": False, "eos_token_id": [2, 3], "bos_token_id": None,
                                    "head_dim": 32}).encode()
    yield "mistral.json", json.dumps({**base, "model_type": "mistral", "sliding_window": 256,
                                      "rope_scaling": {"type": "linear", "factor": 2.0}}).encode()
    yield "llama3.json", json.dumps({**base, "rope_theta": 500000.0, "eos_token_id": [2, 5, 7],
                                     "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                      "high_freq_factor": 4.0,
                                                      "original_max_position_embeddings": 8192}}).encode()
    yield "lckv.json", json.dumps({**base, "model_type": "lckv-llama", "layer_types": "0_1", "forward_passes": 3,
                                   "backward_passes": 1, "use_sequential": False, "force_nodiag": True}).encode()


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (what text/bpe_tokenizer.h's byte_level_char gives)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# The fuzz fixture's folder (hf_fixture.h): a vocabulary of 97, one token per byte 0..96.
HF_VOCAB = 97


def hf_tokenizer(merges=(), added=(), pre=None, normalizer=None, vocab_extra=None):
    char = bytes_to_unicode()
    vocab = {char[i]: i for i in range(HF_VOCAB)}
    for text, i in (vocab_extra or {}).items():
        vocab = {t: j for t, j in vocab.items() if j != i}
        vocab[text] = i
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    return json.dumps({"version": "1.0", "added_tokens": list(added), "normalizer": normalizer,
                       "pre_tokenizer": pre or byte_level, "decoder": byte_level,
                       "model": {"type": "BPE", "vocab": vocab, "merges": list(merges)}}).encode()


def hf_tokenizer_seeds():
    yield "bytes.json", hf_tokenizer()
    # Merges need their result in the vocabulary: "AB" at id 95, "ABC" at id 96.
    extra = {"AB": 95, "ABC": 96}
    yield "merges.json", hf_tokenizer(merges=["A B", ["AB", "C"]], vocab_extra=extra)
    yield "added.json", hf_tokenizer(added=[{"id": 0, "content": bytes_to_unicode()[0], "special": True},
                                            {"id": 96, "content": "<|im_end|>", "special": True}],
                                     normalizer={"type": "NFC"}, vocab_extra={"<|im_end|>": 96})
    byte_level_no_regex = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    qwen2 = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "behavior": "Isolated", "invert": False, "pattern": {"Regex": (
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
            r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")}},
        byte_level_no_regex]}
    yield "qwen2-split.json", hf_tokenizer(pre=qwen2)
    digits = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                    {"type": "ByteLevel", "add_prefix_space": False,
                                                     "use_regex": True}]}
    yield "digits.json", hf_tokenizer(pre=digits)


def hf_tokenizer_config_seeds():
    chatml = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
              "{{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}{% endif %}"
              "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
              "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
    llama3 = ("{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>"
              "\n\n' + m['content'] | trim + '<|eot_id|>' }}{% endfor %}")
    yield "chatml.json", json.dumps({"chat_template": chatml, "bos_token": "!", "eos_token": {"content": "\""},
                                     "pad_token": None, "unk_token": "#", "add_bos_token": True,
                                     "add_eos_token": False, "clean_up_tokenization_spaces": False}).encode()
    yield "named-templates.json", json.dumps({"chat_template": [{"name": "tool_use", "template": "x"},
                                                                {"name": "default", "template": llama3}],
                                              "eos_token": "$"}).encode()
    yield "empty.json", b"{}"


# The fixture's index as tests/support/hf_folder_writer.cpp writes it for the tiny model (two shards).
HF_INDEX_SHARD1 = ["model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
    "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
    "model.layers.0.post_attention_layernorm.weight", "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.v_proj.weight", "model.norm.weight"]
HF_INDEX_SHARD2 = ["model.layers.0.mlp.down_proj.weight", "model.layers.1.input_layernorm.weight",
    "model.layers.1.mlp.down_proj.weight", "model.layers.1.mlp.gate_proj.weight",
    "model.layers.1.mlp.up_proj.weight", "model.layers.1.post_attention_layernorm.weight",
    "model.layers.1.self_attn.k_proj.weight", "model.layers.1.self_attn.o_proj.weight",
    "model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.v_proj.weight"]


def hf_index_seeds():
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {name: files[0] for name in HF_INDEX_SHARD1}
    weight_map.update({name: files[1] for name in HF_INDEX_SHARD2})
    yield "index.json", json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=2).encode()
    one = dict(weight_map)
    for name in HF_INDEX_SHARD2[:2]:
        one[name] = "./" + files[1]
    yield "dot-part.json", json.dumps({"weight_map": one}).encode()


QUESTIONS = (
    '{"id": "q1", "question": "What has rings?", "answers": ["Saturn"]}\n'
    '{"id": 2, "question": "Where does tea come from?", "chunk_ids": ["3fa2b4c5d6e7f801", "0000000000000001"]}\n'
    '\n'
    '{"question": "Which is far?", "answers": ["Saturn", "Neptune"], "contexts": [{"title": "Saturn", '
    '"text": "Saturn has rings."}, {"text": "It is far."}], "gold_ctx_idx": [0, 1]}\n')


def query_file_seeds():
    yield "questions.jsonl", QUESTIONS.encode()
    yield "one.jsonl", b'{"question": "Why?"}'
    packed = gzip.compress(QUESTIONS.encode(), mtime=0)
    yield "questions.jsonl.gz", packed
    yield "cut.jsonl.gz", packed[:len(packed) // 2]


def query_file_gz_seeds():
    yield "questions.jsonl", QUESTIONS.encode()
    yield "one.jsonl", b'{"question": "Why?", "answers": []}\n'


def hdf5_edit_seeds(seed):
    rng = random.Random(seed)
    yield "no-edit", b""
    for n in (4, 12, 32, 64):
        yield f"edits-{n}", bytes(rng.randrange(256) for _ in range(n))


def main():
    targets = {"gguf": gguf_seeds(), "safetensors": safetensors_seeds(), "manifest": manifest_seeds(),
               "corpus": corpus_seeds(), "pipeline": pipeline_seeds(), "hf_config": hf_config_seeds(),
               "hf_tokenizer": hf_tokenizer_seeds(), "hf_tokenizer_config": hf_tokenizer_config_seeds(),
               "hf_index": hf_index_seeds(), "query_file": query_file_seeds(),
               "query_file_gz": query_file_gz_seeds()}
    for i, name in enumerate(["chunk_table", "embedding_table", "neighbor_table", "kv_shard"]):
        targets[name] = hdf5_edit_seeds(i)
    # Targets named on the command line: only their folders are rewritten.
    chosen = sys.argv[1:] or list(targets)
    unknown = [t for t in chosen if t not in targets]
    if unknown:
        sys.exit(f"make_seeds.py: no target {', '.join(unknown)} (targets: {', '.join(targets)})")
    if not sys.argv[1:]:
        shutil.rmtree(SEEDS, ignore_errors=True)
    for target in chosen:
        seeds = targets[target]
        shutil.rmtree(SEEDS / target, ignore_errors=True)
        (SEEDS / target).mkdir(parents=True)
        for name, data in seeds:
            (SEEDS / target / name).write_bytes(data)


if __name__ == "__main__":
    main()
