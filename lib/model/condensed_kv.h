// Layer-condensed KV (LCKV, papers/lckv-layer-condensed.txt): layer i attends to the keys and values of layer
// kv_layer[i], and only the layers that read themselves compute K and V. A layer that reads a later layer (the
// condensed span) cannot have its own token's entry when it runs, so its diagonal is masked: a token reads the
// later layer's KV of the tokens before it only, and a token with none gets a zero attention output. A prompt's
// tokens are then encoded by running the span several times, each pass reading the KV the previous pass wrote
// (zeros at first); as many passes as tokens equals encoding one token at a time (the paper's Theorem 1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

struct CondensedKv {
  std::vector<int32_t> kv_layer;    // one entry per layer; empty: a plain model (every layer reads itself)
  int prompt_iterations = 9;        // passes over the span per forward call (the release's m + b); 0: one per token
  bool mask_every_diagonal = false;  // the release's force_nodiag: no layer reads its own token

  bool active() const { return !kv_layer.empty(); }
  int source(int layer) const { return kv_layer.empty() ? layer : kv_layer[(size_t)layer]; }
  bool masks_diagonal(int layer) const { return mask_every_diagonal || source(layer) > layer; }
  // The layers run repeatedly: from the first layer that reads a later one to the highest layer so read;
  // first > last when no layer reads a later one (one pass is exact).
  int span_first() const;
  int span_last() const;
};

// Checks the rule against a model of n_layers layers: each entry a layer, and each layer read computes its own KV
// (kv_layer[kv_layer[i]] == kv_layer[i]). Throws kvf::Error starting with `where`.
void check_condensed_kv(const CondensedKv& rule, int n_layers, const std::string& where);

// The passes a forward call over `tokens` computed tokens makes over the span.
int condensed_passes(const CondensedKv& rule, int64_t tokens, int requested);

}  // namespace kvf
