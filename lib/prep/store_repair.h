// `kvprep verify --repair`: what verify condemns is dropped, so that the next run of each stage recomputes
// exactly what was lost. A broken KV shard leaves the manifest (and the disk) with its mode's stage record; the
// next `kvprep prefill` / `compress` of that mode computes the chunks that lost their KV, bit for bit what they
// were. A broken table (chunks.h5, embeddings.h5, index.faiss, neighbors.h5) goes with its stage's record, so the
// stage runs again. The caller holds the store lock (store/store_lock.h).
#pragma once
#include <string>
#include <vector>

namespace kvf {

struct RepairedFile {
  std::string file;   // as the manifest recorded it
  std::string stage;  // the stage record dropped with it ("" when none was recorded)
  std::string rerun;  // the command that recomputes it
};

// Throws kvf::Error when the manifest itself cannot be read (nothing to repair from: rebuild the store).
std::vector<RepairedFile> repair_store(const std::string& store_dir);

}  // namespace kvf
