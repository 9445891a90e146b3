// kvrun's token selectors (DESIGN.md §6) and KVLink link-token visibility, checked by brute force: every score is
// recomputed from the papers' definitions with the double-precision reference decoder (support/reference_decoder),
// whose only engine input is the stored chunk KV itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <random>
#include <sstream>

#include "support/test_values.h"
#include "core/error.h"
#include "fusion/fused_prefill.h"
#include "fusion/rag_layout.h"
#include "fusion/token_selection.h"
#include "model/decoder.h"
#include "support/reference_decoder.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using test::iota_positions;
using test::max_abs_diff;
using test::random_tokens;

constexpr double kRatio = 0.3;
// Engine scores are f32 sums, the reference's f64: two tokens whose reference scores agree to this relative
// distance may come out in either order, so a selection may differ only there (at the boundary of the top set).
constexpr double kTieRelative = 1e-5;
// Engine (f32) logits against the reference's: decoder_forward_test's bound for a prefill of this length. The
// largest |logit| here is ~20, so this is 1e-5 relative; the differences measured are <= 3e-5.
constexpr double kLogitTolerance = 2e-4;

std::vector<int32_t> iota_from(int n, int32_t start) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::vector<double> host_doubles(Backend& b, const Tensor& t) {
  std::vector<float> f((size_t)t.numel());
  b.copy_to_host(t, f.data(), f.size() * sizeof(float));
  return {f.begin(), f.end()};
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// The top `count` scores by the papers' rule (highest first, the lower index on equal scores), ascending.
std::vector<int64_t> reference_top(const std::vector<double>& scores, int64_t count) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  order.resize((size_t)count);
  std::sort(order.begin(), order.end());
  return order;
}

// A tiny 4-layer model and a RAG prompt [S][C1 L1][C2 L2][C3 L3][Q] with the chunks' independent KV:
// each chunk computed after S alone (FusionRAG eq. 5) and stored at in-chunk positions 0..n-1.
struct RagSetup {
  RagSetup(const std::string& arch, int n_links) {
    spec.arch = arch;
    spec.n_layers = 4;
    path = test::write_tiny_model(spec);
    backend = make_cpu_backend();
    decoder = Decoder::load(path, *backend, ComputeMode::F32);  // held to the double-precision reference
    const int vocab = decoder->config().vocab;
    std::mt19937 rng(2024);
    std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
    auto tokens = [&](int n) {
      std::vector<int32_t> t(n);
      for (auto& x : t) x = pick(rng);
      return t;
    };
    system = tokens(4);
    for (int n : {9, 14, 11}) chunks.push_back(tokens(n));
    question = tokens(5);
    for (int i = 0; i < n_links; ++i) links.push_back(vocab - 1 - i);
    layout = make_rag_layout((int32_t)system.size(), chunks, links, question, decoder->config().context_length);

    const int32_t s = (int32_t)system.size();
    system_kv = engine_kv(system, iota_from(s, 0), {});
    for (const auto& c : chunks) {
      KvSegment kv = engine_kv(c, iota_from((int)c.size(), s), {&system_kv});
      kv.positions = iota_from((int)c.size(), 0);
      stored.push_back(std::move(kv));
    }
    inputs.system = &system_kv;
    for (const KvSegment& kv : stored) inputs.chunks.push_back(&kv);
    inputs.layout = layout;
  }

  KvSegment engine_kv(const std::vector<int32_t>& t, const std::vector<int32_t>& p,
                      std::vector<const KvSegment*> view) const {
    ForwardRequest r;
    r.tokens = t;
    r.positions = p;
    r.view = std::move(view);
    r.return_kv = true;
    return decoder->forward(r).kv;
  }

  int n_layers() const { return decoder->config().n_layers; }
  int width() const { return decoder->config().n_kv_heads * decoder->config().head_dim; }

  // The whole prompt in position order (positions 0..end-1).
  std::vector<int32_t> prompt() const {
    std::vector<int32_t> t((size_t)layout.end, -1);
    std::copy(system.begin(), system.end(), t.begin());
    for (size_t i = 0; i < layout.context_tokens.size(); ++i) t[layout.context_positions[i]] = layout.context_tokens[i];
    for (size_t i = 0; i < layout.link_tokens.size(); ++i) t[layout.link_positions[i]] = layout.link_tokens[i];
    for (size_t i = 0; i < layout.question_tokens.size(); ++i)
      t[layout.question_positions[i]] = layout.question_tokens[i];
    return t;
  }

  // Reference view: S computed by the reference itself, then each stored chunk at its prompt positions.
  std::vector<test::ReferenceView> reference_view() const {
    const int32_t s = (int32_t)system.size();
    std::vector<test::ReferenceView> view{
        test::reference_forward(path, {}, system, iota_from(s, 0)).as_view(iota_from(s, 0))};
    for (size_t c = 0; c < stored.size(); ++c) {
      test::ReferenceView seg;
      for (int32_t p : stored[c].positions) seg.positions.push_back(layout.chunks[c].start + p);
      for (int l = 0; l < n_layers(); ++l) {
        seg.k.push_back(host_doubles(*backend, stored[c].k[l]));
        seg.v.push_back(host_doubles(*backend, stored[c].v[l]));
      }
      view.push_back(std::move(seg));
    }
    return view;
  }
  // Slot of each context token's stored row among reference_view()'s rows.
  std::vector<int64_t> stored_slots() const {
    std::vector<int64_t> slot((size_t)layout.n_context(), -1);
    int64_t at = (int64_t)system.size();
    for (size_t c = 0; c < stored.size(); ++c)
      for (int64_t r = 0; r < stored[c].rows(); ++r, ++at)
        slot[(size_t)(layout.chunks[c].first_index + stored[c].positions[r])] = at;
    return slot;
  }

  // The given context tokens, every link token and Q, in position order, as (tokens, positions).
  std::pair<std::vector<int32_t>, std::vector<int32_t>> computed(const std::vector<int64_t>& context) const {
    std::vector<std::pair<int32_t, int32_t>> by_pos;  // (position, token)
    for (int64_t i : context) by_pos.emplace_back(layout.context_positions[i], layout.context_tokens[i]);
    for (size_t i = 0; i < layout.link_tokens.size(); ++i)
      by_pos.emplace_back(layout.link_positions[i], layout.link_tokens[i]);
    for (size_t i = 0; i < layout.question_tokens.size(); ++i)
      by_pos.emplace_back(layout.question_positions[i], layout.question_tokens[i]);
    std::sort(by_pos.begin(), by_pos.end());
    std::pair<std::vector<int32_t>, std::vector<int32_t>> out;
    for (const auto& [p, t] : by_pos) {
      out.first.push_back(t);
      out.second.push_back(p);
    }
    return out;
  }

  // cacheblend (FusionRAG eq. 8): |V1 of a plain causal prefill of [S, C1 L1, ...] - stored V1| per token.
  std::vector<double> cacheblend_scores() const {
    const int32_t q0 = layout.question_positions[0];
    const auto all = prompt();
    const auto trace =
        test::reference_forward(path, {}, std::vector<int32_t>(all.begin(), all.begin() + q0), iota_from(q0, 0));
    const int64_t w = width();
    std::vector<double> scores((size_t)layout.n_context(), 0.0);
    for (size_t c = 0; c < stored.size(); ++c) {
      const auto v1 = host_doubles(*backend, stored[c].v[1]);
      for (int64_t r = 0; r < stored[c].rows(); ++r) {
        const int64_t i = layout.chunks[c].first_index + stored[c].positions[r];
        const int64_t row = layout.context_positions[i];  // plain prefill: row index == position
        double sum = 0;
        for (int64_t j = 0; j < w; ++j) {
          const double d = trace.v[1][row * w + j] - v1[r * w + j];
          sum += d * d;
        }
        scores[i] = std::sqrt(sum);
      }
    }
    return scores;
  }

  // a3 (A3 eq. 3): plain prefill of the whole prompt; layer-1 weights from Q's rows, summed over rows and heads.
  std::vector<double> a3_scores() const {
    const auto trace = test::reference_forward(path, {}, prompt(), iota_from(layout.end, 0));
    std::vector<double> scores((size_t)layout.n_context(), 0.0);
    for (int32_t qpos : layout.question_positions)
      for (int h = 0; h < trace.n_heads; ++h)
        for (size_t i = 0; i < scores.size(); ++i) scores[i] += trace.prob(1, h, qpos, layout.context_positions[i]);
    return scores;
  }

  // fusion (FusionRAG §3.2): links and Q over [S, placed stored chunks]; last-layer weights from Q's rows on each
  // stored context row, summed over rows and heads.
  std::vector<double> fusion_scores() const {
    const auto [tokens, positions] = computed({});
    const auto trace = test::reference_forward(path, reference_view(), tokens, positions);
    const auto slot = stored_slots();
    std::vector<double> scores((size_t)layout.n_context(), 0.0);
    for (size_t row = 0; row < positions.size(); ++row) {
      if (positions[row] < layout.question_positions[0]) continue;  // a link token
      for (int h = 0; h < trace.n_heads; ++h)
        for (size_t i = 0; i < scores.size(); ++i) scores[i] += trace.prob(n_layers() - 1, h, (int64_t)row, slot[i]);
    }
    return scores;
  }

  // The reference's logits of Q's last token when `context` (plus links and Q) is computed over the stored view.
  std::vector<double> sparse_logits(const std::vector<int64_t>& context) const {
    const auto [tokens, positions] = computed(context);
    return test::reference_forward(path, reference_view(), tokens, positions).logits.back();
  }

  test::TinyModelSpec spec;
  std::string path;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  std::vector<int32_t> system, question, links;
  std::vector<std::vector<int32_t>> chunks;
  RagLayout layout;
  KvSegment system_kv;
  std::vector<KvSegment> stored;
  FusionInputs inputs;
};

// Engine selection == reference top set, except for swaps between tokens whose reference scores tie within
// kTieRelative; then the engine's answer pass == the reference's sparse prefill of the same tokens.
void expect_selection(const RagSetup& r, FusionMethod method, const std::vector<double>& scores) {
  const int64_t n = r.layout.n_context(), count = std::lround(kRatio * (double)n);
  const FusedPrefill res = fused_prefill(*r.decoder, r.inputs, method, kRatio);
  ASSERT_EQ((int64_t)res.selected.size(), count);
  ASSERT_TRUE(std::is_sorted(res.selected.begin(), res.selected.end()));
  const auto want = reference_top(scores, count);
  std::vector<int64_t> only_engine, only_reference;
  std::set_difference(res.selected.begin(), res.selected.end(), want.begin(), want.end(),
                      std::back_inserter(only_engine));
  std::set_difference(want.begin(), want.end(), res.selected.begin(), res.selected.end(),
                      std::back_inserter(only_reference));
  std::ostringstream scores_text;
  for (int64_t i = 0; i < n; ++i) scores_text << i << ":" << scores[i] << " ";
  for (int64_t e : only_engine)
    for (int64_t w : only_reference) {
      const double gap = std::abs(scores[e] - scores[w]);
      const double rel = gap == 0 ? 0 : gap / std::max(std::abs(scores[e]), std::abs(scores[w]));
      EXPECT_LE(rel, kTieRelative) << method_name(method) << " chose token " << e << " (reference score " << scores[e]
                                   << ") over token " << w << " (" << scores[w]
                                   << ")\nreference scores: " << scores_text.str();
    }

  const auto ref_logits = r.sparse_logits(res.selected);
  EXPECT_LE(max_abs_diff(res.logits, ref_logits), kLogitTolerance)
      << method_name(method) << ": answer pass against the reference sparse prefill of the same tokens";
}

class FusionSelection : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  RagSetup rag{std::get<0>(GetParam()), std::get<1>(GetParam())};
};

TEST_P(FusionSelection, CacheBlendPicksTheLargestLayer1ValueDeviation) {
  expect_selection(rag, FusionMethod::CacheBlend, rag.cacheblend_scores());
}

TEST_P(FusionSelection, A3PicksWhatTheQuestionAttendsToAtLayer1) {
  expect_selection(rag, FusionMethod::A3, rag.a3_scores());
}

TEST_P(FusionSelection, FusionPicksWhatTheQuestionAttendsToAtTheLastLayerOverStoredKv) {
  expect_selection(rag, FusionMethod::Fusion, rag.fusion_scores());
}

TEST_P(FusionSelection, RatioZeroIsReuseAndRatioOneIsFull) {
  const auto full = fused_prefill(*rag.decoder, rag.inputs, FusionMethod::Full, kRatio);
  const auto reuse = fused_prefill(*rag.decoder, rag.inputs, FusionMethod::Reuse, kRatio);
  EXPECT_TRUE(reuse.selected.empty());
  std::vector<int64_t> everything((size_t)rag.layout.n_context());
  std::iota(everything.begin(), everything.end(), 0);
  EXPECT_EQ(full.selected, everything);
  // Full is a plain prefill of the whole prompt.
  const auto ref_full = test::reference_logits(rag.path, rag.prompt()).back();
  EXPECT_LE(max_abs_diff(full.logits, ref_full), kLogitTolerance);
  for (FusionMethod m : {FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion}) {
    const auto none = fused_prefill(*rag.decoder, rag.inputs, m, 0.0);
    EXPECT_TRUE(none.selected.empty()) << method_name(m);
    EXPECT_EQ(none.logits, reuse.logits) << method_name(m);
    const auto all = fused_prefill(*rag.decoder, rag.inputs, m, 1.0);
    EXPECT_EQ(all.selected, everything) << method_name(m);
    // Every stored row superseded: the keys are full's, in full's order.
    EXPECT_EQ(all.logits, full.logits) << method_name(m);
  }
}

// A memo computes each selector's scores once for a prompt; every ratio then selects and answers exactly as it
// does alone, and reports the time the scores took.
TEST_P(FusionSelection, ScoresSharedAcrossRatiosChangeNoAnswer) {
  SelectionMemo memo;
  for (FusionMethod m : {FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion}) {
    double first_ms = -1;
    for (double ratio : {kRatio, 0.1, 0.5}) {
      const FusedPrefill alone = fused_prefill(*rag.decoder, rag.inputs, m, ratio);
      const FusedPrefill shared = fused_prefill(*rag.decoder, rag.inputs, m, ratio, &memo);
      EXPECT_EQ(shared.selected, alone.selected) << method_name(m) << " at " << ratio;
      EXPECT_EQ(shared.logits, alone.logits) << method_name(m) << " at " << ratio;
      EXPECT_EQ(shared.shared_select_ms, first_ms >= 0 ? first_ms : 0.0) << method_name(m) << " at " << ratio;
      if (first_ms < 0) first_ms = shared.select_ms;
      EXPECT_EQ(shared.select_ms, first_ms) << method_name(m) << " at " << ratio;
    }
  }
  EXPECT_EQ(memo.by_method.size(), 3u);
}

// Decoding after a sparse prefill reads [S, placed chunks, the query's own rows]: the later segment's rows hide
// the stored rows at the recomputed positions (the "later view segment" half of the supersede rule).
TEST_P(FusionSelection, DecodingOverTheQuerysOwnRowsSupersedesTheStoredOnes) {
  const FusedPrefill res = fused_prefill(*rag.decoder, rag.inputs, FusionMethod::Fusion, kRatio);
  ASSERT_FALSE(res.selected.empty());
  const int32_t next = (int32_t)(std::max_element(res.logits.begin(), res.logits.end()) - res.logits.begin());
  ForwardRequest r;
  r.tokens = {next};
  r.positions = {rag.layout.end};
  r.view = res.base_view();
  r.view.push_back(&res.computed);
  r.logit_rows = {0};
  const ForwardResult engine = rag.decoder->forward(r);

  auto view = rag.reference_view();
  test::ReferenceView own{res.computed.positions, {}, {}};
  for (int l = 0; l < rag.n_layers(); ++l) {
    own.k.push_back(host_doubles(*rag.backend, res.computed.k[l]));
    own.v.push_back(host_doubles(*rag.backend, res.computed.v[l]));
  }
  view.push_back(std::move(own));
  const auto trace = test::reference_forward(rag.path, view, r.tokens, r.positions);
  const auto slot = rag.stored_slots();
  for (int l = 0; l < rag.n_layers(); ++l)
    for (int h = 0; h < trace.n_heads; ++h)
      for (int64_t i : res.selected) EXPECT_EQ(trace.prob(l, h, 0, slot[i]), 0.0) << "stored row of token " << i;
  EXPECT_LE(max_abs_diff(engine.logits, trace.logits[0]), kLogitTolerance);

  // The same token computed in one reference pass with the recomputed tokens, links and Q.
  auto [tokens, positions] = rag.computed(res.selected);
  tokens.push_back(next);
  positions.push_back(rag.layout.end);
  const auto one_pass = test::reference_forward(rag.path, rag.reference_view(), tokens, positions).logits.back();
  EXPECT_LE(max_abs_diff(engine.logits, one_pass), kLogitTolerance);
}

INSTANTIATE_TEST_SUITE_P(ArchsAndLinks, FusionSelection,
                         ::testing::Combine(::testing::Values("llama", "qwen2"), ::testing::Values(0, 2)),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_links" + std::to_string(std::get<1>(param_info.param));
                         });

// KVLink Fig. 2: the link token after chunk i reads S, chunks 1..i and links 1..i, nothing later.
class LinkTokens : public ::testing::TestWithParam<std::string> {
 protected:
  RagSetup rag{GetParam(), 1};
};

TEST_P(LinkTokens, SeeOnlyTheirOwnAndEarlierChunksAndLinks) {
  const auto view = rag.reference_view();
  const auto [tokens, positions] = rag.computed({});
  const auto trace = test::reference_forward(rag.path, view, tokens, positions);
  const int k = (int)rag.chunks.size();
  ASSERT_EQ(rag.layout.link_tokens.size(), (size_t)k);
  // Key slots: S, then chunk c's rows, then the computed tokens (link c is computed row c, Q follows).
  std::vector<int64_t> chunk_begin{(int64_t)rag.system.size()};
  for (const KvSegment& s : rag.stored) chunk_begin.push_back(chunk_begin.back() + s.rows());
  const int64_t n_view = chunk_begin.back();
  ASSERT_EQ(trace.n_view_rows, n_view);

  int visible_zero = 0, hidden_nonzero = 0;
  std::ostringstream first_bad;
  auto expect = [&](bool visible, double p, int l, int h, int link, int64_t key) {
    const bool bad = visible ? !(p > 0) : p != 0.0;
    if (bad && (visible_zero + hidden_nonzero) == 0)
      first_bad << "layer " << l << " head " << h << " link " << link << " key " << key << " p=" << p;
    (visible ? visible_zero : hidden_nonzero) += bad;
  };
  for (int l = 0; l < rag.n_layers(); ++l)
    for (int h = 0; h < trace.n_heads; ++h)
      for (int i = 0; i < k; ++i) {
        ASSERT_EQ(positions[i], rag.layout.link_positions[i]);
        for (int64_t key = 0; key < (int64_t)rag.system.size(); ++key)
          expect(true, trace.prob(l, h, i, key), l, h, i, key);
        for (int c = 0; c < k; ++c)
          for (int64_t key = chunk_begin[c]; key < chunk_begin[c + 1]; ++key)
            expect(c <= i, trace.prob(l, h, i, key), l, h, i, key);
        for (int64_t j = 0; j < trace.n_rows; ++j) expect(j <= i, trace.prob(l, h, i, n_view + j), l, h, i, n_view + j);
        double total = 0;
        for (int64_t key = 0; key < trace.n_keys(); ++key) total += trace.prob(l, h, i, key);
        EXPECT_NEAR(total, 1.0, 1e-12);
      }
  EXPECT_EQ(visible_zero, 0) << "visible keys with weight 0; first: " << first_bad.str();
  EXPECT_EQ(hidden_nonzero, 0) << "keys after the link with weight != 0; first: " << first_bad.str();

  // The engine's own probe of each link row agrees: the same zeros, and the same weights within f32 error.
  const FusedPrefill reuse = fused_prefill(*rag.decoder, rag.inputs, FusionMethod::Reuse, 0.0);
  for (int i = 0; i < k; ++i) {
    ForwardRequest r;
    r.tokens = tokens;
    r.positions = positions;
    r.view = reuse.base_view();
    for (int l = 0; l < rag.n_layers(); ++l) r.probe_layers.push_back(l);
    r.probe_rows = {i};
    const ForwardResult out = rag.decoder->forward(r);
    for (int l = 0; l < rag.n_layers(); ++l) {
      ASSERT_EQ((int64_t)out.attn_colsum[l].size(), trace.n_keys());
      for (int64_t key = 0; key < trace.n_keys(); ++key) {
        double want = 0;
        for (int h = 0; h < trace.n_heads; ++h) want += trace.prob(l, h, i, key);
        if (want == 0.0)
          EXPECT_EQ(out.attn_colsum[l][key], 0.0f) << "link " << i << " layer " << l << " key " << key;
        else
          EXPECT_NEAR(out.attn_colsum[l][key], want, 1e-4) << "link " << i << " layer " << l << " key " << key;
      }
    }
  }

  // Reuse with links: Q's last logits equal the reference's over the same view.
  const auto& ref = trace.logits.back();
  EXPECT_LE(max_abs_diff(reuse.logits, ref), kLogitTolerance) << "largest |logit| " << max_abs(ref);
}

INSTANTIATE_TEST_SUITE_P(Archs, LinkTokens, ::testing::Values("llama", "qwen2"));

TEST(FusionSelectionCount, RoundsHalvesUpWithinZeroAndN) {
  EXPECT_EQ(recompute_count(0.0, 40), 0);
  EXPECT_EQ(recompute_count(1.0, 40), 40);
  EXPECT_EQ(recompute_count(0.3, 34), 10);  // 10.2
  EXPECT_EQ(recompute_count(0.25, 10), 3);  // 2.5 exactly: halves up
  EXPECT_EQ(recompute_count(0.125, 4), 1);  // 0.5 exactly
  EXPECT_EQ(recompute_count(0.375, 4), 2);  // 1.5 exactly
  EXPECT_EQ(recompute_count(0.5, 0), 0);
  EXPECT_EQ(recompute_count(0.01, 10), 0);  // 0.1 rounds to nothing
  EXPECT_THROW(recompute_count(-0.1, 10), Error);
  EXPECT_THROW(recompute_count(1.5, 10), Error);
}

TEST(FusionSelectionTop, HighestScoresAscendingTiesToTheLowerIndex) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(top_scored({0.1f, 0.9f, 0.5f, 0.9f, 0.2f}, 2), (V{1, 3}));
  EXPECT_EQ(top_scored({0.5f, 0.9f, 0.5f, 0.5f}, 2), (V{0, 1}));  // three tie for the last place: index 0
  EXPECT_EQ(top_scored({0.5f, 0.5f, 0.9f, 0.5f}, 3), (V{0, 1, 2}));
  EXPECT_EQ(top_scored({3, 3, 3, 3}, 3), (V{0, 1, 2}));
  EXPECT_EQ(top_scored({-1, -3, -2}, 1), (V{0}));
  EXPECT_EQ(top_scored({1, INFINITY, 2}, 1), (V{1}));
  EXPECT_EQ(top_scored({1, 2, 3}, 0), V{});
  EXPECT_EQ(top_scored({1, 2, 3}, 3), (V{0, 1, 2}));
  EXPECT_EQ(top_scored({1, 2, 3}, 5), (V{0, 1, 2}));
  EXPECT_EQ(top_scored({}, 2), V{});
}

TEST(FusionSelectionTop, L2DeviationPerRow) {
  const float fresh[] = {3, 4, 0, 0, 1, 1}, stored[] = {0, 0, 1, 1, 1, 1};
  const auto d = l2_deviation(fresh, stored, 3, 2);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_FLOAT_EQ(d[0], 5.0f);
  EXPECT_FLOAT_EQ(d[1], std::sqrt(2.0f));
  EXPECT_EQ(d[2], 0.0f);
}

}  // namespace
}  // namespace kvf
