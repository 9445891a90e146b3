// Reclaims stored KV that no reader can reach any more (docs/store.md, "Deletions and edits"): the KV of chunks
// that neither the working chunk table nor the published generation holds (their documents were removed or edited),
// and entries that a later recomputation of the same chunk replaced. Shards holding some of it are rewritten
// without it (stored bytes copied as they are, never re-encoded), shards holding only it are removed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

struct PruneOptions {
  std::string store_dir;
  bool dry_run = false;  // count what would go, change nothing
  // KV modes to remove whole: every shard and the mode's completion (docs/store.md, "Which modes a store keeps").
  // The system prompt's KV cannot be dropped; a mode the store does not hold is refused, naming it.
  std::vector<std::string> drop_modes;
};

struct PruneResult {
  uint64_t dropped = 0;     // KV entries of chunks no table holds
  uint64_t mode_entries = 0;  // KV entries of the modes dropped whole (drop_modes)
  uint64_t superseded = 0;  // KV entries replaced by a later entry of the same chunk and mode
  uint64_t kept = 0;        // KV entries left, over every mode
  uint64_t shards_rewritten = 0, shards_removed = 0;
  uint64_t bytes_before = 0, bytes_after = 0;  // of the KV shards the manifest lists
  std::vector<std::string> modes;             // modes with something reclaimed
};

// Rewrites each shard with entries to reclaim as a new shard of its mode (its compression kept), then saves the
// manifest without the old shard, then deletes it: a killed run leaves the old commit or the new one, and at most
// an unlisted shard file, which the next prune (or `kvprep verify`) names and the next prune removes. A reader that
// loaded the manifest before and opens a removed shard retries with the new manifest. The system prompt's KV stays.
// The caller holds the store lock. Throws kvf::Error for a damaged shard (nothing is dropped from it).
PruneResult prune_store(const PruneOptions& options);

// One line for people: "nothing to reclaim", or what went and the bytes before and after.
std::string describe_prune(const PruneResult& result);

}  // namespace kvf
