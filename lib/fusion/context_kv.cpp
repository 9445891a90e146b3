#include "fusion/context_kv.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace kvf {
namespace {

// Copies a segment's layer tensors to the host once (f32, [rows, width]).
std::vector<float> host_rows(Backend& backend, const Tensor& t) {
  KVF_CHECK(t.dtype == DType::F32, "context KV: expected f32 rows, got ", dtype_name(t.dtype));
  std::vector<float> out((size_t)t.numel());
  backend.copy_to_host(t, out.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

ContextKv gather_context_kv(Backend& backend, const FusedPrefill& fused, const RagLayout& layout) {
  // Where each prompt position's row lives: computed rows supersede stored ones (the forward rule).
  struct Source {
    int segment;  // -1: computed, else index into fused.placed
    int64_t row;
  };
  std::unordered_map<int32_t, Source> at;
  for (size_t s = 0; s < fused.placed.size(); ++s)
    for (int64_t r = 0; r < fused.placed[s].rows(); ++r) at[fused.placed[s].positions[(size_t)r]] = {(int)s, r};
  for (int64_t r = 0; r < fused.computed.rows(); ++r) at[fused.computed.positions[(size_t)r]] = {-1, r};

  ContextKv out;
  out.rows = layout.n_context();
  const size_t layers = fused.computed.k.size();
  std::vector<Source> sources;
  for (int64_t i = 0; i < out.rows; ++i) {
    const auto it = at.find(layout.context_positions[(size_t)i]);
    out.present.push_back(it != at.end());
    sources.push_back(it != at.end() ? it->second : Source{0, -1});
  }
  for (size_t l = 0; l < layers; ++l) {
    std::vector<std::vector<float>> placed_k, placed_v;
    for (const KvSegment& seg : fused.placed) {
      placed_k.push_back(host_rows(backend, seg.k[l]));
      placed_v.push_back(host_rows(backend, seg.v[l]));
    }
    const std::vector<float> computed_k = host_rows(backend, fused.computed.k[l]);
    const std::vector<float> computed_v = host_rows(backend, fused.computed.v[l]);
    out.width = fused.computed.k[l].row_elems();
    std::vector<float> k((size_t)(out.rows * out.width)), v(k.size());
    for (int64_t i = 0; i < out.rows; ++i) {
      const Source s = sources[(size_t)i];
      if (s.row < 0) continue;  // absent: zeros
      const std::vector<float>& src_k = s.segment < 0 ? computed_k : placed_k[(size_t)s.segment];
      const std::vector<float>& src_v = s.segment < 0 ? computed_v : placed_v[(size_t)s.segment];
      std::copy_n(src_k.begin() + s.row * out.width, out.width, k.begin() + i * out.width);
      std::copy_n(src_v.begin() + s.row * out.width, out.width, v.begin() + i * out.width);
    }
    out.k.push_back(std::move(k));
    out.v.push_back(std::move(v));
  }
  return out;
}

}  // namespace kvf
