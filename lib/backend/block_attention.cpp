// The portable attention_blocks: the blocks' rows copied into one K/V, then the backend's attention().
#include "backend/backend.h"
#include "backend/op_checks.h"

namespace kvf {

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
  int64_t at = 0;
  for (const KeyBlock& b : a.blocks) {
    const int64_t count = b.pos.numel();
    Tensor k = staged.k.rows(at, count), v = staged.v.rows(at, count), pos = staged.k_pos.rows(at, count);
    if (b.rows.defined()) {
      gather_rows(b.k, b.rows, k);
      gather_rows(b.v, b.rows, v);
    } else {
      copy(b.k, k);
      copy(b.v, v);
    }
    copy(b.pos, pos);
    at += count;
  }
  attention(staged);
}

}  // namespace kvf
