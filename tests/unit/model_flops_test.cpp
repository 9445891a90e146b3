// prefill_flops against hand-counted numbers: a tiny config, and SmolLM2-135M's shape, whose matmul FLOPs per row
// are 2 x its parameters outside the embeddings (134,515,008 parameters, 28,311,552 of them the tied embeddings).
#include <gtest/gtest.h>

#include "core/error.h"
#include "io/random_model.h"
#include "model/model_flops.h"

namespace kvf {
namespace {

LlamaConfig config_of(const RandomModelSpec& s) {
  LlamaConfig c;
  c.n_layers = s.n_layers;
  c.hidden = s.hidden;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.head_dim = s.hidden / s.n_heads;
  c.ffn = s.ffn;
  c.vocab = s.vocab;
  return c;
}

TEST(ModelFlops, TinyConfigByHand) {
  LlamaConfig c;
  c.n_layers = 2, c.hidden = 8, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 4, c.ffn = 16, c.vocab = 10;
  // Per layer and row: Q 8x8, K 8x4, V 8x4, O 8x8, gate/up/down 8x16 each = 64 + 32 + 32 + 64 + 384 = 576 weights.
  // 3 rows, 2 layers: 2 x 3 x 576 x 2 = 6912; LM head for one row: 2 x 8 x 10 = 160.
  const PrefillFlops f = prefill_flops(c, 3);
  EXPECT_DOUBLE_EQ(f.matmul, 6912.0 + 160.0);
  // Causal pairs of 3 rows: 1 + 2 + 3 = 6; 2 (QK and PV) x 2 x 2 heads x 4 dims x 6 x 2 layers = 384.
  EXPECT_DOUBLE_EQ(f.attention, 384.0);
  EXPECT_DOUBLE_EQ(f.total, f.matmul + f.attention);
  // After 5 cached tokens the rows see 6, 7, 8 keys: 21 pairs; logits of all 3 rows.
  const PrefillFlops g = prefill_flops(c, 3, 5, 3);
  EXPECT_DOUBLE_EQ(g.matmul, 6912.0 + 3 * 160.0);
  EXPECT_DOUBLE_EQ(g.attention, 2.0 * 2 * 2 * 4 * 21 * 2);
  // No rows: nothing to compute.
  EXPECT_DOUBLE_EQ(prefill_flops(c, 0, 7, 0).total, 0.0);
}

TEST(ModelFlops, SmolLM2ShapeIsTwiceItsParametersPerRow) {
  const LlamaConfig c = config_of(real_model_shape("smollm2-135m"));
  ASSERT_EQ(c.n_layers, 30);
  ASSERT_EQ(c.hidden, 576);
  ASSERT_EQ(c.head_dim, 64);
  // 30 layers x (576 x 576 x 2 + 576 x 192 x 2 + 576 x 1536 x 3) = 30 x 3,538,944 = 106,168,320 weights; the
  // embeddings 49,152 x 576 = 28,311,552; together SmolLM2-135M's 134,479,872 (+ 34,560 norm weights).
  const double layer_params = 106168320.0, embedding = 28311552.0;
  const int64_t n = 512;
  const PrefillFlops f = prefill_flops(c, n);
  EXPECT_DOUBLE_EQ(f.matmul, 2.0 * layer_params * n + 2.0 * embedding);
  // Attention: 2 x 2 x 9 heads x 64 x (512 x 513 / 2 pairs) x 30 layers = 9,077,391,360.
  EXPECT_DOUBLE_EQ(f.attention, 9077391360.0);
  // Logits of every row: 2 x N x tokens in all, N the parameters counted once (tied embeddings).
  const PrefillFlops all = prefill_flops(c, n, 0, n);
  EXPECT_DOUBLE_EQ(all.matmul, 2.0 * (layer_params + embedding) * n);
}

TEST(ModelFlops, RefusesNegativeCountsAndEmptyConfigs) {
  const LlamaConfig c = config_of(real_model_shape("smollm2-135m"));
  EXPECT_THROW(prefill_flops(c, -1), Error);
  EXPECT_THROW(prefill_flops(c, 4, -1), Error);
  EXPECT_THROW(prefill_flops(c, 4, 0, 5), Error);
  EXPECT_THROW(prefill_flops(LlamaConfig{}, 4), Error);
}

}  // namespace
}  // namespace kvf
