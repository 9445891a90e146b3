// What Decoder::forward works out before its layer loop: the requests checked against the model, and for each
// sequence which view rows survive the supersede rule (DESIGN.md §3), where its keys go and in which order
// attention reads them. Everything here is the same in every layer.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_segment.h"
#include "model/llama_config.h"

namespace kvf {

struct ForwardRequest;

// Checks every request (positions, ids, rows, layers, view shapes); throws kvf::Error naming the request and the
// value. Returns the number of layers the batch runs (one for the whole batch).
int validate_forward_batch(const std::vector<ForwardRequest>& batch, const LlamaConfig& config);

struct SequencePlan {
  int64_t offset = 0, n = 0;  // rows in the batch's concatenated token matrix
  Tensor pos;                 // i32 [n]
  Tensor pos_before;          // i32 [n]: pos - 1, the attention bound of a layer that masks its own token
  struct Kept {
    Tensor rows;  // i32: view rows not superseded
    int64_t count = 0;
    std::vector<int32_t> encoded_rows;  // an encoded segment's (KvSegment::encoded): those rows' numbers in it
  };
  std::vector<Kept> kept;         // per view segment
  int64_t n_view_kept = 0;
  Tensor view_pos;                // i32 [n_view_kept]
  Tensor key_pos;                 // i32 [n_view_kept + n]
  std::vector<int64_t> key_slot;  // key index -> index in the colsum output (view rows, then computed)
  int64_t n_slots = 0;
  Tensor keys_k, keys_v;          // [n_view_kept + n, n_kv, hd] scratch, refilled every layer
  // Keys in position order let attention stop each row at its last visible key. Stored rows then computed ones
  // are out of order after a sparse prefill, so the staged keys are gathered into position order each layer.
  bool reorder = false;
  Tensor key_order;               // i32: staged key index of each position-ordered key
  Tensor ordered_k, ordered_v, ordered_pos;
  Tensor probe_rows;
};

// The plan of one request whose tokens start at row `offset` of the batch.
SequencePlan plan_sequence(const ForwardRequest& request, int64_t offset, const LlamaConfig& config, Backend& backend);

Tensor upload_i32(Backend& backend, const std::vector<int32_t>& values);

}  // namespace kvf
