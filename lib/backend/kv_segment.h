// KV rows as the forward pass reads and returns them (DESIGN.md §3): per layer K (without RoPE) and V, one
// position per row. Tensors live in backend memory; positions are host metadata.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace kvf {

struct KvSegment {
  std::vector<int32_t> positions;  // one per row
  std::vector<Tensor> k, v;        // per layer: [rows, n_kv_heads, head_dim]
  // Optional, per layer: k with RoPE applied at `positions` (Decoder::with_roped_keys), so that every layer of
  // every forward call over this segment reads its keys rotated once instead of rotating them again. Empty: none.
  std::vector<Tensor> k_roped;
  int64_t rows() const { return (int64_t)positions.size(); }
  // Rows [begin, begin + count) at their positions; the tensors are shared, not copied.
  KvSegment slice(int64_t begin, int64_t count) const;
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
