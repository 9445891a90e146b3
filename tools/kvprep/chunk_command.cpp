#include "chunk_command.h"

#include "common/cli.h"
#include "store_lock_option.h"

#include <cstdio>
#include <memory>

#include "core/hex.h"
#include "io/model_paths.h"
#include "prep/store_model.h"
#include "model/fingerprint.h"
#include "prep/chunk_stage.h"

namespace kvf::cli {
namespace {

struct ChunkArgs : StoreCommandOptions {
  ChunkStageOptions options;  // the options bind to it: its defaults (and so --help's) are the library's
  std::string model;
};

void print_summary(const ChunkStageResult& r, const ChunkStageOptions& o) {
  if (r.unchanged) {
    std::printf("nothing to do: %s was already chunked from this corpus (figures of that run below)\n",
                o.store_dir.c_str());
  }
  std::printf("corpus   %llu documents (%llu empty skipped)\n", (unsigned long long)r.documents,
              (unsigned long long)r.skipped_empty);
  if (!r.unchanged) {
    std::printf("chunks   %llu: %llu new, %llu already stored; %llu removed (no document brings them now)\n",
                (unsigned long long)r.chunks, (unsigned long long)r.new_chunks,
                (unsigned long long)(r.chunks - r.new_chunks), (unsigned long long)r.removed_chunks);
  } else {
    std::printf("chunks   %llu\n", (unsigned long long)r.chunks);
  }
  std::printf("tokens   %llu: mean %.1f, max %llu per chunk (aim %zu, limit %zu)\n", (unsigned long long)r.tokens,
              r.chunks ? (double)r.tokens / r.chunks : 0.0, (unsigned long long)r.max_chunk_tokens,
              o.chunker.chunk_tokens, o.chunker.hard_max());
  std::printf("store    %s: %llu chunks, %llu tokens, chunks.h5 %.1f MB, model %s\n", o.store_dir.c_str(),
              (unsigned long long)r.table_chunks, (unsigned long long)r.table_tokens, r.table_bytes / 1e6,
              hex64(r.model_fingerprint).c_str());
  std::printf("time     %.2f s\n", r.seconds);
}

nlohmann::json summary_json(const ChunkStageResult& r, const ChunkStageOptions& o) {
  return {{"store", o.store_dir},
          {"unchanged", r.unchanged},
          {"documents", r.documents},
          {"skipped_empty", r.skipped_empty},
          {"chunks", r.chunks},
          {"new_chunks", r.new_chunks},
          {"removed_chunks", r.removed_chunks},
          {"tokens", r.tokens},
          {"max_chunk_tokens", r.max_chunk_tokens},
          {"chunk_tokens", o.chunker.chunk_tokens},
          {"chunk_token_limit", o.chunker.hard_max()},
          {"table_chunks", r.table_chunks},
          {"table_tokens", r.table_tokens},
          {"table_bytes", r.table_bytes},
          {"model_fingerprint", hex64(r.model_fingerprint)},
          {"seconds", r.seconds}};
}

void run_chunk(const ChunkArgs& a) {
  const StoreCommandScope scope(a, StoreAccess::Create);
  ChunkStageOptions o = a.options;
  o.store_dir = a.store;
  o.model_path = resolve_model(model_for_store(a.model, a.store));
  const ChunkStageResult r = run_chunk_stage(o);
  if (a.common.json)
    print_json(summary_json(r, o));
  else
    print_summary(r, o);
}

}  // namespace

void add_chunk_command(CLI::App& app) {
  auto args = std::make_shared<ChunkArgs>();
  CLI::App* cmd = app.add_subcommand("chunk", "Split a corpus into chunks of decoder tokens (store: chunks.h5)");
  cmd->footer(
      "Examples:\n"
      "  kvprep chunk --corpus data/corpus.jsonl --store stores/demo\n"
      "  kvprep chunk --corpus notes/ --store stores/notes --chunk-tokens 128\n"
      "The corpus is JSONL (plain or gzip-compressed), one {\"id\", \"title\" (optional), \"text\"} per line, or a\n"
      "directory of .txt files "
      "(id = relative path, title = file name). Each chunk is shown to the model as \"Title: <title>\\n<text>\\n\\n\".\n"
      "Rerunning over the same corpus does nothing; over a changed corpus it adds only the new chunks and drops\n"
      "those no document brings any more (removed or edited documents; the later stages then drop their\n"
      "embeddings and neighbours, and `kvprep prune` their KV). A store keeps its model and chunking settings: a\n"
      "run with others is refused.");
  cmd->add_option("--corpus", args->options.corpus, "JSONL file or directory of .txt files")->required();
  args->add_store_option(cmd, "store directory (created when missing)");
  cmd->add_option("--model", args->model, std::string(kStoreModelHelp) + "; its tokenizer counts tokens");
  cmd->add_option("--chunk-tokens", args->options.chunker.chunk_tokens, "tokens to aim for per chunk")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-chunk-tokens", args->options.chunker.max_tokens,
                  "hard maximum per chunk, title included (default: 1.25 x --chunk-tokens)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--keep-removed", args->options.keep_removed,
                "the corpus only adds documents (a feed of new ones): keep the chunks it does not bring");
  args->add_lock_and_common_options(
      cmd, "one JSON object: documents, chunks, new_chunks, tokens, table_chunks, table_bytes, seconds, ...");
  cmd->callback([args] { run_chunk(*args); });
}

}  // namespace kvf::cli
