// Argument checks every backend makes the same way, so a bad call reads the same whichever backend gets it.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace kvf {

struct MatmulDims {
  int64_t n = 0, k = 0, m = 0;  // y[n, m] = x[n, k] . w[m, k]^T
};
// Throws kvf::Error naming the three shapes when they do not fit.
MatmulDims matmul_dims(const Tensor& x, const Tensor& w, const Tensor& y);

struct AttentionDims {
  int64_t n = 0, m = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;  // query rows, keys, heads, dims
  bool probing = false;                                              // probe_rows given (and probe_colsum sized)
};
// Throws kvf::Error naming the shapes, the head counts or the position counts when they do not fit.
AttentionDims attention_dims(const AttentionArgs& args);

struct BlockAttentionDims {
  int64_t n = 0, m = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;  // query rows, keys of all blocks, heads, dims
};
// The same checks for attention_blocks, each block's shapes and counts included (naming the block).
BlockAttentionDims block_attention_dims(const BlockAttentionArgs& args);

}  // namespace kvf
