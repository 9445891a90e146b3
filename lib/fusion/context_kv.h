// The K and V every context token had when a fused prefill finished: its recomputed row where the method
// recomputed it, its stored row otherwise (the rows decoding attends to). Eval compares these across methods
// (FusionRAG eq. 7: per-layer KV deviation from full attention).
#pragma once
#include <cstdint>
#include <vector>

#include "fusion/fused_prefill.h"

namespace kvf {

struct ContextKv {
  int64_t rows = 0, width = 0;            // context tokens; n_kv_heads * head_dim
  std::vector<std::vector<float>> k, v;   // per layer: [rows, width] row-major, K before RoPE
  std::vector<bool> present;              // per token: has a row (a compressed chunk keeps only some; others 0)
};

// Tokens with neither a stored nor a computed row (dropped by anchor compression) are marked absent.
ContextKv gather_context_kv(Backend& backend, const FusedPrefill& fused, const RagLayout& layout);

}  // namespace kvf
