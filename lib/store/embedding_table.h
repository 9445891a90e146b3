// embeddings.h5: one unit-length embedding per chunk, rows in the chunk table's order, with the fingerprint of
// the embedder that made them (a store never mixes embedders).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/durable_file.h"

namespace kvf {

struct EmbeddingTable {
  uint64_t embedder_fingerprint = 0;
  int dim = 0;
  std::vector<uint64_t> chunk_ids;  // row -> chunk id
  std::vector<float> vectors;       // [rows, dim]

  size_t rows() const { return chunk_ids.size(); }
  const float* row(size_t i) const { return vectors.data() + i * (size_t)dim; }

  // Checks magic, format version and shapes; throws kvf::Error naming the file and the field.
  static EmbeddingTable read(const std::string& path);
  // Writes a temporary and commits it over <path> (io/durable_file.h).
  void write(const std::string& path) const;
  void write(PendingFile& out) const;  // into out.temp(), closed; the caller commits (store/manifest.h)
};

}  // namespace kvf
