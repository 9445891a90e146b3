#include <tbb/global_control.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "common/cli.h"
#include "core/error.h"
#include "eval/dataset_corpus.h"
#include "eval/eval_pipeline.h"
#include "eval/eval_report.h"
#include "eval/eval_sweep.h"
#include "fusion/query_file.h"
#include "core/regular_file.h"
#include "io/file_roles.h"
#include "pipeline/pipeline.h"
#include "prep/prefill_stage.h"
#include "prep/store_model.h"
#include "query_commands.h"
#include "eval_summary.h"
#include "query_options.h"

namespace kvf::cli {
namespace {

namespace fs = std::filesystem;

struct EvalArgs {
  EvalOptions eval;
  std::vector<std::string> methods{"full", "reuse", "cacheblend", "a3", "fusion"};
  std::string pipeline, build_store, corpus;
  bool build = false, fresh = false, report_only = false;
  double cache_mb = 2048;
  CommonOptions common;
  size_t build_block = 5;
};

// The command line as typed, for the report (arguments with spaces quoted).
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), out, arg;
  for (char c : all) {
    if (c) {
      arg += c;
      continue;
    }
    if (out.empty()) arg = fs::path(arg).filename().string();  // "kvrun", wherever it was built
    out += (out.empty() ? "" : " ") + (arg.find(' ') == std::string::npos ? arg : "'" + arg + "'");
    arg.clear();
  }
  return out;
}

// What --build-store runs: a pipeline file (a pipeline's settings, or the defaults of kvprep run with this store,
// corpus and model), its overrides, and the KV modes the sweep reads with those they are computed from
// (similarity needs independent).
struct StoreBuild {
  std::string pipeline;
  std::vector<std::string> overrides;
  KvModeRequest modes;
};

// Checks the pipeline and, for the data set's own passages, writes the corpus of `records`' passages.
StoreBuild prepare_store_build(const EvalArgs& a, const EvalOptions& o, const std::vector<QueryRecord>& records) {
  const bool own_passages = a.corpus.empty();
  const std::string corpus =
      own_passages ? (fs::path(o.store_dir) / "corpus.jsonl").string() : resolve_dataset(a.corpus);
  KVF_CHECK(own_passages || fs::exists(corpus), corpus, ": no such corpus (bare names are looked up in ", data_dir(),
            ": $KVFUSE_DATA, else $KVFUSE_HOME/data, else ../shared/data; `make data` fetches them)");
  StoreBuild b;
  b.pipeline = a.pipeline;
  if (b.pipeline.empty()) {  // the defaults of kvprep run, with this store, corpus and model
    fs::create_directories(o.store_dir);
    b.pipeline = (fs::path(o.store_dir) / "eval-pipeline.yaml").string();
    const std::string text = "store: " + o.store_dir + "\ncorpus: " + corpus + "\nmodel: " + o.model +
                             "\nembedder: " + o.embedder + "\n";
    if (file_kind(b.pipeline) == "missing") write_output_file(b.pipeline, text);
    KVF_CHECK(read_regular_file(b.pipeline) == text, b.pipeline, " exists and is not the pipeline this command writes (",
              "store, corpus, model, embedder); move it away or build into another folder");
  }
  b.overrides = {"store=" + o.store_dir, "corpus=" + corpus, "model=" + o.model, "embedder=" + o.embedder,
                 "threads=" + std::to_string(a.common.threads)};
  b.modes.modes = o.kv_modes;
  b.modes.asked_by = "eval --kv";
  check_pipeline(b.pipeline, b.overrides, b.modes);
  if (own_passages) {
    const size_t passages = write_dataset_corpus(records, corpus);
    note("eval: building %s from %zu passages of %zu questions (%s)\n", o.store_dir.c_str(), passages,
         records.size(), corpus.c_str());
  } else {
    note("eval: building %s from the corpus %s\n", o.store_dir.c_str(), corpus.c_str());
  }
  return b;
}

void run_store_build(const StoreBuild& b) {
  run_pipeline(
      b.pipeline, b.overrides,
      [](const PipelineStep& s) { note("  %-22s %s\n", s.name.c_str(), s.outcome.c_str()); },
      b.modes);
}

// --build-store: the whole store now or, over the questions' own passages in the fixed setting with prefill modes
// only, the KV of each block of questions just before they are answered. A chunk's KV does not depend on which
// chunks are computed with it, so the answers are the same; a sweep stopped early has spent nothing on questions it
// never reached.
void build_store(const EvalArgs& a, EvalOptions& o) {
  std::vector<QueryRecord> records;
  if (a.corpus.empty()) {
    records = read_query_file(o.dataset);
    if (o.limit > 0 && records.size() > o.limit) records.resize(o.limit);
  }
  const StoreBuild build = prepare_store_build(a, o, records);
  const bool compressed = std::any_of(o.kv_modes.begin(), o.kv_modes.end(),
                                     [](const std::string& m) { return !is_prefill_mode(m); });
  if (!a.corpus.empty() || o.setting != "fixed" || a.build_block == 0 || compressed) {
    run_store_build(build);
    return;
  }
  std::map<std::string, std::vector<std::string>> docs_of;  // question id -> its passages' corpus ids
  const std::vector<std::vector<std::string>> ids = dataset_corpus_ids(records);
  for (size_t i = 0; i < records.size(); ++i) docs_of[records[i].query.id] = ids[i];
  o.block = a.build_block;
  o.before_block = [build, docs_of](const std::vector<QueryRecord>& these) {
    StoreBuild block = build;
    for (const QueryRecord& r : these) {
      const std::vector<std::string>& docs = docs_of.at(r.query.id);
      block.modes.only_docs.insert(docs.begin(), docs.end());
    }
    note("eval: the KV of the next %zu questions (%zu passages)\n", these.size(), block.modes.only_docs.size());
    run_store_build(block);
  };
}

void run_eval(EvalArgs& a, const CLI::App& cmd) {
  const CommandSettings settings(a.common);
  EvalOptions& o = a.eval;
  o.methods.clear();
  for (const std::string& m : a.methods) o.methods.push_back(parse_method(m));
  o.cache_bytes = (uint64_t)(a.cache_mb * 1024 * 1024);
  o.dataset = resolve_dataset(o.dataset);
  if (!a.pipeline.empty()) {
    std::set<std::string> given;
    for (const char* name : {"dataset", "limit", "setting", "methods", "ratios", "kv", "max-tokens", "top-k",
                             "link-tokens", "out", "store", "model", "reference-kv"}) {
      std::string key = name;
      std::replace(key.begin(), key.end(), '-', '_');
      if (cmd.count(std::string("--") + name)) given.insert(key);
    }
    if (!a.build_store.empty()) given.insert("store");
    apply_eval_pipeline(a.pipeline, given, o);
  }
  apply_exact_first_chunk_default(cmd, o.kv_modes, o.exact_first_chunk);  // after the pipeline's eval.kv
  if (!a.build_store.empty()) o.store_dir = a.build_store;
  o.model = model_for_store(o.model, o.store_dir);
  KVF_CHECK(!o.store_dir.empty(), "eval: give --store DIR (a built store), --build-store DIR or --pipeline FILE");
  KVF_CHECK(!o.out_dir.empty(), "eval: --out is required (or eval.out in the pipeline)");
  // The report names the command that ran the sweep (kept in OUT/command.txt), not a later --report-only.
  const fs::path command_file = fs::path(o.out_dir) / "command.txt";
  std::string command = command_line();
  if (a.report_only && fs::exists(command_file)) {
    std::ifstream in(command_file);
    std::getline(in, command);
  }
  const ReportContext context{fs::path(o.dataset).filename().string(), command,
                              describe_machine(settings.threads()) + ", " + o.backend + " backend"};
  if (a.report_only) {
    KVF_CHECK(fs::is_directory(o.out_dir), "eval --out ", o.out_dir, ": no such folder; run the sweep first");
    const FolderLock lock = lock_eval_out_dir(o.out_dir);
    const bool plots = write_eval_report(o.out_dir, context);
    if (a.common.json) print_json(eval_summary_json(o.out_dir, plots));
    return;
  }
  KVF_CHECK(!o.dataset.empty(), "eval: --dataset is required (or eval.dataset in the pipeline)");
  KVF_CHECK(fs::exists(o.dataset), o.dataset, ": no such data set (bare names are looked up in ", data_dir(),
            ": $KVFUSE_DATA, else $KVFUSE_HOME/data, else ../shared/data; `make data` fetches them)");
  validate_eval_options(o);  // every option before anything is built or written
  const FolderLock lock = lock_eval_out_dir(o.out_dir);
  if (a.fresh) discard_eval_results(o.out_dir);
  if (a.build || !a.build_store.empty()) build_store(a, o);
  o.command = command;
  o.machine = context.machine;
  o.threads = settings.threads();
  run_eval_sweep(o);
  const bool plots = write_eval_report(o.out_dir, context);
  if (!plots) note("eval: gnuplot not found, plots skipped (scripts/setup.sh installs it)\n");
  note("eval: report in %s/report.md\n", o.out_dir.c_str());
  if (a.common.json) print_json(eval_summary_json(o.out_dir, plots));
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Sweep methods x recompute ratios x KV modes over a QA data set; report");
  cmd->footer(
      "Every question is answered by full attention, full reuse (per KV mode) and each selector at each ratio > 0,\n"
      "then scored: EM, token F1, substring accuracy against the gold answers; gold-answer log-likelihood, first-\n"
      "token KL, top-1 agreement and per-layer KV deviation against full attention on the same prompt. Results go to\n"
      "OUT/results.jsonl one question at a time (a killed sweep resumes), then OUT/metrics.csv, kv_deviation.csv,\n"
      "report.md and PNG plots (gnuplot). Bare data set names are looked up in $KVFUSE_DATA, else $KVFUSE_HOME/data\n"
      "(~/.cache/kvfuse/data, filled by `make data`) where it exists, else ../shared/data.\n"
      "Examples:\n"
      "  kvrun eval --pipeline pipelines/paper-hotpotqa.yaml --build-store      # the committed sweep\n"
      "  kvrun eval --pipeline pipelines/paper-hotpotqa.yaml --build-store --model ~/m/Mistral-7B-Instruct-v0.2.gguf\n"
      "      # the same sweep on another model: its own store and results (the file's folders + \"-<model>\")\n"
      "  kvrun eval --dataset hotpotqa_dev500_ircot.jsonl --build-store stores/hq --limit 20 \\\n"
      "      --methods full,reuse,fusion --ratios 0.15 --kv independent --out eval/hq\n"
      "  kvrun eval --dataset hotpotqa_dev500_ircot.jsonl --model qwen0.5b --build-store stores/hq-qwen --limit 20 \\\n"
      "      --kv similarity --out eval/hq-qwen        # builds the independent KV similarity reads, too\n"
      "  kvrun eval --dataset hotpotqa_dev500_ircot.jsonl --build-store stores/pool --corpus corpus_hotpotqa.jsonl \\\n"
      "      --setting retrieval --top-k 10 --out eval/pool            # retrieval over the pooled corpus\n"
      "  kvrun eval --store stores/hq --dataset hotpotqa_dev500_ircot.jsonl --out eval/hq --report-only\n"
      "  kvrun eval --store stores/hq --dataset hotpotqa_dev500_ircot.jsonl --kv similarity,sim-q4 \\\n"
      "      --reference-kv similarity --out eval/hq-q4   # what int4 KV loses against the KV it was made from\n"
      "--reference-kv MODE compares every other mode with MODE, point by point (same method and ratio) on the same\n"
      "questions: whether the greedy answer's tokens are MODE's exactly, and the mean KL(MODE || mode) of the next-\n"
      "token distributions over MODE's answer (both forced on it), fine enough to resolve a 1% loss; the report's\n"
      "\"Fidelity against MODE\" table adds the paired gold-LL and F1 differences with 95% intervals (docs/eval.md).");
  cmd->add_option("--pipeline", args->pipeline, "a pipeline file with an eval section (pipelines/paper-*.yaml)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--dataset", args->eval.dataset, "questions with answers and contexts: JSONL or .jsonl.gz");
  cmd->add_option("--store", args->eval.store_dir, "a store holding the data set's passages");
  cmd->add_option("--model", args->eval.model, kStoreModelHelp);
  cmd->add_option("--build-store", args->build_store,
                  "build this store from the data set's passages (with --pipeline and no DIR: its store); its KV as "
                  "the questions need it where it can (--build-block)")
      ->expected(0, 1);
  cmd->add_option("--build-block", args->build_block,
                  "with --build-store over the questions' own passages (fixed setting): build the KV of N questions "
                  "at a time, just before they are answered (0: the whole store first)")
      ->capture_default_str();
  cmd->add_option("--corpus", args->corpus,
                  "with --build-store: build from this corpus (e.g. corpus_hotpotqa.jsonl, for --setting retrieval) "
                  "instead of the questions' passages");
  cmd->add_option("--methods", args->methods, "comma-separated: full, reuse, cacheblend, a3, fusion")
      ->delimiter(',')
      ->capture_default_str()
      ->check(accepted_by(parse_method));
  cmd->add_option("--ratios", args->eval.ratios, "comma-separated recompute ratios for the selectors")
      ->delimiter(',')
      ->default_str("0,0.05,0.1,0.15,0.3");
  cmd->add_option("--kv", args->eval.kv_modes, "comma-separated stored KV modes")->delimiter(',')->default_str("independent,similarity");
  cmd->add_option("--setting", args->eval.setting, "fixed: each question's own passages | retrieval: --top-k retrieved")
      ->capture_default_str();
  cmd->add_option("--top-k", args->eval.top_k, "chunks retrieved per question in the retrieval setting")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--best-last", args->eval.best_last,
               "retrieval setting: place the best retrieved chunk last, nearest the question (default: first)");
  cmd->add_option("--limit", args->eval.limit, "the first N questions (0: all)")->capture_default_str();
  cmd->add_option("--max-tokens", args->eval.max_tokens, "answer length limit (answers also stop at a blank line)")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxAnswerTokens));
  add_exact_first_chunk_option(*cmd, args->eval.exact_first_chunk, args->eval.first_chunk_kv);
  cmd->add_option("--reference-kv", args->eval.reference_kv,
                  "one of --kv: compare every other mode with it per point and question (identical answers, answer "
                  "KL, paired gold-LL and F1 differences); default: none");
  cmd->add_option("--link-tokens", args->eval.link_tokens, "KVLink link tokens after each chunk")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd->add_option("--out", args->eval.out_dir, "folder for results.jsonl, metrics.csv, report.md and plots");
  cmd->add_option("--cache-mb", args->cache_mb, "chunk KV kept in memory per KV mode, MiB")
      ->capture_default_str()
      ->check(finite_in(0, 1 << 30));
  cmd->add_option("--backend", args->eval.backend, "where the model runs: cpu | cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_flag("--fresh", args->fresh, "discard OUT's earlier results instead of resuming");
  cmd->add_flag("--report-only", args->report_only, "only redraw the report from OUT/results.jsonl (or .jsonl.gz)");
  add_common_options(*cmd, args->common,
                     "one JSON object: out, report, plots and points [{method, kv, ratio, n, em, f1, ..., "
                     "timings_ms {ttft, retrieve, load, select, prefill, decode}, speedup_vs_full}] (OUT/metrics.csv)");
  cmd->callback([args, cmd] {
    if (cmd->count("--build-store") && args->build_store.empty()) args->build = true;
    if (args->eval.ratios.empty()) args->eval.ratios = {0, 0.05, 0.1, 0.15, 0.3};
    if (args->eval.kv_modes.empty()) args->eval.kv_modes = {"independent", "similarity"};
    run_eval(*args, *cmd);
  });
}

}  // namespace kvf::cli
