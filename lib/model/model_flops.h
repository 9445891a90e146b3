// The model FLOPs of a decoder's prefill, counted from its config (the arithmetic a forward pass must do, not what
// a kernel happens to execute): benchmarks divide them by a measured time for achieved TFLOP/s.
#pragma once
#include <cstdint>

#include "model/llama_config.h"

namespace kvf {

struct PrefillFlops {
  double matmul = 0;     // 2 x rows x in x out for Q, K, V, O, gate, up, down in every layer, plus the LM head
  double attention = 0;  // causal QK^T and PV: 2 x 2 x heads x head_dim per query-key pair, every layer
  double total = 0;      // matmul + attention
};

// A prefill of `tokens` rows after `past` cached tokens, computing the logits of `logit_rows` rows (a plain
// prefill: the last one). Row i (0-based) sees past + i + 1 keys: tokens x past + tokens (tokens + 1) / 2 pairs.
// Norms, RoPE, softmax, activations and biases are left out (a few FLOPs per element, not per weight); every layer
// is counted with its own K and V projection (a layer-condensed model's shared ones are counted as if computed).
// Throws kvf::Error for negative counts or a config without layers or heads.
PrefillFlops prefill_flops(const LlamaConfig& config, int64_t tokens, int64_t past = 0, int64_t logit_rows = 1);

}  // namespace kvf
