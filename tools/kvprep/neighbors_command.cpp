#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "common/common_options.h"
#include "store/store_lock.h"
#include "store_lock_option.h"
#include "prep/retrieval_stages.h"
#include "retrieval_commands.h"

namespace kvf::cli {

void add_neighbors_command(CLI::App& app) {
  struct Args {
    std::string store;
    int top_n = 10;
    CommonOptions common;
    bool wait_lock = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("neighbors", "Record each chunk's top-n most similar chunks (store: neighbors.h5)");
  cmd->footer(
      "Example:\n  kvprep neighbors --store stores/demo --top-n 10\n"
      "The chunk itself and exact duplicates (identical embeddings) are left out. These neighbours are the context\n"
      "each chunk's KV is computed with in similarity mode.");
  cmd->add_option("--store", a->store, "store directory (after `kvprep index`)")->required();
  cmd->add_option("--top-n", a->top_n, "neighbours per chunk")->capture_default_str()->check(CLI::Range(1, 1000));
  add_wait_lock_flag(cmd, a->wait_lock);
  add_common_options(*cmd, a->common, "one JSON object: store, top_n, unchanged, chunks, mean_similarity, seconds");
  cmd->callback([a] {
    const CommandSettings settings(a->common);
    const StoreLock lock = StoreLock::acquire(a->store, a->wait_lock);
    NeighborStageOptions o;
    o.store_dir = a->store;
    o.top_n = a->top_n;
    const NeighborStageResult r = run_neighbor_stage(o);
    if (a->common.json) {
      print_json({{"store", a->store}, {"top_n", a->top_n}, {"unchanged", r.unchanged}, {"chunks", r.chunks},
                  {"mean_similarity", r.mean_score}, {"seconds", r.seconds}});
      return;
    }
    if (r.unchanged) {
      std::printf("nothing to do: neighbours of all %llu chunks are current\n", (unsigned long long)r.chunks);
    } else {
      std::printf("found top-%d neighbours of %llu chunks in %.2f s (mean similarity %.3f)\n", a->top_n,
                  (unsigned long long)r.chunks, r.seconds, r.mean_score);
    }
  });
}

}  // namespace kvf::cli
