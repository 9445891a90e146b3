#include "backend/cpu/key_table.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace kvf::cpu {

KeyTable key_table(const BlockAttentionArgs& a, int64_t row_elems) {
  KeyTable t;
  for (const KeyBlock& b : a.blocks) {
    const int64_t count = b.pos.numel(), rows = b.k.dim(0);
    const int32_t* idx = b.rows.defined() ? b.rows.data<int32_t>() : nullptr;
    const int32_t* pos = b.pos.data<int32_t>();
    for (int64_t j = 0; j < count; ++j) {
      const int64_t r = idx ? idx[j] : j;
      KVF_CHECK(r >= 0 && r < rows, "attention_blocks: row ", r, " outside [0, ", rows, ")");
      t.k.push_back(b.k.data<float>() + r * row_elems);
      t.v.push_back(b.v.data<float>() + r * row_elems);
      t.pos.push_back(pos[j]);
    }
  }
  return t;
}

KeyTable key_table(const AttentionArgs& a, int64_t row_elems) {
  KeyTable t;
  const int64_t m = a.k.dim(0);
  const int32_t* pos = a.k_pos.data<int32_t>();
  for (int64_t j = 0; j < m; ++j) {
    t.k.push_back(a.k.data<float>() + j * row_elems);
    t.v.push_back(a.v.data<float>() + j * row_elems);
    t.pos.push_back(pos[j]);
  }
  return t;
}

KeyTable sorted_by_position(KeyTable t) {
  if (std::is_sorted(t.pos.begin(), t.pos.end())) return t;  // the usual case: views in position order
  std::vector<int64_t> order((size_t)t.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.pos[a] < t.pos[b]; });
  KeyTable s;
  for (const int64_t j : order) {
    s.k.push_back(t.k[j]);
    s.v.push_back(t.v[j]);
    s.pos.push_back(t.pos[j]);
  }
  return s;
}

}  // namespace kvf::cpu
