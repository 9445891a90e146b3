#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "common/cli.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/json_file.h"
#include "core/progress.h"
#include "core/regular_file.h"
#include "eval/answer_metrics.h"
#include "fusion/query_file.h"
#include "io/file_roles.h"
#include "io/text_lines.h"
#include "query_commands.h"
#include "query_options.h"

namespace kvf::cli {
namespace {

struct BatchArgs {
  QueryCliOptions query;
  std::string queries, out;
  bool retrieve = false;
  bool restart = false;
  int prefetch = 2;
};

namespace fs = std::filesystem;

// What makes two runs of a batch the same one: the question file's text and every option that changes an answer or
// what a result line holds. --threads, --cache-mb, --prefetch, --decode-low-bit-at-load, --json and --quiet change
// only the speed or what the terminal shows, and may differ on a restart.
nlohmann::json batch_settings(const BatchArgs& a, const AnswerOptions& o) {
  const QueryEngineOptions e = a.query.engine_options();
  const std::string questions = read_text_file(a.queries);
  nlohmann::json settings = {{"--queries", hex64(XXH3_64bits(questions.data(), questions.size()))},
                             {"--store", fs::absolute(e.store_dir).lexically_normal().string()},
                             {"--model", e.model},
                             {"--embedder", e.embedder},
                             {"--kv", e.kv_mode},
                             {"--backend", e.backend},
                             {"--compute", a.query.compute},
                             {"--method", method_name(o.method)},
                             {"--recompute", o.recompute},
                             {"--top-k", o.top_k},
                             {"--retrieve", a.retrieve},
                             {"--link-tokens", o.link_tokens},
                             {"--max-tokens", o.max_tokens},
                             {"--stop", o.stop},
                             {"--exact-first-chunk", o.exact_first_chunk},
                             {"--show-recomputed", o.mark_recomputed}};
  // Recorded only when set, so that runs from before the option continue.
  if (o.first_chunk_kv != FirstChunkKv::Auto) settings["--first-chunk-kv"] = first_chunk_kv_name(o.first_chunk_kv);
  return settings;
}

// The options whose values differ between a run's recorded settings and this one's ("--method (was \"full\")").
std::vector<std::string> differing_options(const nlohmann::json& recorded, const nlohmann::json& now) {
  std::vector<std::string> differ;
  for (const auto& [name, value] : now.items())
    if (!recorded.contains(name) || recorded[name] != value)
      differ.push_back(name + (name == "--queries" ? " (the question file's text)"
                               : recorded.contains(name) ? " (was " + recorded[name].dump() + ")"
                                                         : ""));
  return differ;
}

// Mean scores over the questions with gold answers (the fields eval computes: em, f1, substring).
struct ScoreSums {
  size_t n = 0;
  double em = 0, f1 = 0, substring = 0;
  void add(const nlohmann::json& row) {
    if (!row.contains("f1")) return;
    ++n;
    em += row.at("em").get<double>();
    f1 += row.at("f1").get<double>();
    substring += row.at("substring").get<double>();
  }
};

// What a killed run of this batch left in OUT.partial: its complete result lines. A torn last line (no newline:
// the run was killed while writing it) is dropped and the file cut back to the lines before it. Any other line
// that is not the result of one of `records`' questions, answered once, is damage: refused.
struct Resumed {
  std::set<std::string> ids;
  ScoreSums scores;
  uint64_t bytes = 0;  // the complete lines' length: where the file is cut
};
Resumed resume_partial(const std::string& partial, const std::vector<QueryRecord>& records) {
  std::set<std::string> asked;
  for (const QueryRecord& r : records) asked.insert(r.query.id);
  std::ifstream in(partial, std::ios::binary);
  KVF_CHECK(in, partial, ": cannot read");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  KVF_CHECK(!in.bad(), partial, ": cannot read");
  Resumed resumed;
  size_t begin = 0, line = 1;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1, ++line) {
    const std::string where = partial + ":" + std::to_string(line) + ": ";
    const char* restart = "; rerun with --restart to answer every question again";
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(text.begin() + (std::ptrdiff_t)begin, text.begin() + (std::ptrdiff_t)end);
    } catch (const nlohmann::json::exception&) {
      fail(where, "not a result line", restart);
    }
    const bool scored = row.is_object() && row.contains("f1");
    const bool valid = row.is_object() && row.contains("id") && row["id"].is_string() &&
                       (!scored || (row["f1"].is_number() && row.contains("em") && row["em"].is_number() &&
                                    row.contains("substring") && row["substring"].is_number()));
    KVF_CHECK(valid, where, "not a result line", restart);
    const std::string id = row["id"].get<std::string>();
    KVF_CHECK(asked.count(id), where, "question '", id, "' is not in the question file", restart);
    KVF_CHECK(resumed.ids.insert(id).second, where, "question '", id, "' is answered twice", restart);
    resumed.scores.add(row);
  }
  resumed.bytes = begin;  // a torn last line after it is dropped
  return resumed;
}

// OUT.partial, open and flocked for the whole run, so that two batches never write one OUT at once (the kernel
// releases the lock when its holder exits, however it exits).
class PartialLock {
 public:
  PartialLock(const std::string& partial, const std::string& out) {
    // O_NONBLOCK: a FIFO under that name is refused (no reader: ENXIO), never waited on.
    fd_ = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    KVF_CHECK(fd_ >= 0, out, ": cannot write (", partial, "): ", std::strerror(errno));
    try {
      struct stat held {}, named {};
      KVF_CHECK(::fstat(fd_, &held) == 0 && S_ISREG(held.st_mode), out, ": ", partial, " is ", file_kind(partial),
                "; it must be a regular file or a new one");
      KVF_CHECK(::flock(fd_, LOCK_EX | LOCK_NB) == 0, out, ": another kvrun batch is writing it (", partial,
                " is locked); wait for it to finish or stop it");
      // A run that finished between the open and the lock renamed this file to OUT: the name is no longer ours.
      KVF_CHECK(::stat(partial.c_str(), &named) == 0 && held.st_ino == named.st_ino && held.st_dev == named.st_dev,
                out, ": another kvrun batch finished it meanwhile; rerun to answer again");
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~PartialLock() { ::close(fd_); }
  PartialLock(const PartialLock&) = delete;
  PartialLock& operator=(const PartialLock&) = delete;
  // Cuts the file to its first `bytes` bytes.
  void truncate(uint64_t bytes, const std::string& partial) {
    KVF_CHECK(::ftruncate(fd_, (off_t)bytes) == 0, partial, ": cannot truncate: ", std::strerror(errno));
  }

 private:
  int fd_ = -1;
};

// Whether OUT.partial holds a complete result line.
bool holds_results(const std::string& partial) {
  std::ifstream in(partial, std::ios::binary);
  for (char c; in.get(c);)
    if (c == '\n') return true;
  return false;
}

void write_settings(const std::string& path, const nlohmann::json& settings) {
  std::ofstream out(path, std::ios::trunc);
  out << settings.dump(2) << "\n";
  out.close();
  KVF_CHECK(out, path, ": write failed");
}

void run_batch(const BatchArgs& a) {
  const CommandSettings settings(a.query.common);
  // Checked before anything is loaded: an --out that cannot be written must not cost a whole batch.
  const std::string target = output_target(a.out, {a.queries}, "--out");
  const AnswerOptions options = a.query.answer_options();
  std::vector<QueryRecord> records = read_query_file(a.queries);
  if (a.retrieve)
    for (QueryRecord& r : records) r.query.chunk_ids.clear(), r.query.contexts.clear();

  // Answers go to OUT.partial, renamed to OUT when every question is answered: an OUT file is always complete.
  // (OUT a symlink: both sit beside its target, which is replaced.) OUT.partial.settings.json records what the run
  // was asked, so that a rerun of the same batch resumes a killed one and no other batch appends to it.
  const std::string partial = target + ".partial";
  const std::string settings_file = partial + ".settings.json";
  const nlohmann::json settings_now = batch_settings(a, options);
  PartialLock lock(partial, a.out);
  // A run that failed or was killed before its first answer leaves nothing to resume: it never blocks a rerun.
  const bool resuming = !a.restart && holds_results(partial);
  Resumed resumed;
  if (resuming) {
    KVF_CHECK(fs::exists(settings_file), partial, " holds results of a batch whose settings were not recorded (no ",
              settings_file, "); rerun with --restart to answer every question again");
    nlohmann::json recorded;
    try {
      recorded = read_json_file(settings_file);
    } catch (const Error& e) {
      fail(e.what(), "; rerun with --restart to answer every question again");
    }
    std::string differ;
    for (const std::string& name : differing_options(recorded, settings_now))
      differ += (differ.empty() ? "" : ", ") + name;
    KVF_CHECK(differ.empty(), partial, " holds the results of a run with other settings: ", differ,
              "; rerun with the same settings to resume it, or with --restart to answer every question again");
    resumed = resume_partial(partial, records);
    lock.truncate(resumed.bytes, partial);
  } else {
    // The old results go before the new settings are written: results never sit beside another run's settings.
    lock.truncate(0, partial);
    write_settings(settings_file, settings_now);
  }
  std::ofstream out(partial, std::ios::app);
  KVF_CHECK(out, a.out, ": cannot write (", partial, ")");
  std::vector<size_t> todo;  // the questions still to answer, in file order
  for (size_t i = 0; i < records.size(); ++i)
    if (!resumed.ids.count(records[i].query.id)) todo.push_back(i);
  if (resuming)
    note("batch: resumed %zu of %zu questions from %s\n", resumed.ids.size(), records.size(), partial.c_str());

  ScoreSums scores = resumed.scores;
  ChunkKvCache::Stats cache{};
  if (!todo.empty()) {
    QueryEngineOptions engine_options = a.query.engine_options();
    engine_options.chunk_kv = reads_chunk_kv(options);  // full recomputes every chunk from its tokens
    QueryEngine engine(engine_options);
    std::vector<ResolvedQuery> resolved(records.size());
    std::vector<bool> ready(records.size(), false);
    const auto resolve = [&](size_t i) {
      if (ready[i]) return;
      try {
        resolved[i] = engine.resolve(records[i].query, options.top_k);
      } catch (const Error& e) {
        fail(a.queries, ":", records[i].line, ": ", e.what());
      }
      ready[i] = true;
    };
    Progress progress("batch " + method_name(options.method), "questions", todo.size());
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t i = todo[k];
      resolve(i);
      // FusionRAG §4.2: the next questions' chunks load in the background while this one computes.
      for (size_t next = k + 1; next < todo.size() && next <= k + (size_t)a.prefetch; ++next) {
        if (ready[todo[next]]) continue;
        resolve(todo[next]);
        engine.prefetch(resolved[todo[next]].chunk_ids);
      }
      const QueryAnswer answer = engine.answer(resolved[i], options);
      nlohmann::json j = answer_json(answer);
      if (const std::vector<std::string>& golds = records[i].answers; !golds.empty()) {
        j["gold_answers"] = golds;
        j["em"] = exact_match(answer.answer, golds);
        j["f1"] = token_f1(answer.answer, golds);
        j["substring"] = substring_match(answer.answer, golds);
        scores.add(j);
      }
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      out.flush();
      KVF_CHECK(out, partial, ": write failed");
      if (!a.query.common.json) print_answer_text(answer);
      progress.advance(1);
    }
    progress.finish();
    cache = engine.cache_stats();
    note("batch: chunk KV cache: %llu hits, %llu misses; holds %llu chunks in %.1f MiB\n",
         (unsigned long long)cache.hits, (unsigned long long)cache.misses, (unsigned long long)cache.chunks_held,
         (double)cache.bytes_held / (1024.0 * 1024.0));
  }
  out.close();
  KVF_CHECK(out, partial, ": write failed");
  replace_output(partial, target);
  std::error_code ec;
  fs::remove(settings_file, ec);  // OUT is complete; a leftover record would only be rewritten by the next run
  const auto mean = [&](double sum) { return scores.n ? sum / (double)scores.n : 0.0; };
  if (scores.n > 0)
    note("batch: %zu of %zu questions scored against their answers: F1 %.4f, exact match %.4f, substring %.4f\n",
         scores.n, records.size(), mean(scores.f1), mean(scores.em), mean(scores.substring));
  if (a.query.common.json)  // the answers are in --out; stdout gets the run's summary
    print_json({{"out", a.out},
                {"questions", records.size()},
                {"resumed", resumed.ids.size()},
                {"scored", {{"questions", scores.n}, {"f1", mean(scores.f1)}, {"em", mean(scores.em)},
                            {"substring", mean(scores.substring)}}},
                {"cache", {{"hits", cache.hits}, {"misses", cache.misses}, {"chunks_held", cache.chunks_held},
                           {"bytes_held", cache.bytes_held}}}});
}

}  // namespace

void add_batch_command(CLI::App& app) {
  auto args = std::make_shared<BatchArgs>();
  CLI::App* cmd = app.add_subcommand("batch", "Answer a file of questions, one JSON result per line");
  cmd->footer(
      "Question file: JSONL (or .jsonl.gz), one object per line: {\"id\", \"question\", \"answers\"?,\n"
      "\"chunk_ids\"? [16-hex-digit ids], \"contexts\"? [{\"title\", \"text\"}]}. Given chunk ids or contexts (the\n"
      "passages the store was built from) are the question's chunks in that order; otherwise --top-k are retrieved.\n"
      "Results are written to OUT.partial and renamed to OUT once every question is answered; OUT must be a regular\n"
      "file or a new one (a symlink: its target is replaced), never the question file. A rerun after a killed run\n"
      "keeps its complete results and answers the rest, when the question file and settings are the same\n"
      "(OUT.partial.settings.json records them; --restart starts over). Questions with \"answers\" get eval's scores\n"
      "(em, f1, substring) on their lines and the means on stderr.\n"
      "Examples:\n"
      "  kvrun batch --store stores/demo --queries questions.jsonl --out answers.jsonl --method fusion\n"
      "  kvrun batch --store stores/hotpot --queries ../shared/data/hotpotqa_dev500_ircot.jsonl --out a.jsonl \\\n"
      "      --method cacheblend --recompute 0.15 --kv similarity");
  cmd->add_option("--queries", args->queries, "the question file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "where to write the results (JSONL)")->required();
  cmd->add_flag("--retrieve", args->retrieve, "retrieve every question's chunks, ignoring given chunk lists");
  cmd->add_flag("--restart", args->restart,
                "answer every question again, discarding the results a killed run left in OUT.partial (by default a "
                "rerun with the same settings resumes them, and one with other settings is refused)");
  cmd->add_option("--prefetch", args->prefetch, "questions whose chunk KV is loaded ahead in the background")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  add_query_options(*cmd, args->query);
  cmd->callback([args, cmd] {
    apply_exact_first_chunk_default(*cmd, {args->query.engine.kv_mode}, args->query.answer.exact_first_chunk);
    run_batch(*args);
  });
}

}  // namespace kvf::cli
