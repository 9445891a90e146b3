// neighbors.h5: each chunk's top-n most similar other chunks (FusionRAG §3.1), rows in the chunk table's order,
// best first. A row's list is shorter than top_n only when the store holds fewer chunks: missing entries have
// row -1 and score 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/durable_file.h"

namespace kvf {

struct NeighborTable {
  int top_n = 0;
  std::vector<uint64_t> chunk_ids;  // row -> chunk id
  std::vector<int64_t> rows;        // [chunks, top_n]: neighbour's row in this table, -1 for none
  std::vector<float> scores;        // [chunks, top_n]: cosine similarity

  size_t size() const { return chunk_ids.size(); }

  static NeighborTable read(const std::string& path);  // checks magic, version, shapes and row bounds
  void write(const std::string& path) const;  // a temporary, then committed over <path>
  void write(PendingFile& out) const;         // into out.temp(), closed; the caller commits (store/manifest.h)
};

}  // namespace kvf
