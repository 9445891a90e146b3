#include <memory>

#include "common/cli.h"
#include "core/hex.h"
#include "fusion/query_file.h"
#include "query_commands.h"
#include "query_options.h"

namespace kvf::cli {
namespace {

struct AskArgs {
  QueryCliOptions query;
  std::string question;
  std::vector<std::string> chunks;
};

void run_ask(const AskArgs& a) {
  require_question_text(a.question, "--question");
  const CommandSettings settings(a.query.common);
  const AnswerOptions options = a.query.answer_options();
  Query q;
  q.id = "ask";
  q.question = a.question;
  for (size_t i = 0; i < a.chunks.size(); ++i)
    q.chunk_ids.push_back(parse_hex64(a.chunks[i], "--chunks item " + std::to_string(i + 1)));
  QueryEngineOptions engine_options = a.query.engine_options();
  engine_options.chunk_kv = reads_chunk_kv(options);  // full (or a selector recomputing everything) reads none
  QueryEngine engine(engine_options);
  const QueryAnswer answer = engine.answer(engine.resolve(q, options.top_k), options);
  if (a.query.common.json)
    print_json(answer_json(answer));
  else
    print_answer_text(answer);
}

}  // namespace

void add_ask_command(CLI::App& app) {
  auto args = std::make_shared<AskArgs>();
  CLI::App* cmd = app.add_subcommand("ask", "Answer one question from a store's precomputed KV");
  cmd->footer(
      "The prompt is [system][chunk 1]...[chunk k][question]; the chunks' stored KV is placed at their positions\n"
      "and --method decides which context tokens are recomputed with the question (DESIGN: docs/kvrun.md).\n"
      "Examples:\n"
      "  kvrun ask --store stores/demo --question \"Who directed Alien?\"\n"
      "  kvrun ask --store stores/demo --question \"...\" --method cacheblend --recompute 0.3 --kv similarity\n"
      "  kvrun ask --store stores/demo --question \"...\" --chunks 1f0c9a2b3d4e5f60,0a1b2c3d4e5f6071 --json\n"
      "Chunk ids are those `kvprep search` prints.");
  cmd->add_option("--question", args->question, "the question")->required();
  cmd->add_option("--chunks", args->chunks, "use these chunks (ids, in prompt order) instead of retrieving")
      ->delimiter(',');
  add_query_options(*cmd, args->query);
  cmd->callback([args, cmd] {
    apply_exact_first_chunk_default(*cmd, {args->query.engine.kv_mode}, args->query.answer.exact_first_chunk);
    run_ask(*args);
  });
}

}  // namespace kvf::cli
