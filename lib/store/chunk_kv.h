// Chunk KV between its stored form (kv/<mode>-NNNNN.h5 shards: host rows of [stored_layers, kv_heads, head_dim])
// and the engine's form (KvSegment: one backend tensor per model layer).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/kv_segment.h"
#include "store/kv_shard.h"
#include "store/manifest.h"

namespace kvf {

// KV rows in host memory: a shard's stored form (in-chunk positions) or a snapshot of KV as a prompt saw it
// (prompt positions, fusion/context_kv.h).
struct HostKv {
  int64_t rows = 0;
  int layers = 0;                  // layers per row: the stored layers, or every model layer of a segment
  int64_t width = 0;               // kv_heads * head_dim
  std::vector<float> k, v;         // [rows, layers, width]
  std::vector<int32_t> positions;  // one per row
};

// Interleaves a segment's per-layer K/V into stored rows (every layer stored: identity layer map).
HostKv segment_to_host(const KvSegment& seg, Backend& backend);
// Per model layer tensors from stored rows, following the layout's layer map; positions as given.
KvSegment host_to_segment(const HostKv& kv, const KvShardLayout& layout, Backend& backend,
                          std::vector<int32_t> positions);

// The KV source map a stored layer map stands for (Decoder::with_kv_sources): each layer reads the first layer
// that maps to the same stored layer.
std::vector<int32_t> sources_of_layer_map(const std::vector<int32_t>& layer_map);
// The KV source map a layout stands for, for a model with its own map `model_sources` (a condensed-KV model,
// Decoder::kv_sources(); empty for a plain model, whose layers read the first of their stored layer). A condensed
// model's store must keep exactly its own KV layers; throws naming the mode otherwise.
std::vector<int32_t> kv_sources_of_layout(const KvShardLayout& layout, const std::vector<int32_t>& model_sources);
// The layer map of a store keeping only the layers that `sources` reads (empty: every layer, the identity), in
// model order: each layer maps to its source's stored index.
std::vector<int32_t> layer_map_of_sources(const std::vector<int32_t>& sources, int n_layers);
// The source layers of a segment (those a store keeps), sharing its tensors; every layer when `sources` is empty.
KvSegment source_layers_of(const KvSegment& seg, const std::vector<int32_t>& sources);

// The mode holding the KV of the system prompt S that every prompt starts with (one chunk per store).
inline constexpr const char* kSystemKvMode = "system";

// Shard file name of a mode inside a store: "kv/<mode>-00003.h5".
std::string kv_shard_name(const std::string& mode, size_t number);
// The mode of a shard's store path ("kv/sim-a25-00003.h5" -> "sim-a25"); empty when the path is no KV shard.
std::string kv_mode_of_shard(const std::string& path);
// Whether a run completed `mode`: kvprep prefill (stage prefill-<mode>) or compress (stage compress-<mode>).
bool kv_mode_completed(const Manifest& manifest, const std::string& mode);
// The number the next shard of `mode` gets: one past the highest the manifest records, so a shard dropped from
// the manifest (kvprep verify --repair) never makes a new one overwrite a recorded one.
size_t next_kv_shard_number(const Manifest& manifest, const std::string& mode);

// The KV of one mode as the manifest records it: every committed shard of that mode, chunk id -> location.
class KvModeReader {
 public:
  KvModeReader(const std::string& store_dir, const Manifest& manifest, const std::string& mode,
               uint64_t model_fingerprint);
  bool contains(uint64_t chunk_id) const { return where_.count(chunk_id) != 0; }
  size_t chunks() const { return where_.size(); }
  size_t shards() const { return shards_.size(); }
  std::vector<uint64_t> ids() const;  // every chunk id with KV in this mode
  HostKv read(uint64_t chunk_id) const;  // checksum and finiteness checked (KvShardReader::read_chunk)
  // A low-bit mode's chunk in engine form, not decoded (KvSegment::encoded; in-chunk positions), checked like
  // read(). Throws kvf::Error for a mode that is not low-bit.
  KvSegment read_encoded(uint64_t chunk_id) const;
  // read() and read_encoded() in two steps, for callers that serialise HDF5 themselves (ChunkKvCache): read_raw
  // uses the shard file, one thread at a time; decode and encoded use no HDF5, so any thread may run them at once.
  void read_raw(uint64_t chunk_id, RawKvChunk& raw) const;
  HostKv decode(const RawKvChunk& raw) const;
  // decode() then host_to_segment() (in-chunk positions), without the interleaved copy on a host backend.
  KvSegment decode_segment(const RawKvChunk& raw, Backend& backend) const;
  KvSegment encoded(RawKvChunk raw) const;  // takes raw's bytes
  uint64_t context(uint64_t chunk_id) const;  // the stored entry's context hash
  // The anchor scores `kvprep prefill --anchor-scores` recorded for the chunk (one per row), or empty.
  std::vector<double> anchor_scores(uint64_t chunk_id) const;
  const KvShardLayout& layout() const;  // of the first shard; throws when the mode has none

 private:
  // The shard holding the chunk and its entry there; throws for a chunk without KV.
  std::pair<const KvShardReader*, size_t> locate(uint64_t chunk_id) const;
  std::vector<std::unique_ptr<KvShardReader>> shards_;
  // chunk id -> (shard, entry); a later shard's entry replaces an earlier one (recomputed KV)
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> where_;
};

}  // namespace kvf
