#!/usr/bin/env python3
"""RoPE scaling fixture from llama.cpp (through llama-cpp-python) on tiny random-weight models.

kvfuse's unit test binary writes the models (tests/unit/rope_scaling_test.cpp, rope_models(): no scaling, linear,
llama3 as a rope_freqs tensor, yarn in the llama and qwen2 pairings; 2 layers, hidden 128, head dim 32, a
placeholder SentencePiece vocabulary of 320 tokens) when KVF_ROPE_MODELS_OUT names a folder; this script has it
write them there, runs llama.cpp on each file and writes tests/fixtures/rope/logits.json: per model the file's
sha256 (the test checks it wrote the same bytes), its rope.scaling.type, 200 token ids evaluated as one batch at
positions 0..199 (past the yarn models' original context of 128), and llama.cpp's full logits at six positions.

Run it with the reference venv (scripts/setup-reference.sh) after building kvf_unit_tests:
  $KVFUSE_HOME/venv-ref/bin/python tests/reference/make_rope_fixtures.py [--build build]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import llama_cpp
from llama_cpp_options import extra_bufts
import numpy as np

REPO = Path(__file__).resolve().parents[2]
MODELS = ["none", "linear", "llama3", "yarn", "yarn_qwen2"]
N_TOKENS = 200
POSITIONS = [0, 63, 64, 128, 150, 199]
# F32 K/V and no flash attention, as the decoder fixtures; yarn parameters are llama-cpp-python's defaults
# (ext_factor -1: on for yarn files; attn_factor 1; beta_fast 32; beta_slow 1; original context from the file).
LLAMA_PARAMS = dict(n_ctx=512, n_batch=512, n_ubatch=512, n_threads=2, n_threads_batch=2, logits_all=True,
                    type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32, flash_attn=False)


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"), help="kvfuse build folder (bin/kvf_unit_tests)")
    ap.add_argument("--out", default=str(REPO / "tests/fixtures/rope/logits.json"))
    args = ap.parse_args()
    tokens = [int(t) for t in np.random.default_rng(59).integers(3, 320, N_TOKENS)]
    fixture = {"llama_cpp_python": llama_cpp.__version__,
               "llama_params": {k: v for k, v in LLAMA_PARAMS.items()}, "models": {}}
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, KVF_ROPE_MODELS_OUT=work)
        subprocess.run([str(Path(args.build) / "bin/kvf_unit_tests"),
                        "--gtest_filter=RopeScaling.WritesTheFixtureModelsWhenAsked"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        for name in MODELS:
            path = Path(work) / f"{name}.gguf"
            with extra_bufts(False):
                llm = llama_cpp.Llama(model_path=str(path), verbose=False, **LLAMA_PARAMS)
            llm.reset()
            llm.eval(tokens)
            logits = np.array(llm.scores[:N_TOKENS], dtype=np.float32)[POSITIONS]
            scaling = llm.metadata.get(f"{llm.metadata['general.architecture']}.rope.scaling.type", "none")
            fixture["models"][name] = {
                "sha256": sha256(path), "scaling": scaling, "token_ids": tokens, "positions": POSITIONS,
                "logits": [round(float(x), 5) for x in logits.reshape(-1)]}
            print(f"{name}: scaling {scaling}, logits {logits.shape}, |max| {np.abs(logits).max():.3f}",
                  file=sys.stderr)
            del llm
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
