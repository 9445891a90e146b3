#include "backend/cpu/key_table.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/op_checks.h"
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

namespace {

void require(const FlashPassOf& kernel, int64_t head_dim) {
  KVF_CHECK(kernel.available(head_dim), "flash attention: needs ", kernel.needs, "; head_dim ", head_dim,
            " on this CPU");
}

}  // namespace

void run_flash_pass(const FlashPassOf& kernel, const AttentionArgs& a) {
  const AttentionDims d = attention_dims(a);
  KVF_CHECK(!d.probing, "flash attention: probes need the exact softmax weights (the f32 attention)");
  require(kernel, d.head_dim);
  kernel.pass(a.q.data<float>(), a.q_pos.data<int32_t>(), d.n, d.n_heads, d.n_kv_heads, d.head_dim,
              key_table(a, d.n_kv_heads * d.head_dim), a.scale, a.out.data<float>());
}

void run_flash_pass(const FlashPassOf& kernel, const BlockAttentionArgs& a) {
  const BlockAttentionDims d = block_attention_dims(a);
  require(kernel, d.head_dim);
  kernel.pass(a.q.data<float>(), a.q_pos.data<int32_t>(), d.n, d.n_heads, d.n_kv_heads, d.head_dim,
              sorted_by_position(key_table(a, d.n_kv_heads * d.head_dim)), a.scale, a.out.data<float>());
}

void FlashTask::start(int64_t task, int64_t n, int64_t block_rows, int64_t group, int64_t D, const int32_t* qp) {
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  g = task / blocks, r0 = task % blocks * block_rows, rows = std::min(block_rows, n - r0), lanes = rows * group;
  o.assign((size_t)(lanes * D), 0.0f);
  max.assign((size_t)lanes, -INFINITY);
  sum.assign((size_t)lanes, 0.0f);
  pos.resize((size_t)lanes);
  for (int64_t lane = 0; lane < lanes; ++lane) pos[(size_t)lane] = qp[r0 + lane % rows];
  q_max = *std::max_element(qp + r0, qp + r0 + rows);
}

void FlashTask::write(int64_t H, int64_t group, int64_t D, float* out) const {
  for (int64_t lane = 0; lane < lanes; ++lane) {
    const float s = sum[(size_t)lane], inv = s > 0 ? 1.0f / s : 0.0f;
    float* dst = out + q_offset(lane, H, group, D);
    for (int64_t d = 0; d < D; ++d) dst[d] = o[(size_t)(lane * D + d)] * inv;
  }
}

}  // namespace kvf::cpu
