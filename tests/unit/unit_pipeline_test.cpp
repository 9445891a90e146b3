// The whole of kvprep and kvrun ask on tiny random models (support/unit_models.h), once with a byte-level BPE
// tokenizer (a Hugging Face folder) and once with a SentencePiece-style one (a GGUF file): a store built by every stage
// (chunk, embed, index, neighbors, prefill of both KV modes) verifies and reruns as a no-op, retrieval finds a
// chunk by its own text, and every method over both modes keeps the exactness invariants of DESIGN.md §6:
// recomputing every context token is full attention bit for bit, recomputing none is full reuse, and reuse of
// one chunk after S is full attention to f16 rounding.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "fusion/query_engine.h"
#include "fusion/token_selection.h"
#include "prep/chunk_stage.h"
#include "prep/prefill_stage.h"
#include "prep/retrieval_stages.h"
#include "prep/store_report.h"
#include "store/manifest.h"
#include "support/test_store.h"
#include "support/test_values.h"
#include "support/tiny_corpus.h"
#include "support/unit_models.h"
#include "text/chunker.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using test::max_abs_diff;

const std::vector<FusionMethod> kSelectors = {FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion};
constexpr int kTopN = 3;

int64_t argmax_of(const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

// The decoder's tokenizer kind: "bpe" or "spm".
class UnitPipeline : public ::testing::TestWithParam<std::string> {
 protected:
  // One store per tokenizer kind and process (ctest runs each test as its own process): about half a second.
  void SetUp() override {
    if (!dirs) dirs = new std::map<std::string, fs::path>;
    if (dirs->count(GetParam())) return;
    const fs::path folder =
        fs::path(::testing::TempDir()) / ("kvf_UnitPipeline_" + GetParam() + "_" + std::to_string(getpid()));
    (*dirs)[GetParam()] = folder;
    fs::remove_all(folder);
    fs::create_directories(folder);
    if (GetParam() == "spm") {
      test::write_tiny_spm_decoder(decoder());
    } else {
      test::write_tiny_text_decoder(decoder());
    }
    test::write_tiny_embedder(embedder());
    test::write_tiny_corpus(corpus(), 12);
    test::build_test_store(corpus(), store(), decoder(), kTopN, {"independent", "similarity"}, embedder());
  }
  static void TearDownTestSuite() {
    if (!dirs) return;
    for (const auto& entry : *dirs) fs::remove_all(entry.second);
    delete dirs;
    dirs = nullptr;
  }
  fs::path dir() const { return dirs->at(GetParam()); }
  std::string decoder() const { return (dir() / (GetParam() == "spm" ? "decoder.gguf" : "decoder")).string(); }
  std::string embedder() const { return (dir() / "embedder").string(); }
  std::string corpus() const { return (dir() / "corpus.jsonl").string(); }
  std::string store() const { return (dir() / "store").string(); }

  QueryEngine engine(const std::string& mode) const {
    QueryEngineOptions o;
    o.store_dir = store();
    o.model = decoder();
    o.embedder = embedder();
    o.kv_mode = mode;
    o.cache_bytes = 16ull << 20;
    return QueryEngine(o);
  }
  static AnswerOptions options(FusionMethod m, double r, int max_tokens = 4) {
    AnswerOptions o;
    o.method = m;
    o.recompute = r;
    o.max_tokens = max_tokens;
    return o;
  }
  // The chunks of these corpus topics (one chunk each), in this order, given as passages.
  static ResolvedQuery question_over(QueryEngine& e, const std::string& question, const std::vector<int>& topics) {
    Query q{"q", question, {}, {}};
    for (int t : topics) q.contexts.push_back({test::kTopics[t][0], test::kTopics[t][1]});
    return e.resolve(q, 0);
  }
  static std::map<std::string, fs::path>* dirs;
};
std::map<std::string, fs::path>* UnitPipeline::dirs = nullptr;

TEST_P(UnitPipeline, StoreHoldsEveryStageVerifiesAndRerunsAsNoOp) {
  const Manifest m = load_manifest(store());
  for (const char* stage : {"chunk", "embed", "index", "neighbors", "prefill-independent", "prefill-similarity"})
    EXPECT_NE(m.find_stage(stage), nullptr) << stage;
  EXPECT_EQ(m.find_stage("chunk")->counts.at("chunks"), 12u);
  EXPECT_TRUE(verify_store(store()).empty());
  EXPECT_TRUE(unlisted_store_files(store()).empty());
  EXPECT_TRUE(incomplete_stages(store()).empty());

  ChunkStageOptions c;
  c.corpus = corpus(), c.store_dir = store(), c.model_path = decoder(), c.progress.out = nullptr;
  EXPECT_TRUE(run_chunk_stage(c).unchanged);
  EmbedStageOptions e;
  e.store_dir = store(), e.embedder_dir = embedder(), e.progress.out = nullptr;
  const EmbedStageResult embedded = run_embed_stage(e);
  EXPECT_TRUE(embedded.unchanged);
  EXPECT_EQ(embedded.embedded, 0u);
  EXPECT_TRUE(run_index_stage({store(), store_index_spec(store())}).unchanged);
  NeighborStageOptions n;
  n.store_dir = store(), n.top_n = kTopN, n.progress.out = nullptr;
  EXPECT_TRUE(run_neighbor_stage(n).unchanged);
  for (const char* mode : {"independent", "similarity"}) {
    PrefillStageOptions p;
    p.store_dir = store(), p.model_path = decoder(), p.mode = mode, p.top_n = kTopN, p.progress.out = nullptr;
    const PrefillStageResult r = run_prefill_stage(p);
    EXPECT_EQ(r.computed, 0u) << mode;
    EXPECT_EQ(r.chunks, 12u) << mode;
  }
  EXPECT_TRUE(verify_store(store()).empty());

  // Another embedder (seed) is refused rather than mixed into the store's vectors.
  RandomBertSpec other;
  other.seed = 99;
  e.embedder_dir = test::write_tiny_embedder((dir() / "embedder99").string(), other);
  EXPECT_THROW(run_embed_stage(e), Error);
}

TEST_P(UnitPipeline, RetrievalFindsEachChunkByItsOwnText) {
  QueryEngine e = engine("independent");
  for (int t : {0, 5, 11}) {
    const ResolvedQuery given = question_over(e, "?", {t});
    ASSERT_EQ(given.chunk_ids.size(), 1u);
    const ChunkSource source = e.chunk_source(given.chunk_ids[0]);
    EXPECT_EQ(source.title, test::kTopics[t][0]);
    const ResolvedQuery r = e.resolve({"q", render_chunk(source.title, source.text), {}, {}}, 4);
    ASSERT_EQ(r.chunk_ids.size(), 4u);
    EXPECT_EQ(r.chunk_ids[0], given.chunk_ids[0]) << t;
    EXPECT_GT(r.scores[0], 0.999f);
    EXPECT_LT(r.scores[1], r.scores[0]);
    EXPECT_TRUE(std::is_sorted(r.scores.rbegin(), r.scores.rend()));
    EXPECT_EQ(std::set<uint64_t>(r.chunk_ids.begin(), r.chunk_ids.end()).size(), 4u);
  }
}

TEST_P(UnitPipeline, RecomputingAllIsFullAndNoneIsReuse) {
  for (const char* mode : {"independent", "similarity"}) {
    QueryEngine e = engine(mode);
    const ResolvedQuery q = question_over(e, "Which instrument is played seated?", {2, 3, 6});
    ASSERT_EQ(q.chunk_ids.size(), 3u);
    const QueryAnswer full = e.answer(q, options(FusionMethod::Full, 1.0));
    const QueryAnswer reuse = e.answer(q, options(FusionMethod::Reuse, 0.0));
    EXPECT_EQ(full.n_recomputed, full.n_context_tokens);
    EXPECT_EQ(reuse.n_recomputed, 0);
    EXPECT_EQ(full.n_context_tokens, reuse.n_context_tokens);
    EXPECT_GT(max_abs_diff(reuse.first_logits, full.first_logits), 1e-3f) << mode << ": reuse must differ from full";
    for (FusionMethod m : kSelectors) {
      const QueryAnswer all = e.answer(q, options(m, 1.0));
      EXPECT_EQ(all.n_recomputed, full.n_context_tokens);
      EXPECT_EQ(max_abs_diff(all.first_logits, full.first_logits), 0.0f) << mode << " " << method_name(m);
      EXPECT_EQ(all.tokens, full.tokens) << mode << " " << method_name(m);
      const QueryAnswer none = e.answer(q, options(m, 0.0));
      EXPECT_EQ(none.n_recomputed, 0);
      EXPECT_EQ(max_abs_diff(none.first_logits, reuse.first_logits), 0.0f) << mode << " " << method_name(m);
      EXPECT_EQ(none.tokens, reuse.tokens) << mode << " " << method_name(m);
    }
  }
}

TEST_P(UnitPipeline, EveryMethodAnswersOverBothModes) {
  for (const char* mode : {"independent", "similarity"}) {
    QueryEngine e = engine(mode);
    const ResolvedQuery q = e.resolve({"q", "Which planet has bright rings?", {}, {}}, 3);
    ASSERT_EQ(q.chunk_ids.size(), 3u);
    std::vector<AnswerOptions> all;
    for (FusionMethod m : all_methods()) all.push_back(options(m, 0.3));
    const std::vector<QueryAnswer> together = e.answer_all(q, all);
    ASSERT_EQ(together.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      const FusionMethod m = all[i].method;
      const std::string what = std::string(mode) + " " + method_name(m);
      const QueryAnswer a = e.answer(q, all[i]);
      EXPECT_EQ(a.method, m);
      EXPECT_EQ(a.kv_mode, mode);
      EXPECT_EQ(a.chunk_ids, q.chunk_ids);
      ASSERT_EQ(a.sources.size(), 3u);
      for (size_t c = 0; c < 3; ++c) EXPECT_EQ(a.sources[c].text, e.chunk_source(q.chunk_ids[c]).text);
      EXPECT_EQ(std::accumulate(a.chunk_tokens.begin(), a.chunk_tokens.end(), int64_t{0}), a.n_context_tokens);
      EXPECT_GT(a.n_question_tokens, 0);
      EXPECT_GT(a.n_prompt_tokens, a.n_context_tokens + a.n_question_tokens);  // S comes first
      const int64_t want = m == FusionMethod::Full    ? a.n_context_tokens
                           : m == FusionMethod::Reuse ? 0
                                                      : recompute_count(0.3, a.n_context_tokens);
      EXPECT_EQ(a.n_recomputed, want) << what;
      ASSERT_EQ((int64_t)a.recomputed.size(), a.n_recomputed) << what;
      EXPECT_TRUE(std::adjacent_find(a.recomputed.begin(), a.recomputed.end(), std::greater_equal<>()) ==
                  a.recomputed.end())
          << what;
      if (!a.recomputed.empty()) {
        EXPECT_LT(a.recomputed.back(), a.n_context_tokens);
      }
      EXPECT_EQ(std::accumulate(a.recomputed_per_chunk.begin(), a.recomputed_per_chunk.end(), int64_t{0}),
                a.n_recomputed);
      EXPECT_FALSE(a.tokens.empty()) << what;
      EXPECT_LE(a.tokens.size(), 4u);
      EXPECT_EQ(a.first_logits.size(), (size_t)e.model_config().vocab);
      EXPECT_EQ(argmax_of(a.first_logits), a.tokens[0]) << what << ": greedy decoding starts at the argmax";
      EXPECT_GT(a.ms.ttft, 0);
      EXPECT_GE(a.ms.ttft, a.ms.select + a.ms.prefill);
      // Answered beside the others, the same prefill and the same tokens.
      EXPECT_EQ(max_abs_diff(together[i].first_logits, a.first_logits), 0.0f) << what;
      EXPECT_EQ(together[i].tokens, a.tokens) << what;
      EXPECT_EQ(together[i].recomputed, a.recomputed) << what;
    }
    // Step by step (kvrun serve's path), two answers at once: each the answer answer() gives.
    const auto fusion = e.begin(q, all[4]);
    const auto reuse = e.begin(q, all[1]);
    while (e.step({fusion.get(), reuse.get()})) {
    }
    EXPECT_EQ(e.finish(*fusion).tokens, together[4].tokens);
    EXPECT_EQ(e.finish(*reuse).tokens, together[1].tokens);
  }
}

// One chunk after S is what its independent KV was computed in: reuse is full attention but for the f16
// rounding of the stored rows, and exact_first_chunk takes those rows whatever the KV mode.
TEST_P(UnitPipeline, ReuseOfOneChunkIsFullToStorageRounding) {
  QueryEngine independent = engine("independent"), similarity = engine("similarity");
  const ResolvedQuery one = question_over(independent, "What is espresso?", {8});
  const QueryAnswer full = independent.answer(one, options(FusionMethod::Full, 1.0, 1));
  const QueryAnswer reuse = independent.answer(one, options(FusionMethod::Reuse, 0.0, 1));
  float scale = 0;
  for (float x : full.first_logits) scale = std::max(scale, std::fabs(x));
  const float diff = max_abs_diff(reuse.first_logits, full.first_logits);
  EXPECT_LT(diff, 0.02f * scale) << "largest logit " << scale;
  EXPECT_EQ(argmax_of(reuse.first_logits), argmax_of(full.first_logits));

  AnswerOptions o = options(FusionMethod::Reuse, 0.0, 1);
  const QueryAnswer own_kv = similarity.answer(one, o);
  o.exact_first_chunk = true;
  const QueryAnswer exact = similarity.answer(one, o);
  EXPECT_EQ(max_abs_diff(exact.first_logits, reuse.first_logits), 0.0f);
  EXPECT_GT(max_abs_diff(own_kv.first_logits, reuse.first_logits), 1e-4f) << "the modes' KV must differ here";
  EXPECT_GT(max_abs_diff(own_kv.first_logits, full.first_logits), diff) << "similarity KV read its neighbours";
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, UnitPipeline, ::testing::Values("bpe", "spm"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace kvf
