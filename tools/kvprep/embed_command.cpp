#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "store_lock_option.h"
#include "io/model_paths.h"
#include "prep/retrieval_stages.h"
#include "retrieval_commands.h"

namespace kvf::cli {

void add_embed_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    EmbedStageOptions options;  // the options bind to it: its defaults (and so --help's) are the library's
    std::string embedder = kDefaultEmbedder;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("embed", "Embed every chunk of a store (store: embeddings.h5)");
  cmd->footer(
      "Example:\n  kvprep embed --store stores/demo\n"
      "Only chunks without an embedding are embedded: a rerun after `kvprep chunk` over a grown corpus embeds the\n"
      "new chunks, and an interrupted run resumes from its last checkpoint.");
  a->add_store_option(cmd, "store directory (after `kvprep chunk`)");
  cmd->add_option("--embedder", a->embedder, "minilm or a BERT-family model folder")->capture_default_str();
  cmd->add_option("--batch", a->options.batch_size, "texts per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--checkpoint-seconds", a->options.checkpoint_seconds, "commit embeddings made so far this often")
      ->capture_default_str()
      ->check(finite_in(1e-9, 1e9));
  cmd->add_option("--backend", a->options.backend, "where the encoder runs: cpu or cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  a->add_lock_and_common_options(cmd, "one JSON object: store, unchanged, chunks, embedded, dim, seconds");
  cmd->callback([a] {
    const StoreCommandScope scope(*a);
    EmbedStageOptions o = a->options;
    o.store_dir = a->store;
    o.embedder_dir = resolve_model(a->embedder);
    const EmbedStageResult r = run_embed_stage(o);
    if (a->common.json) {
      print_json({{"store", o.store_dir}, {"unchanged", r.unchanged}, {"chunks", r.chunks}, {"embedded", r.embedded},
                  {"dim", r.dim}, {"seconds", r.seconds}});
      return;
    }
    if (r.unchanged) {
      std::printf("nothing to do: all %llu chunks of %s are embedded\n", (unsigned long long)r.chunks,
                  o.store_dir.c_str());
    } else {
      std::printf("embedded %llu of %llu chunks (dim %d) in %.2f s, %.1f chunks/s\n", (unsigned long long)r.embedded,
                  (unsigned long long)r.chunks, r.dim, r.seconds, r.embedded / r.seconds);
    }
  });
}

}  // namespace kvf::cli
