// Format versions of the store's files (store/store_format.h, docs/store.md "Format versions"): every writer
// writes its current version and round-trips; a version newer than this kvfuse knows (or below 1) is refused
// naming the file and the version; a version-1 KV shard reads with version 1's defaults (no index/context: every
// context 0) and, as the code before version 2 wrote it (index/context present), exactly as before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_file.h"
#include "store/chunk_table.h"
#include "store/embedding_table.h"
#include "store/hdf5_file.h"
#include "store/kv_shard.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"
#include "store/store_format.h"
#include "support/temp_dir.h"
#include "support/test_values.h"
#include "support/tiny_shard.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::error_of;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kFingerprint = 0x0123456789abcdefULL;

// The format_version attribute of an HDF5 store file, read as any reader of the file sees it.
int64_t stored_version(const std::string& path) {
  return h5::File::open_read(path).read_int_attribute("format_version");
}

// Rewrites the format_version attribute, as another kvfuse would have written it.
void set_stored_version(const std::string& path, int64_t version) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_GE(H5Adelete(file, "format_version"), 0);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(file, "format_version", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attribute, H5T_NATIVE_INT64, &version), 0);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Fclose(file);
}

void delete_object(const std::string& path, const char* name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_GE(H5Ldelete(file, name, H5P_DEFAULT), 0);
  H5Fclose(file);
}

// ---- small files of each kind ----

std::string write_chunk_table(const fs::path& dir) {
  ChunkTable table(kFingerprint);
  table.add({0, "doc-a", "Title", "first chunk", 0, {1, 2, 3}});
  table.add({0, "doc-a", "Title", "second chunk", 1, {4, 5}});
  const std::string path = (dir / "chunks.h5").string();
  table.write(path);
  return path;
}

std::string write_embedding_table(const fs::path& dir) {
  EmbeddingTable table;
  table.embedder_fingerprint = 0x42;
  table.dim = 2;
  table.chunk_ids = {7, 9};
  table.vectors = {1, 0, 0, 1};
  const std::string path = (dir / "embeddings.h5").string();
  table.write(path);
  return path;
}

std::string write_neighbor_table(const fs::path& dir) {
  NeighborTable table;
  table.top_n = 1;
  table.chunk_ids = {7, 9};
  table.rows = {1, 0};
  table.scores = {0.5f, 0.5f};
  const std::string path = (dir / "neighbors.h5").string();
  table.write(path);
  return path;
}

KvShardLayout shard_layout() { return test::tiny_shard_layout("similarity", kFingerprint, 2, 2, 4); }

struct StoredChunk {
  uint64_t id = 0, context = 0;
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  std::vector<double> anchor_scores;
};

std::vector<StoredChunk> shard_chunks() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<StoredChunk> chunks;
  for (uint32_t rows : {3u, 5u}) {
    StoredChunk chunk;
    chunk.id = 0x100 + chunks.size();
    chunk.context = 0xc0ffee00 + chunks.size();
    for (int64_t i = 0; i < rows * shard_layout().row_elems(); ++i) {
      chunk.k.push_back(normal(rng));
      chunk.v.push_back(normal(rng));
    }
    for (uint32_t r = 0; r < rows; ++r) {
      chunk.positions.push_back((int32_t)r);
      chunk.anchor_scores.push_back(0.25 * r);
    }
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

std::string write_kv_shard(const fs::path& dir, const std::string& name) {
  KvShardWriter writer(shard_layout());
  for (const StoredChunk& chunk : shard_chunks())
    writer.add_chunk(chunk.id, chunk.k.data(), chunk.v.data(), chunk.positions.data(), (uint32_t)chunk.positions.size(),
                     chunk.context, chunk.anchor_scores.data());
  const std::string path = (dir / name).string();
  writer.write(path);
  return path;
}

// What a reader gets from a shard: per entry the chunk id, context, anchor scores and decoded KV.
struct ShardContent {
  std::vector<uint64_t> ids, contexts;
  std::vector<std::vector<double>> anchor_scores;
  std::vector<std::vector<float>> k, v;
  std::vector<std::vector<int32_t>> positions;
};

ShardContent read_content(const KvShardReader& reader) {
  ShardContent content;
  for (size_t i = 0; i < reader.index().size(); ++i) {
    content.ids.push_back(reader.index()[i].chunk_id);
    content.contexts.push_back(reader.index()[i].context);
    content.anchor_scores.push_back(reader.read_anchor_scores(i));
    std::vector<float> k, v;
    std::vector<int32_t> positions;
    reader.read_chunk(i, k, v, positions, true);
    content.k.push_back(k);
    content.v.push_back(v);
    content.positions.push_back(positions);
  }
  return content;
}

// ---- every file type ----

TEST(StoreFormat, WritersWriteTheCurrentVersionAndReadersReadIt) {
  const fs::path dir = test::fresh_test_dir();
  EXPECT_EQ(stored_version(write_chunk_table(dir)), kChunkTableFormatVersion);
  EXPECT_EQ(stored_version(write_embedding_table(dir)), kEmbeddingTableFormatVersion);
  EXPECT_EQ(stored_version(write_neighbor_table(dir)), kNeighborTableFormatVersion);
  EXPECT_EQ(ChunkTable::read((dir / "chunks.h5").string()).size(), 2u);
  EXPECT_EQ(EmbeddingTable::read((dir / "embeddings.h5").string()).chunk_ids, (std::vector<uint64_t>{7, 9}));
  EXPECT_EQ(NeighborTable::read((dir / "neighbors.h5").string()).rows, (std::vector<int64_t>{1, 0}));

  Manifest manifest;
  manifest.model_fingerprint = kFingerprint;
  manifest.model_name = "model.gguf";
  save_manifest(dir.string(), manifest);
  EXPECT_EQ(read_json_file(manifest_path(dir.string())).at("format_version"), kManifestFormatVersion);
  EXPECT_EQ(load_manifest(dir.string()).model_fingerprint, kFingerprint);
}

TEST(StoreFormat, TheCurrentVersions) {
  // Changing one of these is a format change: docs/store.md's "Format versions" names what each version holds.
  EXPECT_EQ(kManifestFormatVersion, 1);
  EXPECT_EQ(kChunkTableFormatVersion, 1);
  EXPECT_EQ(kEmbeddingTableFormatVersion, 1);
  EXPECT_EQ(kNeighborTableFormatVersion, 1);
  EXPECT_EQ(kKvShardFormatVersion, 3);
}

TEST(StoreFormat, NewerVersionsAreRefusedNamingTheFileAndTheVersion) {
  const fs::path dir = test::fresh_test_dir();
  struct Case {
    std::string path;
    int64_t current;
    std::function<void()> read;
  };
  const std::string chunks = write_chunk_table(dir), embeddings = write_embedding_table(dir),
                    neighbors = write_neighbor_table(dir), shard = write_kv_shard(dir, "similarity-00000.h5");
  const std::vector<Case> cases = {
      {chunks, kChunkTableFormatVersion, [&] { ChunkTable::read(chunks); }},
      {chunks, kChunkTableFormatVersion, [&] { ChunkTable::read_ids(chunks); }},
      {embeddings, kEmbeddingTableFormatVersion, [&] { EmbeddingTable::read(embeddings); }},
      {neighbors, kNeighborTableFormatVersion, [&] { NeighborTable::read(neighbors); }},
      {shard, kKvShardFormatVersion, [&] { KvShardReader::open(shard); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    set_stored_version(c.path, c.current + 1);
    const std::string newer = error_of(c.read);
    EXPECT_THAT(newer, HasSubstr(c.path + ": attribute 'format_version' is " + std::to_string(c.current + 1)));
    EXPECT_THAT(newer, HasSubstr("written by a newer kvfuse"));
    set_stored_version(c.path, 0);
    const std::string unknown = error_of(c.read);
    EXPECT_THAT(unknown, HasSubstr(c.path + ": attribute 'format_version' is 0, but this kvfuse reads only"));
    EXPECT_THAT(unknown, Not(HasSubstr("newer")));
    set_stored_version(c.path, c.current);
    c.read();
  }
  set_stored_version(shard, 4);
  EXPECT_THAT(error_of([&] { KvShardReader::open(shard); }),
              HasSubstr("is 4, but this kvfuse reads only versions 1 to 3: the file was written by a newer kvfuse"));
  EXPECT_THAT(verify_kv_shard(shard), ::testing::ElementsAre(HasSubstr("written by a newer kvfuse")));

  Manifest manifest;
  save_manifest(dir.string(), manifest);
  json j = read_json_file(manifest_path(dir.string()));
  j["format_version"] = kManifestFormatVersion + 1;
  std::ofstream(manifest_path(dir.string()), std::ios::trunc) << j.dump(2);
  const std::string message = error_of([&] { load_manifest(dir.string()); });
  EXPECT_THAT(message, HasSubstr(manifest_path(dir.string()) + ": field 'format_version' is 2, but this kvfuse "
                                                               "reads only version 1: the file was written by a "
                                                               "newer kvfuse"));
}

// ---- KV shards: the current version (3) and the version-1 upgrade ----

TEST(KvShardFormat, CurrentVersionRoundTrips) {
  const std::string path = write_kv_shard(test::fresh_test_dir(), "similarity-00000.h5");
  EXPECT_EQ(stored_version(path), 3);
  const KvShardReader reader = KvShardReader::open(path, kFingerprint);
  EXPECT_EQ(reader.format_version(), 3);
  const ShardContent content = read_content(reader);
  const std::vector<StoredChunk> chunks = shard_chunks();
  ASSERT_EQ(content.ids.size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(content.ids[i], chunks[i].id);
    EXPECT_EQ(content.contexts[i], chunks[i].context);
    EXPECT_EQ(content.anchor_scores[i], chunks[i].anchor_scores);
    EXPECT_EQ(content.positions[i], chunks[i].positions);
    EXPECT_EQ(content.k[i].size(), chunks[i].k.size());
  }
  EXPECT_TRUE(verify_kv_shard(path, kFingerprint).empty());
}

// Versions 2 and 3 require index/context: such a shard without it is damaged, not old.
TEST(KvShardFormat, CurrentVersionRequiresTheContexts) {
  const std::string path = write_kv_shard(test::fresh_test_dir(), "similarity-00000.h5");
  delete_object(path, "index/context");
  const std::string message = error_of([&] { KvShardReader::open(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("index/context"));
}

// A version-1 shard as the code before version 2 wrote it (index/context present): read exactly as the same shard
// in version 2, contexts included.
TEST(KvShardFormat, Version1WithContextsReadsAsBefore) {
  const fs::path dir = test::fresh_test_dir();
  const std::string current = write_kv_shard(dir, "similarity-00000.h5");
  const std::string old = write_kv_shard(dir, "similarity-00001.h5");
  set_stored_version(old, 1);
  const KvShardReader old_reader = KvShardReader::open(old, kFingerprint);
  EXPECT_EQ(old_reader.format_version(), 1);
  const ShardContent old_content = read_content(old_reader);
  const ShardContent current_content = read_content(KvShardReader::open(current, kFingerprint));
  EXPECT_EQ(old_content.ids, current_content.ids);
  EXPECT_EQ(old_content.contexts, current_content.contexts);
  EXPECT_THAT(old_content.contexts, Not(::testing::Each(0u)));
  EXPECT_EQ(old_content.anchor_scores, current_content.anchor_scores);
  EXPECT_EQ(old_content.positions, current_content.positions);
  EXPECT_EQ(old_content.k, current_content.k);
  EXPECT_EQ(old_content.v, current_content.v);
  EXPECT_TRUE(verify_kv_shard(old, kFingerprint).empty());
}

// The first version-1 shards had no index/context: every context reads as 0 (none recorded), the KV as stored.
// Copied into a new shard (kvprep prune), the chunks keep context 0 in a current-version shard.
TEST(KvShardFormat, Version1WithoutContextsReadsAsNoContext) {
  const fs::path dir = test::fresh_test_dir();
  const std::string current = write_kv_shard(dir, "similarity-00000.h5");
  const std::string old = write_kv_shard(dir, "similarity-00001.h5");
  set_stored_version(old, 1);
  delete_object(old, "index/context");
  const KvShardReader old_reader = KvShardReader::open(old, kFingerprint);
  const ShardContent old_content = read_content(old_reader);
  const ShardContent current_content = read_content(KvShardReader::open(current, kFingerprint));
  EXPECT_EQ(old_content.contexts, std::vector<uint64_t>(2, 0));
  EXPECT_EQ(old_content.ids, current_content.ids);
  EXPECT_EQ(old_content.k, current_content.k);
  EXPECT_EQ(old_content.v, current_content.v);
  EXPECT_EQ(old_content.anchor_scores, current_content.anchor_scores);
  EXPECT_TRUE(verify_kv_shard(old, kFingerprint).empty());

  KvShardWriter copy(old_reader.layout());
  RawKvChunk raw;
  for (size_t i = 0; i < old_reader.index().size(); ++i) {
    old_reader.read_raw(i, raw);
    copy.add_stored_chunk(old_reader, raw, old_reader.read_anchor_scores(i));
  }
  const std::string copied = (dir / "similarity-00002.h5").string();
  copy.write(copied);
  const KvShardReader copied_reader = KvShardReader::open(copied, kFingerprint);
  EXPECT_EQ(copied_reader.format_version(), 3);
  const ShardContent copied_content = read_content(copied_reader);
  EXPECT_EQ(copied_content.contexts, std::vector<uint64_t>(2, 0));
  EXPECT_EQ(copied_content.k, old_content.k);
}

}  // namespace
}  // namespace kvf
