#include "fusion/context_kv.h"

#include <algorithm>
#include <unordered_map>

namespace kvf {

HostKv gather_context_kv(Backend& backend, const FusedPrefill& fused, const RagLayout& layout) {
  // Every row decoding sees, on the host; the computed rows last, so that they supersede stored rows at the same
  // positions (the forward rule).
  std::vector<HostKv> sources;
  for (const KvSegment& seg : fused.placed) sources.push_back(segment_to_host(seg, backend));
  sources.push_back(segment_to_host(fused.computed, backend));
  std::unordered_map<int32_t, std::pair<size_t, int64_t>> row_at;  // position -> (source, row)
  for (size_t s = 0; s < sources.size(); ++s)
    for (int64_t r = 0; r < sources[s].rows; ++r) row_at[sources[s].positions[(size_t)r]] = {s, r};

  HostKv out;
  out.layers = sources.back().layers;
  out.width = sources.back().width;
  const int64_t row_elems = out.layers * out.width;
  for (int32_t p : layout.context_positions) {
    const auto it = row_at.find(p);
    if (it == row_at.end()) continue;
    const HostKv& src = sources[it->second.first];
    const int64_t at = it->second.second * row_elems;
    out.k.insert(out.k.end(), src.k.begin() + at, src.k.begin() + at + row_elems);
    out.v.insert(out.v.end(), src.v.begin() + at, src.v.begin() + at + row_elems);
    out.positions.push_back(p);
  }
  out.rows = (int64_t)out.positions.size();
  return out;
}

}  // namespace kvf
