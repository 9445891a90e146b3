#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "store_lock_option.h"
#include "prep/retrieval_stages.h"
#include "retrieval_commands.h"

namespace kvf::cli {

void add_neighbors_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    NeighborStageOptions options;  // the options bind to it: its defaults (and so --help's) are the library's
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("neighbors", "Record each chunk's top-n most similar chunks (store: neighbors.h5)");
  cmd->footer(
      "Example:\n  kvprep neighbors --store stores/demo --top-n 10\n"
      "The chunk itself and exact duplicates (identical embeddings) are left out. These neighbours are the context\n"
      "each chunk's KV is computed with in similarity mode.");
  a->add_store_option(cmd, "store directory (after `kvprep index`)");
  cmd->add_option("--top-n", a->options.top_n, "neighbours per chunk")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  a->add_lock_and_common_options(cmd,
                                 "one JSON object: store, top_n, unchanged, chunks, mean_similarity, seconds");
  cmd->callback([a] {
    const StoreCommandScope scope(*a);
    NeighborStageOptions o = a->options;
    o.store_dir = a->store;
    const NeighborStageResult r = run_neighbor_stage(o);
    if (a->common.json) {
      print_json({{"store", o.store_dir}, {"top_n", o.top_n}, {"unchanged", r.unchanged}, {"chunks", r.chunks},
                  {"mean_similarity", r.mean_score}, {"seconds", r.seconds}});
      return;
    }
    if (r.unchanged) {
      std::printf("nothing to do: neighbours of all %llu chunks are current\n", (unsigned long long)r.chunks);
    } else {
      std::printf("found top-%d neighbours of %llu chunks in %.2f s (mean similarity %.3f)\n", o.top_n,
                  (unsigned long long)r.chunks, r.seconds, r.mean_score);
    }
  });
}

}  // namespace kvf::cli
