// A store over a layer-condensed (LCKV) model and every kvrun method over it: a tiny random 6-layer LCKV model in
// the paper's sandwich (layers 0 and 5 keep their own KV, layers 1-4 read layer 4's) with SmolLM2's tokenizer,
// through the real kvprep stages (MiniLM embeddings, FAISS, HDF5). Only the 3 KV layers are stored.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fusion/query_engine.h"
#include "fusion/token_selection.h"
#include "io/model_paths.h"
#include "prep/store_report.h"
#include "support/model_files.h"
#include "support/test_store.h"
#include "support/test_values.h"
#include "support/tiny_corpus.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using test::max_abs_diff;

const std::vector<FusionMethod> kSelectors = {FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion};

class KvrunLckv : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::filesystem::path dir =
        std::filesystem::path(::testing::TempDir()) / ("kvf_KvrunLckv_store_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    test::TinyModelSpec spec;
    spec.n_layers = 6;
    spec.lckv_kv_layers = {0, 4, 4, 4, 4, 5};
    spec.tokenizer_from = test::smollm2_gguf();
    model = new std::string(test::write_tiny_model(spec));
    store = new std::string((dir / "store").string());
    const std::string corpus = (dir / "corpus.jsonl").string();
    test::write_tiny_corpus(corpus, 8);
    test::build_test_store(corpus, *store, *model, 2);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(std::filesystem::path(*store).parent_path());
    std::filesystem::remove(*model);
    delete store;
    delete model;
  }

  static QueryEngine engine(const std::string& mode) {
    QueryEngineOptions o;
    o.store_dir = *store;
    o.model = *model;
    o.embedder = resolve_model("minilm");
    o.kv_mode = mode;
    return QueryEngine(o);
  }
  static QueryAnswer ask(QueryEngine& e, const ResolvedQuery& q, FusionMethod m, double r) {
    AnswerOptions o;
    o.method = m;
    o.recompute = r;
    o.max_tokens = 4;
    return e.answer(q, o);
  }
  static std::string* store;
  static std::string* model;
};
std::string* KvrunLckv::store = nullptr;
std::string* KvrunLckv::model = nullptr;

TEST_F(KvrunLckv, StoresOnlyTheKvLayers) {
  const nlohmann::json report = inspect_store(*store);
  for (const char* mode : {"independent", "similarity"}) {
    const nlohmann::json& kv = report.at("kv").at(mode);
    EXPECT_EQ(kv.at("stored_layers"), 3) << mode;
    EXPECT_EQ(kv.at("model_layers"), 6) << mode;
    const double stored = kv.at("kv_bytes_per_token").get<double>();
    const double every = kv.at("kv_bytes_per_token_every_layer").get<double>();
    // f16 K and V of 2 heads x 16 dims per stored layer, and a 4-byte position per row.
    EXPECT_DOUBLE_EQ(stored, 3 * 2 * 32 * 2 + 4) << mode;
    EXPECT_DOUBLE_EQ(every, 6 * 2 * 32 * 2 + 4) << mode;
    std::printf("%s: %.0f KV bytes per token, %.0f with every layer stored (%.2fx smaller)\n", mode, stored, every,
                every / stored);
  }
  EXPECT_TRUE(verify_store(*store).empty());
}

TEST_F(KvrunLckv, FullRecomputeIsFullAndZeroIsReuse) {
  for (const char* mode : {"independent", "similarity"}) {
    QueryEngine e = engine(mode);
    const ResolvedQuery q = e.resolve({"q", "Which instrument is played seated between the knees?", {}, {}}, 3);
    const QueryAnswer full = ask(e, q, FusionMethod::Full, 1.0);
    const QueryAnswer reuse = ask(e, q, FusionMethod::Reuse, 0.0);
    EXPECT_GT(max_abs_diff(reuse.first_logits, full.first_logits), 1e-3f) << "reuse must differ from full here";
    for (FusionMethod m : kSelectors) {
      const QueryAnswer all = ask(e, q, m, 1.0);
      EXPECT_EQ(all.n_recomputed, full.n_context_tokens);
      EXPECT_EQ(max_abs_diff(all.first_logits, full.first_logits), 0.0f) << mode << " " << method_name(m);
      EXPECT_EQ(all.tokens, full.tokens) << mode << " " << method_name(m);
      const QueryAnswer none = ask(e, q, m, 0.0);
      EXPECT_EQ(none.n_recomputed, 0);
      EXPECT_EQ(max_abs_diff(none.first_logits, reuse.first_logits), 0.0f) << mode << " " << method_name(m);
      EXPECT_EQ(none.tokens, reuse.tokens) << mode << " " << method_name(m);
    }
  }
}

TEST_F(KvrunLckv, EveryMethodAnswersOverBothModes) {
  for (const char* mode : {"independent", "similarity"}) {
    QueryEngine e = engine(mode);
    const ResolvedQuery q = e.resolve({"q", "Which planet has bright rings?", {}, {}}, 3);
    for (FusionMethod m : all_methods()) {
      const QueryAnswer a = ask(e, q, m, 0.15);
      EXPECT_FALSE(a.tokens.empty()) << mode << " " << method_name(m);
      const int64_t want = m == FusionMethod::Full    ? a.n_context_tokens
                           : m == FusionMethod::Reuse ? 0
                                                      : recompute_count(0.15, a.n_context_tokens);
      EXPECT_EQ(a.n_recomputed, want) << mode << " " << method_name(m);
    }
  }
}

}  // namespace
}  // namespace kvf
