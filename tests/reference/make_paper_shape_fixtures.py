#!/usr/bin/env python3
"""llama.cpp's tokens and logits on the random-weight models of the papers' shapes (tests/support/paper_shapes.h).

kvfuse's model test binary writes the three 2-layer models (Mistral-7B-Instruct-v0.2, Llama-3.1-8B-Instruct and
Qwen2.5-7B-Instruct shapes, Q8_0 matrices, their real vocabularies from `scripts/setup.sh paper-vocabs` and chat
templates from tests/fixtures/chat_templates) under $KVFUSE_HOME/models/random and lists their paths; for each,
this script renders a chat prompt with the model's own template in jinja2 (as transformers does; the leading BOS
the template writes is left to the tokenizer, as kvfuse's ChatTemplate does), tokenizes it with llama.cpp
(BOS as the vocabulary says, special tokens parsed), evaluates those ids as one batch with two references:
  f32   llama.cpp over an F32 copy of the file's dequantized weights (make_llama_fixtures.write_f32_copy, written
        to a temporary folder and deleted);
  q8_0  llama.cpp over the file itself;
and writes tests/fixtures/paper_shapes/logits.json: per model the file's sha256, vocabulary size, messages,
rendered text, token ids, six positions, a fixed random subset of 1000 vocabulary ids, and per reference and
position the subset's logits and the top 20 ids with their logits.

Run it with the reference venv (scripts/setup-reference.sh) after building kvf_model_tests and running
`scripts/setup.sh paper-vocabs` (about 10 minutes; the F32 copies take up to 7 GB of disk and memory):
  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_paper_shape_fixtures.py [--build build]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jinja2.sandbox
import llama_cpp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_llama_fixtures import load_llama, write_f32_copy  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MODELS = {  # name -> (template file, bos_token, eos_token) as make_chat_template_fixtures.py gives them
    "mistral-7b-v0.2": ("mistralai-Mistral-7B-Instruct-v0.2.jinja", "<s>", "</s>"),
    "llama-3.1-8b": ("meta-llama-Llama-3.1-8B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "qwen2.5-7b": ("Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>"),
}
MESSAGES = [
    {"role": "system", "content": "You answer questions from the passages the user gives. Be brief and cite them."},
    {"role": "user", "content": "Passage 1: The Eiffel Tower was finished in 1889 for the World's Fair in Paris; "
                                "it is 330 metres tall.\nPassage 2: Gustave Eiffel's company also built the "
                                "internal frame of the Statue of Liberty, shipped to New York in 1885.\n"
                                "Question: Which two structures did Eiffel's company work on, and when?"},
]
N_SUBSET = 1000
TOP = 20


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def render(template_file, bos, eos):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = lambda m: (_ for _ in ()).throw(RuntimeError(m))
    source = (REPO / "tests/fixtures/chat_templates" / template_file).read_text(encoding="utf-8")
    text = env.from_string(source).render(messages=MESSAGES, add_generation_prompt=True, bos_token=bos,
                                          eos_token=eos)
    return text[len(bos):] if bos and text.startswith(bos) else text


def reference(llm, ids, positions, subset):
    llm.reset()
    llm.eval(ids)
    logits = np.array(llm.scores[: len(ids)], dtype=np.float32)[positions]
    top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :TOP]
    return {"top_ids": top_ids.tolist(),
            "top_logits": [[round(float(x), 5) for x in row] for row in np.take_along_axis(logits, top_ids, 1)],
            "subset_logits": [[round(float(x), 5) for x in row] for row in logits[:, subset]]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"), help="kvfuse build folder (bin/kvf_model_tests)")
    ap.add_argument("--out", default=str(REPO / "tests/fixtures/paper_shapes/logits.json"))
    args = ap.parse_args()
    fixture = {"llama_cpp_python": llama_cpp.__version__, "models": {}}
    with tempfile.TemporaryDirectory() as work:
        listing = Path(work) / "paths.json"
        env = dict(os.environ, KVF_PAPER_SHAPES_LIST=str(listing), KVF_FIXTURES=str(REPO / "tests/fixtures"))
        subprocess.run([str(Path(args.build) / "bin/kvf_model_tests"), "--gtest_filter=PaperShapes.ModelsAreWritten"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        paths = json.loads(listing.read_text())
        for seed, (name, (template_file, bos, eos)) in enumerate(MODELS.items()):
            path = Path(paths[name])
            text = render(template_file, bos, eos)
            llm = load_llama(path)
            vocab = llm.n_vocab()
            ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
            n = len(ids)
            positions = sorted({0, 1, n // 4, n // 2, 3 * n // 4, n - 1})
            subset = sorted(int(i) for i in np.random.default_rng(100 + seed).choice(vocab, N_SUBSET, replace=False))
            q8 = reference(llm, ids, positions, subset)
            del llm
            f32_path = Path(work) / f"{name}-f32.gguf"
            write_f32_copy(path, f32_path)
            llm = load_llama(f32_path)
            f32 = reference(llm, ids, positions, subset)
            del llm
            f32_path.unlink()
            fixture["models"][name] = {
                "file": path.name, "sha256": sha256(path), "vocab": vocab, "messages": MESSAGES, "rendered": text,
                "token_ids": ids, "positions": positions, "subset_ids": subset, "refs": {"f32": f32, "q8_0": q8}}
            a, b = np.array(f32["subset_logits"]), np.array(q8["subset_logits"])
            print(f"{name}: {n} tokens, vocab {vocab}; llama.cpp q8_0 vs f32: max |dlogit| {np.abs(a - b).max():.4f}, "
                  f"top-1 agree {sum(x[0] == y[0] for x, y in zip(f32['top_ids'], q8['top_ids']))}/{len(positions)}",
                  file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(fixture, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
