#include "eval/eval_sweep.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include <unistd.h>
#include <zlib.h>

#include "core/cpu_usage.h"
#include "core/error.h"
#include "core/json_file.h"
#include "core/log.h"
#include "core/progress.h"
#include "eval/answer_metrics.h"
#include "eval/sweep_provenance.h"
#include "fusion/query_file.h"
#include "core/regular_file.h"
#include "io/file_roles.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kResultsFile = "results.jsonl";
constexpr const char* kGzipResultsFile = "results.jsonl.gz";
constexpr const char* kSweepFile = "sweep.json";
constexpr const char* kCommandFile = "command.txt";
constexpr const char* kLockFile = ".kvrun-eval.lock";

}  // namespace

// What makes two sweeps comparable: a results file is only continued by the same sweep.
json sweep_description(const EvalOptions& o) {
  std::vector<std::string> methods;
  for (FusionMethod m : o.methods) methods.push_back(method_name(m));
  json sweep = {{"dataset", fs::absolute(o.dataset).lexically_normal().string()},
               {"store", fs::absolute(o.store_dir).lexically_normal().string()},
               {"model", o.model},
               {"methods", methods},
               {"ratios", o.ratios},
               {"kv", o.kv_modes},
               {"setting", o.setting},
               {"top_k", o.top_k},
               {"max_tokens", o.max_tokens},
               {"link_tokens", o.link_tokens},
               {"question_instruction", kRagQuestionInstruction}};  // the prompt's S comes with the store
  if (o.best_last) sweep["best_last"] = true;  // recorded only when set, as below
  if (o.exact_first_chunk) sweep["exact_first_chunk"] = true;
  if (o.first_chunk_kv != FirstChunkKv::Auto) sweep["first_chunk_kv"] = first_chunk_kv_name(o.first_chunk_kv);
  if (!o.reference_kv.empty()) sweep["reference_kv"] = o.reference_kv;
  return sweep;
}

void validate_eval_options(const EvalOptions& o) {
  KVF_CHECK(!o.dataset.empty(), "eval: --dataset is required");
  KVF_CHECK(fs::exists(o.dataset), o.dataset, ": no such data set");
  KVF_CHECK(!o.out_dir.empty(), "eval: --out is required");
  KVF_CHECK(!o.best_last || o.setting == "retrieval", "eval: --best-last orders retrieved chunks; it needs --setting "
            "retrieval, got '", o.setting, "'");
  KVF_CHECK(o.setting == "fixed" || o.setting == "retrieval", "eval: --setting must be fixed or retrieval, got '",
            o.setting, "'");
  KVF_CHECK(!o.kv_modes.empty(), "eval: --kv lists no KV mode");
  KVF_CHECK(!o.ratios.empty(), "eval: --ratios lists no ratio");
  for (double r : o.ratios) KVF_CHECK(r >= 0 && r <= 1, "eval: recompute ratio ", r, " is outside [0, 1]");
  if (!o.reference_kv.empty()) {
    std::string modes;
    for (const std::string& kv : o.kv_modes) modes += (modes.empty() ? "" : ",") + kv;
    KVF_CHECK(std::count(o.kv_modes.begin(), o.kv_modes.end(), o.reference_kv) > 0, "eval: --reference-kv '",
              o.reference_kv, "' is not one of --kv (", modes, "); it names the mode the others are "
              "compared with");
    KVF_CHECK(o.kv_modes.size() > 1, "eval: --reference-kv ", o.reference_kv, " needs another mode in --kv to "
              "compare with it");
  }
  KVF_CHECK(o.max_tokens > 0 && o.max_tokens <= kMaxAnswerTokens, "eval: --max-tokens must be in [1, ",
            kMaxAnswerTokens, "], got ", o.max_tokens);
  if (fs::is_directory(o.out_dir))  // a new OUT holds nothing to check
    for (const std::string& name : eval_output_files())
      output_target((fs::path(o.out_dir) / name).string(), {o.dataset}, "eval --out");
}

namespace {

// An optional number of a results line: null (NAN written) or absent (results of an older sweep) read as NAN.
double number_or_nan(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

json deviation_json(const LayerDeviation& d) { return {{"k", d.k}, {"v", d.v}}; }

json run_json(const EvalRun& r) {
  json j = {{"method", method_name(r.method)},
          {"kv", r.kv},
          {"ratio", r.ratio},
          {"answer", r.answer},
          {"em", r.em},
          {"f1", r.f1},
          {"substring", r.substring},
          {"gold_ll", r.gold_ll},
          {"kl_first", r.kl_first},
          {"top1", r.top1},
          {"n_recomputed", r.n_recomputed},
          {"gold_share", r.gold_share},  // NAN is written as null
          {"ms",
           {{"retrieve", r.ms.retrieve},
            {"load", r.ms.load},
            {"select", r.ms.select},
            {"prefill", r.ms.prefill},
            {"ttft", r.ms.ttft},
            {"decode", r.ms.decode}}},
          {"kv_deviation", deviation_json(r.deviation)}};
  // Only runs compared with a reference KV mode carry these: a sweep without --reference-kv writes what it did.
  if (std::isfinite(r.ref_identical)) j["ref_identical"] = r.ref_identical;
  if (std::isfinite(r.ref_kl)) j["ref_kl"] = r.ref_kl;
  return j;
}

EvalRun run_from_json(const json& j) {
  EvalRun r;
  r.method = parse_method(j.at("method").get<std::string>());
  r.kv = j.at("kv");
  r.ratio = j.at("ratio");
  r.answer = j.at("answer");
  r.em = j.at("em");
  r.f1 = j.at("f1");
  r.substring = j.at("substring");
  r.gold_ll = j.at("gold_ll");
  r.kl_first = j.at("kl_first");
  r.top1 = j.at("top1");
  r.n_recomputed = j.at("n_recomputed");
  r.gold_share = number_or_nan(j, "gold_share");
  const json& ms = j.at("ms");
  r.ms = {ms.at("retrieve"), ms.at("load"), ms.at("select"), ms.at("prefill"), ms.at("ttft"), ms.at("decode")};
  r.deviation.k = j.at("kv_deviation").at("k").get<std::vector<double>>();
  r.deviation.v = j.at("kv_deviation").at("v").get<std::vector<double>>();
  r.ref_identical = number_or_nan(j, "ref_identical");  // absent: not compared with a reference KV mode
  r.ref_kl = number_or_nan(j, "ref_kl");
  return r;
}

json question_json(const EvalQuestion& q) {
  json runs = json::array();
  for (const EvalRun& r : q.runs) runs.push_back(run_json(r));
  return {{"id", q.id},
          {"n_chunks", q.n_chunks},
          {"n_context_tokens", q.n_context_tokens},
          {"n_question_tokens", q.n_question_tokens},
          {"n_gold_tokens", q.n_gold_tokens},
          {"gold_context_share", q.gold_context_share},
          {"others_cpu", q.others_cpu},
          {"machine", q.machine},
          {"runs", runs}};
}

EvalQuestion question_from_json(const json& j) {
  EvalQuestion q;
  q.id = j.at("id");
  // "question" and "answers", in files from before they were left to the data set, are not read.
  q.n_chunks = j.at("n_chunks");
  q.n_context_tokens = j.at("n_context_tokens");
  q.n_question_tokens = j.at("n_question_tokens");
  q.n_gold_tokens = j.at("n_gold_tokens");
  q.gold_context_share = number_or_nan(j, "gold_context_share");
  q.others_cpu = number_or_nan(j, "others_cpu");  // absent from sweeps before it was recorded
  q.machine = j.value("machine", "");             // likewise
  for (const json& r : j.at("runs")) q.runs.push_back(run_from_json(r));
  return q;
}

// The sweep's points after full, in a fixed order: per KV mode, reuse, then each selector at each ratio > 0.
struct Point {
  FusionMethod method;
  std::string kv;
  double ratio;
};
std::vector<Point> sweep_points(const EvalOptions& o) {
  std::vector<Point> points;
  for (const std::string& kv : o.kv_modes) {
    points.push_back({FusionMethod::Reuse, kv, 0.0});
    for (FusionMethod m : o.methods) {
      if (m == FusionMethod::Full || m == FusionMethod::Reuse) continue;
      for (double r : o.ratios)
        if (r > 0) points.push_back({m, kv, r});
    }
  }
  return points;
}

// Per chunk of a question: whether it comes from a gold (supporting) passage; empty when the data set names none
// or the chunks were retrieved rather than given as passages.
std::vector<bool> gold_chunks(const ResolvedQuery& rq, const QueryRecord& rec) {
  std::vector<bool> gold;
  if (rec.gold_passages.empty() || rq.passage_of_chunk.size() != rq.chunk_ids.size()) return gold;
  for (int32_t passage : rq.passage_of_chunk)
    gold.push_back(std::count(rec.gold_passages.begin(), rec.gold_passages.end(), passage) > 0);
  return gold;
}

// The share of `per_chunk` counts that fall in gold chunks; NAN when unknown or nothing is counted.
double share_in_gold(const std::vector<int64_t>& per_chunk, const std::vector<bool>& gold) {
  if (gold.empty() || per_chunk.size() != gold.size()) return NAN;
  int64_t in = 0, all = 0;
  for (size_t c = 0; c < gold.size(); ++c) in += gold[c] ? per_chunk[c] : 0, all += per_chunk[c];
  return all ? (double)in / (double)all : NAN;
}

// Scores one answer against the gold answers and against full attention's state on the same prompt.
EvalRun score(const QueryAnswer& a, const QueryAnswer& full, const std::vector<std::string>& golds,
              const std::vector<int32_t>& gold_tokens, int64_t vocab, const std::string& kv,
              const std::vector<bool>& gold_chunk) {
  EvalRun r;
  r.method = a.method;
  r.kv = kv;
  r.ratio = a.recompute;
  r.answer = a.answer;
  r.em = exact_match(a.answer, golds);
  r.f1 = token_f1(a.answer, golds);
  r.substring = substring_match(a.answer, golds);
  r.gold_ll = mean_log_likelihood(a.teacher_logits, gold_tokens, vocab);
  r.kl_first = kl_divergence(full.first_logits, a.first_logits);
  r.top1 = top1_agreement(full.teacher_logits, a.teacher_logits, vocab);
  r.n_recomputed = a.n_recomputed;
  r.gold_share = share_in_gold(a.recomputed_per_chunk, gold_chunk);
  r.ms = a.ms;
  r.deviation = kv_deviation(full.context_kv, a.context_kv);
  return r;
}

// The settings two sweep descriptions disagree on, for the message that refuses to mix them.
std::string differing_keys(const json& have, const json& wanted) {
  std::set<std::string> keys;
  for (const json* j : {&have, &wanted})
    for (const auto& [key, value] : j->items())
      if (!have.contains(key) || !wanted.contains(key) || have[key] != wanted[key]) keys.insert(key);
  std::string out;
  for (const std::string& key : keys) out += (out.empty() ? "'" : ", '") + key + "'";
  return out;
}

// A run killed while writing leaves a last line without its newline. Appending after it would glue the next
// result onto that text, so the line is finished if it is whole JSON and cut off if it is not.
void repair_torn_tail(const fs::path& path) {
  if (!fs::exists(path) || fs::file_size(path) == 0) return;
  std::ifstream in(path, std::ios::binary);
  in.seekg(-1, std::ios::end);
  if (in.get() == '\n') return;  // the usual case: the whole file is not read
  in.clear();
  in.seekg(0);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (json::accept(text.substr(keep))) {
    std::ofstream out(path, std::ios::app);
    out << "\n";
    KVF_CHECK(out, path.string(), ": write failed");
    return;
  }
  fs::resize_file(path, keep);
  note("eval: %s ended in a half-written line (%zu bytes, from a run that was stopped); cut it off, "
       "its question is answered again\n", path.string().c_str(), text.size() - keep);
}

// The whole of a gzip file, decompressed. Throws kvf::Error naming it when it is not one whole gzip stream.
std::string read_gzip_file(const std::string& path) {
  const RegularFile file(path);  // gzdopen reads (and closes) a duplicate of this descriptor
  const int fd = dup(file.fd());
  KVF_CHECK(fd >= 0, path, ": cannot open");
  gzFile f = gzdopen(fd, "rb");
  if (!f) close(fd);
  KVF_CHECK(f, path, ": cannot open");
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, (size_t)n);
  int err = Z_OK;
  const std::string message = gzerror(f, &err);
  gzclose(f);
  KVF_CHECK(n == 0 && (err == Z_OK || err == Z_STREAM_END), path, ": not a whole gzip file (", message, ")");
  return text;
}

// A results file kept gzipped (OUT/results.jsonl.gz) becomes OUT/results.jsonl again, byte for byte, before a
// resumed sweep appends to it.
void unpack_gzip_results(const std::string& out_dir) {
  const fs::path gz = fs::path(out_dir) / kGzipResultsFile;
  if (eval_results_path(out_dir) != gz.string()) return;
  write_output_file((fs::path(out_dir) / kResultsFile).string(), read_gzip_file(gz.string()));
  fs::remove(gz);
  note("eval: unpacked %s into %s to continue the sweep\n", gz.string().c_str(), kResultsFile);
}

std::map<std::string, QueryEngine> open_engines(const EvalOptions& o) {
  std::map<std::string, QueryEngine> engines;
  for (const std::string& kv : o.kv_modes) {
    QueryEngineOptions e;
    e.store_dir = o.store_dir;
    e.model = o.model;
    e.embedder = o.embedder;
    e.kv_mode = kv;
    e.cache_bytes = o.cache_bytes;
    e.backend = o.backend;
    engines.emplace(kv, QueryEngine(e));
  }
  return engines;
}

// One question's chunks: its own passages (fixed) or the top_k retrieved (retrieval).
ResolvedQuery resolve(const EvalOptions& o, QueryEngine& engine, const QueryRecord& r) {
  Query q = r.query;
  if (o.setting == "retrieval") q.chunk_ids.clear(), q.contexts.clear();
  try {
    ResolvedQuery rq = engine.resolve(q, o.top_k);
    if (o.best_last) {  // retrieved best first; placed best last
      std::reverse(rq.chunk_ids.begin(), rq.chunk_ids.end());
      std::reverse(rq.scores.begin(), rq.scores.end());
      std::reverse(rq.passage_of_chunk.begin(), rq.passage_of_chunk.end());
    }
    return rq;
  } catch (const Error& e) {
    fail(o.dataset, ":", r.line, ": ", e.what());
  }
}

// The point over `kv` with points[i]'s method and ratio.
size_t same_point_over(const std::vector<Point>& points, size_t i, const std::string& kv) {
  for (size_t j = 0; j < points.size(); ++j)
    if (points[j].kv == kv && points[j].method == points[i].method && points[j].ratio == points[i].ratio) return j;
  fail("eval: no ", method_name(points[i].method), " point over ", kv);
}

// What a reference KV mode's run leaves for the others (--reference-kv): its answer's tokens and the logits at each
// of them, forced over its own prefill (the first token's distribution alone when the answer is empty).
struct ReferenceRun {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
};

// Every point of the sweep on one question, scored.
EvalQuestion answer_question(const EvalOptions& o, std::map<std::string, QueryEngine>& engines,
                             const QueryRecord& rec, const ResolvedQuery& rq) {
  QueryEngine& first = engines.at(o.kv_modes[0]);
  const std::vector<Point> points = sweep_points(o);
  AnswerOptions base;
  base.top_k = o.top_k;
  base.max_tokens = o.max_tokens;
  base.link_tokens = o.link_tokens;
  base.exact_first_chunk = o.exact_first_chunk;
  base.first_chunk_kv = o.first_chunk_kv;
  base.stop = {"\n\n"};  // small models often put the answer on the line after "The answer is:"
  base.teacher_tokens = first.encode_answer(rec.answers[0]);
  base.return_context_kv = true;
  // Per KV mode one batch: its answers are decoded together (full goes with the first mode's). Each answer holds
  // its whole context's KV for the deviation against full's, so a batch is scored as soon as it is answered and
  // then dropped: only full's answer outlives its batch, and the reference mode's tokens and forced logits, which
  // the other modes' runs are forced on and compared with (so the reference mode is answered first).
  std::vector<std::string> order = o.kv_modes;
  const bool compare = !o.reference_kv.empty();
  if (compare)
    std::stable_partition(order.begin(), order.end(), [&](const std::string& kv) { return kv == o.reference_kv; });
  EvalQuestion q;
  q.id = rec.query.id;
  q.n_chunks = (int64_t)rq.chunk_ids.size();
  q.n_gold_tokens = (int64_t)base.teacher_tokens.size();
  q.runs.resize(1 + points.size());  // full, then the points in sweep_points' order, whatever order they run in
  const std::vector<bool> gold = gold_chunks(rq, rec);
  QueryAnswer full;
  int64_t vocab = 0;
  std::vector<ReferenceRun> reference(points.size());  // per point over the reference mode
  for (const std::string& kv : order) {
    const bool first_mode = kv == order[0], is_reference = compare && kv == o.reference_kv;
    std::vector<AnswerOptions> batch;
    std::vector<size_t> point_of;  // the point of each answer after full's
    if (first_mode) {
      batch.push_back(base);
      batch.back().method = FusionMethod::Full;
    }
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].kv != kv) continue;
      batch.push_back(base);
      batch.back().method = points[i].method;
      batch.back().recompute = points[i].ratio;
      if (is_reference) batch.back().force_own_answer = true;
      if (compare && !is_reference)
        batch.back().reference_tokens = reference[same_point_over(points, i, o.reference_kv)].tokens;
      point_of.push_back(i);
    }
    std::vector<QueryAnswer> answered = engines.at(kv).answer_all(rq, batch);
    size_t next = 0;
    if (first_mode) {
      full = std::move(answered[next++]);
      vocab = (int64_t)full.first_logits.size();
      q.n_context_tokens = full.n_context_tokens;
      q.n_question_tokens = full.n_question_tokens;
      q.gold_context_share = share_in_gold(full.chunk_tokens, gold);
      q.runs[0] = score(full, full, rec.answers, base.teacher_tokens, vocab, "-", gold);
    }
    for (size_t i : point_of) {
      QueryAnswer& a = answered[next++];
      EvalRun run = score(a, full, rec.answers, base.teacher_tokens, vocab, kv, gold);
      if (is_reference) {
        reference[i].tokens = a.tokens;
        reference[i].logits = a.tokens.empty() ? a.first_logits : std::move(a.own_answer_logits);
      } else if (compare) {
        const ReferenceRun& ref = reference[same_point_over(points, i, o.reference_kv)];
        run.ref_identical = a.tokens == ref.tokens ? 1.0 : 0.0;
        run.ref_kl = mean_kl_divergence(ref.logits, ref.tokens.empty() ? a.first_logits : a.reference_logits, vocab);
      }
      q.runs[1 + i] = std::move(run);
    }
  }
  return q;
}

}  // namespace

std::string eval_results_path(const std::string& out_dir) {
  const fs::path plain = fs::path(out_dir) / kResultsFile, gz = fs::path(out_dir) / kGzipResultsFile;
  const bool has_plain = file_kind(plain.string()) != "missing", has_gz = file_kind(gz.string()) != "missing";
  KVF_CHECK(!has_plain || !has_gz, out_dir, " holds both ", kResultsFile, " and ", kGzipResultsFile,
            "; keep one (eval appends to ", kResultsFile, ", and unpacks ", kGzipResultsFile,
            " when it is the only one)");
  return has_plain ? plain.string() : has_gz ? gz.string() : std::string();
}

void discard_eval_results(const std::string& out_dir) {
  for (const char* name : {kResultsFile, kGzipResultsFile, kSweepFile}) fs::remove(fs::path(out_dir) / name);
}

std::set<std::string> prepare_eval_out_dir(const EvalOptions& o, const std::vector<QueryRecord>& records) {
  const fs::path sweep = fs::path(o.out_dir) / kSweepFile;
  json wanted = sweep_description(o);
  json provenance = sweep_inputs(o);
  const std::vector<EvalQuestion> have_results = read_eval_results(o.out_dir);
  // OUT without results takes any sweep: a run refused before its first answer leaves nothing a corrected rerun
  // must match.
  if (!have_results.empty() && fs::exists(sweep)) {
    json have = read_sweep_description(o.out_dir);
    const json recorded = have.contains("provenance") ? have["provenance"] : json::object();
    have.erase("provenance");  // from before provenance was kept: nothing to compare
    KVF_CHECK(have == wanted, o.out_dir, " holds results of another sweep (", sweep.string(), " differs in ",
              differing_keys(have, wanted), "); choose another --out or pass --fresh to discard them",
              !have.contains("exact_first_chunk") && wanted.contains("exact_first_chunk")
                  ? " (a sweep from before --exact-first-chunk became the default continues with "
                    "--no-exact-first-chunk)"
                  : "");
    require_same_inputs(recorded, provenance, sweep.string());
    if (recorded.is_object() && recorded.contains("runs") && recorded["runs"].is_array())
      provenance["runs"] = recorded["runs"];
  }
  std::set<std::string> done;
  for (const EvalQuestion& q : have_results) done.insert(q.id);
  const bool to_answer = std::any_of(records.begin(), records.end(),
                                     [&](const QueryRecord& r) { return !done.count(r.query.id); });
  if (to_answer || provenance["runs"].empty()) provenance["runs"].push_back(eval_run_record(o, done.size()));
  wanted["provenance"] = provenance;
  write_output_file(sweep.string(), wanted.dump(2) + "\n");
  // Only now: a refused command must not replace the one that made the results.
  if (!o.command.empty()) write_output_file((fs::path(o.out_dir) / kCommandFile).string(), o.command + "\n");
  if (to_answer) unpack_gzip_results(o.out_dir);
  repair_torn_tail(fs::path(o.out_dir) / kResultsFile);
  return done;
}

std::vector<EvalQuestion> read_eval_results(const std::string& out_dir) {
  const std::string path = eval_results_path(out_dir);
  std::vector<EvalQuestion> out;
  if (path.empty()) return out;
  std::vector<std::string> lines;
  bool torn_tail = false;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    const std::string text = read_gzip_file(path);
    size_t begin = 0;
    while (begin < text.size()) {
      const size_t end = text.find('\n', begin);
      lines.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
      if (end == std::string::npos) torn_tail = true;
      begin = end == std::string::npos ? text.size() : end + 1;
    }
  } else {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
    torn_tail = !lines.empty() && in.eof() && !lines.back().empty();
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    try {
      out.push_back(question_from_json(json::parse(lines[i])));
    } catch (const std::exception& e) {
      if (i + 1 == lines.size() && torn_tail) break;  // the line a killed run was writing
      fail(path, ":", i + 1, ": ", e.what());
    }
  }
  return out;
}

nlohmann::json read_sweep_description(const std::string& out_dir) {
  const fs::path path = fs::path(out_dir) / kSweepFile;
  if (file_kind(path.string()) == "missing") return json::object();
  const json have = read_json_file(path.string());
  KVF_CHECK(have.is_object(), path.string(), ": expected a JSON object, got ", have.dump().substr(0, 60));
  return have;
}

const std::vector<std::string>& eval_output_files() {
  static const std::vector<std::string> names = {
      kResultsFile, kGzipResultsFile, kSweepFile, kCommandFile, kLockFile, "report.md", "metrics.csv",
      "kv_deviation.csv", "norm_f1.gp", "norm_f1.png", "norm_ll.gp", "norm_ll.png", "ttft.gp", "ttft.png",
      "kv_deviation.gp", "kv_deviation.png"};
  return names;
}

FolderLock lock_eval_out_dir(const std::string& out_dir) {
  const std::string kind = file_kind(out_dir);
  KVF_CHECK(kind == "missing" || kind == "a folder", "eval --out ", out_dir, " is ", kind,
            "; it names the folder for the results");
  fs::create_directories(out_dir);
  return FolderLock::acquire((fs::path(out_dir) / kLockFile).string(), false,
                             "eval --out " + out_dir + " is in use by another kvrun eval",
                             "wait for it to finish or choose another --out");
}

void run_eval_sweep(const EvalOptions& o) {
  validate_eval_options(o);
  std::vector<QueryRecord> records = read_query_file(o.dataset);
  if (o.limit > 0 && records.size() > o.limit) records.resize(o.limit);
  for (const QueryRecord& r : records) {
    KVF_CHECK(!r.answers.empty() && !r.answers[0].empty(), o.dataset, ":", r.line, ": question '", r.query.id,
              "' has no gold answer; eval scores against \"answers\"");
    KVF_CHECK(o.setting == "retrieval" || !r.query.contexts.empty() || !r.query.chunk_ids.empty(), o.dataset, ":",
              r.line, ": question '", r.query.id, "' has no contexts for --setting fixed");
  }
  const std::set<std::string> done = prepare_eval_out_dir(o, records);
  std::vector<const QueryRecord*> todo;
  for (const QueryRecord& r : records)
    if (!done.count(r.query.id)) todo.push_back(&r);
  if (todo.size() < records.size())
    note("eval: %zu of %zu questions already in %s/%s; answering the other %zu\n", records.size() - todo.size(),
         records.size(), o.out_dir.c_str(), kResultsFile, todo.size());

  const std::string results_path = output_target((fs::path(o.out_dir) / kResultsFile).string(), {}, "eval --out");
  std::ofstream results(results_path, std::ios::app);
  KVF_CHECK(results, o.out_dir, ": cannot append to ", kResultsFile);
  Progress progress("eval", "questions", todo.size());
  std::map<std::string, QueryEngine> engines;
  const size_t block = o.block > 0 ? o.block : std::max<size_t>(1, todo.size());
  for (size_t b = 0; b < todo.size(); b += block) {
    const size_t b_end = std::min(todo.size(), b + block);
    if (o.before_block) {
      std::vector<QueryRecord> these;
      for (size_t t = b; t < b_end; ++t) these.push_back(*todo[t]);
      engines.clear();  // the store changes under them
      o.before_block(these);
    }
    if (engines.empty()) engines = open_engines(o);
    for (size_t t = b; t < b_end; ++t) {
      const CpuSample cpu_before = sample_cpu();
      const ResolvedQuery rq = resolve(o, engines.at(o.kv_modes[0]), *todo[t]);
      if (t + 1 < b_end) {  // the next question's chunks load in the background while this one computes (§4.2)
        const ResolvedQuery next = resolve(o, engines.at(o.kv_modes[0]), *todo[t + 1]);
        for (auto& [kv, engine] : engines) engine.prefetch(next.chunk_ids);
      }
      EvalQuestion q = answer_question(o, engines, *todo[t], rq);
      q.others_cpu = others_cpu_share(cpu_before, sample_cpu());
      q.machine = o.machine;
      results << question_json(q).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      results.flush();
      KVF_CHECK(results, o.out_dir, "/", kResultsFile, ": write failed");
      progress.advance(1);
    }
  }
  progress.finish();
}

}  // namespace kvf
