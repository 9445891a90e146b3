#!/usr/bin/env python3
"""Vocabulary-only GGUF files of the papers' three models, for the random-weight models of their shapes.

scripts/setup.sh paper-vocabs runs it (with the reference venv's gguf package, scripts/setup-reference.sh
--convert) on inputs it fetched and checked by sha256, and checks the outputs against configs/paper_vocabs.sha256:

  mistral-7b-v0.2.gguf  Mistral-7B-Instruct-v0.2's SentencePiece vocabulary (32000 tokens) converted from the
                        tokenizer.model.v1 that the PyPI wheel mistral-common 1.13.1 carries, as llama.cpp's
                        converter writes it: tokenizer.ggml.model "llama", pieces, scores, token types (normal 1,
                        unknown 2, control 3, user-defined 4, unused 5, byte 6), unk 0, bos 1, eos 2, add_bos,
                        add_space_prefix. The protobuf (sentencepiece_model.proto: ModelProto.pieces = 1, each
                        SentencePiece piece = 1, score = 2, type = 3) is parsed here, with no sentencepiece package.
  llama-3.1-8b.gguf     llama.cpp's ggml-vocab-llama-bpe.gguf (Llama 3's 128256 tokens, merges, pre-tokenizer
                        llama-bpe) with Llama 3.1's names of three reserved special tokens (128004
                        <|finetune_right_pad_id|>, 128008 <|eom_id|>, 128010 <|python_tag|>) and its instruct
                        model's EOS, <|eot_id|> (128009).
  qwen2.5-7b.gguf       the tokenizer of Qwen2.5-Coder-0.5B-Instruct's GGUF (the qwen0.5b preset: Qwen2.5's 151665
                        tokens, merges, pre-tokenizer qwen2, padded with [PADn] to 151936) padded on to
                        Qwen2.5-7B-Instruct's 152064 rows, as llama.cpp's converter pads to config.json's vocab_size.

None carries a chat template; the random models take the committed tests/fixtures/chat_templates/*.jinja.

  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_paper_vocabs.py --spm tokenizer.model.v1 \\
      --llama-bpe ggml-vocab-llama-bpe.gguf --qwen qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --out DIR
"""
import argparse
import struct
from pathlib import Path

import gguf

LLAMA31_NAMES = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>", 128010: "<|python_tag|>"}
LLAMA31_EOS = 128009
QWEN25_7B_ROWS = 152064


def varint(buf, i):
    value, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    """(field number, wire type, value) of one protobuf message; length-delimited values as bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {wire} not expected")
        yield number, wire, value


def spm_pieces(path):
    pieces, add_dummy_prefix = [], True
    for number, wire, value in fields(Path(path).read_bytes()):
        if number == 1 and wire == 2:
            piece, score, kind = "", 0.0, 1  # type defaults to NORMAL
            for n, w, v in fields(value):
                if n == 1:
                    piece = v.decode("utf-8")
                elif n == 2 and w == 5:
                    score = struct.unpack("<f", v)[0]
                elif n == 3:
                    kind = v
            pieces.append((piece, score, kind))
        elif number == 3 and wire == 2:  # NormalizerSpec
            for n, w, v in fields(value):
                if n == 3 and w == 0:
                    add_dummy_prefix = bool(v)
    return pieces, add_dummy_prefix


def write_mistral(spm, out):
    pieces, add_dummy_prefix = spm_pieces(spm)
    assert len(pieces) == 32000, len(pieces)
    # sentencepiece's types: NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, BYTE 6, UNUSED 5: llama.cpp's numbers.
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list([p for p, _, _ in pieces])
    w.add_token_scores([s for _, s, _ in pieces])
    w.add_token_types([k for _, _, k in pieces])
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(add_dummy_prefix)
    finish(w)


def copy_tokenizer(src, out, edit):
    r = gguf.GGUFReader(str(src))
    values = {}
    for key, f in r.fields.items():
        if key.startswith("tokenizer.") and key != "tokenizer.chat_template":
            values[key] = (f.contents(), f.types)
    edit(values)
    w = gguf.GGUFWriter(str(out), "llama")
    for key, (value, types) in values.items():
        w.add_key_value(key, value, types[0], sub_type=types[1] if len(types) > 1 else None)
    finish(w)


def write_llama31(src, out):
    def edit(v):
        tokens = list(v["tokenizer.ggml.tokens"][0])
        assert len(tokens) == 128256 and tokens[128009] == "<|eot_id|>", len(tokens)
        for i, name in LLAMA31_NAMES.items():
            assert tokens[i].startswith("<|reserved_special_token_"), tokens[i]
            tokens[i] = name
        v["tokenizer.ggml.tokens"] = (tokens, v["tokenizer.ggml.tokens"][1])
        v["tokenizer.ggml.eos_token_id"] = (LLAMA31_EOS, v["tokenizer.ggml.eos_token_id"][1])
    copy_tokenizer(src, out, edit)


def write_qwen25(src, out):
    def edit(v):
        tokens = list(v["tokenizer.ggml.tokens"][0])
        types = [int(t) for t in v["tokenizer.ggml.token_type"][0]]
        assert len(tokens) == 151936 and tokens[151664] == "<|file_sep|>" and tokens[151665] == "[PAD151665]"
        pad_type = types[151665]
        while len(tokens) < QWEN25_7B_ROWS:
            tokens.append(f"[PAD{len(tokens)}]")
            types.append(pad_type)
        v["tokenizer.ggml.tokens"] = (tokens, v["tokenizer.ggml.tokens"][1])
        v["tokenizer.ggml.token_type"] = (types, v["tokenizer.ggml.token_type"][1])
    copy_tokenizer(src, out, edit)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spm", required=True, help="mistral-common's tokenizer.model.v1")
    ap.add_argument("--llama-bpe", required=True, help="llama.cpp's models/ggml-vocab-llama-bpe.gguf")
    ap.add_argument("--qwen", required=True, help="the qwen0.5b preset's GGUF")
    ap.add_argument("--out", required=True, help="folder for the three files")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_mistral(args.spm, out / "mistral-7b-v0.2.gguf")
    write_llama31(args.llama_bpe, out / "llama-3.1-8b.gguf")
    write_qwen25(args.qwen, out / "qwen2.5-7b.gguf")


if __name__ == "__main__":
    main()
