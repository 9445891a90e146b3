// kvrun eval --pipeline: the file fills what the command line leaves out, and another model than the file's gets
// its own store and results folders, so it neither reads the file's store nor resumes its results.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "eval/eval_pipeline.h"
#include "eval/eval_sweep.h"

namespace kvf {
namespace {

class EvalPipelineFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "kvf_EvalPipelineFile_" + std::to_string(getpid()) + ".yaml";
    std::ofstream(path_) << "store: stores/paper-hq\nmodel: qwen0.5b\nembedder: minilm\n"
                            "eval:\n  dataset: hq.jsonl\n  limit: 7\n  out: results/eval-hq\n";
  }
  void TearDown() override { std::filesystem::remove(path_); }
  EvalOptions applied(const std::set<std::string>& given, const std::string& model = "") const {
    EvalOptions o;
    o.model = model;
    if (given.count("store")) o.store_dir = "mine";
    if (given.count("out")) o.out_dir = "my-out";
    apply_eval_pipeline(path_, given, o);
    return o;
  }
  std::string path_;
};

TEST_F(EvalPipelineFile, FillsWhatTheCommandLineLeavesOut) {
  const EvalOptions o = applied({});
  EXPECT_EQ(o.store_dir, "stores/paper-hq");
  EXPECT_EQ(o.model, "qwen0.5b");
  EXPECT_EQ(o.out_dir, "results/eval-hq");
  EXPECT_EQ(o.limit, 7u);
  const EvalOptions same = applied({"model"}, "qwen0.5b");
  EXPECT_EQ(same.store_dir, "stores/paper-hq");
  EXPECT_EQ(same.out_dir, "results/eval-hq");
}

TEST_F(EvalPipelineFile, AnotherModelGetsItsOwnStoreAndResults) {
  const EvalOptions o = applied({"model"}, "/models/Mistral-7B-Instruct-v0.2.Q4_K_M.gguf");
  EXPECT_EQ(o.model, "/models/Mistral-7B-Instruct-v0.2.Q4_K_M.gguf");
  EXPECT_EQ(o.store_dir, "stores/paper-hq-Mistral-7B-Instruct-v0.2.Q4_K_M");
  EXPECT_EQ(o.out_dir, "results/eval-hq-Mistral-7B-Instruct-v0.2.Q4_K_M");
  EXPECT_EQ(applied({"model"}, "qwen1.5b").store_dir, "stores/paper-hq-qwen1.5b");
  // Folders given on the command line are taken as they are.
  const EvalOptions given = applied({"model", "store", "out"}, "qwen1.5b");
  EXPECT_EQ(given.store_dir, "mine");
  EXPECT_EQ(given.out_dir, "my-out");
}

TEST_F(EvalPipelineFile, ReferenceKvComesFromTheFileUnlessGiven) {
  EXPECT_EQ(applied({}).reference_kv, "");  // none: the sweep compares no modes
  std::ofstream(path_, std::ios::app) << "  kv: [similarity, sim-q4]\n  reference_kv: similarity\n";
  EXPECT_EQ(applied({}).reference_kv, "similarity");
  EXPECT_EQ(applied({"reference_kv"}).reference_kv, "");  // --reference-kv given wins
  // It is part of what a resumed sweep must match, recorded only when set.
  EvalOptions o = applied({});
  EXPECT_EQ(sweep_description(o).at("reference_kv"), "similarity");
  o.reference_kv.clear();
  EXPECT_FALSE(sweep_description(o).contains("reference_kv"));
}

TEST(ModelTag, NamesPresetsFilesAndFoldersSafely) {
  EXPECT_EQ(model_tag("qwen1.5b"), "qwen1.5b");
  EXPECT_EQ(model_tag("/m/Llama-3.1-8B-Instruct.Q8_0.gguf"), "Llama-3.1-8B-Instruct.Q8_0");
  EXPECT_EQ(model_tag("/m/Qwen2.5-7B-Instruct/"), "Qwen2.5-7B-Instruct");
  EXPECT_EQ(model_tag("my model (v2)"), "my-model--v2-");
  EXPECT_EQ(model_tag("/"), "model");
}

}  // namespace
}  // namespace kvf
