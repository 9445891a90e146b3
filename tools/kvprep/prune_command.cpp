#include "prune_command.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "prep/store_prune.h"
#include "store_lock_option.h"

namespace kvf::cli {

void add_prune_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    bool dry_run = false;
    std::vector<std::string> drop_modes;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("prune", "Reclaim the stored KV of removed chunks and superseded entries");
  cmd->footer(
      "Examples:\n"
      "  kvprep prune --store stores/demo --dry-run     # what would go, and the KV bytes before and after\n"
      "  kvprep prune --store stores/demo\n"
      "`kvprep chunk` over a corpus without some documents (removed or edited) drops their chunks; this drops\n"
      "their KV: shards holding some of it are rewritten without it (stored bytes copied, never re-encoded),\n"
      "shards holding only it are deleted. It also drops KV entries that a recomputation replaced\n"
      "(`prefill --refresh-neighbors`). Chunks the published generation still reaches keep their KV, so readers\n"
      "never lose an answer. `kvprep run` prunes after every run.\n"
      "  kvprep prune --store stores/demo --drop-mode independent\n"
      "removes a KV mode whole. Dropping the independent KV halves a store that keeps it beside the similarity KV;\n"
      "kvrun then recomputes each answer's exact first chunk with the question (--first-chunk-kv), and a later\n"
      "similarity prefill needs `kvprep prefill --mode independent` again (docs/store.md, \"Which modes a store\n"
      "keeps\", states both costs as measured).");
  a->add_store_option(cmd, "store directory");
  cmd->add_flag("--dry-run", a->dry_run, "count what would be reclaimed; change nothing");
  cmd->add_option("--drop-mode", a->drop_modes, "remove this KV mode whole: its shards and its completion (repeatable)");
  a->add_lock_and_common_options(cmd,
                                 "one JSON object: store, dry_run, dropped, superseded, mode_entries, kept, "
                                 "shards_rewritten, shards_removed, bytes_before, bytes_after, modes");
  cmd->callback([a] {
    const StoreCommandScope scope(*a);
    const PruneResult r = prune_store({a->store, a->dry_run, a->drop_modes});
    if (a->common.json) {
      print_json({{"store", a->store}, {"dry_run", a->dry_run}, {"dropped", r.dropped}, {"superseded", r.superseded},
                  {"mode_entries", r.mode_entries},
                  {"kept", r.kept}, {"shards_rewritten", r.shards_rewritten}, {"shards_removed", r.shards_removed},
                  {"bytes_before", r.bytes_before}, {"bytes_after", r.bytes_after}, {"modes", r.modes}});
      return;
    }
    std::printf("%s%s: %s\n", a->dry_run ? "dry run: " : "", a->store.c_str(), describe_prune(r).c_str());
    std::printf("kept %llu KV entries\n", (unsigned long long)r.kept);
  });
}

}  // namespace kvf::cli
