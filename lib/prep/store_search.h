// Query-time retrieval over a store: embed a question with the store's embedder and search its index. Used by
// `kvprep search` to inspect a store, and by kvrun to pick the chunks of a question.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/bert_encoder.h"
#include "retrieval/vector_index.h"
#include "store/chunk_table.h"

namespace kvf {

struct Manifest;

struct RetrievedChunk {
  size_t row = 0;  // in the chunk table
  float score = 0;
  const ChunkRecord* chunk = nullptr;
};

class StoreSearcher {
 public:
  static constexpr int kDefaultTopK = 5;  // chunks a search returns when not told (kvprep search --top-k)

  // Loads the chunk table, the embedder recorded in the manifest (resolved with `embedder_dir`, whose fingerprint
  // must match the store's) and the index, the table and the index once their XXH3 matches the manifest's.
  // Throws kvf::Error naming the store and what is missing, different or damaged.
  // The manifest is loaded once and the tables are those of its published generation (reader_table_file).
  StoreSearcher(const std::string& store_dir, const std::string& embedder_dir);
  // Over a manifest already loaded: a reader that holds one opens the tables of that same commit.
  StoreSearcher(const std::string& store_dir, const Manifest& manifest, const std::string& embedder_dir);
  std::vector<RetrievedChunk> search(const std::string& query, int top_k) const;
  const ChunkTable& chunks() const { return chunks_; }

 private:
  std::unique_ptr<Backend> backend_;
  ChunkTable chunks_;
  std::unique_ptr<SentenceEmbedder> embedder_;
  VectorIndex index_;
};

}  // namespace kvf
