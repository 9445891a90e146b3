#include "store/chunk_table.h"

#include <xxhash.h>

#include <filesystem>

#include "core/error.h"
#include "core/hex.h"
#include "io/durable_file.h"
#include "store/hdf5_file.h"
#include "store/manifest.h"
#include "store/store_format.h"

namespace kvf {
namespace {

// Datasets of chunks.h5, all one-dimensional with one entry per chunk except the last two.
constexpr const char* kIds = "chunk_id";             // uint64
constexpr const char* kDocIds = "doc_id";            // variable-length UTF-8 string
constexpr const char* kTitles = "title";             // variable-length UTF-8 string
constexpr const char* kTexts = "text";               // variable-length UTF-8 string
constexpr const char* kIndexInDoc = "index_in_doc";  // uint32
constexpr const char* kOffsets = "token_offsets";    // uint64, n_chunks + 1: chunk i's tokens are [o[i], o[i+1])
constexpr const char* kTokens = "tokens";            // int32

// The chunks' values of one string field, as HDF5 writes them.
std::vector<const char*> column(const std::vector<ChunkRecord>& chunks, std::string ChunkRecord::*field) {
  std::vector<const char*> values;
  values.reserve(chunks.size());
  for (const ChunkRecord& c : chunks) values.push_back((c.*field).c_str());
  return values;
}

}  // namespace

uint64_t chunk_id(const std::vector<int32_t>& tokens, uint64_t model_fingerprint) {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size() * sizeof(int32_t), model_fingerprint);
}

bool ChunkTable::add(ChunkRecord record) {
  record.id = chunk_id(record.tokens, fingerprint_);
  const auto [it, inserted] = rows_.emplace(record.id, chunks_.size());
  if (!inserted) {
    KVF_CHECK(chunks_[it->second].tokens == record.tokens, "chunk table: id ", hex64(record.id),
              " is the hash of two different token sequences (documents '", chunks_[it->second].doc_id, "' and '",
              record.doc_id, "')");
    return false;
  }
  n_tokens_ += record.tokens.size();
  chunks_.push_back(std::move(record));
  return true;
}

void ChunkTable::write(const std::string& path) const {
  PendingFile out(path);
  write(out);
  out.commit();
}

void ChunkTable::write(PendingFile& out) const {
  h5::File f = h5::File::create(out.temp());
  f.write_format(kChunkTableMagic, kChunkTableFormatVersion);
  f.write_string_attribute("model_fingerprint", hex64(fingerprint_));

  std::vector<uint64_t> ids, offsets{0};
  std::vector<uint32_t> index_in_doc;
  std::vector<int32_t> tokens;
  tokens.reserve(n_tokens_);
  for (const ChunkRecord& c : chunks_) {
    ids.push_back(c.id);
    index_in_doc.push_back(c.index_in_doc);
    tokens.insert(tokens.end(), c.tokens.begin(), c.tokens.end());
    offsets.push_back(tokens.size());
  }
  f.write<uint64_t>(kIds, {ids.size()}, ids.data());
  f.write_strings(kDocIds, column(chunks_, &ChunkRecord::doc_id));
  f.write_strings(kTitles, column(chunks_, &ChunkRecord::title));
  f.write_strings(kTexts, column(chunks_, &ChunkRecord::text));
  f.write<uint32_t>(kIndexInDoc, {index_in_doc.size()}, index_in_doc.data());
  f.write<uint64_t>(kOffsets, {offsets.size()}, offsets.data());
  f.write<int32_t>(kTokens, {tokens.size()}, tokens.data());
  f.close();
}

std::vector<uint64_t> ChunkTable::read_ids(const std::string& path) {
  KVF_CHECK(std::filesystem::exists(path), path, ": no such file");
  const h5::File f = h5::File::open_read(path);
  f.read_format(kChunkTableMagic, kChunkTableFormatVersion);  // version 1 is the only one so far
  return f.read<uint64_t>(kIds, {-1});
}

ChunkTable ChunkTable::read(const std::string& path) {
  KVF_CHECK(std::filesystem::exists(path), path, ": no such file");
  const h5::File f = h5::File::open_read(path);
  f.read_format(kChunkTableMagic, kChunkTableFormatVersion);  // version 1 is the only one so far
  ChunkTable table(
      parse_hex64(f.read_string_attribute("model_fingerprint"), path + ": attribute 'model_fingerprint'"));

  const std::vector<uint64_t> ids = f.read<uint64_t>(kIds, {-1});
  const int64_t n = (int64_t)ids.size();
  const std::vector<uint32_t> index_in_doc = f.read<uint32_t>(kIndexInDoc, {n});
  const std::vector<uint64_t> offsets = f.read<uint64_t>(kOffsets, {n + 1});
  const std::vector<int32_t> tokens = f.read<int32_t>(kTokens, {-1});
  std::vector<std::string> doc_ids = f.read_strings(kDocIds, n);
  std::vector<std::string> titles = f.read_strings(kTitles, n);
  std::vector<std::string> texts = f.read_strings(kTexts, n);
  KVF_CHECK(offsets[0] == 0 && offsets[n] == tokens.size(), path, ": dataset '", kOffsets, "' runs from ", offsets[0],
            " to ", offsets[n], ", expected 0 to ", tokens.size(), " (the length of '", kTokens, "')");

  for (int64_t i = 0; i < n; ++i) {
    KVF_CHECK(offsets[i] <= offsets[i + 1] && offsets[i + 1] <= tokens.size(), path, ": dataset '", kOffsets,
              "' at row ", i, " gives tokens [", offsets[i], ", ", offsets[i + 1], ") outside [0, ", tokens.size(),
              ")");
    ChunkRecord c{ids[i],
                  std::move(doc_ids[i]),
                  std::move(titles[i]),
                  std::move(texts[i]),
                  index_in_doc[i],
                  std::vector<int32_t>(tokens.begin() + (std::ptrdiff_t)offsets[i],
                                       tokens.begin() + (std::ptrdiff_t)offsets[i + 1])};
    KVF_CHECK(chunk_id(c.tokens, table.fingerprint_) == c.id, path, ": row ", i, ": chunk id ", hex64(c.id),
              " does not match its tokens");
    KVF_CHECK(table.add(std::move(c)), path, ": chunk id ", hex64(ids[i]), " appears twice (row ", i, ")");
  }
  return table;
}

}  // namespace kvf
