// Compression (DESIGN.md §7) on tiny random models: anchor selection against a brute-force reference built on the
// naive double-precision decoder, the KV source map's invariants, and the layer-sharing search replayed step by
// step (kvsharer.txt Algorithm 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "compress/anchors.h"
#include "compress/layer_share.h"
#include "model/decoder.h"
#include "support/reference_decoder.h"
#include "support/test_values.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using test::error_of;
using test::iota_positions;
using test::max_abs_diff;
using test::random_tokens;

std::vector<float> host(Backend& b, const Tensor& t) {
  std::vector<float> v((size_t)t.numel());
  b.copy_to_host(t, v.data(), v.size() * sizeof(float));
  return v;
}

// The kept positions by exhaustive search: per segment, of all subsets of its size that hold position 0 when the
// segment does, the one with the largest total score.
std::vector<int32_t> brute_force_anchors(const std::vector<double>& scores, int32_t segment, double fraction) {
  std::vector<int32_t> kept;
  for (const AnchorSegment& s : anchor_segments((int32_t)scores.size(), segment, fraction)) {
    const int32_t n = s.end - s.begin;
    double best = -std::numeric_limits<double>::infinity();
    uint32_t best_mask = 0;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      if (__builtin_popcount(mask) != s.keep || (s.begin == 0 && !(mask & 1u))) continue;
      double sum = 0;
      for (int32_t i = 0; i < n; ++i)
        if (mask & (1u << i)) sum += scores[(size_t)(s.begin + i)];
      if (sum > best) best = sum, best_mask = mask;
    }
    for (int32_t i = 0; i < n; ++i)
      if (best_mask & (1u << i)) kept.push_back(s.begin + i);
  }
  return kept;
}

TEST(Anchors, SegmentsKeepTheFractionOfEachSegmentRoundedUp) {
  const auto s = anchor_segments(250, 100, 0.25);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].keep, 25);  // exactly 0.25 * 100: no float round-up to 26
  EXPECT_EQ(s[2].begin, 200);
  EXPECT_EQ(s[2].end, 250);
  EXPECT_EQ(s[2].keep, 13);  // ceil(0.25 * 50)
  EXPECT_EQ(anchor_segments(3, 100, 0.01)[0].keep, 1);
  EXPECT_EQ(appended_anchor_positions(s[2]), iota_positions(13, 237));
  EXPECT_NE(error_of([] { anchor_segments(10, 4, 1.5); }).find("--anchors must be in (0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(error_of([] { anchor_segments(10, 0, 0.5); }).find("--segment must be at least 1, got 0"),
            std::string::npos);
}

TEST(Anchors, SelectionEqualsExhaustiveSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + (int)(u(rng) * 40);
    const int segment = 1 + (int)(u(rng) * 12);
    const double fraction = 0.1 + 0.9 * u(rng);
    std::vector<double> scores((size_t)n);
    for (double& x : scores) x = u(rng);
    EXPECT_EQ(select_anchor_positions(scores, segment, fraction), brute_force_anchors(scores, segment, fraction))
        << "n " << n << " segment " << segment << " fraction " << fraction;
  }
  // Ties go to the earlier position; the first token stays even with the lowest score.
  EXPECT_EQ(select_anchor_positions({0, 1, 1, 1, 0}, 5, 0.6), (std::vector<int32_t>{0, 1, 2}));
}

class CompressModel : public ::testing::Test {
 protected:
  void SetUp() override {
    spec.n_layers = 6;
    path = test::write_tiny_model(spec);
    backend = make_cpu_backend();
    decoder = Decoder::load(path, *backend, ComputeMode::F32);  // held to the double-precision reference
  }
  test::TinyModelSpec spec;
  std::string path;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
};

// The attention a chunk's tokens received during its precompute (after a system-prompt view), summed from the
// engine's probes, equals the naive decoder's softmax weights summed over layers, heads and the chunk's rows;
// the anchors chosen from either are the same.
TEST_F(CompressModel, ReceivedAttentionEqualsTheReferenceWeights) {
  const int vocab = decoder->config().vocab;
  const auto s_tokens = random_tokens(5, vocab, 3);
  const auto chunk = random_tokens(23, vocab, 4);
  ForwardRequest sys;
  sys.tokens = s_tokens;
  sys.positions = iota_positions(5);
  sys.return_kv = true;
  const KvSegment s_kv = decoder->forward(sys).kv;

  ForwardRequest r;
  r.tokens = chunk;
  r.positions = iota_positions(23, 5);
  r.view = {&s_kv};
  for (int l = 0; l < spec.n_layers; ++l) r.probe_layers.push_back(l);
  r.probe_rows = iota_positions(23);
  const ForwardResult probed = decoder->forward(r);
  const std::vector<double> scores = received_attention(probed.attn_colsum, 5, 23, AnchorScore::Sum);
  const std::vector<double> means = received_attention(probed.attn_colsum, 5, 23, AnchorScore::Mean);

  const test::ReferenceTrace s_ref = test::reference_forward(path, {}, s_tokens, iota_positions(5));
  const test::ReferenceTrace ref =
      test::reference_forward(path, {s_ref.as_view(iota_positions(5))}, chunk, iota_positions(23, 5));
  std::vector<double> expected(23, 0.0);
  for (int l = 0; l < spec.n_layers; ++l)
    for (int h = 0; h < ref.n_heads; ++h)
      for (int64_t q = 0; q < 23; ++q)
        for (int64_t t = 0; t < 23; ++t) expected[(size_t)t] += ref.prob(l, h, q, ref.n_view_rows + t);
  std::vector<double> expected_mean(23);
  for (int t = 0; t < 23; ++t) {
    EXPECT_NEAR(scores[t], expected[t], 1e-4 * std::max(1.0, expected[t])) << t;
    expected_mean[t] = expected[t] / (23 - t);  // the rows that can see token t: itself and the later ones
    EXPECT_NEAR(means[t], expected_mean[t], 1e-4 * std::max(1.0, expected_mean[t])) << t;
  }
  EXPECT_EQ(select_anchor_positions(scores, 8, 0.4), brute_force_anchors(expected, 8, 0.4));
  EXPECT_EQ(select_anchor_positions(means, 8, 0.4), brute_force_anchors(expected_mean, 8, 0.4));
  EXPECT_NE(select_anchor_positions(means, 8, 0.4), select_anchor_positions(scores, 8, 0.4))
      << "on this chunk the two scores should keep different rows; pick another";
}

TEST_F(CompressModel, SharedLayersReadTheirSourceKvAndSkipTheirOwn) {
  const int vocab = decoder->config().vocab;
  const auto tokens = random_tokens(19, vocab, 5);
  std::vector<int32_t> sources = iota_positions(6);
  sources[3] = 1;
  sources[5] = 1;
  const auto shared = decoder->with_kv_sources(sources);
  EXPECT_EQ(shared->kv_sources(), sources);

  ForwardRequest r;
  r.tokens = tokens;
  r.positions = iota_positions(19);
  r.logit_rows = iota_positions(19);
  r.return_kv = true;
  const ForwardResult plain = decoder->forward(r), out = shared->forward(r);
  Backend& b = *backend;
  // Layers before the first shared one are the plain model's; a shared layer returns its source's K and V.
  for (int l = 0; l < 3; ++l) EXPECT_EQ(max_abs_diff(host(b, out.kv.k[l]), host(b, plain.kv.k[l])), 0.0) << l;
  EXPECT_EQ(host(b, out.kv.k[3]), host(b, out.kv.k[1]));
  EXPECT_EQ(host(b, out.kv.v[5]), host(b, out.kv.v[1]));
  EXPECT_GT(max_abs_diff(out.logits, plain.logits), 1e-3);  // the shared model is another model
  // Identity is the plain model, bit for bit.
  EXPECT_EQ(decoder->with_kv_sources(iota_positions(6))->forward(r).logits, plain.logits);

  // Over a view, a shared layer reads the source layer's stored rows: scrambling the view's own rows at the
  // shared layers changes nothing.
  r.tokens.resize(12);
  r.positions.resize(12);
  r.logit_rows.resize(12);
  const KvSegment prefix = shared->forward(r).kv;
  KvSegment scrambled = prefix;
  for (int l : {3, 5}) {
    scrambled.k[l] = b.empty(DType::F32, prefix.k[l].shape);
    scrambled.v[l] = b.empty(DType::F32, prefix.v[l].shape);
    const std::vector<float> noise((size_t)prefix.k[l].numel(), 7.0f);
    b.copy_from_host(scrambled.k[l], noise.data(), noise.size() * sizeof(float));
    b.copy_from_host(scrambled.v[l], noise.data(), noise.size() * sizeof(float));
  }
  ForwardRequest tail;
  tail.tokens = std::vector<int32_t>(tokens.begin() + 12, tokens.end());
  tail.positions = iota_positions(7, 12);
  tail.logit_rows = iota_positions(7);
  tail.view = {&prefix};
  const std::vector<float> a = shared->forward(tail).logits;
  tail.view = {&scrambled};
  EXPECT_EQ(shared->forward(tail).logits, a);
  // ... and the pieces equal one call (the forward rule holds for the shared model too).
  EXPECT_LT(max_abs_diff(a, std::vector<float>(out.logits.begin() + 12 * vocab, out.logits.end())), 1e-4);
}

TEST_F(CompressModel, BadSourceMapsAreRefused) {
  std::vector<int32_t> later = iota_positions(6);
  later[1] = 2;
  EXPECT_NE(error_of([&] { decoder->with_kv_sources(later); }).find("layer 1 reads layer 2; a layer reads itself or an earlier layer"),
            std::string::npos);
  std::vector<int32_t> chain = iota_positions(6);
  chain[2] = 1;
  chain[4] = 2;
  EXPECT_NE(error_of([&] { decoder->with_kv_sources(chain); }).find("layer 4 reads layer 2, which itself reads layer 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decoder->with_kv_sources({0, 1}); }).find("KV source map has 2 entries, the model 6 layers"),
            std::string::npos);
}

// Algorithm 1 replayed from scratch: the ranking recomputed from the plain model's KV, every similarity
// recomputed with the map as it stood at that step, and every decision checked against the rule.
TEST_F(CompressModel, ShareSearchFollowsAlgorithmOneStepByStep) {
  const int vocab = decoder->config().vocab, L = spec.n_layers;
  std::vector<std::vector<int32_t>> passages;
  for (uint32_t i = 0; i < 4; ++i) passages.push_back(random_tokens(16, vocab, 100 + i));
  ShareSearchOptions o;
  o.layers = 3;
  o.threshold = 0.75;
  o.progress.out = nullptr;
  const ShareSearchResult res = search_layer_sharing(*decoder, passages, o);
  const ShareSearchResult again = search_layer_sharing(*decoder, passages, o);
  EXPECT_EQ(res.sources, again.sources);
  ASSERT_EQ(res.steps.size(), again.steps.size());

  // Mean K and V per layer over the passages, then the pair distances.
  std::vector<std::vector<double>> mk(L), mv(L);
  for (const auto& p : passages) {
    ForwardRequest r;
    r.tokens = p;
    r.positions = iota_positions(16);
    r.return_kv = true;
    const ForwardResult out = decoder->forward(r);
    for (int l = 0; l < L; ++l) {
      const auto k = host(*backend, out.kv.k[l]), v = host(*backend, out.kv.v[l]);
      mk[l].resize(k.size());
      mv[l].resize(v.size());
      for (size_t i = 0; i < k.size(); ++i) mk[l][i] += k[i] / 4.0, mv[l][i] += v[i] / 4.0;
    }
  }
  const auto distance = [&](int i, int j) {
    double d = 0;
    for (size_t e = 0; e < mk[i].size(); ++e) d += std::pow(mk[i][e] - mk[j][e], 2) + std::pow(mv[i][e] - mv[j][e], 2);
    return std::sqrt(d);
  };
  const auto mean_output = [&](const Decoder& d) {
    std::vector<double> mean;
    for (const auto& p : passages) {
      ForwardRequest r;
      r.tokens = p;
      r.positions = iota_positions(16);
      r.return_hidden = true;
      const std::vector<float> h = d.forward(r).hidden;
      mean.resize(h.size());
      for (size_t i = 0; i < h.size(); ++i) mean[i] += h[i] / 4.0;
    }
    return mean;
  };
  const std::vector<double> reference = mean_output(*decoder);
  const auto cosine = [&](const std::vector<double>& a) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) ab += a[i] * reference[i], aa += a[i] * a[i], bb += reference[i] * reference[i];
    return ab / std::sqrt(aa * bb);
  };

  std::vector<int32_t> map = iota_positions(L);
  int shared = 0, rejected = 0;
  for (size_t s = 0; s < res.steps.size(); ++s) {
    const ShareStep& st = res.steps[s];
    ASSERT_LT(st.source, st.target);
    EXPECT_NEAR(st.distance, distance(st.source, st.target), 1e-6 * st.distance);
    if (s > 0) {
      EXPECT_GE(res.steps[s - 1].distance, st.distance);  // most dissimilar first
    }
    const bool blocked = map[st.target] != st.target || map[st.source] != st.source ||
                         std::count(map.begin(), map.end(), st.target) > 1;
    if (blocked) {
      EXPECT_TRUE(std::isnan(st.similarity)) << st.outcome;
      continue;
    }
    std::vector<int32_t> candidate = map;
    candidate[st.target] = st.source;
    const double sim = cosine(mean_output(*decoder->with_kv_sources(candidate)));
    EXPECT_NEAR(st.similarity, sim, 1e-6) << "step " << s;  // the search runs the passages as one batch
    EXPECT_EQ(st.outcome, st.similarity > o.threshold ? "shared" : "below threshold");
    if (st.similarity > o.threshold) {
      map = candidate;
      ++shared;
    } else {
      ++rejected;
    }
  }
  EXPECT_EQ(map, res.sources);
  EXPECT_EQ(shared, res.shared);
  EXPECT_EQ(shared, o.layers) << "the walk stops once C layers are shared";
  EXPECT_GT(rejected, 0) << "the threshold should turn some pairs down on this model; pick another";
  // Every pair the walk passed over before stopping is in the ranking: the steps are a prefix of all pairs.
  EXPECT_LE(res.steps.size(), (size_t)(L * (L - 1) / 2));
}

}  // namespace
}  // namespace kvf
