#include "backend/op_checks.h"

#include "core/error.h"

namespace kvf {

MatmulDims matmul_dims(const Tensor& x, const Tensor& w, const Tensor& y) {
  const MatmulDims d{x.dim(0), x.row_elems(), w.dim(0)};
  KVF_CHECK(w.row_elems() == d.k && y.dim(0) == d.n && y.row_elems() == d.m, "matmul_nt: x ", shape_str(x.shape),
            " w ", shape_str(w.shape), " y ", shape_str(y.shape));
  return d;
}

AttentionDims attention_dims(const AttentionArgs& a) {
  KVF_CHECK(a.q.shape.size() == 3 && a.k.shape.size() == 3 && a.v.shape == a.k.shape && a.out.shape == a.q.shape,
            "attention: q ", shape_str(a.q.shape), " k ", shape_str(a.k.shape), " v ", shape_str(a.v.shape),
            " out ", shape_str(a.out.shape));
  AttentionDims d;
  d.n = a.q.dim(0), d.m = a.k.dim(0), d.n_heads = a.q.dim(1), d.n_kv_heads = a.k.dim(1), d.head_dim = a.q.dim(2);
  KVF_CHECK(a.k.dim(2) == d.head_dim && d.n_kv_heads > 0 && d.n_heads % d.n_kv_heads == 0, "attention: ",
            d.n_heads, " query heads over ", d.n_kv_heads, " kv heads of dim ", a.k.dim(2), " vs ", d.head_dim);
  KVF_CHECK(a.q_pos.numel() == d.n && a.k_pos.numel() == d.m, "attention: position counts do not match rows");
  d.probing = a.probe_rows.defined() && a.probe_rows.numel() > 0;
  if (d.probing)
    KVF_CHECK(a.probe_colsum.numel() == d.m && a.probe_colsum.shape.size() == 1, "attention: probe_colsum ",
              shape_str(a.probe_colsum.shape), " for ", d.m, " keys");
  return d;
}

BlockAttentionDims block_attention_dims(const BlockAttentionArgs& a) {
  KVF_CHECK(a.q.shape.size() == 3 && a.out.shape == a.q.shape && a.q_pos.numel() == a.q.dim(0),
            "attention_blocks: q ", shape_str(a.q.shape), " out ", shape_str(a.out.shape), " with ",
            a.q_pos.numel(), " positions");
  BlockAttentionDims d;
  d.n = a.q.dim(0), d.n_heads = a.q.dim(1), d.head_dim = a.q.dim(2);
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    const KeyBlock& b = a.blocks[i];
    KVF_CHECK(b.k.shape.size() == 3 && b.v.shape == b.k.shape && b.k.dim(2) == d.head_dim, "attention_blocks: block ",
              i, " has k ", shape_str(b.k.shape), " v ", shape_str(b.v.shape), " for head_dim ", d.head_dim);
    if (i == 0) d.n_kv_heads = b.k.dim(1);
    KVF_CHECK(b.k.dim(1) == d.n_kv_heads, "attention_blocks: block ", i, " has ", b.k.dim(1), " kv heads, block 0 ",
              d.n_kv_heads);
    const int64_t count = b.rows.defined() ? b.rows.numel() : b.k.dim(0);
    KVF_CHECK(b.pos.numel() == count, "attention_blocks: block ", i, " reads ", count, " rows with ", b.pos.numel(),
              " positions");
    d.m += count;
  }
  KVF_CHECK(d.n_kv_heads == 0 || (d.n_heads % d.n_kv_heads == 0), "attention_blocks: ", d.n_heads,
            " query heads over ", d.n_kv_heads, " kv heads");
  if (d.n_kv_heads == 0) d.n_kv_heads = d.n_heads;  // no keys at all
  return d;
}

}  // namespace kvf
