#!/usr/bin/env python3
"""Writes a GGUF decoder (llama or qwen2 architecture) as a Hugging Face folder, the layout transformers reads:
config.json, model-0000N-of-0000M.safetensors with model.safetensors.index.json (weights dequantized to F32 by
gguf-py, llama's Q/K rows put back in Hugging Face order), tokenizer.json (byte-level BPE from the GGUF vocabulary
and merges, with the family's normalizer: NFC for Qwen2), tokenizer_config.json (special tokens, chat template).

It also writes hf_tokens.json beside them: the ids Hugging Face `tokenizers` gives the folder's tokenizer.json for
the texts of tests/fixtures/tokens_<preset>.json, so that the model tests compare kvfuse's reading of the folder
with an independent tokenizer (tests/model/hf_folder_test.cpp).

scripts/setup.sh runs it (`scripts/setup.sh qwen0.5b-hf`) with the packages of scripts/setup-reference.sh --convert:
  python tests/reference/gguf_to_hf.py --preset qwen0.5b --out $KVFUSE_HOME/models/qwen0.5b-hf
The folder is written under OUT.partial and renamed when complete.
"""
import argparse
import json
import shutil
import unicodedata
from pathlib import Path

import gguf
import numpy as np
import tokenizers
from presets import PRESETS
from safetensors.numpy import save_file

REPO = Path(__file__).resolve().parents[2]

# tokenizer.ggml.pre -> the pre_tokenizer of the model family's tokenizer.json.
SPLIT_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")
SPLIT_LLAMA3 = SPLIT_QWEN2.replace(r"|\p{N}|", r"|\p{N}{1,3}|")


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": use_regex}


def split_then_bytes(regex):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
        byte_level(False)]}


PRE_TOKENIZERS = {
    "qwen2": split_then_bytes(SPLIT_QWEN2),
    "llama-bpe": split_then_bytes(SPLIT_LLAMA3),
    "smollm": {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                     byte_level(True)]},
    "gpt2": byte_level(True),
}
CONTROL, USER_DEFINED, UNUSED = 3, 4, 5


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def hf_tensors(reader, arch, n_heads, n_kv_heads):
    """GGUF tensors dequantized to F32, under their Hugging Face names and in Hugging Face row order."""
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_layer = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
                 "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
                 "attn_output.weight": "self_attn.o_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
                 "attn_k.bias": "self_attn.k_proj.bias", "attn_v.bias": "self_attn.v_proj.bias",
                 "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
                 "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}
    out = {}
    for t in reader.tensors:
        if t.name.startswith("blk."):
            _, layer, rest = t.name.split(".", 2)
            name = f"model.layers.{layer}.{per_layer[rest]}"
        else:
            name = names[t.name]
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(tuple(reversed(t.shape)))
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight", "q_proj.bias", "k_proj.bias")):
            heads = n_heads if ".q_proj." in name else n_kv_heads
            # Undo the converter's permutation: GGUF row 2i + j of a head is Hugging Face row j * dim/2 + i.
            w = w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        out[name] = np.ascontiguousarray(w)
    return out


def write_weights(tensors, out, shards):
    names = list(tensors)
    per_shard = -(-len(names) // shards)
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s * per_shard:(s + 1) * per_shard]}
        save_file(part, str(out / file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    total = sum(t.nbytes for t in tensors.values())
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))


def write_config(reader, arch, tensors, out):
    a = arch + "."
    heads = int(field(reader, a + "attention.head_count"))
    config = {
        "architectures": ["LlamaForCausalLM" if arch == "llama" else "Qwen2ForCausalLM"],
        "model_type": arch,
        "hidden_size": int(field(reader, a + "embedding_length")),
        "intermediate_size": int(field(reader, a + "feed_forward_length")),
        "num_hidden_layers": int(field(reader, a + "block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(field(reader, a + "attention.head_count_kv", heads)),
        "max_position_embeddings": int(field(reader, a + "context_length")),
        "rms_norm_eps": float(field(reader, a + "attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field(reader, a + "rope.freq_base", 10000.0)),
        "rope_scaling": None,
        "vocab_size": tensors["model.embed_tokens.weight"].shape[0],
        "tie_word_embeddings": "lm_head.weight" not in tensors,
        "torch_dtype": "float32",
    }
    for key in ("bos", "eos"):
        token_id = field(reader, f"tokenizer.ggml.{key}_token_id")
        if token_id is not None:
            config[f"{key}_token_id"] = int(token_id)
    (out / "config.json").write_text(json.dumps(config, indent=2))


def write_tokenizer(reader, out):
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    pre = field(reader, "tokenizer.ggml.pre")
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": types[i] == CONTROL} for i, t in enumerate(tokens) if types[i] in (CONTROL, USER_DEFINED)]
    vocab = {t: i for i, t in enumerate(tokens) if types[i] not in (CONTROL, USER_DEFINED, UNUSED)}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"} if pre == "qwen2" else None,  # as Qwen2's published tokenizer.json
        "pre_tokenizer": PRE_TOKENIZERS[pre], "post_processor": byte_level(False), "decoder": byte_level(False),
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": pre == "llama-bpe", "vocab": vocab,
                  "merges": [m.split(" ") for m in field(reader, "tokenizer.ggml.merges")]},
    }
    (out / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))

    def text(key):
        token_id = field(reader, f"tokenizer.ggml.{key}_token_id")
        return None if token_id is None else tokens[int(token_id)]

    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": text("bos"), "eos_token": text("eos"),
              "pad_token": text("padding"), "unk_token": text("unknown"),
              "clean_up_tokenization_spaces": pre not in ("qwen2", "smollm"),
              "chat_template": field(reader, "tokenizer.chat_template")}
    add_bos = field(reader, "tokenizer.ggml.add_bos_token")
    if add_bos is not None:
        config["add_bos_token"] = bool(add_bos)
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))


def write_token_check(preset, out):
    """The ids `tokenizers` gives the folder's tokenizer.json for the fixture texts that are UTF-8, and whether
    NFC leaves a text as it is (where it does not, a normalizing tokenizer.json differs from the GGUF's ids)."""
    fixture = json.loads((REPO / "tests" / "fixtures" / f"tokens_{preset}.json").read_text())
    tok = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    cases = [{"text": c["text"], "ids": tok.encode(c["text"], add_special_tokens=False).ids,
              "nfc_stable": unicodedata.normalize("NFC", c["text"]) == c["text"]}
             for c in fixture["cases"] if "text" in c]
    (out / "hf_tokens.json").write_text(json.dumps(
        {"reference": f"tokenizers {tokenizers.__version__}", "cases": cases}, ensure_ascii=False, indent=1))
    return len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--shards", type=int, default=2, help="safetensors files the weights are split over")
    args = ap.parse_args()

    reader = gguf.GGUFReader(str(PRESETS[args.preset].path))
    arch = field(reader, "general.architecture")
    if arch not in ("llama", "qwen2"):
        raise SystemExit(f"gguf_to_hf: architecture {arch!r} is not llama or qwen2")
    partial = args.out.with_name(args.out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    heads = int(field(reader, arch + ".attention.head_count"))
    tensors = hf_tensors(reader, arch, heads, int(field(reader, arch + ".attention.head_count_kv", heads)))
    write_weights(tensors, partial, args.shards)
    write_config(reader, arch, tensors, partial)
    write_tokenizer(reader, partial)
    n = write_token_check(args.preset, partial)
    shutil.rmtree(args.out, ignore_errors=True)
    partial.rename(args.out)
    print(f"gguf_to_hf: {args.out}: {len(tensors)} tensors in {args.shards} shards, {n} tokenizer check texts")


if __name__ == "__main__":
    main()
