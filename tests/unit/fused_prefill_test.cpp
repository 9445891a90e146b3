// kvrun's methods (lib/fusion/fused_prefill.h) on tiny random models: the exact invariants that pin them to the
// forward rule. Recomputing every context token is full; recomputing none is reuse; reuse of a single chunk is
// full; decoding after a sparse prefill sees the recomputed rows instead of the stored ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "backend/profiling_backend.h"
#include "support/test_values.h"
#include "fusion/fused_prefill.h"
#include "fusion/token_selection.h"
#include "model/generate.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using test::iota_positions;
using test::max_abs_diff;
using test::random_tokens;

const std::vector<FusionMethod> kSelectors = {FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion};

// A prompt of S, three chunks with their "independent" stored KV (each computed after S alone, stored at
// in-chunk positions as kvprep stores it) and a question.
// On each backend: the identities must hold on the GPU too (there the tests skip without a device, saying why).
class FusedPrefillTest : public ::testing::TestWithParam<std::tuple<std::string, ComputeMode, std::string>> {
 protected:
  void SetUp() override {
    std::string why;
    if (std::get<2>(GetParam()) == "cuda" && !cuda_device_available(&why)) GTEST_SKIP() << why;
    spec.arch = std::get<0>(GetParam());
    spec.n_layers = 3;
    path = test::write_tiny_model(spec);
    backend = make_backend(std::get<2>(GetParam()));
    decoder = Decoder::load(path, *backend, std::get<1>(GetParam()));
    const int vocab = decoder->config().vocab;
    system_tokens = random_tokens(6, vocab, 1);
    ForwardRequest s;
    s.tokens = system_tokens;
    s.positions = iota_positions(6, 0);
    s.return_kv = true;
    system_kv = decoder->forward(s).kv;
    for (int c = 0; c < 3; ++c) chunk_tokens.push_back(random_tokens(9 + 3 * c, vocab, 10 + c));
    question = random_tokens(5, vocab, 99);
    for (const auto& tokens : chunk_tokens) stored.push_back(independent_kv(tokens));
  }

  KvSegment independent_kv(const std::vector<int32_t>& tokens) const {
    ForwardRequest r;
    r.tokens = tokens;
    r.positions = iota_positions((int)tokens.size(), (int)system_tokens.size());
    r.view = {&system_kv};
    r.return_kv = true;
    KvSegment kv = decoder->forward(r).kv;
    kv.positions = iota_positions((int)tokens.size(), 0);
    return kv;
  }

  FusionInputs inputs(size_t n_chunks, int links) const {
    FusionInputs in;
    in.system = &system_kv;
    std::vector<std::vector<int32_t>> chunks(chunk_tokens.begin(), chunk_tokens.begin() + n_chunks);
    for (size_t c = 0; c < n_chunks; ++c) in.chunks.push_back(&stored[c]);
    in.layout = make_rag_layout((int32_t)system_tokens.size(), chunks, std::vector<int32_t>(links, 7), question,
                                decoder->config().context_length);
    return in;
  }

  test::TinyModelSpec spec;
  std::string path;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  std::vector<int32_t> system_tokens, question;
  KvSegment system_kv;
  std::vector<std::vector<int32_t>> chunk_tokens;
  std::vector<KvSegment> stored;
};

TEST_P(FusedPrefillTest, RecomputingEveryTokenIsFull) {
  for (int links : {0, 2}) {
    const FusionInputs in = inputs(3, links);
    const FusedPrefill full = fused_prefill(*decoder, in, FusionMethod::Full, 1.0);
    EXPECT_EQ((int64_t)full.selected.size(), in.layout.n_context());
    for (FusionMethod m : kSelectors) {
      const FusedPrefill all = fused_prefill(*decoder, in, m, 1.0);
      EXPECT_EQ(all.selected, full.selected);
      // The same computed tokens over S with every stored row superseded: the same arithmetic as full.
      EXPECT_EQ(max_abs_diff(all.logits, full.logits), 0.0f) << method_name(m) << " links " << links;
    }
  }
}

TEST_P(FusedPrefillTest, RecomputingNothingIsReuse) {
  for (int links : {0, 2}) {
    const FusionInputs in = inputs(3, links);
    const FusedPrefill reuse = fused_prefill(*decoder, in, FusionMethod::Reuse, 0.7);  // reuse ignores the ratio
    EXPECT_TRUE(reuse.selected.empty());
    for (FusionMethod m : kSelectors) {
      const FusedPrefill none = fused_prefill(*decoder, in, m, 0.0);
      EXPECT_TRUE(none.selected.empty());
      EXPECT_EQ(max_abs_diff(none.logits, reuse.logits), 0.0f) << method_name(m);
    }
  }
}

TEST_P(FusedPrefillTest, ReuseOfOneChunkIsFull) {
  // A single chunk stored after S alone is exactly the context full attention gives it.
  const FusionInputs in = inputs(1, 0);
  const FusedPrefill full = fused_prefill(*decoder, in, FusionMethod::Full, 1.0);
  const FusedPrefill reuse = fused_prefill(*decoder, in, FusionMethod::Reuse, 0.0);
  EXPECT_LT(max_abs_diff(reuse.logits, full.logits), 1e-4f);
}

TEST_P(FusedPrefillTest, ReuseOfSeveralChunksDiffersFromFull) {
  // The cross-attention reuse loses is real on this model: the invariants above are not vacuous.
  const FusionInputs in = inputs(3, 0);
  const FusedPrefill full = fused_prefill(*decoder, in, FusionMethod::Full, 1.0);
  const FusedPrefill reuse = fused_prefill(*decoder, in, FusionMethod::Reuse, 0.0);
  EXPECT_GT(max_abs_diff(reuse.logits, full.logits), 1e-3f);
}

TEST_P(FusedPrefillTest, SelectorsRecomputeTheRatioAndMoveTowardFull) {
  const FusionInputs in = inputs(3, 0);
  const FusedPrefill full = fused_prefill(*decoder, in, FusionMethod::Full, 1.0);
  for (FusionMethod m : kSelectors) {
    const FusedPrefill half = fused_prefill(*decoder, in, m, 0.5);
    EXPECT_EQ((int64_t)half.selected.size(), recompute_count(0.5, in.layout.n_context())) << method_name(m);
    EXPECT_TRUE(std::is_sorted(half.selected.begin(), half.selected.end()));
    // The answer pass computed the selected tokens, the question and nothing else.
    EXPECT_EQ(half.computed.rows(), (int64_t)half.selected.size() + (int64_t)question.size());
  }
}

TEST_P(FusedPrefillTest, DecodingAfterSparsePrefillReadsTheRecomputedRows) {
  // Greedy steps over [S, placed chunks, own rows] must equal steps over a view where the stored rows of the
  // recomputed tokens were cut out by hand.
  const FusionInputs in = inputs(3, 0);
  const FusedPrefill fused = fused_prefill(*decoder, in, FusionMethod::Fusion, 0.4);
  ASSERT_FALSE(fused.selected.empty());
  const LlamaConfig& c = decoder->config();
  const int32_t first = argmax(fused.logits.data(), c.vocab);
  GreedyOptions g;
  g.max_new_tokens = 6;
  KvBuffer own(*backend, c.n_layers, c.n_kv_heads, c.head_dim, fused.computed.rows() + 6);
  own.append(fused.computed);
  GreedyResult by_rule;
  decode_greedy(*decoder, fused.base_view(), own, first, in.layout.end, g, by_rule);

  // By hand: every placed chunk without its recomputed rows (a copy of only the kept rows).
  std::vector<KvSegment> cut;
  for (size_t ch = 0; ch < fused.placed.size(); ++ch) {
    const KvSegment& seg = fused.placed[ch];
    std::vector<int32_t> keep;
    for (int64_t r = 0; r < seg.rows(); ++r) {
      const int64_t index = in.layout.chunks[ch].first_index + r;
      if (!std::binary_search(fused.selected.begin(), fused.selected.end(), index)) keep.push_back((int32_t)r);
    }
    Tensor rows = backend->empty(DType::I32, {(int64_t)keep.size()});
    backend->copy_from_host(rows, keep.data(), keep.size() * sizeof(int32_t));
    KvSegment part;
    for (int32_t r : keep) part.positions.push_back(seg.positions[r]);
    for (int l = 0; l < c.n_layers; ++l) {
      part.k.push_back(backend->empty(DType::F32, {(int64_t)keep.size(), c.n_kv_heads, c.head_dim}));
      part.v.push_back(backend->empty(DType::F32, {(int64_t)keep.size(), c.n_kv_heads, c.head_dim}));
      backend->gather_rows(seg.k[l], rows, part.k[l]);
      backend->gather_rows(seg.v[l], rows, part.v[l]);
    }
    cut.push_back(std::move(part));
  }
  std::vector<const KvSegment*> view{&system_kv};
  for (const KvSegment& seg : cut) view.push_back(&seg);
  KvBuffer own2(*backend, c.n_layers, c.n_kv_heads, c.head_dim, fused.computed.rows() + 6);
  own2.append(fused.computed);
  GreedyResult by_hand;
  decode_greedy(*decoder, view, own2, first, in.layout.end, g, by_hand);
  EXPECT_EQ(by_rule.tokens, by_hand.tokens);
  EXPECT_EQ(by_rule.tokens.size(), 6u);
}

// A profiler told each stage splits the ops by stage, and profiling changes nothing the prefill computes.
TEST_P(FusedPrefillTest, StagesNameTheProfiledOps) {
  ProfilingBackend profiler(*backend);
  const std::unique_ptr<Decoder> profiled = Decoder::load(path, profiler, std::get<1>(GetParam()));
  profiler.reset();  // the weights' upload
  FusionInputs in = inputs(3, 1);
  const FusedPrefill plain = fused_prefill(*decoder, in, FusionMethod::Fusion, 0.4);
  std::vector<std::string> told;
  in.on_stage = [&](const char* stage) {
    told.push_back(stage);
    profiler.set_stage(stage);
  };
  const FusedPrefill fused = fused_prefill(*profiled, in, FusionMethod::Fusion, 0.4);
  EXPECT_EQ(told, (std::vector<std::string>{"place", "select", "prefill"}));
  EXPECT_EQ(fused.selected, plain.selected);
  EXPECT_EQ(fused.logits, plain.logits);
  const auto calls = [&](const std::string& op) {
    const auto it = profiler.stats().find(op);
    return it == profiler.stats().end() ? int64_t{0} : it->second.calls;
  };
  EXPECT_GT(calls("place/rope"), 0);            // the chunks' keys rotated to their places
  EXPECT_GT(calls("select/matmul_nt"), 0);      // fusion's scoring pass
  EXPECT_GT(calls("prefill/matmul_nt"), 0);     // the sparse pass
  for (const auto& [op, st] : profiler.stats()) EXPECT_NE(op.find('/'), std::string::npos) << op;
}

// Timing only the calls, the profiler records the same ops, and each stage's wall time once the stage is over,
// never less than its calls took (they ran inside it).
TEST_P(FusedPrefillTest, HostCallTimingAddsEachStagesWallTime) {
  ProfilingBackend waited(*backend), host(*backend, ProfilingBackend::Timing::HostCalls);
  std::map<std::string, OpStats> ops[2];
  int i = 0;
  for (ProfilingBackend* profiler : {&waited, &host}) {
    const std::unique_ptr<Decoder> profiled = Decoder::load(path, *profiler, std::get<1>(GetParam()));
    profiler->reset();  // the weights' upload
    FusionInputs in = inputs(3, 1);
    in.on_stage = [&](const char* stage) { profiler->set_stage(stage); };
    fused_prefill(*profiled, in, FusionMethod::Fusion, 0.4);
    ops[i++] = profiler->stats();
  }
  EXPECT_TRUE(waited.stage_walls().empty());
  EXPECT_FALSE(host.stage_walls().count("prefill"));  // still running
  host.close_stage();
  ASSERT_EQ(ops[0].size(), ops[1].size());
  for (const auto& [op, st] : ops[0]) EXPECT_EQ(ops[1][op].calls, st.calls) << op;
  for (const char* stage : {"place", "select", "prefill"}) {
    ASSERT_TRUE(host.stage_walls().count(stage)) << stage;
    const OpStats& wall = host.stage_walls().at(stage);
    EXPECT_EQ(wall.calls, 1) << stage;
    double calls = 0;
    for (const auto& [op, st] : ops[1])
      if (op.rfind(std::string(stage) + "/", 0) == 0) calls += st.seconds;
    EXPECT_GT(calls, 0) << stage;
    EXPECT_GE(wall.seconds, calls) << stage;
  }
}

TEST_P(FusedPrefillTest, StoredKvIsNeverWritten) {
  std::vector<std::vector<float>> before;
  for (const KvSegment& s : stored) {
    std::vector<float> v(s.v[1].numel());
    backend->copy_to_host(s.v[1], v.data(), v.size() * sizeof(float));
    before.push_back(v);
  }
  for (FusionMethod m : kSelectors) fused_prefill(*decoder, inputs(3, 1), m, 0.5);
  for (size_t i = 0; i < stored.size(); ++i) {
    std::vector<float> v(stored[i].v[1].numel());
    backend->copy_to_host(stored[i].v[1], v.data(), v.size() * sizeof(float));
    EXPECT_EQ(v, before[i]);
    EXPECT_EQ(stored[i].positions, iota_positions(stored[i].rows(), 0));
  }
}

INSTANTIATE_TEST_SUITE_P(ArchsAndModes, FusedPrefillTest,
                         ::testing::Combine(::testing::Values("llama", "qwen2"),
                                            ::testing::Values(ComputeMode::Fast, ComputeMode::F32),
                                            ::testing::Values("cpu", "cuda")),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" + compute_mode_name(std::get<1>(param_info.param)) + "_" +
                                  std::get<2>(param_info.param);
                         });

}  // namespace
}  // namespace kvf
