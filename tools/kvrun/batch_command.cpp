#include <tbb/global_control.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "common/cli.h"
#include "core/error.h"
#include "core/progress.h"
#include "fusion/query_file.h"
#include "io/file_roles.h"
#include "query_commands.h"
#include "query_options.h"

namespace kvf::cli {
namespace {

struct BatchArgs {
  QueryCliOptions query;
  std::string queries, out;
  bool retrieve = false;
  int prefetch = 2;
};

void run_batch(const BatchArgs& a) {
  const CommandSettings settings(a.query.common);
  // Checked before anything is loaded: an --out that cannot be written must not cost a whole batch.
  const std::string target = output_target(a.out, {a.queries}, "--out");
  const AnswerOptions options = a.query.answer_options();
  std::vector<QueryRecord> records = read_query_file(a.queries);
  if (a.retrieve)
    for (QueryRecord& r : records) r.query.chunk_ids.clear(), r.query.contexts.clear();
  QueryEngine engine(a.query.engine_options());

  // Answers go to OUT.partial, renamed to OUT when every question is answered: an OUT file is always complete.
  // (OUT a symlink: both sit beside its target, which is replaced.)
  const std::string partial = target + ".partial";
  std::ofstream out(partial, std::ios::trunc);
  KVF_CHECK(out, a.out, ": cannot write (", partial, ")");
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
  Progress progress("batch " + method_name(options.method), "questions", records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    resolve(i);
    // FusionRAG §4.2: the next questions' chunks load in the background while this one computes.
    for (size_t j = i + 1; j < records.size() && j <= i + (size_t)a.prefetch; ++j) {
      if (ready[j]) continue;
      resolve(j);
      engine.prefetch(resolved[j].chunk_ids);
    }
    const QueryAnswer answer = engine.answer(resolved[i], options);
    nlohmann::json j = answer_json(answer);
    if (!records[i].answers.empty()) j["gold_answers"] = records[i].answers;
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.flush();
    KVF_CHECK(out, partial, ": write failed");
    if (!a.query.common.json) print_answer_text(answer);
    progress.advance(1);
  }
  progress.finish();
  const ChunkKvCache::Stats cache = engine.cache_stats();
  note("batch: chunk KV cache: %llu hits, %llu misses; holds %llu chunks in %.1f MiB\n",
       (unsigned long long)cache.hits, (unsigned long long)cache.misses, (unsigned long long)cache.chunks_held,
       (double)cache.bytes_held / (1024.0 * 1024.0));
  out.close();
  KVF_CHECK(out, partial, ": write failed");
  replace_output(partial, target);
  if (a.query.common.json)  // the answers are in --out; stdout gets the run's summary
    print_json({{"out", a.out},
                {"questions", records.size()},
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
      "file or a new one (a symlink: its target is replaced), never the question file.\n"
      "Examples:\n"
      "  kvrun batch --store stores/demo --queries questions.jsonl --out answers.jsonl --method fusion\n"
      "  kvrun batch --store stores/hotpot --queries ../shared/data/hotpotqa_dev500_ircot.jsonl --out a.jsonl \\\n"
      "      --method cacheblend --recompute 0.15 --kv similarity");
  cmd->add_option("--queries", args->queries, "the question file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "where to write the results (JSONL)")->required();
  cmd->add_flag("--retrieve", args->retrieve, "retrieve every question's chunks, ignoring given chunk lists");
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
