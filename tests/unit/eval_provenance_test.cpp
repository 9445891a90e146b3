// Reproducible eval results: SHA-256 against published vectors, the provenance kvrun eval records in
// OUT/sweep.json (the data set's sha256, the model's fingerprint, the build and every option), the rule that
// resumes a sweep across commits and machines but not across data sets or models, and results kept gzipped.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/build_info.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/json_file.h"
#include "core/regular_file.h"
#include "core/sha256.h"
#include "eval/eval_sweep.h"
#include "eval/sweep_provenance.h"
#include "fusion/query_file.h"
#include "io/gguf.h"
#include "io/random_model.h"
#include "model/fingerprint.h"
#include "support/temp_dir.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Sha256, KnownVectors) {  // FIPS 180-4 examples and the NIST long-message vector
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding's length field fits in the last block, or needs one more.
  EXPECT_EQ(sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, PiecesAndFilesHashLikeOneBuffer) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += (char)(i * 7 + 3);
  Sha256 h;
  for (size_t at = 0, step = 1; at < text.size(); at += step, step = step % 97 + 1)
    h.update(text.data() + at, std::min(step, text.size() - at));
  const std::array<uint8_t, 32> digest = h.finish();
  std::string hex;
  for (uint8_t b : digest) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  EXPECT_EQ(hex, sha256_hex(text));
  EXPECT_THROW(h.update("x"), Error);

  const fs::path dir = test::fresh_test_dir();
  std::ofstream(dir / "data.bin", std::ios::binary) << text;
  EXPECT_EQ(sha256_file((dir / "data.bin").string()), sha256_hex(text));
  try {
    sha256_file((dir / "missing").string());
    FAIL() << "a missing file hashed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

// A data set of two questions, a tiny random decoder and an eval OUT, as kvrun eval would pass them.
struct Sweep {
  fs::path dir = test::fresh_test_dir();
  EvalOptions o;
  std::vector<QueryRecord> records;

  Sweep() {
    write_dataset(2);
    write_random_model(RandomModelSpec{}, (dir / "tiny.gguf").string());
    o.dataset = (dir / "questions.jsonl").string();
    o.store_dir = (dir / "store").string();
    o.model = (dir / "tiny.gguf").string();
    o.methods = {FusionMethod::Full, FusionMethod::Reuse, FusionMethod::Fusion};
    o.ratios = {0.15};
    o.kv_modes = {"independent"};
    o.out_dir = (dir / "out").string();
    o.threads = 1;
    o.command = "kvrun eval --dataset questions.jsonl --out out";
    fs::create_directories(o.out_dir);
    records = read_query_file(o.dataset);
  }
  void write_dataset(int questions) const {
    std::ofstream out(dir / "questions.jsonl");
    for (int i = 1; i <= questions; ++i)
      out << json{{"id", "q" + std::to_string(i)}, {"question", "which?"}, {"answers", {"this"}},
                  {"contexts", {{{"title", "t"}, {"text", "passage " + std::to_string(i)}}}}}
                 .dump()
          << "\n";
  }
  // One answered question in OUT/results.jsonl (its runs do not matter here).
  static std::string result_line(const std::string& id) {
    return json{{"id", id},          {"n_chunks", 1},           {"n_context_tokens", 3},
                {"n_question_tokens", 2}, {"n_gold_tokens", 1}, {"gold_context_share", nullptr},
                {"runs", json::array()}}
               .dump() +
           "\n";
  }
  void write_results(const std::string& text) const { std::ofstream(fs::path(o.out_dir) / "results.jsonl") << text; }
  json sweep_file() const { return read_json_file((fs::path(o.out_dir) / "sweep.json").string()); }
  void write_sweep_file(const json& j) const { std::ofstream(fs::path(o.out_dir) / "sweep.json") << j.dump(2); }
  // The message prepare_eval_out_dir refuses with ("" when it accepts).
  std::string refusal() const {
    try {
      prepare_eval_out_dir(o, records);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(EvalSweepProvenance, SweepJsonRecordsInputsBuildMachineAndEveryOption) {
  Sweep s;
  EXPECT_TRUE(prepare_eval_out_dir(s.o, s.records).empty());
  const json j = s.sweep_file();
  // The options a resumed sweep must match stay at the top level, as before.
  json top = j;
  top.erase("provenance");
  EXPECT_EQ(top, sweep_description(s.o));
  const json& p = j.at("provenance");
  EXPECT_EQ(p.at("dataset_file"), "questions.jsonl");
  EXPECT_EQ(p.at("dataset_sha256"), sha256_file(s.o.dataset));
  EXPECT_EQ(p.at("model_file"), s.o.model);
  EXPECT_EQ(p.at("model_fingerprint"), hex64(model_fingerprint(*gguf::File::open(s.o.model))));
  ASSERT_EQ(p.at("runs").size(), 1u);
  const json& run = p.at("runs")[0];
  EXPECT_EQ(run.at("commit"), build_info().commit);
  EXPECT_EQ(run.at("kvfuse"), build_info().version);
  EXPECT_EQ(run.at("build_type"), build_info().build_type);
  EXPECT_EQ(run.at("command"), s.o.command);
  EXPECT_EQ(run.at("compute_mode"), "fast");
  EXPECT_EQ(run.at("backend"), "cpu");
  EXPECT_EQ(run.at("threads"), 1);
  EXPECT_EQ(run.at("answered_before"), 0);
  for (const char* key : {"started", "cpu", "cpu_features", "kernels"}) EXPECT_TRUE(run.at(key).is_string()) << key;
  EXPECT_NE(run.at("kernels").get<std::string>().find("matmul "), std::string::npos);
  const json& options = run.at("options");
  EXPECT_EQ(options, eval_options_json(s.o));
  for (const char* key : {"dataset", "store", "model", "embedder", "methods", "ratios", "kv", "setting", "top_k",
                          "best_last", "limit", "max_tokens", "link_tokens", "exact_first_chunk", "cache_mb",
                          "backend", "build_block", "threads", "out"})
    EXPECT_TRUE(options.contains(key)) << key;
  EXPECT_EQ(options.at("best_last"), false);  // defaults written out, unlike the top level
  EXPECT_EQ(options.at("methods"), json({"full", "reuse", "fusion"}));
  EXPECT_EQ(read_regular_file((fs::path(s.o.out_dir) / "command.txt").string()), s.o.command + "\n");
}

TEST(EvalSweepProvenance, ResumesAcrossCommitsAndMachinesKeepingEarlierRuns) {
  Sweep s;
  prepare_eval_out_dir(s.o, s.records);
  s.write_results(Sweep::result_line("q1"));
  json j = s.sweep_file();
  json& first = j["provenance"]["runs"][0];
  first["commit"] = "0000000-dirty", first["started"] = "2026-01-01T00:00:00Z", first["cpu"] = "another CPU";
  first["threads"] = 16, first["options"]["threads"] = 16, first["options"]["limit"] = 1;
  s.write_sweep_file(j);
  s.o.command = "kvrun eval --threads 1 ...";
  const std::set<std::string> done = prepare_eval_out_dir(s.o, s.records);
  EXPECT_EQ(done, std::set<std::string>{"q1"});
  const json runs = s.sweep_file().at("provenance").at("runs");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].at("commit"), "0000000-dirty");  // the recorded run is kept as it was
  EXPECT_EQ(runs[1].at("commit"), build_info().commit);
  EXPECT_EQ(runs[1].at("answered_before"), 1);
  // A rerun with nothing left to answer adds no run.
  s.write_results(Sweep::result_line("q1") + Sweep::result_line("q2"));
  prepare_eval_out_dir(s.o, s.records);
  EXPECT_EQ(s.sweep_file().at("provenance").at("runs").size(), 2u);
}

TEST(EvalSweepProvenance, RefusesAnotherDataSetOrModelNamingFieldAndValues) {
  Sweep s;
  prepare_eval_out_dir(s.o, s.records);
  s.write_results(Sweep::result_line("q1"));
  const json recorded = s.sweep_file();
  const std::string old_sha = sha256_file(s.o.dataset);
  s.write_dataset(3);  // the same file name, other content
  s.records = read_query_file(s.o.dataset);
  const std::string new_sha = sha256_file(s.o.dataset);
  std::string message = s.refusal();
  EXPECT_NE(message.find("provenance.dataset_sha256 was " + old_sha + ", now " + new_sha), std::string::npos)
      << message;
  EXPECT_NE(message.find("--fresh"), std::string::npos) << message;
  EXPECT_EQ(s.sweep_file(), recorded);  // a refused run leaves sweep.json as it was

  s.write_dataset(2);
  json j = recorded;
  j["provenance"]["model_fingerprint"] = "0123456789abcdef";
  s.write_sweep_file(j);
  message = s.refusal();
  EXPECT_NE(message.find("provenance.model_fingerprint was 0123456789abcdef, now " +
                         recorded["provenance"]["model_fingerprint"].get<std::string>()),
            std::string::npos)
      << message;

  // A changed option is refused as before, naming the option.
  s.write_sweep_file(recorded);
  s.o.max_tokens = 16;
  message = s.refusal();
  EXPECT_NE(message.find("differs in 'max_tokens'"), std::string::npos) << message;
}

TEST(EvalSweepProvenance, OldSweepJsonWithoutProvenanceResumes) {
  Sweep s;
  s.write_sweep_file(sweep_description(s.o));  // as kvrun eval wrote it before provenance was kept
  s.write_results(Sweep::result_line("q1"));
  EXPECT_EQ(s.refusal(), "");
  const json p = s.sweep_file().at("provenance");
  EXPECT_EQ(p.at("dataset_sha256"), sha256_file(s.o.dataset));
  ASSERT_EQ(p.at("runs").size(), 1u);
  EXPECT_EQ(p.at("runs")[0].at("answered_before"), 1);  // the earlier questions' runs were not recorded
}

void write_gzip(const fs::path& path, const std::string& text) {
  gzFile f = gzopen(path.string().c_str(), "wb");
  ASSERT_TRUE(f);
  ASSERT_EQ(gzwrite(f, text.data(), (unsigned)text.size()), (int)text.size());
  gzclose(f);
}

TEST(EvalSweepProvenance, GzippedResultsAreReadAndUnpackedToResume) {
  Sweep s;
  prepare_eval_out_dir(s.o, s.records);
  const fs::path out = s.o.out_dir;
  const std::string text = Sweep::result_line("q1");
  write_gzip(out / "results.jsonl.gz", text);
  EXPECT_EQ(eval_results_path(s.o.out_dir), (out / "results.jsonl.gz").string());
  ASSERT_EQ(read_eval_results(s.o.out_dir).size(), 1u);
  EXPECT_EQ(read_eval_results(s.o.out_dir)[0].id, "q1");

  s.write_results(text);  // both: refused, naming both
  try {
    read_eval_results(s.o.out_dir);
    FAIL() << "results.jsonl and results.jsonl.gz both read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("both results.jsonl and results.jsonl.gz"), std::string::npos) << e.what();
  }
  fs::remove(out / "results.jsonl");

  // Nothing left to answer: the gzipped file stays as it is.
  s.records.resize(1);
  EXPECT_EQ(prepare_eval_out_dir(s.o, s.records), std::set<std::string>{"q1"});
  EXPECT_TRUE(fs::exists(out / "results.jsonl.gz"));
  // A question left: unpacked byte for byte into results.jsonl, which the sweep appends to.
  s.records = read_query_file(s.o.dataset);
  EXPECT_EQ(prepare_eval_out_dir(s.o, s.records), std::set<std::string>{"q1"});
  EXPECT_FALSE(fs::exists(out / "results.jsonl.gz"));
  EXPECT_EQ(read_regular_file((out / "results.jsonl").string()), text);

  // A truncated gzip file is refused, naming it.
  fs::remove(out / "results.jsonl");
  write_gzip(out / "results.jsonl.gz", text + text + text);
  fs::resize_file(out / "results.jsonl.gz", fs::file_size(out / "results.jsonl.gz") - 6);
  try {
    read_eval_results(s.o.out_dir);
    FAIL() << "a truncated gzip file read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("results.jsonl.gz"), std::string::npos) << e.what();
  }

  discard_eval_results(s.o.out_dir);  // --fresh
  EXPECT_FALSE(fs::exists(out / "results.jsonl.gz"));
  EXPECT_FALSE(fs::exists(out / "sweep.json"));
  EXPECT_EQ(eval_results_path(s.o.out_dir), "");
}

}  // namespace
}  // namespace kvf
