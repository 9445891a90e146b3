// kvrun eval's library path on tiny random models (support/unit_models.h): a store built by run_pipeline from a
// data set's own passages (as `kvrun eval --build-store` builds it), the sweep over every method, two ratios and
// both KV modes with its invariants (recompute 1.0 is full attention exactly; reuse and full are the normalised
// scores' 0 and 1), the report's tables parsed back, a rerun that answers nothing again, and another sweep into
// the same folder refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "eval/dataset_corpus.h"
#include "eval/eval_report.h"
#include "eval/eval_sweep.h"
#include "fusion/query_file.h"
#include "pipeline/pipeline.h"
#include "prep/store_report.h"
#include "support/temp_dir.h"
#include "support/tiny_corpus.h"
#include "support/unit_models.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A CSV file as rows of column name -> value (no quoted commas: the report writes none).
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (header.empty()) {
      header = cells;
      continue;
    }
    EXPECT_EQ(cells.size(), header.size()) << path << ": " << line;
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < std::min(cells.size(), header.size()); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

// Three questions over passages of the tiny corpus; the first two name their gold passage.
void write_dataset(const std::string& path) {
  const auto passage = [](int t) { return json{{"title", test::kTopics[t][0]}, {"text", test::kTopics[t][1]}}; };
  std::ofstream out(path);
  out << json{{"id", "rings"},
              {"question", "Which planet is known for its rings?"},
              {"answers", {"Saturn"}},
              {"contexts", {passage(0), passage(6)}},
              {"gold_ctx_idx", {1}}}
             .dump()
      << "\n";
  out << json{{"id", "bow"},
              {"question", "What is the violin played with?"},
              {"answers", {"a bow", "bow"}},
              {"contexts", {passage(2), passage(6), passage(3)}},
              {"gold_ctx_idx", {0}}}
             .dump()
      << "\n";
  out << json{{"id", "ice"},
              {"question", "What is a glacier made of?"},
              {"answers", {"ice"}},
              {"contexts", {passage(1), passage(2)}}}
             .dump()
      << "\n";
}

std::vector<PipelineStep>& steps() {
  static std::vector<PipelineStep> s;
  return s;
}

TEST(UnitEval, SweepHoldsItsInvariantsReportsAndResumes) {
  const fs::path dir = test::fresh_test_dir();
  const std::string decoder = test::write_tiny_text_decoder((dir / "decoder").string());
  const std::string embedder = test::write_tiny_embedder((dir / "embedder").string());
  const std::string dataset = (dir / "three.jsonl").string(), store = (dir / "store").string();
  write_dataset(dataset);

  // The store of the questions' own passages, as kvrun eval --build-store makes it.
  const std::vector<QueryRecord> records = read_query_file(dataset);
  ASSERT_EQ(records.size(), 3u);
  fs::create_directories(store);
  const std::string corpus = store + "/corpus.jsonl";
  EXPECT_EQ(write_dataset_corpus(records, corpus), 5u);  // distinct passages: Saturn is in two questions
  const std::string pipeline = (dir / "pipeline.yaml").string();
  std::ofstream(pipeline) << "store: " << store << "\ncorpus: " << corpus << "\nmodel: " << decoder
                          << "\nembedder: " << embedder << "\nneighbors: {top_n: 2}\n"
                          << "prefill: {modes: [independent, similarity]}\n";
  steps().clear();
  run_pipeline(pipeline, {"threads=2"}, [](const PipelineStep& s) { steps().push_back(s); });
  // Every stage ran, in order (later steps, such as publishing the generation, may follow).
  std::vector<std::string> names;
  for (const PipelineStep& s : steps()) names.push_back(s.name);
  size_t found = 0;
  for (const std::string& name : names) {
    const char* const wanted[] = {"chunk", "embed", "index", "neighbors", "prefill independent", "prefill similarity"};
    if (found < 6 && name == wanted[found]) ++found;
  }
  EXPECT_EQ(found, 6u) << ::testing::PrintToString(names);
  EXPECT_TRUE(verify_store(store).empty());

  EvalOptions o;
  o.dataset = dataset;
  o.store_dir = store;
  o.model = decoder;
  o.embedder = embedder;
  o.methods = all_methods();
  o.ratios = {0.0, 0.5, 1.0};  // 0 is reuse itself: no selector point of its own
  o.kv_modes = {"independent", "similarity"};
  o.max_tokens = 4;
  o.out_dir = (dir / "eval").string();
  o.command = "unit test";
  o.machine = "test machine";
  validate_eval_options(o);
  const FolderLock lock = lock_eval_out_dir(o.out_dir);  // creates OUT, as kvrun eval does
  run_eval_sweep(o);

  const std::vector<EvalQuestion> questions = read_eval_results(o.out_dir);
  ASSERT_EQ(questions.size(), 3u);
  EXPECT_EQ(questions[0].id, "rings");
  EXPECT_EQ(questions[2].id, "ice");
  for (const EvalQuestion& q : questions) {
    EXPECT_EQ(q.machine, "test machine");
    EXPECT_EQ(q.n_chunks, q.id == "bow" ? 3 : 2);
    ASSERT_EQ(q.runs.size(), 1u + 2 * (1 + 3 * 2)) << q.id;  // full; per mode reuse and 3 selectors x 2 ratios
    const EvalRun& full = q.runs[0];
    EXPECT_EQ(full.method, FusionMethod::Full);
    EXPECT_EQ(full.kv, "-");
    EXPECT_EQ(full.kl_first, 0);
    EXPECT_EQ(full.top1, 1);
    EXPECT_EQ(full.n_recomputed, q.n_context_tokens);
    EXPECT_TRUE(std::isfinite(full.gold_ll) && full.gold_ll < 0);
    if (q.id == "ice") {
      EXPECT_TRUE(std::isnan(q.gold_context_share));
    } else {
      EXPECT_GT(q.gold_context_share, 0);
      EXPECT_LT(q.gold_context_share, 1);
    }
    for (const EvalRun& r : q.runs) {
      const std::string what = q.id + " " + method_name(r.method) + " " + r.kv + " " + std::to_string(r.ratio);
      EXPECT_GE(r.ms.ttft, r.ms.select + r.ms.prefill) << what;
      EXPECT_GE(r.kl_first, 0) << what;
      if (r.ratio == 1.0) {  // every selector at 1.0 computes exactly full attention's tokens
        EXPECT_EQ(r.answer, full.answer) << what;
        EXPECT_EQ(r.gold_ll, full.gold_ll) << what;
        EXPECT_EQ(r.kl_first, 0) << what;
        EXPECT_EQ(r.top1, 1) << what;
        for (double d : r.deviation.k) EXPECT_EQ(d, 0) << what;
        for (double d : r.deviation.v) EXPECT_EQ(d, 0) << what;
        if (q.id != "ice") {
          EXPECT_NEAR(r.gold_share, q.gold_context_share, 1e-12) << what;
        }
      }
      if (r.method == FusionMethod::Reuse) {
        EXPECT_EQ(r.n_recomputed, 0) << what;
        EXPECT_TRUE(std::isnan(r.gold_share)) << what;
        ASSERT_EQ(r.deviation.v.size(), 2u) << what;  // per layer
        EXPECT_GT(r.deviation.v[1], 0) << what << ": reuse's layer-1 V is not full attention's";
        EXPECT_GT(r.kl_first, 0) << what;
      }
      if (r.ratio == 0.5) {
        EXPECT_GT(r.n_recomputed, 0) << what;
      }
    }
  }

  ReportContext context{"three.jsonl", "unit test", "test machine"};
  const bool plots = write_eval_report(o.out_dir, context);
  const fs::path out(o.out_dir);
  const auto metrics = read_csv(out / "metrics.csv");
  ASSERT_EQ(metrics.size(), 15u);
  std::map<std::tuple<std::string, std::string, double>, std::map<std::string, std::string>> by;
  for (const auto& row : metrics) {
    EXPECT_EQ(row.at("n"), "3");
    EXPECT_GT(std::stod(row.at("ttft_ms")), 0);
    by[{row.at("method"), row.at("kv"), std::stod(row.at("ratio"))}] = row;
  }
  EXPECT_EQ(std::stod(by.at({"full", "-", 1.0}).at("norm_ll")), 1.0);
  EXPECT_EQ(std::stod(by.at({"reuse", "independent", 0.0}).at("norm_ll")), 0.0);
  for (const char* m : {"cacheblend", "a3", "fusion"})
    for (const char* kv : {"independent", "similarity"}) {
      EXPECT_NEAR(std::stod(by.at({m, kv, 1.0}).at("norm_ll")), 1.0, 1e-9) << m << " " << kv;
      EXPECT_EQ(std::stod(by.at({m, kv, 1.0}).at("kl_first")), 0.0) << m << " " << kv;
      EXPECT_TRUE(by.count({m, kv, 0.5})) << m << " " << kv;
    }
  const auto deviation = read_csv(out / "kv_deviation.csv");
  EXPECT_FALSE(deviation.empty());
  for (const auto& row : deviation) {
    if (std::stod(row.at("ratio")) == 1.0) {
      EXPECT_EQ(std::stod(row.at("v_deviation")), 0.0) << row.at("method");
    }
  }
  const std::string report = read_text(out / "report.md");
  EXPECT_NE(report.find("| fusion | similarity | 0.50 |"), std::string::npos) << report;
  EXPECT_NE(report.find("independent KV (Full Reuse) as 0"), std::string::npos);
  for (const char* png : {"norm_f1.png", "norm_ll.png", "ttft.png", "kv_deviation.png"}) {
    if (plots) {
      EXPECT_EQ(read_text(out / png).substr(1, 3), "PNG") << png;
    }
  }
  EXPECT_EQ(report.find("![normalized F1](norm_f1.png)") != std::string::npos, plots);

  // A rerun answers nothing again; a sweep with other settings is refused, naming sweep.json.
  const std::string results = read_text(out / "results.jsonl");
  run_eval_sweep(o);
  EXPECT_EQ(read_text(out / "results.jsonl"), results);
  o.max_tokens = 5;
  try {
    run_eval_sweep(o);
    FAIL() << "a sweep with other settings must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sweep.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text(out / "results.jsonl"), results);
}

}  // namespace
}  // namespace kvf
