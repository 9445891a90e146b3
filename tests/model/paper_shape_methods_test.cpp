// kvprep and every kvrun method on the papers' model shapes (support/paper_shapes.h: Mistral-7B-v0.2 with its
// SentencePiece vocabulary, Llama-3.1-8B with llama3 RoPE, Qwen2.5-7B; 2 layers, their real vocabularies and chat
// templates): a store built through every stage, both KV modes, and the exactness invariants of DESIGN.md §6 on
// each: recomputing every context token is full attention bit for bit, recomputing none is full reuse.
// One test per shape builds its store once (about a minute on two cores).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fusion/query_engine.h"
#include "fusion/token_selection.h"
#include "prep/store_report.h"
#include "support/paper_shapes.h"
#include "support/test_store.h"
#include "support/test_values.h"
#include "support/tiny_corpus.h"
#include "support/unit_models.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using test::max_abs_diff;

AnswerOptions options(FusionMethod m, double r) {
  AnswerOptions o;
  o.method = m;
  o.recompute = r;
  o.max_tokens = 2;
  return o;
}

class PaperShapeMethods : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kvf_PaperShapeMethods_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(PaperShapeMethods, EveryMethodKeepsTheExactnessInvariants) {
  const std::string model = test::paper_shape_model(GetParam());
  const std::string corpus = (dir_ / "corpus.jsonl").string(), store = (dir_ / "store").string();
  const std::string embedder = test::write_tiny_embedder((dir_ / "embedder").string());
  test::write_tiny_corpus(corpus, 4);
  test::build_test_store(corpus, store, model, 2, {"independent", "similarity"}, embedder);
  EXPECT_TRUE(verify_store(store).empty());

  for (const char* mode : {"independent", "similarity"}) {
    QueryEngineOptions o;
    o.store_dir = store, o.model = model, o.embedder = embedder, o.kv_mode = mode, o.cache_bytes = 64ull << 20;
    QueryEngine e(o);
    Query query{"q", "Which instrument is played seated?", {}, {}};
    for (int t : {1, 2, 3}) query.contexts.push_back({test::kTopics[t][0], test::kTopics[t][1]});
    const ResolvedQuery q = e.resolve(query, 0);
    ASSERT_EQ(q.chunk_ids.size(), 3u);

    std::vector<AnswerOptions> asked = {options(FusionMethod::Full, 1.0), options(FusionMethod::Reuse, 0.0)};
    for (FusionMethod m : {FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion})
      for (double r : {1.0, 0.0, 0.15}) asked.push_back(options(m, r));
    const std::vector<QueryAnswer> answers = e.answer_all(q, asked);
    ASSERT_EQ(answers.size(), asked.size());
    const QueryAnswer &full = answers[0], &reuse = answers[1];
    EXPECT_EQ(full.n_recomputed, full.n_context_tokens);
    EXPECT_EQ(reuse.n_recomputed, 0);
    EXPECT_GT(max_abs_diff(reuse.first_logits, full.first_logits), 1e-3f) << mode << ": reuse must differ from full";
    for (size_t i = 2; i < answers.size(); ++i) {
      const QueryAnswer& a = answers[i];
      const std::string what = std::string(mode) + " " + method_name(asked[i].method) + " at " +
                               std::to_string(asked[i].recompute);
      EXPECT_EQ(a.n_recomputed, recompute_count(asked[i].recompute, a.n_context_tokens)) << what;
      EXPECT_FALSE(a.tokens.empty()) << what;
      if (asked[i].recompute == 1.0) {
        EXPECT_EQ(max_abs_diff(a.first_logits, full.first_logits), 0.0f) << what;
        EXPECT_EQ(a.tokens, full.tokens) << what;
      } else if (asked[i].recompute == 0.0) {
        EXPECT_EQ(max_abs_diff(a.first_logits, reuse.first_logits), 0.0f) << what;
        EXPECT_EQ(a.tokens, reuse.tokens) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Papers, PaperShapeMethods, ::testing::ValuesIn(test::paper_shape_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& c : name)
                             if (c == '.' || c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace kvf
