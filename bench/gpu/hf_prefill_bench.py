#!/usr/bin/env python3
"""Full prefill with Hugging Face transformers (PyTorch SDPA attention, bf16 weights and activations) on a
random-weight model of a real shape: the peer kvf_prefill_bench --backend cuda is compared with. One forward pass
over TOKENS random token ids that keeps the KV cache and the last position's logits, as kvfuse's prefill does.
Prints one JSON object per prompt length.

Usage: python3 bench/gpu/hf_prefill_bench.py [--shape qwen2.5-7b] [--tokens 512 2048 8192] [--runs 5]
"""
import argparse
import json
import time

import torch
import transformers
from transformers import Qwen2Config, Qwen2ForCausalLM

from cuda_timing import median_ms

# The shapes of lib/io/random_model.cpp's real_model_shape (vocabulary as the released models ship it).
SHAPES = {
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "qwen2.5-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "qwen2.5-7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="qwen2.5-7b", choices=sorted(SHAPES))
    p.add_argument("--layers", type=int, default=0, help="keep only this many layers (0: all)")
    p.add_argument("--tokens", type=int, nargs="+", default=[512, 2048, 8192])
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    shape = dict(SHAPES[a.shape])
    if a.layers:
        shape["num_hidden_layers"] = a.layers
    config = Qwen2Config(**shape, rope_theta=1e6, max_position_embeddings=32768, rms_norm_eps=1e-6,
                         attn_implementation="sdpa", torch_dtype=torch.bfloat16)
    torch.manual_seed(0)
    t0 = time.time()
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16).eval()
    build_s = time.time() - t0
    for n in a.tokens:
        ids = torch.randint(0, shape["vocab_size"], (1, n), device="cuda")

        def forward():
            with torch.inference_mode():
                return model(input_ids=ids, use_cache=True, logits_to_keep=1)

        ms = median_ms(forward, a.runs)
        print(json.dumps({"peer": "hf transformers sdpa", "transformers": transformers.__version__,
                          "torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "shape": a.shape,
                          "layers": shape["num_hidden_layers"], "dtype": "bf16", "tokens": n, "median_ms": ms,
                          "tokens_per_s": n / ms * 1e3, "model_build_s": round(build_s, 1)}), flush=True)


if __name__ == "__main__":
    main()
