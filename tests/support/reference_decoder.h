// A deliberately naive Llama forward pass in double precision, written from the model definition (RMSNorm,
// RoPE, GQA causal attention, SwiGLU, the LCKV paper's layer-condensed attention) and sharing nothing with lib/model but the GGUF reader: the independent
// reference the engine's tiny-model tests compare against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf::test {

// One KV view segment (DESIGN.md §3): per layer, rows x kv_heads x head_dim values, K without RoPE.
struct ReferenceView {
  std::vector<int32_t> positions;         // one per row
  std::vector<std::vector<double>> k, v;  // [layer][row * kv_heads * head_dim + head * head_dim + d]
};

// Everything a reference forward computed, layer by layer.
struct ReferenceTrace {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t n_view_rows = 0;  // all view rows, segment after segment (superseded ones included)
  int64_t n_rows = 0;       // computed tokens
  int64_t n_keys() const { return n_view_rows + n_rows; }
  // Per layer, the computed tokens' K (pre-RoPE) and V, laid out as ReferenceView's.
  std::vector<std::vector<double>> k, v;
  // Per layer, softmax weights [head][query row][key]; keys = the view rows in segment order, then the computed
  // tokens. A key the query may not read (superseded, or at a later position) has weight exactly 0.
  std::vector<std::vector<double>> probs;
  std::vector<std::vector<double>> logits;  // [computed row][vocab], after the last layer

  double prob(int layer, int head, int64_t row, int64_t key) const {
    return probs[layer][((size_t)head * n_rows + row) * n_keys() + key];
  }
  // The computed tokens as a view segment (their own positions), e.g. a system prefix for a later call.
  ReferenceView as_view(const std::vector<int32_t>& positions) const;
};

// DESIGN.md §3 read literally, per layer: a computed token at position p reads the view rows and computed tokens
// whose position is <= p (the bound applies to view rows too, else a link token or a recomputed context token
// would read later chunks); a view row is superseded (never read) when a computed token or a row of a later view
// segment has its position. Throws std::runtime_error on a malformed view.
// A condensed-KV (LCKV) model follows its rule (model/condensed_kv.h, written again here from the paper): `passes`
// over the condensed span, 0 taking the model's own count; any count is capped at one per token (exact).
ReferenceTrace reference_forward(const std::string& gguf_path, const std::vector<ReferenceView>& view,
                                 const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                 int passes = 0);

// Logits [n][vocab] of a plain causal prefill of `tokens` at positions 0..n-1.
std::vector<std::vector<double>> reference_logits(const std::string& gguf_path, const std::vector<int32_t>& tokens);

}  // namespace kvf::test
