#include "prep/precompute_view.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "prep/retrieval_stages.h"
#include "store/chunk_kv.h"
#include "store/chunk_kv_cache.h"

namespace kvf {
namespace {

std::vector<int32_t> consecutive(int64_t n, int32_t start) {
  std::vector<int32_t> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + (int32_t)i;
  return v;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> fixed_chunk_batches(const ChunkTable& chunks, int batch_tokens) {
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t begin = 0; begin < chunks.size();) {
    size_t end = begin, tokens = 0;
    while (end < chunks.size() && (end == begin || tokens < (size_t)batch_tokens))
      tokens += chunks.chunks()[end++].tokens.size();
    groups.push_back({begin, end});
    begin = end;
  }
  return groups;
}

const char* neighbor_order_name(NeighborOrder order) {
  return order == NeighborOrder::BestLast ? "best-last" : "best-first";
}

NeighborOrder neighbor_order_from_name(const std::string& name) {
  for (NeighborOrder o : {NeighborOrder::BestFirst, NeighborOrder::BestLast})
    if (name == neighbor_order_name(o)) return o;
  fail("neighbour order '", name, "': expected best-first or best-last");
}

NeighborOrder stored_neighbor_order(const Manifest& m) {
  const auto it = m.settings.find("prefill_similarity");
  if (it == m.settings.end() || !it->contains("neighbor_order")) return NeighborOrder::BestFirst;
  return neighbor_order_from_name(it->at("neighbor_order").get<std::string>());
}

PrecomputeView::PrecomputeView(const std::string& store_dir, const Manifest& m, const ChunkTable& chunks,
                               const std::string& mode, int top_n, NeighborOrder order, uint64_t fingerprint,
                               const std::vector<int32_t>& s_tokens, int32_t context_length, Backend& backend,
                               uint64_t neighbor_cache_bytes)
    : chunks_(chunks), similarity_(mode == "similarity"), order_(order), context_length_(context_length) {
  KVF_CHECK(similarity_ || mode == "independent", "precompute view: mode must be independent or similarity, got '",
            mode, "'");
  // Always S as stored (rounded to the store's dtype), so a first run and a resumed one see the same view.
  const KvModeReader system_store(store_dir, m, kSystemKvMode, fingerprint);
  const uint64_t s_id = chunk_id(s_tokens, fingerprint);
  KVF_CHECK(system_store.contains(s_id), store_dir, ": the system prompt's KV is missing; run `kvprep prefill`");
  system_kv_ = host_to_segment(system_store.read(s_id), system_store.layout(), backend,
                               consecutive((int64_t)s_tokens.size(), 0));
  if (!similarity_) return;
  independent_ = std::make_unique<KvModeReader>(store_dir, m, "independent", fingerprint);
  cache_ = std::make_unique<ChunkKvCache>(*independent_, backend, neighbor_cache_bytes);
  neighbors_ = NeighborTable::read((std::filesystem::path(store_dir) / kNeighborsFile).string());
  KVF_CHECK(neighbors_.size() == chunks.size(), store_dir, ": neighbors.h5 covers ", neighbors_.size(),
            " chunks, the chunk table ", chunks.size(), "; run `kvprep embed`, `index` and `neighbors`");
  top_n_ = std::min(top_n, neighbors_.top_n);
}

PrecomputeView::~PrecomputeView() = default;

std::vector<int64_t> PrecomputeView::fitting_neighbours(size_t row, int64_t chunk_tokens) const {
  std::vector<int64_t> rows;
  int64_t used = system_rows() + chunk_tokens;
  for (int j = 0; j < top_n_; ++j) {
    const int64_t nb_row = neighbors_.rows[row * neighbors_.top_n + j];
    if (nb_row < 0) break;
    used += (int64_t)chunks_.chunks()[(size_t)nb_row].tokens.size();
    if (used > context_length_) break;  // the view must fit
    rows.push_back(nb_row);
  }
  if (order_ == NeighborOrder::BestLast) std::reverse(rows.begin(), rows.end());
  return rows;
}

std::vector<KvSegment> PrecomputeView::neighbours(size_t row, int64_t chunk_tokens) const {
  std::vector<KvSegment> views;
  int32_t at = system_rows();
  for (const int64_t nb_row : fitting_neighbours(row, chunk_tokens)) {
    const std::shared_ptr<const KvSegment> nb = cache_->get(chunks_.chunks()[(size_t)nb_row].id).kv;
    views.push_back(placed_at(*nb, at));  // independent KV: every row, at in-chunk positions 0..rows-1
    at += (int32_t)nb->rows();
  }
  return views;
}

std::vector<ForwardRequest> PrecomputeView::chunk_requests(const std::vector<size_t>& rows,
                                                          std::vector<std::vector<KvSegment>>& placed) const {
  placed.clear();
  std::vector<ForwardRequest> batch;
  for (size_t row : rows) {
    const std::vector<int32_t>& tokens = chunks_.chunks()[row].tokens;
    placed.push_back(neighbours(row, (int64_t)tokens.size()));
    const int32_t at = placed.back().empty() ? system_rows() : placed.back().back().positions.back() + 1;
    ForwardRequest r;
    r.tokens = tokens;
    r.positions = consecutive((int64_t)tokens.size(), at);
    batch.push_back(std::move(r));
  }
  for (size_t i = 0; i < batch.size(); ++i) {  // placed is complete: its segments no longer move
    batch[i].view.push_back(&system_kv_);
    for (const KvSegment& seg : placed[i]) batch[i].view.push_back(&seg);
  }
  return batch;
}

uint64_t PrecomputeView::context_hash(size_t row) const {
  if (!similarity_) return 0;
  std::vector<uint64_t> ids;
  for (int j = 0; j < top_n_ && neighbors_.rows[row * neighbors_.top_n + j] >= 0; ++j)
    ids.push_back(chunks_.chunks()[(size_t)neighbors_.rows[row * neighbors_.top_n + j]].id);
  if (order_ == NeighborOrder::BestLast) std::reverse(ids.begin(), ids.end());
  return XXH3_64bits(ids.data(), ids.size() * sizeof(uint64_t));
}

}  // namespace kvf
