#include "model/decoder.h"

#include <algorithm>
#include <cmath>

#include "io/gguf.h"
#include "io/hf_folder.h"
#include "model/forward_plan.h"
#include "model/rope_frequencies.h"

namespace kvf {
namespace {

// One Decoder::forward call over a ragged batch: the token rows of every sequence go through each layer's
// projections and MLP together; attention runs per sequence over its own view. Each step below is one named
// part of a layer, and the buffers they share live here.
class ForwardPass {
 public:
  ForwardPass(const LlamaConfig& config, const LlamaWeights& weights, const RopeSpec& rope,
              const std::vector<int32_t>& kv_sources, ComputeMode mode, const std::vector<ForwardRequest>& batch,
              Backend& backend)
      : c_(config), w_(weights), rope_(rope), kv_sources_(kv_sources), mode_(mode), batch_(batch), b_(backend) {}

  std::vector<ForwardResult> run() {
    layers_ = validate_forward_batch(batch_, c_);
    plan_sequences();
    allocate_results();
    if (n_tokens_ == 0) return std::move(results_);
    // One token per sequence: a decoding step. Its matmuls are batch-invariant, so a sequence decodes to the
    // same tokens whatever is decoded beside it.
    const bool decoding_step =
        std::all_of(batch_.begin(), batch_.end(), [](const ForwardRequest& r) { return r.tokens.size() == 1; });
    batching_ = decoding_step ? Batching::Invariant : Batching::Shared;
    allocate_scratch();
    embed_tokens();
    const int first = c_.condensed.span_first(), last = c_.condensed.span_last();
    const bool span = first <= last && first < layers_;
    KVF_CHECK(!span || last < layers_, "forward: the batch stops after layer ", layers_ - 1,
              ", inside the condensed-KV span of layers ", first, "-", last, " (run every layer up to ", last, ")");
    // Without logits or hidden states nothing reads the last layer's output (a selector's probe pass): that layer
    // runs only as far as its KV and probes need.
    const bool output_read = !logit_rows_.empty() || std::any_of(batch_.begin(), batch_.end(), [](const auto& r) {
      return r.return_hidden;
    });
    const auto run_plain_layer = [&](int l) { run_layer(l, output_read || l + 1 < layers_); };
    for (int l = 0; l < (span ? first : layers_); ++l) run_plain_layer(l);
    if (span) {
      run_condensed_span(first, last);
      for (int l = last + 1; l < layers_; ++l) run_plain_layer(l);
    }
    share_returned_kv();
    return_hidden_states();
    compute_logits();
    return std::move(results_);
  }

 private:
  int source_of(int layer) const { return kv_sources_.empty() ? layer : kv_sources_[layer]; }

  // With `output_used` false the layer's output is never read: attention runs only for sequences that probe the
  // layer, the others just return their KV, and the output projection and MLP are skipped.
  void run_layer(int l, bool output_used = true) {
    const int src = source_of(l);
    project_qkv(l, src);
    for (size_t s = 0; s < batch_.size(); ++s) {
      const std::vector<int>& probes = batch_[s].probe_layers;
      if (output_used || std::find(probes.begin(), probes.end(), l) != probes.end())
        attend_sequence(l, src, s);
      else
        return_layer_kv(l, src, s);
    }
    if (!in_place_.empty()) b_.attention_blocks_many(in_place_);  // together: short sequences fill a GPU jointly
    in_place_.clear();
    if (output_used) output_and_mlp(l);
  }

  // Layers first..last of a condensed-KV model, where lower layers read the KV a higher layer writes: each pass
  // starts again from the hidden state entering `first` and reads the KV the previous pass left (zeros at first).
  void run_condensed_span(int first, int last) {
    int passes = 1;
    for (const ForwardRequest& r : batch_)
      passes = std::max(passes, condensed_passes(c_.condensed, (int64_t)r.tokens.size(), r.condensed_passes));
    Tensor entering = b_.empty(DType::F32, x_.shape);
    b_.copy(x_, entering);
    for (int pass = 0; pass < passes; ++pass) {
      if (pass > 0) b_.copy(entering, x_);
      for (int l = first; l <= last; ++l) run_layer(l);
    }
  }

  // A layer that reads another layer's KV returns that layer's K and V (as it stood at the end of the call).
  void share_returned_kv() {
    for (size_t s = 0; s < batch_.size(); ++s) {
      if (!batch_[s].return_kv) continue;
      KvSegment& kv = results_[s].kv;
      for (int l = 0; l < layers_; ++l) {
        const int src = source_of(l);
        if (src == l || src >= layers_) continue;
        kv.k[l] = kv.k[src];
        kv.v[l] = kv.v[src];
      }
    }
  }

  // Each sequence's plan, and the batch's tokens and logit rows concatenated.
  void plan_sequences() {
    for (const ForwardRequest& r : batch_) {
      plans_.push_back(plan_sequence(r, (int64_t)tokens_.size(), c_, b_));
      for (int32_t row : r.logit_rows) logit_rows_.push_back((int32_t)tokens_.size() + row);
      tokens_.insert(tokens_.end(), r.tokens.begin(), r.tokens.end());
    }
    n_tokens_ = (int64_t)tokens_.size();
  }

  void allocate_results() {
    results_.resize(batch_.size());
    for (size_t s = 0; s < batch_.size(); ++s) {
      ForwardResult& res = results_[s];
      if (batch_[s].return_kv) {
        res.kv.positions = batch_[s].positions;
        for (int l = 0; l < layers_; ++l) {
          const bool own = source_of(l) == l;  // the others share their source's (share_returned_kv)
          res.kv.k.push_back(own ? b_.empty(DType::F32, {plans_[s].n, c_.n_kv_heads, c_.head_dim}) : Tensor());
          res.kv.v.push_back(own ? b_.empty(DType::F32, {plans_[s].n, c_.n_kv_heads, c_.head_dim}) : Tensor());
        }
      }
      res.attn_colsum.assign(batch_[s].probe_layers.size(), std::vector<float>(plans_[s].n_slots, 0.0f));
    }
  }

  void allocate_scratch() {
    const int64_t N = n_tokens_, H = c_.n_heads, KV = c_.n_kv_heads, D = c_.head_dim;
    x_ = b_.empty(DType::F32, {N, c_.hidden});
    const DType act = matmul_input_dtype();
    xn_ = b_.empty(act, {N, c_.hidden});
    q_ = b_.empty(DType::F32, {N, H, D});
    k_ = b_.empty(DType::F32, {N, KV, D});
    v_ = b_.empty(DType::F32, {N, KV, D});
    attn_ = b_.empty(DType::F32, {N, H, D});
    proj_ = b_.empty(DType::F32, {N, c_.hidden});
    gate_ = b_.empty(act, {N, c_.ffn});  // SwiGLU reads gate and up and writes the down projection's input in place
    up_ = b_.empty(act, {N, c_.ffn});
    // KV sharing: a source layer's K and V of the computed tokens are kept for the layers that read them; zeros
    // until the source has run (a condensed-KV span's first pass reads them, DESIGN.md §3).
    shared_k_.resize(layers_);
    shared_v_.resize(layers_);
    for (int l = 0; l < layers_; ++l) {
      const int src = source_of(l);
      if (src == l || src >= layers_ || shared_k_[src].defined()) continue;
      shared_k_[src] = b_.empty(DType::F32, {N, KV, D});
      shared_v_[src] = b_.empty(DType::F32, {N, KV, D});
      if (src > l) {  // read before its source runs: only condensed-KV spans
        const std::vector<float> zeros((size_t)(N * KV * D), 0.0f);
        b_.copy_from_host(shared_k_[src], zeros.data(), zeros.size() * sizeof(float));
        b_.copy_from_host(shared_v_[src], zeros.data(), zeros.size() * sizeof(float));
      }
    }
  }

  // The dtype of the matmuls' inputs that the norms and SwiGLU write (and of the gate and up products SwiGLU
  // reads): the backend's for these weights where every layer's projections agree on it, else f32.
  DType matmul_input_dtype() const {
    const DType want = b_.matmul_input_dtype(w_.layers[0].wq);
    for (const LlamaLayerWeights& w : w_.layers)
      for (const Tensor* t : {&w.wq, &w.wk, &w.wv, &w.w_gate, &w.w_up, &w.w_down})
        if (t->defined() && b_.matmul_input_dtype(*t) != want) return DType::F32;
    return want;
  }

  void embed_tokens() { b_.embedding(w_.token_embd, upload_i32(b_, tokens_), x_); }

  // Q of every token; K and V too unless the layer reads another layer's (KV sharing), whose are kept.
  void project_qkv(int l, int src) {
    const LlamaLayerWeights& w = w_.layers[l];
    const int64_t N = n_tokens_;
    Tensor qm = q_.reshaped({N, c_.n_heads * c_.head_dim});
    Tensor km = k_.reshaped({N, c_.n_kv_heads * c_.head_dim}), vm = v_.reshaped({N, c_.n_kv_heads * c_.head_dim});
    b_.rms_norm(x_, w.attn_norm, c_.norm_eps, xn_);
    const auto bias = [](const Tensor& b) { return b.defined() ? &b : nullptr; };
    if (src != l) return b_.matmul_nt_many_bias(xn_, {&w.wq}, {bias(w.bq)}, {&qm}, batching_);
    b_.matmul_nt_many_bias(xn_, {&w.wq, &w.wk, &w.wv}, {bias(w.bq), bias(w.bk), bias(w.bv)}, {&qm, &km, &vm},
                           batching_);
    if (shared_k_[l].defined()) {
      b_.copy(k_, shared_k_[l]);
      b_.copy(v_, shared_v_[l]);
    }
  }

  // Sequence s's computed K and V of layer l into its result, when it asks for them (a layer computing its own KV).
  void return_layer_kv(int l, int src, size_t s) {
    if (!batch_[s].return_kv || src != l) return;
    const SequencePlan& p = plans_[s];
    b_.copy(k_.rows(p.offset, p.n), results_[s].kv.k[l]);
    b_.copy(v_.rows(p.offset, p.n), results_[s].kv.v[l]);
  }

  // Attention of sequence s in layer l: its computed tokens over its kept view rows and themselves.
  void attend_sequence(int l, int src, size_t s) {
    const ForwardRequest& r = batch_[s];
    SequencePlan& p = plans_[s];
    const Tensor& k_layer = src == l ? k_ : shared_k_[src];
    const Tensor& v_layer = src == l ? v_ : shared_v_[src];
    const Tensor ks = k_layer.rows(p.offset, p.n), vs = v_layer.rows(p.offset, p.n);
    return_layer_kv(l, src, s);
    Tensor qs = q_.rows(p.offset, p.n);
    b_.rope_inplace(qs, p.pos, rope_);
    // A layer that masks its own token reads only keys before it: a query at p is bounded as if at p - 1.
    const Tensor& mask_pos = c_.condensed.masks_diagonal(l) ? p.pos_before : p.pos;
    const auto probe = std::find(r.probe_layers.begin(), r.probe_layers.end(), l);
    // The fast mode without a probe: attention reads the view's rotated keys where they lie instead of a staged
    // copy of every key, for every such sequence of the layer in one call (run_layer).
    if (mode_ == ComputeMode::Fast && probe == r.probe_layers.end()) {
      BlockAttentionArgs args;
      args.q = qs;
      args.q_pos = mask_pos;
      args.out = attn_.rows(p.offset, p.n);
      args.scale = 1.0f / std::sqrt((float)c_.head_dim);
      args.bf16_inputs = true;
      stage_keys(r, p, src, ks, vs, &args.blocks);
      in_place_.push_back(std::move(args));
      return;
    }
    stage_keys(r, p, src, ks, vs, nullptr);
    AttentionArgs args = attention_args(p, qs, mask_pos);
    if (probe != r.probe_layers.end()) attach_probe(p, args);
    b_.attention(args);
    if (probe != r.probe_layers.end())
      collect_probe(p, args, results_[s].attn_colsum[probe - r.probe_layers.begin()]);
  }

  // Keys: the kept view rows, then the computed tokens, staged in p.keys_k/keys_v; RoPE applied at each row's
  // position as it is read, except for segments whose keys were rotated once already (each run of unrotated rows
  // in one call). With `blocks`, rotated segments are not copied but listed to be read in place, and the staged
  // rows are listed too, all in view order. The segments' rows are gathered in one call (tens of chunks per layer),
  // made before a run of unrotated rows is rotated and at the end.
  void stage_keys(const ForwardRequest& r, SequencePlan& p, int src, const Tensor& ks, const Tensor& vs,
                  std::vector<KeyBlock>* blocks) {
    int64_t at = 0, unroped_from = 0;
    std::vector<RowGather> gathers;
    const auto gather_pending = [&] {
      if (!gathers.empty()) b_.gather_many(gathers, p.keys_k, p.keys_v, nullptr);
      gathers.clear();
    };
    const auto staged_block = [&](int64_t from, int64_t count, const Tensor& pos) {
      if (blocks && count > 0) blocks->push_back({p.keys_k.rows(from, count), p.keys_v.rows(from, count), {}, pos});
    };
    const auto rope_pending = [&] {
      if (at == unroped_from) return;
      gather_pending();
      Tensor keys = p.keys_k.rows(unroped_from, at - unroped_from);
      const Tensor pos = p.view_pos.rows(unroped_from, at - unroped_from);
      b_.rope_inplace(keys, pos, rope_);
      staged_block(unroped_from, at - unroped_from, pos);
    };
    for (size_t i = 0; i < r.view.size(); ++i) {
      const KvSegment& seg = *r.view[i];
      const SequencePlan::Kept& kept = p.kept[i];
      const bool roped = !seg.k_roped.empty() && seg.k_roped[src].defined();
      if (roped) rope_pending();
      if (roped && blocks) {
        if (kept.count > 0)
          blocks->push_back({seg.k_roped[src], seg.v[src], kept.count == seg.rows() ? Tensor() : kept.rows,
                             p.view_pos.rows(at, kept.count)});
      } else if (seg.encoded) {
        Tensor kd = p.keys_k.rows(at, kept.count), vd = p.keys_v.rows(at, kept.count);
        decode_into(*seg.encoded, src, kept.encoded_rows, kd, vd);
      } else {
        gathers.push_back({roped ? seg.k_roped[src] : seg.k[src], seg.v[src], kept.rows, {}, at, kept.count});
      }
      at += kept.count;
      if (roped) unroped_from = at;
    }
    rope_pending();
    gather_pending();
    Tensor own_k = p.keys_k.rows(p.n_view_kept, p.n), own_v = p.keys_v.rows(p.n_view_kept, p.n);
    b_.copy(ks, own_k);
    b_.copy(vs, own_v);
    b_.rope_inplace(own_k, p.pos, rope_);
    staged_block(p.n_view_kept, p.n, p.pos);
  }

  // Low-bit stored rows decoded where attention reads them: straight into the staged rows on the host, through a
  // host buffer for a device.
  void decode_into(const LowBitRows& enc, int layer, const std::vector<int32_t>& rows, Tensor& k, Tensor& v) {
    const int64_t n = (int64_t)rows.size();
    if (n == 0) return;
    if (k.device() == Device::Host) return enc.decode(layer, rows.data(), n, k.data<float>(), v.data<float>());
    decoded_k_.resize((size_t)(n * enc.layer_width()));
    decoded_v_.resize(decoded_k_.size());
    enc.decode(layer, rows.data(), n, decoded_k_.data(), decoded_v_.data());
    b_.copy_from_host(k, decoded_k_.data(), decoded_k_.size() * sizeof(float));
    b_.copy_from_host(v, decoded_v_.data(), decoded_v_.size() * sizeof(float));
  }

  // The staged keys, gathered into position order first when they are out of order (see SequencePlan).
  AttentionArgs attention_args(SequencePlan& p, const Tensor& qs, const Tensor& mask_pos) {
    AttentionArgs args;
    args.q = qs;
    args.q_pos = mask_pos;
    args.k = p.keys_k;
    args.v = p.keys_v;
    args.k_pos = p.key_pos;
    if (p.reorder) {
      b_.gather_rows(p.keys_k, p.key_order, p.ordered_k);
      b_.gather_rows(p.keys_v, p.key_order, p.ordered_v);
      args.k = p.ordered_k;
      args.v = p.ordered_v;
      args.k_pos = p.ordered_pos;
    }
    args.out = attn_.rows(p.offset, p.n);
    args.scale = 1.0f / std::sqrt((float)c_.head_dim);
    args.bf16_inputs = mode_ == ComputeMode::Fast;
    return args;
  }

  void attach_probe(const SequencePlan& p, AttentionArgs& args) {
    args.probe_rows = p.probe_rows;
    args.probe_colsum = b_.empty(DType::F32, {(int64_t)p.key_slot.size()});
    const std::vector<float> zeros(p.key_slot.size(), 0.0f);
    b_.copy_from_host(args.probe_colsum, zeros.data(), zeros.size() * sizeof(float));
  }

  // Column sums back to the caller's key order: view rows in segment order (superseded ones stay 0), then tokens.
  void collect_probe(const SequencePlan& p, const AttentionArgs& args, std::vector<float>& out) {
    std::vector<float> colsum(p.key_slot.size());
    b_.copy_to_host(args.probe_colsum, colsum.data(), colsum.size() * sizeof(float));
    for (size_t j = 0; j < colsum.size(); ++j) out[p.key_slot[j]] = colsum[j];
  }

  // The attention output projection and the SwiGLU MLP, each added to the residual stream.
  void output_and_mlp(int l) {
    const LlamaLayerWeights& w = w_.layers[l];
    b_.matmul_nt(attn_.reshaped({n_tokens_, c_.n_heads * c_.head_dim}), w.wo, proj_, batching_);
    b_.add_inplace(x_, proj_);
    b_.rms_norm(x_, w.ffn_norm, c_.norm_eps, xn_);
    b_.matmul_nt_many(xn_, {&w.w_gate, &w.w_up}, {&gate_, &up_}, batching_);
    b_.swiglu(gate_, up_, gate_);
    b_.matmul_nt(gate_, w.w_down, proj_, batching_);
    b_.add_inplace(x_, proj_);
  }

  void return_hidden_states() {
    for (size_t s = 0; s < batch_.size(); ++s) {
      if (!batch_[s].return_hidden) continue;
      std::vector<float>& hidden = results_[s].hidden;
      hidden.resize((size_t)(plans_[s].n * c_.hidden));
      b_.copy_to_host(x_.rows(plans_[s].offset, plans_[s].n), hidden.data(), hidden.size() * sizeof(float));
    }
  }

  // Logits only for the rows asked for: the final norm and the vocabulary projection are per row.
  void compute_logits() {
    const int64_t L = (int64_t)logit_rows_.size();
    if (L == 0) return;
    Tensor picked = b_.empty(DType::F32, {L, c_.hidden});
    b_.gather_rows(x_, upload_i32(b_, logit_rows_), picked);
    Tensor normed = b_.empty(DType::F32, {L, c_.hidden});
    b_.rms_norm(picked, w_.output_norm, c_.norm_eps, normed);
    Tensor logits = b_.empty(DType::F32, {L, c_.vocab});
    b_.matmul_nt(normed, w_.output, logits, batching_);
    std::vector<float> host((size_t)(L * c_.vocab));
    b_.copy_to_host(logits, host.data(), host.size() * sizeof(float));
    size_t at = 0;
    for (size_t s = 0; s < batch_.size(); ++s) {
      const size_t count = batch_[s].logit_rows.size() * (size_t)c_.vocab;
      results_[s].logits.assign(host.begin() + at, host.begin() + at + count);
      at += count;
    }
  }

  const LlamaConfig& c_;
  const LlamaWeights& w_;
  const RopeSpec& rope_;
  const std::vector<int32_t>& kv_sources_;
  const ComputeMode mode_;
  const std::vector<ForwardRequest>& batch_;
  Backend& b_;
  Batching batching_ = Batching::Shared;  // Invariant for a decoding step (run)

  int layers_ = 0;
  std::vector<SequencePlan> plans_;
  std::vector<int32_t> tokens_, logit_rows_;
  int64_t n_tokens_ = 0;
  std::vector<ForwardResult> results_;
  // [tokens, ...] activations of the current layer; xn_ (the norms' output) and the MLP's gate_ and up_ in the
  // dtype the matmuls read (matmul_input_dtype)
  Tensor x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
  std::vector<Tensor> shared_k_, shared_v_;              // per source layer read by later layers
  std::vector<float> decoded_k_, decoded_v_;             // decode_into's host buffers for a device backend
  std::vector<BlockAttentionArgs> in_place_;              // the layer's sequences whose attention reads keys in place
};

}  // namespace

Decoder::Decoder(LlamaConfig config, LlamaWeights weights, Backend& backend, ComputeMode mode)
    : config_(std::move(config)), weights_(std::move(weights)), backend_(backend), mode_(mode),
      kv_sources_(config_.condensed.kv_layer) {
  rope_.rotary_dim = config_.rotary_dim;
  rope_.pairing = config_.rope_pairing;
  if (config_.rope_scaling == "yarn") {
    YarnScaling yarn;
    yarn.factor = config_.rope_scaling_factor;
    yarn.original_context = config_.rope_original_context;
    yarn.attn_factor = config_.rope_attn_factor;
    rope_.inv_freq = std::make_shared<const std::vector<float>>(
        rope_yarn_inv_frequencies(config_.rotary_dim, config_.rope_theta, yarn, weights_.rope_freq_factors));
    rope_.attn_factor = rope_yarn_magnitude(yarn);
  } else {
    rope_.inv_freq = std::make_shared<const std::vector<float>>(rope_inv_frequencies(
        config_.rotary_dim, config_.rope_theta, config_.rope_scaling_factor, weights_.rope_freq_factors));
    rope_.attn_factor = config_.rope_attn_factor;
  }
  // The table covers the positions real prompts use; a file may declare a context of 2^31 positions, and the
  // backend computes positions past the table from inv_freq.
  rope_.table_positions = std::min(config_.context_length, kRopeTablePositions);
  rope_.cos_sin = std::make_shared<const std::vector<float>>(rope_cos_sin_table(*rope_.inv_freq, rope_.table_positions,
                                                                                rope_.attn_factor));
}

std::unique_ptr<Decoder> Decoder::load(const std::string& path, Backend& backend, ComputeMode mode) {
  const auto file = open_decoder_file(path);
  LlamaConfig config = llama_config_from_gguf(*file);
  LlamaWeights weights = load_llama_weights(*file, config, backend, mode);
  return std::unique_ptr<Decoder>(new Decoder(std::move(config), std::move(weights), backend, mode));
}

std::unique_ptr<Decoder> Decoder::with_kv_sources(std::vector<int32_t> sources) const {
  const int n = config_.n_layers;
  KVF_CHECK((int)sources.size() == n, "KV source map has ", sources.size(), " entries, the model ", n, " layers");
  if (config_.condensed.active()) {
    KVF_CHECK(sources == config_.condensed.kv_layer, "a condensed-KV (LCKV) model reads the KV layers its config "
              "names; it takes no other KV source map");
    return std::unique_ptr<Decoder>(new Decoder(*this));
  }
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

KvSegment Decoder::with_roped_keys(const KvSegment& seg) const {
  return std::move(with_roped_keys(std::vector<KvSegment>{seg})[0]);
}

std::vector<KvSegment> Decoder::with_roped_keys(const std::vector<KvSegment>& segs) const {
  std::vector<size_t> rotated;  // the layers that hold their own keys (the others read their source layer's)
  for (size_t l = 0; l < (size_t)config_.n_layers; ++l)
    if (kv_sources_.empty() || kv_sources_[l] == (int32_t)l) rotated.push_back(l);
  // One upload of every segment's positions and one allocation for every segment's rotated keys of every layer:
  // a query places tens of chunks of tens of layers each.
  std::vector<int32_t> positions;
  int64_t key_rows = 0;
  std::vector<KvSegment> out;
  for (const KvSegment& seg : segs) {
    KVF_CHECK(seg.layers() == config_.n_layers, "with_roped_keys: segment has ", seg.layers(), " layers, the model ",
              config_.n_layers);
    out.push_back(seg);
    if (seg.encoded) continue;  // decoded into the staged keys and rotated there, layer by layer
    out.back().k_roped.assign(seg.k.size(), Tensor());
    positions.insert(positions.end(), seg.positions.begin(), seg.positions.end());
    key_rows += (int64_t)rotated.size() * seg.rows();
  }
  if (key_rows == 0) return out;
  const Tensor all_pos = upload_i32(backend_, positions);
  const Tensor all = backend_.empty(DType::F32, {key_rows, config_.n_kv_heads, config_.head_dim});
  int64_t pos_at = 0, key_at = 0;
  for (KvSegment& seg : out) {
    const int64_t rows = seg.rows();
    if (seg.encoded || rows == 0) continue;
    const Tensor pos = all_pos.rows(pos_at, rows);
    pos_at += rows;
    // One rotation where the layers' keys lie one after the other (as a stored chunk's do).
    const Tensor& first = seg.k[rotated.front()];
    const size_t layer_bytes = first.nbytes();
    bool consecutive = true;
    for (size_t i = 0; i < rotated.size(); ++i) {
      const Tensor& k = seg.k[rotated[i]];
      consecutive = consecutive && k.storage == first.storage && k.shape == first.shape &&
                    k.offset == first.offset + i * layer_bytes;
    }
    Tensor mine = all.rows(key_at, (int64_t)rotated.size() * rows);
    key_at += mine.dim(0);
    if (consecutive) {
      Tensor keys = first;
      keys.shape[0] = mine.dim(0);
      backend_.rope_into(keys, mine, pos, rope_);
    }
    for (size_t i = 0; i < rotated.size(); ++i) {
      Tensor& k = seg.k_roped[rotated[i]];
      k = mine.rows((int64_t)i * rows, rows);
      if (!consecutive) backend_.rope_into(seg.k[rotated[i]], k, pos, rope_);
    }
  }
  return out;
}

std::vector<ForwardResult> Decoder::forward(const std::vector<ForwardRequest>& batch) const {
  return ForwardPass(config_, weights_, rope_, kv_sources_, mode_, batch, backend_).run();
}

}  // namespace kvf
