// kvprep prune (prep/store_prune.h) on hand-made stores: KV of chunks no table holds and superseded entries go,
// shards are rewritten or removed, what the published generation reaches and the system prompt's KV stay, kept
// chunks read back bit for bit, a dry run changes nothing, and shards a killed run left unlisted are removed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "prep/store_prune.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/kv_shard.h"
#include "store/manifest.h"
#include "store/store_files.h"
#include "support/temp_dir.h"
#include "support/tiny_shard.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kFingerprint = 0x5eedULL;

KvShardLayout layout_of(const std::string& mode) { return test::tiny_shard_layout(mode, kFingerprint, 2, 1, 4); }

// A store whose chunk table holds chunks 0..n-1 of `ids`, with KV shards written as `shards` says (mode ->
// list of shards, each a list of indexes into `ids`); the KV values follow from the chunk and the shard.
class PruneStore {
 public:
  explicit PruneStore(size_t chunks) : dir_(test::fresh_test_dir().string()) {
    m_.model_fingerprint = kFingerprint;
    ChunkTable table(kFingerprint);
    for (size_t c = 0; c < chunks; ++c) table.add({0, "doc" + std::to_string(c), "T", "text", 0, {1, (int32_t)c + 2}});
    for (const ChunkRecord& c : table.chunks()) ids_.push_back(c.id);
    tables_.push_back(table);
  }
  const std::string& dir() const { return dir_; }
  uint64_t id(size_t c) const { return ids_.at(c); }
  Manifest& manifest() { return m_; }

  // The working chunk table holds the first `kept` chunks; the published generation (when `published`) all.
  void write_tables(size_t kept, bool published) {
    ChunkTable working(kFingerprint);
    for (size_t c = 0; c < kept; ++c) working.add(tables_[0].chunks()[c]);
    working.write((fs::path(dir_) / kChunksFile).string());
    m_.record_file(describe_file(dir_, kChunksFile));
    if (published) {
      const std::string name = generation_file_name(kChunksFile, 1);
      tables_[0].write((fs::path(dir_) / name).string());
      m_.record_file(describe_file(dir_, name));
      m_.published.number = 1;
      m_.published.chunks = name;
      m_.published.index = generation_file_name("index.faiss", 1);  // not read by prune
      m_.published.index_settings = nlohmann::json::object();
    }
  }
  void write_shard(const std::string& mode, const std::vector<size_t>& chunks, float salt) {
    KvShardWriter w(layout_of(mode));
    for (const size_t c : chunks) {
      std::vector<float> k(8 * 3), v(8 * 3);
      for (size_t i = 0; i < k.size(); ++i) k[i] = salt + (float)c + 0.125f * (float)i, v[i] = -k[i];
      const std::vector<int32_t> positions = {0, 1, 2};
      w.add_chunk(id(c), k.data(), v.data(), positions.data(), 3, (uint64_t)(salt * 10));
    }
    fs::create_directories(fs::path(dir_) / "kv");
    const std::string name = kv_shard_name(mode, next_kv_shard_number(m_, mode));
    w.write((fs::path(dir_) / name).string());
    m_.record_file(describe_file(dir_, name));
  }
  void save() { save_manifest(dir_, m_); }

  // chunk id -> (k, context) of every chunk the mode's readers see
  std::map<uint64_t, std::pair<std::vector<float>, uint64_t>> read_mode(const std::string& mode) const {
    const Manifest m = load_manifest(dir_);
    const KvModeReader r(dir_, m, mode, kFingerprint);
    std::map<uint64_t, std::pair<std::vector<float>, uint64_t>> out;
    for (const uint64_t id : r.ids()) out[id] = {r.read(id).k, r.context(id)};
    return out;
  }

 private:
  std::string dir_;
  Manifest m_;
  std::vector<ChunkTable> tables_;
  std::vector<uint64_t> ids_;
};

size_t shard_files(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "kv")) n += e.path().extension() == ".h5";
  return n;
}

TEST(StorePrune, DropsRemovedAndSupersededKvAndKeepsTheRestBitForBit) {
  PruneStore s(6);
  s.write_tables(4, false);  // chunks 4 and 5 were removed
  s.write_shard("independent", {0, 1}, 0.5f);  // untouched
  s.write_shard("independent", {2, 4}, 0.5f);  // rewritten: 4 goes
  s.write_shard("independent", {5}, 0.5f);     // removed
  s.write_shard("similarity", {0, 1, 2, 3}, 1.5f);
  s.write_shard("similarity", {1}, 2.5f);  // recomputed: supersedes chunk 1's entry above
  s.write_shard(kSystemKvMode, {5}, 9.0f);  // not a chunk of the table, but the system prompt's: stays
  s.save();
  const auto independent = s.read_mode("independent"), similarity = s.read_mode("similarity");
  const auto system = s.read_mode(kSystemKvMode);

  const PruneResult dry = prune_store({s.dir(), true, {}});
  EXPECT_EQ(dry.dropped, 2u);
  EXPECT_EQ(dry.superseded, 1u);
  EXPECT_EQ(dry.shards_removed, 1u);
  EXPECT_EQ(dry.shards_rewritten, 2u);
  EXPECT_EQ(shard_files(s.dir()), 6u);  // nothing changed
  EXPECT_EQ(s.read_mode("independent"), independent);

  const PruneResult r = prune_store({s.dir(), false, {}});
  EXPECT_EQ(r.dropped, 2u);
  EXPECT_EQ(r.superseded, 1u);
  EXPECT_EQ(r.kept, 3u + 4u);
  EXPECT_EQ(r.shards_removed, 1u);
  EXPECT_EQ(r.shards_rewritten, 2u);
  EXPECT_LT(r.bytes_after, r.bytes_before);
  EXPECT_EQ(r.modes, (std::vector<std::string>{"independent", "similarity"}));
  auto want_independent = independent;
  want_independent.erase(s.id(4));
  want_independent.erase(s.id(5));
  EXPECT_EQ(s.read_mode("independent"), want_independent);
  EXPECT_EQ(s.read_mode("similarity"), similarity);  // chunk 1's recomputed entry, as readers saw it before
  EXPECT_EQ(s.read_mode(kSystemKvMode), system);
  EXPECT_EQ(shard_files(s.dir()), 5u);  // independent 2, similarity 2, system 1
  const Manifest m = load_manifest(s.dir());
  size_t listed = 0;
  for (const CommittedFile& f : m.files) listed += !kv_mode_of_shard(f.path).empty();
  EXPECT_EQ(listed, shard_files(s.dir()));

  const PruneResult again = prune_store({s.dir(), false, {}});
  EXPECT_EQ(again.dropped + again.superseded + again.shards_rewritten + again.shards_removed, 0u);
  EXPECT_EQ(describe_prune(again), "nothing to reclaim");
}

TEST(StorePrune, KeepsWhatThePublishedGenerationReaches) {
  PruneStore s(3);
  s.write_tables(1, true);  // the working table lost chunks 1 and 2; readers' generation still holds them
  s.write_shard("independent", {0, 1, 2}, 0.5f);
  s.save();
  const PruneResult r = prune_store({s.dir(), false, {}});
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(s.read_mode("independent").size(), 3u);
}

TEST(StorePrune, RemovesShardsAKilledRunLeftUnlisted) {
  PruneStore s(2);
  s.write_tables(2, false);
  s.write_shard("independent", {0, 1}, 0.5f);
  s.save();
  fs::copy_file(fs::path(s.dir()) / kv_shard_name("independent", 0), fs::path(s.dir()) / kv_shard_name("independent", 7));
  std::ofstream(fs::path(s.dir()) / "notes.txt") << "a user's file";
  EXPECT_FALSE(prune_store({s.dir(), true, {}}).dropped);
  EXPECT_TRUE(fs::exists(fs::path(s.dir()) / kv_shard_name("independent", 7)));  // a dry run removes nothing
  prune_store({s.dir(), false, {}});
  EXPECT_FALSE(fs::exists(fs::path(s.dir()) / kv_shard_name("independent", 7)));
  EXPECT_TRUE(fs::exists(fs::path(s.dir()) / kv_shard_name("independent", 0)));
  EXPECT_TRUE(fs::exists(fs::path(s.dir()) / "notes.txt"));
}

}  // namespace
}  // namespace kvf
