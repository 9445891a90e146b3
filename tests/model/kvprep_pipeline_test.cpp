// `kvprep run`: every stage in order from a YAML file with overrides; a second run does nothing; bad keys and
// values are named.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "pipeline/pipeline.h"
#include "store/manifest.h"
#include "support/temp_dir.h"
#include "support/tiny_corpus.h"

namespace kvf {
namespace {

std::vector<PipelineStep>* recorded = nullptr;
void record(const PipelineStep& s) { recorded->push_back(s); }

class KvprepPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::fresh_test_dir();
    test::write_tiny_corpus((dir / "corpus.jsonl").string(), 5);
    yaml = (dir / "p.yaml").string();
    std::ofstream(yaml) << "store: " << (dir / "default-store").string() << "\ncorpus: " << (dir / "corpus.jsonl").string()
                        << "\nneighbors: {top_n: 2}\nprefill: {modes: [independent, similarity]}\n"
                        << "compress:\n  - {to: sim-a50-q8, from: similarity, anchors: 0.5, segment: 8, quant: int8}\n";
    recorded = &steps;
  }
  std::vector<std::string> overrides() const { return {"store=" + (dir / "store").string()}; }
  std::filesystem::path dir;
  std::string yaml;
  std::vector<PipelineStep> steps;
};

TEST_F(KvprepPipeline, RunsEveryStageThenNothing) {
  run_pipeline(yaml, overrides(), record);
  ASSERT_EQ(steps.size(), 9u);
  EXPECT_EQ(steps[6].name, "compress sim-a50-q8");
  EXPECT_EQ(steps[7].name, "publish");  // readers move to the new tables now (docs/store.md, "Generations")
  const std::string published = steps[7].outcome;
  EXPECT_EQ(steps.back().name, "prune");
  EXPECT_EQ(steps.back().outcome, "nothing to reclaim");
  EXPECT_NE(published.find("readers use generation"), std::string::npos) << published;
  const Manifest m = load_manifest((dir / "store").string());
  for (const char* stage : {"chunk", "embed", "index", "neighbors", "prefill-independent", "prefill-similarity",
                            "compress-sim-a50-q8"})
    EXPECT_NE(m.find_stage(stage), nullptr) << stage;
  EXPECT_EQ(m.settings["neighbors"]["top_n"], 2);
  steps.clear();
  run_pipeline(yaml, overrides(), record);
  ASSERT_EQ(steps.size(), 9u);
  for (size_t i = 0; i + 2 < steps.size(); ++i) EXPECT_EQ(steps[i].outcome, "up to date") << steps[i].name;
  EXPECT_EQ(steps[7].outcome, published);  // nothing changed: the same generation
  EXPECT_EQ(steps.back().outcome, "nothing to reclaim");
}

TEST_F(KvprepPipeline, UnknownKeysAndBadValuesAreNamed) {
  auto message = [&](std::vector<std::string> sets) {
    try {
      run_pipeline(yaml, sets, record);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"chunk.chunk_tokenz=10"}).find("unknown key 'chunk.chunk_tokenz'"), std::string::npos);
  EXPECT_NE(message({"neighbors.top_n=[1, 2]"}).find("'neighbors.top_n' has the wrong type"), std::string::npos);
  EXPECT_NE(message({"store"}).find("expected key=value"), std::string::npos);
  EXPECT_NE(message({"compress=[{to: x, from: similarity, anchorz: 0.5}]"}).find("unknown key 'compress[0].anchorz'"),
            std::string::npos);
  EXPECT_NE(message({"compress=[{to: x}]"}).find("compress[0] needs 'to' and 'from'"), std::string::npos);
  EXPECT_NE(message({"compress={to: x}"}).find("'compress' must be a list of modes"), std::string::npos);
}

}  // namespace
}  // namespace kvf
