// `kvprep verify --repair`: what verify condemns is dropped, so that the next run of each stage recomputes
// exactly what was lost. A broken KV shard leaves the manifest (and the disk) with its mode's stage record; the
// next `kvprep prefill` / `compress` of that mode computes the chunks that lost their KV, bit for bit what they
// were. A broken table (chunks.h5, embeddings.h5, index.faiss, neighbors.h5) goes with its stage's record, so the
// stage runs again. Only damaged files are dropped: an unreadable one (permission denied, an I/O error; see
// prep/store_report.h) stays on disk and in the manifest, and is reported. The caller holds the store lock
// (store/store_lock.h).
#pragma once
#include <string>
#include <vector>

#include "prep/store_report.h"

namespace kvf {

struct RepairedFile {
  std::string file;   // as the manifest recorded it
  std::string stage;  // the stage record dropped with it ("" when none was recorded)
  std::string rerun;  // the command that recomputes it
};

struct RepairResult {
  std::vector<RepairedFile> dropped;     // damaged files, dropped with their stage records
  std::vector<StoreProblem> unreadable;  // left as they are: the store is not repaired until they can be read
};

// Throws kvf::Error when the manifest itself cannot be read (nothing to repair from: rebuild the store).
RepairResult repair_store(const std::string& store_dir);

}  // namespace kvf
