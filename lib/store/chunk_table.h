// The chunk table of a store (chunks.h5): every chunk's id, document, title, text and decoder token ids. Chunk
// ids hash the token ids with the model fingerprint, so a chunk that several documents (or several runs) bring is
// stored once, under the first document that brought it.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/durable_file.h"

namespace kvf {

inline constexpr const char* kChunksFile = "chunks.h5";  // the chunk table's name inside a store
inline constexpr const char* kChunkTableMagic = "kvfuse-chunks";

// XXH3-64 of the token ids (as little-endian int32) seeded with the model fingerprint.
uint64_t chunk_id(const std::vector<int32_t>& tokens, uint64_t model_fingerprint);

struct ChunkRecord {
  uint64_t id = 0;
  std::string doc_id;
  std::string title;
  std::string text;             // the chunk's text alone; the model sees render_chunk(title, text)
  uint32_t index_in_doc = 0;    // 0 for a document's first chunk
  std::vector<int32_t> tokens;  // token ids of render_chunk(title, text)
};

class ChunkTable {
 public:
  explicit ChunkTable(uint64_t model_fingerprint) : fingerprint_(model_fingerprint) {}

  // Reads a whole chunks.h5, checking magic, version, every dataset's type and length, the token offsets and that
  // each id matches its tokens. Throws kvf::Error naming the file and the dataset or row.
  static ChunkTable read(const std::string& path);
  // The chunk ids alone, in row order (checked as read() checks them, less the token hashes): for a caller that
  // needs no text or tokens, without holding the table.
  static std::vector<uint64_t> read_ids(const std::string& path);
  // Writes a temporary and commits it over <path> (io/durable_file.h): a reader sees the old table or the new one.
  void write(const std::string& path) const;
  void write(PendingFile& out) const;  // into out.temp(), closed; the caller commits (store/manifest.h)

  uint64_t model_fingerprint() const { return fingerprint_; }
  const std::vector<ChunkRecord>& chunks() const { return chunks_; }
  size_t size() const { return chunks_.size(); }
  uint64_t n_tokens() const { return n_tokens_; }
  bool contains(uint64_t id) const { return rows_.count(id) != 0; }
  const ChunkRecord* find(uint64_t id) const {  // nullptr when the table has no such chunk
    const auto it = rows_.find(id);
    return it == rows_.end() ? nullptr : &chunks_[it->second];
  }

  // Adds the chunk unless its id is already stored; returns whether it was added. The id is computed here
  // (record.id is ignored). Throws kvf::Error on an id collision between different token ids.
  bool add(ChunkRecord record);

 private:
  uint64_t fingerprint_;
  std::vector<ChunkRecord> chunks_;
  std::unordered_map<uint64_t, size_t> rows_;  // id -> index in chunks_
  uint64_t n_tokens_ = 0;
};

}  // namespace kvf
