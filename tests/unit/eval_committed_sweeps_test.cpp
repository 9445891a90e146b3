// Committed eval sweeps keep their per-question results: every folder under docs/results with a sweep.json holds
// results.jsonl or results.jsonl.gz, except the sweeps whose results were lost before they were committed, which
// docs/eval.md names ("Per-question results of the committed sweeps"). A new sweep committed without its results,
// or a lost one rerun into its folder without the list being updated, fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "core/regular_file.h"
#include "support/model_files.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// The sweeps under docs/results that ran before results.jsonl was committed beside the report.
const std::set<std::string> kResultsLost = {
    "compress-hotpotqa", "compress-hotpotqa-combos", "compress-hotpotqa-combos-qwen0.5b",
    "compress-hotpotqa-lowbit", "compress-hotpotqa-lowbit-qwen0.5b", "compress-hotpotqa-mean",
    "eval-2wiki-cacheblend-qwen0.5b", "eval-hotpotqa", "eval-hotpotqa-qwen0.5b", "eval-hotpotqa-qwen1.5b",
    "eval-musique", "eval-musique-cacheblend-qwen0.5b", "eval-musique-qwen0.5b", "eval-musique-qwen1.5b",
    "eval-nq-pool20-qwen0.5b", "eval-nq-pool20-qwen1.5b", "heads-musique-qwen1.5b/max",
    "neighbors-hotpotqa-qwen0.5b/top5", "neighbors-musique-qwen1.5b/best-first",
    "neighbors-musique-qwen1.5b/best-last", "neighbors-nq-pool20-qwen1.5b/best-first",
    "neighbors-nq-pool20-qwen1.5b/best-last", "rounds-musique-qwen1.5b/two-rounds",
    "scoring-hotpotqa-qwen0.5b/exact-first", "scoring-hotpotqa-qwen0.5b/first-chunk-baseline",
    "scoring-hotpotqa-qwen0.5b/layers-3", "scoring-hotpotqa-qwen0.5b/rows-last",
    "scoring-hotpotqa-qwen0.5b/rows-question", "scoring-hotpotqa-qwen1.5b/spread-1",
    "scoring-musique-qwen1.5b/exact-first", "scoring-nq-pool20-qwen0.5b/best-last",
    "scoring-nq-pool20-qwen0.5b/exact-first", "scoring-nq-pool20-qwen0.5b/per-chunk",
    "scoring-nq-pool20-qwen1.5b/exact-first", "scoring-nq-pool20-qwen1.5b/exact-first-selectors"};

TEST(EvalCommittedSweeps, EverySweepKeepsItsResultsAndDocsListThem) {
  const fs::path root = fs::path(test::fixture_path("")).parent_path().parent_path().parent_path();
  const fs::path results = root / "docs" / "results";
  if (!fs::is_directory(results)) GTEST_SKIP() << results << ": no docs/results beside the fixtures";
  std::set<std::string> kept, lost;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(results)) {
    if (e.path().filename() != "sweep.json") continue;
    const fs::path folder = e.path().parent_path();
    const std::string name = folder.lexically_relative(results).generic_string();
    const bool has = fs::exists(folder / "results.jsonl") || fs::exists(folder / "results.jsonl.gz");
    (has ? kept : lost).insert(name);
  }
  EXPECT_EQ(lost, kResultsLost) << "a sweep under docs/results lacks results.jsonl(.gz), or a lost one came back: "
                                   "commit its results, and keep kResultsLost and docs/eval.md's list current";
  const std::string eval_md = read_regular_file((root / "docs" / "eval.md").string());
  const size_t section = eval_md.find("### Per-question results of the committed sweeps");
  ASSERT_NE(section, std::string::npos);
  const std::string listed = eval_md.substr(section, eval_md.find("\n## ", section) - section);
  for (const std::string& name : kept)
    EXPECT_NE(listed.find("- `" + name + "`"), std::string::npos) << name << " kept its results; docs/eval.md "
                                                                          "does not list it";
  EXPECT_NE(listed.find("The other " + std::to_string(lost.size()) + " "), std::string::npos)
      << "docs/eval.md does not count the " << lost.size() << " sweeps without results";
}

}  // namespace
}  // namespace kvf
