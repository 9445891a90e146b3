#include "model/forward_plan.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "core/error.h"
#include "model/decoder.h"

namespace kvf {
namespace {

void validate(const ForwardRequest& r, size_t index, const LlamaConfig& c) {
  const std::string where = "forward request " + std::to_string(index);
  KVF_CHECK(r.tokens.size() == r.positions.size(), where, ": ", r.tokens.size(), " tokens but ",
            r.positions.size(), " positions");
  std::unordered_set<int32_t> seen;
  for (size_t i = 0; i < r.positions.size(); ++i) {
    const int32_t p = r.positions[i];
    KVF_CHECK(p >= 0 && p < c.context_length, where, ": position ", p, " of token ", i,
              " is outside the model context [0, ", c.context_length, ")");
    KVF_CHECK(seen.insert(p).second, where, ": position ", p, " is given to two computed tokens");
    KVF_CHECK(r.tokens[i] >= 0 && r.tokens[i] < c.vocab, where, ": token id ", r.tokens[i], " at index ", i,
              " is outside the vocabulary of ", c.vocab);
  }
  for (int32_t row : r.logit_rows)
    KVF_CHECK(row >= 0 && (size_t)row < r.tokens.size(), where, ": logit row ", row, " outside [0, ",
              r.tokens.size(), ")");
  for (int32_t row : r.probe_rows)
    KVF_CHECK(row >= 0 && (size_t)row < r.tokens.size(), where, ": probe row ", row, " outside [0, ",
              r.tokens.size(), ")");
  KVF_CHECK(r.run_layers >= 0 && r.run_layers <= c.n_layers, where, ": run_layers ", r.run_layers,
            " outside [0, ", c.n_layers, "]");
  const int layers = r.run_layers ? r.run_layers : c.n_layers;
  KVF_CHECK(layers == c.n_layers || r.logit_rows.empty(), where, ": logits need all ", c.n_layers,
            " layers, run_layers is ", r.run_layers);
  for (int l : r.probe_layers)
    KVF_CHECK(l >= 0 && l < layers, where, ": probe layer ", l, " outside the layers run [0, ", layers, ")");
  for (size_t s = 0; s < r.view.size(); ++s) {
    const KvSegment& seg = *r.view[s];
    KVF_CHECK(seg.layers() == c.n_layers && (seg.encoded || seg.v.size() == seg.k.size()), where, ": view segment ",
              s, " has ", seg.layers(), " layers, the model ", c.n_layers);
    if (seg.encoded) {
      const LowBitRows& e = *seg.encoded;
      KVF_CHECK(e.kv_heads == c.n_kv_heads && e.head_dim == c.head_dim && seg.k_roped.empty(), where,
                ": view segment ", s, " holds encoded rows of ", e.kv_heads, " x ", e.head_dim, ", expected ",
                c.n_kv_heads, " x ", c.head_dim, " and no rotated K");
      KVF_CHECK(seg.encoded_first >= 0 && seg.encoded_first + seg.rows() <= e.rows, where, ": view segment ", s,
                " reads encoded rows [", seg.encoded_first, ", ", seg.encoded_first + seg.rows(), ") of ", e.rows);
    }
    KVF_CHECK(seg.k_roped.empty() || (int)seg.k_roped.size() == c.n_layers, where, ": view segment ", s, " has ",
              seg.k_roped.size(), " layers of rotated K, the model ", c.n_layers);
    for (int l = 0; l < c.n_layers && !seg.encoded; ++l) {
      const Shape want{seg.rows(), c.n_kv_heads, c.head_dim};
      KVF_CHECK(seg.k[l].shape == want && seg.v[l].shape == want, where, ": view segment ", s, " layer ", l,
                " has K ", shape_str(seg.k[l].shape), ", expected ", shape_str(want));
      KVF_CHECK(seg.k_roped.empty() || !seg.k_roped[l].defined() || seg.k_roped[l].shape == want, where,
                ": view segment ", s, " layer ", l, " has rotated K ", shape_str(seg.k_roped[l].shape), ", expected ",
                shape_str(want));
    }
    for (int32_t p : seg.positions)
      KVF_CHECK(p >= 0 && p < c.context_length, where, ": view segment ", s, " has position ", p,
                " outside the model context [0, ", c.context_length, ")");
  }
}

// A plan's index vectors (one per view segment: a query places tens of chunks) copied to the backend in one upload
// and handed out as slices of it.
class Int32Uploads {
 public:
  // Queues `values`; once upload() ran, *into is their slice.
  void add(const std::vector<int32_t>& values, Tensor* into) {
    parts_.push_back({(int64_t)all_.size(), (int64_t)values.size(), into});
    all_.insert(all_.end(), values.begin(), values.end());
  }
  void upload(Backend& b) {
    const Tensor whole = upload_i32(b, all_);
    for (const Part& part : parts_) *part.into = whole.rows(part.from, part.count);
  }

 private:
  struct Part {
    int64_t from, count;
    Tensor* into;
  };
  std::vector<int32_t> all_;
  std::vector<Part> parts_;
};

}  // namespace

Tensor upload_i32(Backend& b, const std::vector<int32_t>& values) {
  Tensor t = b.empty(DType::I32, {(int64_t)values.size()});
  b.copy_from_host(t, values.data(), values.size() * sizeof(int32_t));
  return t;
}

int validate_forward_batch(const std::vector<ForwardRequest>& batch, const LlamaConfig& c) {
  for (size_t i = 0; i < batch.size(); ++i) validate(batch[i], i, c);
  // The layer loop is shared by the batch, so its sequences stop at the same layer.
  const int layers = batch.empty() || !batch[0].run_layers ? c.n_layers : batch[0].run_layers;
  for (size_t i = 0; i < batch.size(); ++i)
    KVF_CHECK((batch[i].run_layers ? batch[i].run_layers : c.n_layers) == layers, "forward request ", i,
              " runs ", batch[i].run_layers, " layers, request 0 runs ", layers, ": a batch stops at one layer");
  return layers;
}

SequencePlan plan_sequence(const ForwardRequest& r, int64_t offset, const LlamaConfig& c, Backend& b) {
  SequencePlan p;
  Int32Uploads uploads;
  p.offset = offset;
  p.n = (int64_t)r.tokens.size();
  if (c.condensed.active()) {
    std::vector<int32_t> before(r.positions);
    for (int32_t& x : before) --x;
    uploads.add(before, &p.pos_before);
  }
  // A view row is superseded by a computed token or a later segment's row at its position: walk the segments
  // from the last, claiming positions as they are seen.
  std::unordered_set<int32_t> claimed(r.positions.begin(), r.positions.end());
  std::vector<std::vector<int32_t>> kept_rows(r.view.size());
  for (size_t s = r.view.size(); s-- > 0;) {
    const KvSegment& seg = *r.view[s];
    for (int64_t i = 0; i < seg.rows(); ++i)
      if (!claimed.count(seg.positions[i])) kept_rows[s].push_back((int32_t)i);
    if (s > 0) claimed.insert(seg.positions.begin(), seg.positions.end());
  }
  std::vector<int32_t> key_pos;
  int64_t slot_base = 0;
  p.kept.resize(r.view.size());
  for (size_t s = 0; s < r.view.size(); ++s) {
    const KvSegment& seg = *r.view[s];
    for (int32_t i : kept_rows[s]) {
      key_pos.push_back(seg.positions[i]);
      p.key_slot.push_back(slot_base + i);
    }
    slot_base += seg.rows();
    SequencePlan::Kept& kept = p.kept[s];
    kept.count = (int64_t)kept_rows[s].size();
    if (seg.encoded) {  // decoded from the encoding by row index: the chunk's own row numbers
      kept.encoded_rows = kept_rows[s];
      for (int32_t& i : kept.encoded_rows) i += (int32_t)seg.encoded_first;
    }
    uploads.add(kept_rows[s], &kept.rows);
    p.n_view_kept += kept.count;
  }
  for (int64_t i = 0; i < p.n; ++i) {
    key_pos.push_back(r.positions[i]);
    p.key_slot.push_back(slot_base + i);
  }
  p.n_slots = slot_base + p.n;
  const int64_t m = (int64_t)key_pos.size();
  p.keys_k = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
  p.keys_v = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
  p.reorder = !std::is_sorted(key_pos.begin(), key_pos.end());
  if (p.reorder) {
    std::vector<int32_t> order((size_t)m);
    for (int64_t i = 0; i < m; ++i) order[i] = (int32_t)i;
    std::stable_sort(order.begin(), order.end(), [&](int32_t lhs, int32_t rhs) { return key_pos[lhs] < key_pos[rhs]; });
    std::vector<int32_t> pos_sorted((size_t)m);
    std::vector<int64_t> slot_sorted((size_t)m);
    for (int64_t i = 0; i < m; ++i) {
      pos_sorted[i] = key_pos[order[i]];
      slot_sorted[i] = p.key_slot[order[i]];
    }
    p.key_slot = std::move(slot_sorted);  // colsum entries come back in position order
    uploads.add(order, &p.key_order);
    uploads.add(pos_sorted, &p.ordered_pos);
    p.ordered_k = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
    p.ordered_v = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
  }
  if (!r.probe_layers.empty()) uploads.add(r.probe_rows, &p.probe_rows);
  uploads.add(key_pos, &p.key_pos);  // the kept view rows' positions, then the computed tokens'
  uploads.upload(b);
  p.view_pos = p.key_pos.rows(0, p.n_view_kept);
  p.pos = p.key_pos.rows(p.n_view_kept, p.n);
  return p;
}

}  // namespace kvf
