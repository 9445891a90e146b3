#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "io/gguf.h"
#include "model/rope_frequencies.h"

namespace kvf {
namespace {

Tensor upload_i32(Backend& b, const std::vector<int32_t>& values) {
  Tensor t = b.empty(DType::I32, {(int64_t)values.size()});
  b.copy_from_host(t, values.data(), values.size() * sizeof(int32_t));
  return t;
}

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
    KVF_CHECK((int)seg.k.size() == c.n_layers && (int)seg.v.size() == c.n_layers, where, ": view segment ", s,
              " has ", seg.k.size(), " layers, the model ", c.n_layers);
    for (int l = 0; l < c.n_layers; ++l) {
      const Shape want{seg.rows(), c.n_kv_heads, c.head_dim};
      KVF_CHECK(seg.k[l].shape == want && seg.v[l].shape == want, where, ": view segment ", s, " layer ", l,
                " has K ", shape_str(seg.k[l].shape), ", expected ", shape_str(want));
    }
    for (int32_t p : seg.positions)
      KVF_CHECK(p >= 0 && p < c.context_length, where, ": view segment ", s, " has position ", p,
                " outside the model context [0, ", c.context_length, ")");
  }
}

// Everything about one sequence that does not change from layer to layer.
struct SequencePlan {
  int64_t offset = 0, n = 0;  // rows in the batch's concatenated token matrix
  Tensor pos;                 // i32 [n]
  struct Kept {
    Tensor rows;  // i32: view rows not superseded
    int64_t count = 0;
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

SequencePlan plan_sequence(const ForwardRequest& r, int64_t offset, const LlamaConfig& c, Backend& b) {
  SequencePlan p;
  p.offset = offset;
  p.n = (int64_t)r.tokens.size();
  p.pos = upload_i32(b, r.positions);
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
  for (size_t s = 0; s < r.view.size(); ++s) {
    const KvSegment& seg = *r.view[s];
    for (int32_t i : kept_rows[s]) {
      key_pos.push_back(seg.positions[i]);
      p.key_slot.push_back(slot_base + i);
    }
    slot_base += seg.rows();
    p.kept.push_back({upload_i32(b, kept_rows[s]), (int64_t)kept_rows[s].size()});
    p.n_view_kept += (int64_t)kept_rows[s].size();
  }
  p.view_pos = upload_i32(b, key_pos);
  for (int64_t i = 0; i < p.n; ++i) {
    key_pos.push_back(r.positions[i]);
    p.key_slot.push_back(slot_base + i);
  }
  p.n_slots = slot_base + p.n;
  p.key_pos = upload_i32(b, key_pos);
  const int64_t m = (int64_t)key_pos.size();
  p.keys_k = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
  p.keys_v = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
  p.reorder = !std::is_sorted(key_pos.begin(), key_pos.end());
  if (p.reorder) {
    std::vector<int32_t> order((size_t)m);
    for (int64_t i = 0; i < m; ++i) order[i] = (int32_t)i;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key_pos[a] < key_pos[b]; });
    std::vector<int32_t> pos_sorted((size_t)m);
    std::vector<int64_t> slot_sorted((size_t)m);
    for (int64_t i = 0; i < m; ++i) {
      pos_sorted[i] = key_pos[order[i]];
      slot_sorted[i] = p.key_slot[order[i]];
    }
    p.key_slot = std::move(slot_sorted);  // colsum entries come back in position order
    p.key_order = upload_i32(b, order);
    p.ordered_pos = upload_i32(b, pos_sorted);
    p.ordered_k = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
    p.ordered_v = b.empty(DType::F32, {m, c.n_kv_heads, c.head_dim});
  }
  if (!r.probe_layers.empty()) p.probe_rows = upload_i32(b, r.probe_rows);
  return p;
}

}  // namespace

Decoder::Decoder(LlamaConfig config, LlamaWeights weights, Backend& backend)
    : config_(std::move(config)), weights_(std::move(weights)), backend_(backend) {
  rope_.rotary_dim = config_.rotary_dim;
  rope_.pairing = config_.rope_pairing;
  rope_.inv_freq = std::make_shared<const std::vector<float>>(rope_inv_frequencies(
      config_.rotary_dim, config_.rope_theta, config_.rope_scaling_factor, weights_.rope_freq_factors));
  rope_.table_positions = config_.context_length;
  rope_.cos_sin = std::make_shared<const std::vector<float>>(rope_cos_sin_table(*rope_.inv_freq, config_.context_length));
}

std::unique_ptr<Decoder> Decoder::load_gguf(const std::string& path, Backend& backend) {
  const auto file = gguf::File::open(path);
  LlamaConfig config = llama_config_from_gguf(*file);
  LlamaWeights weights = load_llama_weights(*file, config, backend);
  return std::unique_ptr<Decoder>(new Decoder(std::move(config), std::move(weights), backend));
}

std::unique_ptr<Decoder> Decoder::with_kv_sources(std::vector<int32_t> sources) const {
  const int n = config_.n_layers;
  KVF_CHECK((int)sources.size() == n, "KV source map has ", sources.size(), " entries, the model ", n, " layers");
  bool identity = true;
  for (int l = 0; l < n; ++l) {
    const int32_t src = sources[l];
    KVF_CHECK(src >= 0 && src <= l, "KV source map: layer ", l, " reads layer ", src, "; a layer reads itself or an "
              "earlier layer");
    KVF_CHECK(sources[src] == src, "KV source map: layer ", l, " reads layer ", src, ", which itself reads layer ",
              sources[src], "; point it at the source directly");
    identity = identity && src == l;
  }
  auto d = std::unique_ptr<Decoder>(new Decoder(*this));
  d->kv_sources_ = identity ? std::vector<int32_t>{} : std::move(sources);
  return d;
}

std::vector<ForwardResult> Decoder::forward(const std::vector<ForwardRequest>& batch) const {
  const LlamaConfig& c = config_;
  Backend& b = backend_;
  for (size_t i = 0; i < batch.size(); ++i) validate(batch[i], i, c);
  // The layer loop is shared by the batch, so its sequences stop at the same layer.
  const int layers = batch.empty() || !batch[0].run_layers ? c.n_layers : batch[0].run_layers;
  for (size_t i = 0; i < batch.size(); ++i)
    KVF_CHECK((batch[i].run_layers ? batch[i].run_layers : c.n_layers) == layers, "forward request ", i,
              " runs ", batch[i].run_layers, " layers, request 0 runs ", layers, ": a batch stops at one layer");

  std::vector<SequencePlan> plans;
  std::vector<int32_t> all_tokens, logit_rows_global;
  for (const ForwardRequest& r : batch) {
    plans.push_back(plan_sequence(r, (int64_t)all_tokens.size(), c, b));
    for (int32_t row : r.logit_rows) logit_rows_global.push_back((int32_t)all_tokens.size() + row);
    all_tokens.insert(all_tokens.end(), r.tokens.begin(), r.tokens.end());
  }
  const int64_t N = (int64_t)all_tokens.size();
  const int64_t H = c.n_heads, KV = c.n_kv_heads, D = c.head_dim;

  std::vector<ForwardResult> results(batch.size());
  for (size_t s = 0; s < batch.size(); ++s) {
    ForwardResult& res = results[s];
    if (batch[s].return_kv) {
      res.kv.positions = batch[s].positions;
      for (int l = 0; l < layers; ++l) {
        res.kv.k.push_back(b.empty(DType::F32, {plans[s].n, KV, D}));
        res.kv.v.push_back(b.empty(DType::F32, {plans[s].n, KV, D}));
      }
    }
    res.attn_colsum.assign(batch[s].probe_layers.size(), std::vector<float>(plans[s].n_slots, 0.0f));
  }
  if (N == 0) return results;

  Tensor x = b.empty(DType::F32, {N, c.hidden});
  b.embedding(weights_.token_embd, upload_i32(b, all_tokens), x);
  Tensor xn = b.empty(DType::F32, {N, c.hidden});
  Tensor q = b.empty(DType::F32, {N, H, D});
  Tensor k = b.empty(DType::F32, {N, KV, D});
  Tensor v = b.empty(DType::F32, {N, KV, D});
  Tensor attn = b.empty(DType::F32, {N, H, D});
  Tensor proj = b.empty(DType::F32, {N, c.hidden});
  Tensor gate = b.empty(DType::F32, {N, c.ffn});
  Tensor up = b.empty(DType::F32, {N, c.ffn});
  const Tensor q2 = q.reshaped({N, H * D}), k2 = k.reshaped({N, KV * D}), v2 = v.reshaped({N, KV * D});
  const float scale = 1.0f / std::sqrt((float)D);

  // KV sharing: a source layer's K and V of the computed tokens are kept for the layers that read them.
  std::vector<Tensor> kept_k(layers), kept_v(layers);
  for (int l = 0; l < layers; ++l) {
    const int src = kv_sources_.empty() ? l : kv_sources_[l];
    if (src != l && !kept_k[src].defined()) {
      kept_k[src] = b.empty(DType::F32, {N, KV, D});
      kept_v[src] = b.empty(DType::F32, {N, KV, D});
    }
  }

  for (int l = 0; l < layers; ++l) {
    const LlamaLayerWeights& w = weights_.layers[l];
    const int src = kv_sources_.empty() ? l : kv_sources_[l];
    b.rms_norm(x, w.attn_norm, c.norm_eps, xn);
    Tensor qm = q2, km = k2, vm = v2;
    b.matmul_nt(xn, w.wq, qm);
    if (w.bq.defined()) b.add_bias(qm, w.bq);
    if (src == l) {
      b.matmul_nt(xn, w.wk, km);
      b.matmul_nt(xn, w.wv, vm);
      if (w.bk.defined()) b.add_bias(km, w.bk);
      if (w.bv.defined()) b.add_bias(vm, w.bv);
      if (kept_k[l].defined()) {
        b.copy(k, kept_k[l]);
        b.copy(v, kept_v[l]);
      }
    }
    const Tensor& k_layer = src == l ? k : kept_k[src];
    const Tensor& v_layer = src == l ? v : kept_v[src];

    for (size_t s = 0; s < batch.size(); ++s) {
      const ForwardRequest& r = batch[s];
      SequencePlan& p = plans[s];
      ForwardResult& res = results[s];
      Tensor qs = q.rows(p.offset, p.n);
      const Tensor ks = k_layer.rows(p.offset, p.n), vs = v_layer.rows(p.offset, p.n);
      if (r.return_kv) {
        b.copy(ks, res.kv.k[l]);
        b.copy(vs, res.kv.v[l]);
      }
      b.rope_inplace(qs, p.pos, rope_);
      // Keys: the kept view rows, then the computed tokens; RoPE applied at each row's position as it is read.
      int64_t at = 0;
      for (size_t i = 0; i < r.view.size(); ++i) {
        Tensor kd = p.keys_k.rows(at, p.kept[i].count), vd = p.keys_v.rows(at, p.kept[i].count);
        b.gather_rows(r.view[i]->k[src], p.kept[i].rows, kd);
        b.gather_rows(r.view[i]->v[src], p.kept[i].rows, vd);
        at += p.kept[i].count;
      }
      Tensor view_keys = p.keys_k.rows(0, p.n_view_kept);
      b.rope_inplace(view_keys, p.view_pos, rope_);
      Tensor own_k = p.keys_k.rows(p.n_view_kept, p.n), own_v = p.keys_v.rows(p.n_view_kept, p.n);
      b.copy(ks, own_k);
      b.copy(vs, own_v);
      b.rope_inplace(own_k, p.pos, rope_);

      AttentionArgs args;
      args.q = qs;
      args.q_pos = p.pos;
      args.k = p.keys_k;
      args.v = p.keys_v;
      args.k_pos = p.key_pos;
      if (p.reorder) {
        b.gather_rows(p.keys_k, p.key_order, p.ordered_k);
        b.gather_rows(p.keys_v, p.key_order, p.ordered_v);
        args.k = p.ordered_k;
        args.v = p.ordered_v;
        args.k_pos = p.ordered_pos;
      }
      args.out = attn.rows(p.offset, p.n);
      args.scale = scale;
      const auto probe = std::find(r.probe_layers.begin(), r.probe_layers.end(), l);
      if (probe != r.probe_layers.end()) {
        args.probe_rows = p.probe_rows;
        args.probe_colsum = b.empty(DType::F32, {(int64_t)p.key_slot.size()});
        const std::vector<float> zeros(p.key_slot.size(), 0.0f);
        b.copy_from_host(args.probe_colsum, zeros.data(), zeros.size() * sizeof(float));
      }
      b.attention(args);
      if (probe != r.probe_layers.end()) {
        std::vector<float> colsum(p.key_slot.size());
        b.copy_to_host(args.probe_colsum, colsum.data(), colsum.size() * sizeof(float));
        std::vector<float>& outv = res.attn_colsum[probe - r.probe_layers.begin()];
        for (size_t j = 0; j < colsum.size(); ++j) outv[p.key_slot[j]] = colsum[j];
      }
    }

    b.matmul_nt(attn.reshaped({N, H * D}), w.wo, proj);
    b.add_inplace(x, proj);
    b.rms_norm(x, w.ffn_norm, c.norm_eps, xn);
    b.matmul_nt(xn, w.w_gate, gate);
    b.matmul_nt(xn, w.w_up, up);
    b.swiglu(gate, up, gate);
    b.matmul_nt(gate, w.w_down, proj);
    b.add_inplace(x, proj);
  }

  for (size_t s = 0; s < batch.size(); ++s) {
    if (!batch[s].return_hidden) continue;
    results[s].hidden.resize((size_t)(plans[s].n * c.hidden));
    b.copy_to_host(x.rows(plans[s].offset, plans[s].n), results[s].hidden.data(),
                   results[s].hidden.size() * sizeof(float));
  }

  // Logits only for the rows asked for: norm and the vocabulary projection are per row.
  const int64_t L = (int64_t)logit_rows_global.size();
  if (L > 0) {
    Tensor picked = b.empty(DType::F32, {L, c.hidden});
    b.gather_rows(x, upload_i32(b, logit_rows_global), picked);
    Tensor normed = b.empty(DType::F32, {L, c.hidden});
    b.rms_norm(picked, weights_.output_norm, c.norm_eps, normed);
    Tensor logits = b.empty(DType::F32, {L, c.vocab});
    b.matmul_nt(normed, weights_.output, logits);
    std::vector<float> host((size_t)(L * c.vocab));
    b.copy_to_host(logits, host.data(), host.size() * sizeof(float));
    size_t at = 0;
    for (size_t s = 0; s < batch.size(); ++s) {
      const size_t count = batch[s].logit_rows.size() * (size_t)c.vocab;
      results[s].logits.assign(host.begin() + at, host.begin() + at + count);
      at += count;
    }
  }
  return results;
}

}  // namespace kvf
