// `kvrun eval`'s sweep: every question of a data set answered by full attention, full reuse and each selector at
// each recompute ratio over each stored KV mode, scored against the gold answers (answer_metrics.h) and against
// full attention on the same prompt (fidelity.h). One JSON line per question goes to OUT/results.jsonl as soon as
// it is done, so a killed sweep resumes where it stopped; eval_report.h turns the file into tables and plots.
// OUT/sweep.json records the options a resumed sweep must match and, under "provenance" (sweep_provenance.h), the
// data set's sha256, the model's fingerprint and each run's build and machine. A folder may keep its results
// gzipped instead (OUT/results.jsonl.gz, as committed sweeps may): every reader takes either.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "eval/fidelity.h"
#include "fusion/query_engine.h"
#include "fusion/query_file.h"
#include "io/folder_lock.h"
#include "io/model_paths.h"

namespace kvf {

struct EvalOptions {
  std::string dataset;                     // JSONL(.gz) of {id, question, answers, contexts}
  std::string store_dir;
  std::string model, embedder = kDefaultEmbedder;  // model "": the store's own (prep/store_model.h)
  std::vector<FusionMethod> methods;       // full and reuse always run: they are the normalisation's ends
  std::vector<double> ratios;              // recompute ratios of the selectors (0 is reuse itself)
  std::vector<std::string> kv_modes;       // stored KV modes to compare
  std::string setting = "fixed";           // fixed: each question's own passages in order | retrieval: top_k
  int top_k = 10;
  bool best_last = false;                  // retrieval: the best chunk placed last (nearest the question), not first
  size_t limit = 0;                        // the first N questions; 0: all
  int max_tokens = 32;
  int link_tokens = 0;
  bool exact_first_chunk = false;          // AnswerOptions::exact_first_chunk, for every method and KV mode
  FirstChunkKv first_chunk_kv = FirstChunkKv::Auto;  // AnswerOptions::first_chunk_kv
  // --reference-kv: one of kv_modes ("": none). Its runs are answered first; every other mode's run is then compared
  // with the reference's run of the same method and ratio on the same question (EvalRun::ref_identical, ref_kl).
  std::string reference_kv;
  uint64_t cache_bytes = 1ull << 30;
  std::string backend = "cpu";             // where the model runs: cpu | cuda
  std::string out_dir;
  std::string command;                     // the command line, kept in OUT/command.txt once OUT is accepted
  std::string machine;                     // where it runs (CPU, cores, threads, backend), kept per question
  int threads = 0;                         // the worker threads it runs with, for sweep.json (0: not given)
  // The questions not yet answered go in blocks of `block` (0: one block). Before each, once OUT is accepted,
  // `before_block` (when set) gets the block's records and may add to the store, which is opened after it:
  // kvrun eval --build-store builds just the KV those questions read.
  size_t block = 0;
  std::function<void(const std::vector<QueryRecord>&)> before_block;
};

// One point of the sweep. Full reads no stored KV: its kv is "-".
struct EvalRun {
  FusionMethod method = FusionMethod::Full;
  std::string kv = "-";
  double ratio = 1.0;
  std::string answer;
  double em = 0, f1 = 0, substring = 0;  // against the gold answers
  double gold_ll = 0;                    // mean log-likelihood of the first gold answer's tokens (teacher forced)
  double kl_first = 0;                   // KL(full || this) of the first generated token's distribution
  double top1 = 0;                       // share of gold-answer steps whose argmax equals full's
  int64_t n_recomputed = 0;
  double gold_share = NAN;               // share of the recomputed tokens in gold passages (NAN: unknown or none)
  QueryTimings ms;
  LayerDeviation deviation;              // context KV against full's, per layer
  // Against the same method and ratio over the reference KV mode (--reference-kv), NAN where not compared (no
  // reference, full attention, the reference's own runs; results from before it): whether the greedy answer's
  // token ids equal the reference's (1 or 0), and the mean over the reference answer's tokens (its first
  // included; the first token's distribution alone when it is empty) of KL(reference || this) of the next-token
  // distributions, both forced on the reference's answer.
  double ref_identical = NAN, ref_kl = NAN;
};

struct EvalQuestion {
  std::string id;  // the data set's: its question and gold answers stay there
  int64_t n_chunks = 0, n_context_tokens = 0, n_question_tokens = 0, n_gold_tokens = 0;
  double gold_context_share = NAN;  // share of the context tokens in gold passages (data sets with gold_ctx_idx)
  double others_cpu = NAN;  // other processes' share of the CPUs while it was answered (cpu_usage.h); NAN: unknown
  std::string machine;      // EvalOptions::machine when it was answered (a sweep may resume elsewhere); "": unknown
  std::vector<EvalRun> runs;
};

// The longest answer eval generates (its answers stop at a blank line; this bounds memory).
inline constexpr int kMaxAnswerTokens = 8192;

// Validates the options (methods, ratios, modes, setting, --max-tokens) and that none of the files the sweep
// writes in OUT is the data set or anything but a regular file. Throws kvf::Error naming the option and value.
void validate_eval_options(const EvalOptions& options);

// OUT/sweep.json: the settings of the sweep whose results OUT holds ({} when there is none). Throws kvf::Error
// naming the file when it is not a JSON object.
nlohmann::json read_sweep_description(const std::string& out_dir);

// The options of OUT/sweep.json that a resumed sweep must match (its top level less "provenance"). Some are
// recorded only when not their default, so that sweeps made before an option existed continue.
nlohmann::json sweep_description(const EvalOptions& options);

// Accepts OUT for this sweep and returns the ids of `records` already answered there. When OUT holds results, its
// sweep.json must describe the same sweep (sweep_description) over the same data set file (sha256) and model
// (fingerprint); a changed commit, machine or time is no reason to refuse. Writes sweep.json with the provenance
// (the recorded runs kept, this run added when it has questions to answer) and command.txt. Throws kvf::Error
// naming sweep.json and the settings, or the field with its recorded and current value, that differ.
std::set<std::string> prepare_eval_out_dir(const EvalOptions& options, const std::vector<QueryRecord>& records);

// The file that holds OUT's results: OUT/results.jsonl, else OUT/results.jsonl.gz; "" when neither exists. Throws
// kvf::Error naming both when both exist.
std::string eval_results_path(const std::string& out_dir);

// --fresh: removes OUT's results (results.jsonl and results.jsonl.gz) and sweep.json.
void discard_eval_results(const std::string& out_dir);

// The names of the files eval writes in OUT.
const std::vector<std::string>& eval_output_files();

// Creates OUT (it must be a folder or missing) and takes its lock for the command's whole run: two evals never
// write one OUT. Throws kvf::Error naming the holder when another process has it.
FolderLock lock_eval_out_dir(const std::string& out_dir);

// Validates the options (methods, ratios, modes, setting), reads the data set, answers every question not
// already in OUT/results.jsonl and appends it there. Throws kvf::Error naming the file, line or option.
void run_eval_sweep(const EvalOptions& options);

// Reads OUT/results.jsonl or OUT/results.jsonl.gz (eval_results_path; a torn last line from a killed run is
// ignored); none when OUT holds neither.
std::vector<EvalQuestion> read_eval_results(const std::string& out_dir);

}  // namespace kvf
