#include "fusion/fused_prefill.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/stopwatch.h"
#include "fusion/token_selection.h"

namespace kvf {
namespace {

using Clock = std::chrono::steady_clock;


// A set of computed tokens in position order, and what each one is.
struct ComputedSet {
  ForwardRequest request;
  std::vector<int64_t> context_index;   // per computed token: its index in the context, -1 for links and Q
  std::vector<int32_t> question_rows;   // indices of Q's tokens in the request
};

ComputedSet computed_set(const RagLayout& l, const std::vector<int64_t>& context, bool links, bool question) {
  struct Entry {
    int32_t position, token;
    int64_t context_index;
    bool question;
  };
  std::vector<Entry> entries;
  for (int64_t i : context) entries.push_back({l.context_positions[i], l.context_tokens[i], i, false});
  if (links)
    for (size_t i = 0; i < l.link_tokens.size(); ++i)
      entries.push_back({l.link_positions[i], l.link_tokens[i], -1, false});
  if (question)
    for (size_t i = 0; i < l.question_tokens.size(); ++i)
      entries.push_back({l.question_positions[i], l.question_tokens[i], -1, true});
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.position < b.position; });
  ComputedSet set;
  for (const Entry& e : entries) {
    if (e.question) set.question_rows.push_back((int32_t)set.request.tokens.size());
    set.request.tokens.push_back(e.token);
    set.request.positions.push_back(e.position);
    set.context_index.push_back(e.context_index);
  }
  return set;
}

std::vector<int64_t> all_context(const RagLayout& l) {
  std::vector<int64_t> all((size_t)l.n_context());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// Per context token: its stored row as (chunk, row), or (-1, -1) when its chunk keeps no row at that position.
std::vector<std::pair<int32_t, int64_t>> stored_rows(const FusionInputs& in) {
  std::vector<std::pair<int32_t, int64_t>> where((size_t)in.layout.n_context(), {-1, -1});
  for (size_t c = 0; c < in.chunks.size(); ++c) {
    const RagLayout::Chunk& span = in.layout.chunks[c];
    const KvSegment& seg = *in.chunks[c];
    for (int64_t r = 0; r < seg.rows(); ++r) {
      const int32_t p = seg.positions[r];
      KVF_CHECK(p >= 0 && p < span.tokens, "chunk ", c, ": stored row ", r, " has in-chunk position ", p,
                " outside its ", span.tokens, " tokens");
      where[(size_t)(span.first_index + p)] = {(int32_t)c, r};
    }
  }
  return where;
}

// The early layer cacheblend and a3 look at: layer 1, or in a condensed-KV model the lowest layer above 0 that
// computes its own KV (a lower condensed layer's KV is a higher layer's, which the probe must run to anyway).
int selector_layer(const Decoder& d, const char* method) {
  const LlamaConfig& c = d.config();
  KVF_CHECK(c.n_layers >= 2, method, " needs a model of at least 2 layers");
  for (int l = 1; l < c.n_layers; ++l)
    if (c.condensed.source(l) == l) return l;
  fail(method, ": no layer above 0 computes its own KV in this condensed-KV model");
}

// cacheblend: |V_fresh - V_stored| at the selector layer per context token; a token without a stored row scores
// highest.
std::vector<float> cacheblend_scores(const Decoder& d, const FusionInputs& in) {
  const LlamaConfig& c = d.config();
  const int layer = selector_layer(d, "cacheblend");
  ComputedSet probe = computed_set(in.layout, all_context(in.layout), true, false);
  probe.request.view = {in.system};
  probe.request.run_layers = layer + 1;
  probe.request.return_kv = true;
  const ForwardResult out = d.forward(probe.request);
  const int64_t width = (int64_t)c.n_kv_heads * c.head_dim;
  std::vector<float> fresh((size_t)(probe.request.tokens.size() * width));
  d.backend().copy_to_host(out.kv.v[layer], fresh.data(), fresh.size() * sizeof(float));
  std::vector<std::vector<float>> stored(in.chunks.size());
  std::vector<float> unused_k;
  for (size_t ch = 0; ch < in.chunks.size(); ++ch) in.chunks[ch]->layer_to_host(layer, d.backend(), unused_k, stored[ch]);
  const auto where = stored_rows(in);
  std::vector<float> scores((size_t)in.layout.n_context(), 0.0f);
  for (size_t row = 0; row < probe.context_index.size(); ++row) {
    const int64_t i = probe.context_index[row];
    if (i < 0) continue;
    const auto [ch, r] = where[(size_t)i];
    scores[(size_t)i] = ch < 0 ? INFINITY
                               : l2_deviation(&fresh[row * width], &stored[(size_t)ch][(size_t)(r * width)], 1,
                                              width)[0];
  }
  return scores;
}

// a3: the selector layer's attention of Q's rows on each context token, every token computed up to that layer.
std::vector<float> a3_scores(const Decoder& d, const FusionInputs& in) {
  const int layer = selector_layer(d, "a3");
  ComputedSet probe = computed_set(in.layout, all_context(in.layout), true, true);
  probe.request.view = {in.system};
  probe.request.run_layers = layer + 1;
  probe.request.probe_layers = {layer};
  probe.request.probe_rows = probe.question_rows;
  const ForwardResult out = d.forward(probe.request);
  const std::vector<float>& colsum = out.attn_colsum[0];  // S's rows, then the computed tokens
  std::vector<float> scores((size_t)in.layout.n_context(), 0.0f);
  for (size_t row = 0; row < probe.context_index.size(); ++row)
    if (probe.context_index[row] >= 0)
      scores[(size_t)probe.context_index[row]] = colsum[(size_t)in.system->rows() + row];
  return scores;
}

// fusion: the last layer's attention of Q's rows, computed over the stored KV, on each stored context row, summed
// over Q's rows and the heads.
std::vector<float> fusion_scores(const Decoder& d, const FusionInputs& in, const std::vector<KvSegment>& placed) {
  ComputedSet probe = computed_set(in.layout, {}, true, true);
  probe.request.view = {in.system};
  for (const KvSegment& seg : placed) probe.request.view.push_back(&seg);
  probe.request.probe_layers = {d.config().n_layers - 1};
  probe.request.probe_rows = probe.question_rows;
  const ForwardResult out = d.forward(probe.request);
  const std::vector<float>& colsum = out.attn_colsum[0];  // S's rows, then each chunk's rows, then computed
  std::vector<float> scores((size_t)in.layout.n_context(), 0.0f);
  int64_t slot = in.system->rows();
  for (size_t ch = 0; ch < in.chunks.size(); ++ch)
    for (int64_t r = 0; r < in.chunks[ch]->rows(); ++r, ++slot)
      scores[(size_t)(in.layout.chunks[ch].first_index + in.chunks[ch]->positions[r])] = colsum[(size_t)slot];
  return scores;
}

}  // namespace

std::vector<const KvSegment*> FusedPrefill::base_view() const {
  std::vector<const KvSegment*> view{system};
  for (const KvSegment& seg : placed) view.push_back(&seg);
  return view;
}

FusedPrefill fused_prefill(const Decoder& d, const FusionInputs& in, FusionMethod method, double recompute,
                           SelectionMemo* memo) {
  const RagLayout& l = in.layout;
  KVF_CHECK(in.system && in.system->rows() == l.system_rows, "the system prefix KV has ",
            in.system ? in.system->rows() : 0, " rows, the layout ", l.system_rows);
  KVF_CHECK(method == FusionMethod::Full || in.chunks.size() == l.chunks.size(), in.chunks.size(),
            " chunk KVs for ", l.chunks.size(), " chunks");
  FusedPrefill res;
  res.system = in.system;
  const auto stage = [&](const char* name) {
    if (in.on_stage) in.on_stage(name);
  };
  stage("place");
  // The chunks at their prompt positions, keys rotated once for every pass and decoding step that reads them.
  const auto t_place = Clock::now();
  if (method != FusionMethod::Full) {
    std::vector<KvSegment> at_prompt_positions;
    for (size_t c = 0; c < in.chunks.size(); ++c)
      at_prompt_positions.push_back(placed_at(*in.chunks[c], l.chunks[c].start));
    res.placed = d.with_roped_keys(at_prompt_positions);
  }
  const double place_ms = ms_since(t_place);
  stage("select");
  const auto t_select = Clock::now();
  double scored_ms = -1;  // the scores' computation time, when the selection read scores
  if (method == FusionMethod::Full) {
    res.selected = all_context(l);
  } else {
    KVF_CHECK(in.exact_context >= 0 && in.exact_context <= l.n_context(), "exact context tokens ",
              in.exact_context, " outside the ", l.n_context(), " of the context");
    const int64_t count = method == FusionMethod::Reuse ? 0 : recompute_count(recompute, l.n_context());
    if (count == l.n_context()) {
      res.selected = all_context(l);  // the scores cannot change the set
    } else if (count > 0) {
      SelectionMemo local;
      SelectionMemo& m = memo ? *memo : local;
      auto known = m.by_method.find(method);
      const bool shared = known != m.by_method.end();
      if (!shared) {
        std::vector<float> scores = method == FusionMethod::CacheBlend ? cacheblend_scores(d, in)
                                    : method == FusionMethod::A3       ? a3_scores(d, in)
                                                                       : fusion_scores(d, in, res.placed);
        known = m.by_method.emplace(method, SelectionMemo::Scores{std::move(scores), ms_since(t_select)}).first;
      }
      std::vector<float> scores = known->second.scores;
      std::fill_n(scores.begin(), in.exact_context, -INFINITY);  // ranked below every other token's
      const int64_t budget = std::min(count, l.n_context() - in.exact_context);
      res.selected = top_scored(scores, budget);
      scored_ms = known->second.ms;
      if (shared) res.shared_select_ms = scored_ms;
    }
    if (in.recompute_exact_context && count < l.n_context()) {
      // Ranked below every other token, the exact ones are never among the selected: they go in front, in order.
      std::vector<int64_t> exact((size_t)in.exact_context);
      std::iota(exact.begin(), exact.end(), int64_t{0});
      res.selected.insert(res.selected.begin(), exact.begin(), exact.end());
    }
  }
  res.select_ms = scored_ms >= 0 ? scored_ms : ms_since(t_select);

  stage("prefill");
  const auto t_prefill = Clock::now();
  ComputedSet pass = computed_set(l, res.selected, true, true);
  pass.request.view = res.base_view();
  pass.request.logit_rows = {pass.question_rows.back()};
  pass.request.return_kv = true;
  ForwardResult out = d.forward(pass.request);
  res.logits = std::move(out.logits);
  res.computed = std::move(out.kv);
  res.prefill_ms = place_ms + ms_since(t_prefill);
  return res;
}

}  // namespace kvf
