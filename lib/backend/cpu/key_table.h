// Where each key of an attention call lies when the keys are read in place (no staging copy): its K and V rows
// (kv head 0) and its position, in the call's key order. Shared by the CPU attention kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace kvf::cpu {

struct KeyTable {
  std::vector<const float*> k, v;
  std::vector<int32_t> pos;
  int64_t size() const { return (int64_t)pos.size(); }
};

// The blocks' rows in order (each block's listed rows, or all of them); rows of row_elems floats.
KeyTable key_table(const BlockAttentionArgs& a, int64_t row_elems);
// Rows of one K/V pair, rows of row_elems floats, at the positions k_pos.
KeyTable key_table(const AttentionArgs& a, int64_t row_elems);
// The same keys in position order (stable), so that a pass can stop at a query's last visible key.
KeyTable sorted_by_position(KeyTable t);

}  // namespace kvf::cpu
