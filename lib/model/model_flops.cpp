#include "model/model_flops.h"

#include "core/error.h"

namespace kvf {

PrefillFlops prefill_flops(const LlamaConfig& c, int64_t tokens, int64_t past, int64_t logit_rows) {
  KVF_CHECK(tokens >= 0 && past >= 0 && logit_rows >= 0 && logit_rows <= tokens, "prefill_flops: ", tokens,
            " tokens after ", past, " with ", logit_rows, " logit rows");
  KVF_CHECK(c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 && c.head_dim > 0 && c.hidden > 0,
            "prefill_flops: a config without layers, heads or hidden size");
  const double hidden = c.hidden, q = (double)c.n_heads * c.head_dim, kv = (double)c.n_kv_heads * c.head_dim;
  // Weights per layer: Q and O (hidden x q each), K and V (hidden x kv each), gate, up and down (hidden x ffn each).
  const double layer_weights = 2.0 * hidden * q + 2.0 * hidden * kv + 3.0 * hidden * c.ffn;
  PrefillFlops f;
  f.matmul = 2.0 * (double)tokens * layer_weights * c.n_layers + 2.0 * (double)logit_rows * hidden * c.vocab;
  const double pairs = (double)tokens * (double)past + (double)tokens * (double)(tokens + 1) / 2.0;
  f.attention = 2.0 * 2.0 * q * pairs * c.n_layers;
  f.total = f.matmul + f.attention;
  return f;
}

}  // namespace kvf
