#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the GPU, the reference kvf_attention_bench --backend cuda is compared
with: the dense causal prefill's attention over CONTEXT tokens with the flash backend (bf16, GQA), and, for each
recompute ratio, SDPA over only the recomputed query rows with a boolean mask of what each may read (the flash
backend takes no such mask, so PyTorch picks another). Prints one JSON object per line.

Usage: python3 bench/gpu/sdpa_bench.py [--context 32768] [--heads 28] [--kv-heads 4] [--head-dim 128]
                                       [--ratios 0.05,0.15,0.3] [--runs 5]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import median_ms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--context", type=int, default=32768)
    p.add_argument("--heads", type=int, default=28)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--ratios", default="0.05,0.15,0.3")
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    n, h, hk, d = a.context, a.heads, a.kv_heads, a.head_dim
    q = torch.randn(1, h, n, d, device=dev, dtype=dt)
    k = torch.randn(1, hk, n, d, device=dev, dtype=dt)
    v = torch.randn(1, hk, n, d, device=dev, dtype=dt)
    common = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "context": n, "heads": h,
              "kv_heads": hk, "head_dim": d, "dtype": "bf16"}
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        dense = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), a.runs)
    print(json.dumps({**common, "kernel": "sdpa flash, dense causal", "ratio": 1.0, "median_ms": dense}), flush=True)
    for ratio in [float(r) for r in a.ratios.split(",")]:
        rows = max(1, round(ratio * n))
        pos = torch.randperm(n, device=dev)[:rows].sort().values
        mask = torch.arange(n, device=dev)[None, :] <= pos[:, None]  # row r reads keys at or before pos[r]
        qs = q[:, :, pos, :]
        ms = median_ms(lambda: F.scaled_dot_product_attention(qs, k, v, attn_mask=mask, enable_gqa=True), a.runs)
        print(json.dumps({**common, "kernel": "sdpa, recomputed rows with a mask", "ratio": ratio,
                          "query_rows": rows, "median_ms": ms, "dense_flash_over_this": dense / ms}), flush=True)


if __name__ == "__main__":
    main()
