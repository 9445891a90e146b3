// The Backend interface's portable defaults: attention_blocks over the blocks staged into one K/V, then the
// backend's attention(), and a call per sequence for attention_blocks_many; rope_into as a copy rotated in place;
// gather_many as a gather (or copy) per source.
#include "backend/backend.h"
#include "backend/op_checks.h"

namespace kvf {

void Backend::rope_into(const Tensor& src, Tensor& dst, const Tensor& pos, const RopeSpec& spec) {
  const int64_t period = pos.numel();
  KVF_CHECK(src.shape == dst.shape && period > 0 && src.dim(0) % period == 0, "rope_into: ", shape_str(src.shape),
            " into ", shape_str(dst.shape), " with ", period, " positions");
  copy(src, dst);
  for (int64_t first = 0; first < dst.dim(0); first += period) {
    Tensor rows = dst.rows(first, period);
    rope_inplace(rows, pos, spec);
  }
}

void Backend::attention_blocks(const BlockAttentionArgs& a) {
  const BlockAttentionDims d = block_attention_dims(a);
  AttentionArgs staged;
  staged.q = a.q;
  staged.q_pos = a.q_pos;
  staged.out = a.out;
  staged.scale = a.scale;
  staged.bf16_inputs = a.bf16_inputs;
  staged.k = empty(DType::F32, {d.m, d.n_kv_heads, d.head_dim});
  staged.v = empty(DType::F32, {d.m, d.n_kv_heads, d.head_dim});
  staged.k_pos = empty(DType::I32, {d.m});
  std::vector<RowGather> gathers;
  int64_t at = 0;
  for (const KeyBlock& b : a.blocks) {
    const int64_t count = b.pos.numel();
    gathers.push_back({b.k, b.v, b.rows, b.pos, at, count});
    at += count;
  }
  gather_many(gathers, staged.k, staged.v, &staged.k_pos);
  attention(staged);
}

void Backend::gather_many(const std::vector<RowGather>& gathers, Tensor& k_dst, Tensor& v_dst, Tensor* pos_dst) {
  for (const RowGather& g : gathers) {
    if (g.count == 0) continue;
    Tensor k = k_dst.rows(g.first, g.count), v = v_dst.rows(g.first, g.count);
    if (g.rows.defined()) {
      gather_rows(g.k, g.rows, k);
      gather_rows(g.v, g.rows, v);
    } else {
      copy(g.k.rows(0, g.count), k);
      copy(g.v.rows(0, g.count), v);
    }
    if (pos_dst != nullptr) {
      Tensor pos = pos_dst->rows(g.first, g.count);
      copy(g.pos, pos);
    }
  }
}

void Backend::attention_blocks_many(const std::vector<BlockAttentionArgs>& seqs) {
  for (const BlockAttentionArgs& a : seqs) attention_blocks(a);
}

}  // namespace kvf
