#!/usr/bin/env python3
"""SentencePiece-style Hugging Face tokenizer.json fixture, tokenized by the Hugging Face tokenizers library.

Builds, from a real vocabulary, the tokenizer.json transformers' slow->fast converter (LlamaConverter) writes for
Llama 2 / Mistral 7B: a BPE model with byte_fallback, <0xNN> byte tokens, <unk>/<s>/</s> as special added tokens,
a TemplateProcessing post-processor adding <s>, and the decoder Replace("▁", " ") + ByteFallback + Fuse +
Strip(" ", 1, 0). Two forms of the same tokenizer:
  legacy     normalizer Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer (older files, legacy=true)
  metaspace  no normalizer, pre-tokenizer Metaspace(replacement "▁", prepend_scheme "first", split false)
             (newer files, legacy=false)
Only the legacy form is committed (tests/fixtures/hf_spm/tokenizer.json); the unit test makes the metaspace form
by swapping the two fields, exactly as this script does (metaspace_form below).

Vocabulary: Llama 2's 32,000 tokens and scores from llama.cpp's fixture tests/fixtures/spm/ggml-vocab-llama-spm.gguf
(sha256 16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69; tests/reference/fetch_spm_fixtures.sh
names its source), read with the gguf package. Merges as transformers' SentencePieceExtractor makes them: for
each piece, every split into two pieces that are both tokens (ordered by the parts' ids), all ordered by the
piece's score, highest first (stable), with the scores of <unk>, <s> and </s> taken as 0 as LlamaConverter does.

Texts: the 46 texts of tests/fixtures/spm/ggml-vocab-llama-spm.gguf.inp (sha256
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0) and EXTRA_TEXTS below. expected.json holds per
form the ids of Tokenizer.encode(text, add_special_tokens=False) and =True, and decode(ids) of the latter with
skip_special_tokens=True.

Run it with the reference venv (scripts/setup-reference.sh; tokenizers 0.23.3, gguf 0.19.0):
  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_hf_spm_fixtures.py
It writes the same bytes on every run; the committed outputs:
  5a99075ff9d71b4a74c7ad6533653df74336d41394c8a96e53b0be47231c8db6  tests/fixtures/hf_spm/tokenizer.json
  f1c08954a49de5237fa8f26c6806e1754d41cfacd2a113f270be63c97c4d1ac9  tests/fixtures/hf_spm/expected.json
"""
import copy
import hashlib
import json
from pathlib import Path

import gguf
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "tests/fixtures/spm/ggml-vocab-llama-spm.gguf"
OUT = REPO / "tests/fixtures/hf_spm"
SEP = "\n__ggml_vocab_test__\n"
SPACE = "\u2581"

EXTRA_TEXTS = [
    "Hello world",
    " leading space",
    "   three leading spaces",
    "trailing spaces   ",
    "multiple   spaces\tand\ttabs",
    "line one\nline two\n\nline four\n",
    "emoji: \U0001F999\U0001F60A \u2764\uFE0F",
    "\u4e2d\u6587\u5206\u8bcd \u6771\u4eac\u90fd \ud55c\uad6d\uc5b4",
    "end of sentence </s> and more",
    "</s>starts with eos",
    "<s>bos written in text<unk>",
    "a\u2581b already a U+2581",
    "",
]


def llama_vocab():
    reader = gguf.GGUFReader(str(SRC))

    def field(name):
        f = reader.fields[name]
        return [f.parts[i] for i in f.data]

    tokens = [bytes(p).decode("utf-8") for p in field("tokenizer.ggml.tokens")]
    scores = [float(p[0]) for p in field("tokenizer.ggml.scores")]
    types = [int(p[0]) for p in field("tokenizer.ggml.token_type")]
    return tokens, scores, types


def spm_merges(tokens, scores):
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for piece, score in zip(tokens, scores):
        local = []
        for i in range(1, len(piece)):
            left, right = piece[:i], piece[i:]
            if left in vocab and right in vocab:
                local.append((left, right, score))
        merges.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
    merges.sort(key=lambda m: m[2], reverse=True)
    return [(m[0], m[1]) for m in merges]


def legacy_tokenizer(tokens, scores):
    scores = [0.0, 0.0, 0.0] + scores[3:]  # LlamaConverter.vocab
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab, spm_merges(tokens, scores), unk_token="<unk>", fuse_unk=True, byte_fallback=True)
    tok = Tokenizer(bpe)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in ("<unk>", "<s>", "</s>")])
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return tok


def metaspace_form(doc):
    doc = copy.deepcopy(doc)
    doc["normalizer"] = None
    doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": False}
    return doc


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def main():
    tokens, scores, types = llama_vocab()
    assert len(tokens) == 32000, len(tokens)
    inp = SRC.with_name(SRC.name + ".inp").read_text(encoding="utf-8")
    texts = inp.split(SEP)[:-1] + EXTRA_TEXTS
    assert len(texts) == 46 + len(EXTRA_TEXTS), len(texts)

    OUT.mkdir(parents=True, exist_ok=True)
    legacy = legacy_tokenizer(tokens, scores)
    legacy_path = OUT / "tokenizer.json"
    legacy.save(str(legacy_path))
    doc = json.loads(legacy_path.read_text(encoding="utf-8"))
    forms = {"legacy": legacy, "metaspace": Tokenizer.from_str(json.dumps(metaspace_form(doc)))}
    legacy_path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    # The committed file must read back as the same tokenizer.
    forms["legacy"] = Tokenizer.from_file(str(legacy_path))

    expected = {"source": {"gguf": SRC.name, "sha256": sha256(SRC.read_bytes())},
                "tokenizer_json_sha256": sha256(legacy_path.read_bytes()), "texts": texts, "forms": {}}
    for name, tok in forms.items():
        rows = []
        for text in texts:
            plain = tok.encode(text, add_special_tokens=False).ids
            special = tok.encode(text, add_special_tokens=True).ids
            rows.append({"ids": plain, "ids_special": special,
                         "decoded": tok.decode(special, skip_special_tokens=True)})
        expected["forms"][name] = rows
        print(f"{name}: {len(texts)} texts, {sum(len(r['ids']) for r in rows)} tokens")
    (OUT / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print("tokenizer.json", legacy_path.stat().st_size, "bytes, sha256", expected["tokenizer_json_sha256"])


if __name__ == "__main__":
    main()
