// Store generations (docs/store.md, "Generations"): what readers see while a writer works. A writer replaces
// chunks.h5 and index.faiss long before the KV of their new chunks exists; readers use the published generation
// instead, a pair of hard links to the tables as they were when every chunk the index reaches had its KV in every
// stored mode, so a question answers from the last complete commit until the next one is complete.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

struct PublishResult {
  uint64_t generation = 0;  // the generation readers now use (0: none)
  bool published = false;   // this call published it
  std::string waiting;      // why the working tables are not published yet ("" when they are)
  std::vector<std::string> removed;  // generation files reclaimed: older than the one before the current one
};

// Publishes the working tables as generation g + 1 when they are complete and differ from generation g: links
// chunks.<g+1>.h5 and index.<g+1>.faiss to them (a copy where the file system has no hard links), records them
// and the publication in the manifest, then removes generations older than g (and unlisted generation files a
// killed writer left). The caller holds the store lock. Readers that loaded the manifest before keep theirs.
PublishResult publish_store_generation(const std::string& store_dir);

}  // namespace kvf
