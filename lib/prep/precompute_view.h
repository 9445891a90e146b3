// The view a chunk's stored KV is computed after (DESIGN.md §5): S, the system prompt, at positions
// [0, system_rows), then for similarity mode the chunk's top-n neighbours' independent KV at consecutive
// positions, as many of the most similar as fit before the chunk in the model context: most similar first (FusionRAG
// eq. 10, the default) or most similar last, next to the chunk (NeighborOrder). kvprep prefill computes
// chunks over it; kvprep compress recomputes it to see what attention the chunk's tokens gave during precompute.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/kv_segment.h"
#include "model/decoder.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"

namespace kvf {

class ChunkKvCache;
class KvModeReader;

enum class NeighborOrder { BestFirst, BestLast };
const char* neighbor_order_name(NeighborOrder order);  // "best-first" | "best-last"
NeighborOrder neighbor_order_from_name(const std::string& name);  // throws kvf::Error naming the value
// The order a store's similarity KV was computed with (settings.prefill_similarity; stores before the setting:
// best-first).
NeighborOrder stored_neighbor_order(const Manifest& m);

class PrecomputeView {
 public:
  // S's KV is read from the store (kv/system-*.h5, as stored); similarity mode also opens the independent KV
  // and the neighbour table. Throws kvf::Error naming the store and what is missing.
  PrecomputeView(const std::string& store_dir, const Manifest& manifest, const ChunkTable& chunks,
                 const std::string& mode, int top_n, NeighborOrder order, uint64_t model_fingerprint,
                 const std::vector<int32_t>& s_tokens, int32_t context_length, Backend& backend,
                 uint64_t neighbor_cache_bytes);
  ~PrecomputeView();

  const KvSegment& system() const { return system_kv_; }
  int32_t system_rows() const { return (int32_t)system_kv_.rows(); }
  // The segments after S for the chunk at `row` of the table (none in independent mode), placed at their
  // positions in the chunk's view, so that `chunk_tokens` tokens still fit after them.
  std::vector<KvSegment> neighbours(size_t row, int64_t chunk_tokens) const;
  // Requests that compute the chunks at `rows` of the table after their views (tokens at their positions
  // there); `placed` receives the segments the views point at and must outlive the requests.
  std::vector<ForwardRequest> chunk_requests(const std::vector<size_t>& rows,
                                             std::vector<std::vector<KvSegment>>& placed) const;
  // What the chunk's KV is computed after, beyond S: a hash of its neighbour ids in view order (similarity), 0
  // otherwise.
  uint64_t context_hash(size_t row) const;

 private:
  // Rows of the chunk table whose KV the view holds, in view order: the most similar neighbours that fit.
  std::vector<int64_t> fitting_neighbours(size_t row, int64_t chunk_tokens) const;

  const ChunkTable& chunks_;
  bool similarity_;
  int top_n_ = 0;
  NeighborOrder order_ = NeighborOrder::BestFirst;
  int32_t context_length_;
  KvSegment system_kv_;
  NeighborTable neighbors_;
  std::unique_ptr<KvModeReader> independent_;
  std::unique_ptr<ChunkKvCache> cache_;
};

// The chunk table cut into consecutive groups [begin, end) of about batch_tokens tokens (one chunk at least).
// Chunks are always computed in these groups, whichever of them a run needs: GEMM rounding follows a batch's
// shape, so a chunk's result then depends only on its inputs, and a resumed or incremental run stores exactly
// what one run would have.
std::vector<std::pair<size_t, size_t>> fixed_chunk_batches(const ChunkTable& chunks, int batch_tokens);

}  // namespace kvf
