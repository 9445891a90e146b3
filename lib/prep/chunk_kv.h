// Chunk KV between its stored form (kv/<mode>-NNNNN.h5 shards: host rows of [stored_layers, kv_heads, head_dim])
// and the engine's form (KvSegment: one backend tensor per model layer).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/kv_segment.h"
#include "store/kv_shard.h"
#include "store/manifest.h"

namespace kvf {

struct HostKv {
  int64_t rows = 0;
  std::vector<float> k, v;         // [rows, stored_layers, kv_heads, head_dim]
  std::vector<int32_t> positions;  // in-chunk positions
};

// Interleaves a segment's per-layer K/V into stored rows (every layer stored: identity layer map).
HostKv segment_to_host(const KvSegment& seg, Backend& backend);
// Per model layer tensors from stored rows, following the layout's layer map; positions as given.
KvSegment host_to_segment(const HostKv& kv, const KvShardLayout& layout, Backend& backend,
                          std::vector<int32_t> positions);

// Shard file name of a mode inside a store: "kv/<mode>-00003.h5".
std::string kv_shard_name(const std::string& mode, size_t number);

// The KV of one mode as the manifest records it: every committed shard of that mode, chunk id -> location.
class KvModeReader {
 public:
  KvModeReader(const std::string& store_dir, const Manifest& manifest, const std::string& mode,
               uint64_t model_fingerprint);
  bool contains(uint64_t chunk_id) const { return where_.count(chunk_id) != 0; }
  size_t chunks() const { return where_.size(); }
  size_t shards() const { return shards_.size(); }
  std::vector<uint64_t> ids() const;  // every chunk id with KV in this mode
  HostKv read(uint64_t chunk_id) const;
  uint64_t context(uint64_t chunk_id) const;  // the stored entry's context hash
  const KvShardLayout& layout() const;  // of the first shard; throws when the mode has none

 private:
  std::vector<std::unique_ptr<KvShardReader>> shards_;
  // chunk id -> (shard, entry); a later shard's entry replaces an earlier one (recomputed KV)
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> where_;
};

}  // namespace kvf
