// KV rows as the forward pass reads and returns them (DESIGN.md §3): per layer K (without RoPE) and V, one
// position per row. Tensors live in backend memory; positions are host metadata.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/low_bit_kv.h"

namespace kvf {

// One chunk's stored rows kept in their low-bit encoding (core/low_bit_kv.h; rows of [stored_layers, kv_heads,
// head_dim]), as the chunk cache holds them: a reader decodes only the rows of the one layer it needs.
struct LowBitRows {
  LowBitSpec spec;
  int64_t rows = 0;
  int stored_layers = 0, kv_heads = 0, head_dim = 0;
  std::vector<int32_t> layer_map;  // model layer -> stored layer
  std::vector<uint8_t> bytes;      // low_bit_chunk_bytes(spec, rows, width())
  int64_t layer_width() const { return (int64_t)kv_heads * head_dim; }
  int64_t width() const { return stored_layers * layer_width(); }
  // Rows rows[0..n) of model layer `layer` into k and v, [n, kv_heads, head_dim] f32 (throws kvf::Error on a
  // scale that is not finite: the cache checked them when it read the chunk, so only a bug gets here).
  void decode(int layer, const int32_t* rows, int64_t n, float* k, float* v) const;
};

struct KvSegment {
  std::vector<int32_t> positions;  // one per row
  std::vector<Tensor> k, v;        // per layer: [rows, n_kv_heads, head_dim]; empty when `encoded` is set
  // Optional, per layer: k with RoPE applied at `positions` (Decoder::with_roped_keys), so that every layer of
  // every forward call over this segment reads its keys rotated once instead of rotating them again. Empty: none.
  std::vector<Tensor> k_roped;
  // Stored low-bit rows read where they are: row i of this segment is row encoded_first + i of `encoded`. The
  // forward pass decodes the rows it gathers straight into its staged keys (no decoded copy of the chunk is
  // kept, nor made per query); other readers ask layer_to_host().
  std::shared_ptr<const LowBitRows> encoded;
  int64_t encoded_first = 0;
  int64_t rows() const { return (int64_t)positions.size(); }
  int layers() const { return encoded ? (int)encoded->layer_map.size() : (int)k.size(); }
  // Rows [begin, begin + count) at their positions; the tensors (or encoded rows) are shared, not copied.
  KvSegment slice(int64_t begin, int64_t count) const;
  // Layer l's K (without RoPE) and V on the host, [rows, n_kv_heads, head_dim] each, whatever the segment holds.
  void layer_to_host(int l, Backend& backend, std::vector<float>& k_out, std::vector<float>& v_out) const;
};

// The same rows (tensors shared) `offset` positions further on: how a stored chunk, whose rows hold in-chunk
// positions, is placed in a prompt or a precompute view. K holds no RoPE, so moving a row is only its position
// (rotated keys, valid only at the old positions, are dropped).
KvSegment placed_at(const KvSegment& seg, int32_t offset);

// A growable KV segment (a query's own buffer): rows are appended, view() exposes the filled part. Given a RoPE
// spec, it also keeps each row's K rotated at its position (view().k_roped), rotated once as the row is appended
// instead of in every later decoding step.
class KvBuffer {
 public:
  KvBuffer(Backend& backend, int n_layers, int n_kv_heads, int head_dim, int64_t capacity,
           const RopeSpec* rope = nullptr);
  // Appends all rows of `seg` (same layer count and row shape).
  void append(const KvSegment& seg);
  KvSegment view() const;
  int64_t rows() const { return (int64_t)positions_.size(); }
  int64_t capacity() const { return capacity_; }

 private:
  Backend& backend_;
  int64_t capacity_;
  std::vector<int32_t> positions_;
  const RopeSpec* rope_;
  std::vector<Tensor> k_, v_, k_roped_;
};

}  // namespace kvf
