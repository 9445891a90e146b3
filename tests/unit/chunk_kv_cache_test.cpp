// The chunk KV cache over a real store mode (shards + manifest, read by KvModeReader): hit/miss counting, LRU
// eviction under a byte budget, the f16 round trip, errors naming the chunk id, one load for concurrent gets,
// and the background loader (prefetches become hits; a failed prefetch is reported by the later get).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "backend/backend.h"
#include "core/error.h"
#include "core/half.h"
#include "core/hex.h"
#include "model/fingerprint.h"
#include "store/chunk_kv.h"
#include "store/chunk_kv_cache.h"
#include "store/manifest.h"
#include "support/test_values.h"

#include "support/temp_dir.h"

namespace kvf {
namespace {

using test::error_of;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint64_t kFingerprint = 0x0123456789abcdefULL;
constexpr uint64_t kMissing = 0xfeedface12345678ULL;

KvShardLayout small_layout() {
  KvShardLayout l;
  l.mode = "independent";
  l.model_fingerprint = kFingerprint;
  l.n_layers = 3;
  l.layer_map = {0, 1, 2};
  l.stored_layers = 3;
  l.kv_heads = 2;
  l.head_dim = 8;
  l.dtype = KvDtype::F16;
  return l;
}

struct Written {
  uint64_t id;
  HostKv kv;  // as given to the writer (f32, before rounding)
};

// A store with one mode "independent" in two shards; chunk i has rows[i] rows.
class ChunkKvCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::fresh_test_dir();
    backend = make_cpu_backend();
    write_store({4, 4, 4, 9, 600});
    source = std::make_unique<KvModeReader>(dir.string(), manifest, "independent", kFingerprint);
  }

  void write_store(const std::vector<int64_t>& rows) {
    const KvShardLayout l = small_layout();
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t c = 0; c < rows.size(); ++c) {
      Written w{0x1000 + c * 7919, {}};
      w.kv.rows = rows[c];
      for (int64_t i = 0; i < rows[c] * l.row_elems(); ++i) {
        w.kv.k.push_back(normal(rng));
        w.kv.v.push_back(normal(rng));
      }
      for (int64_t r = 0; r < rows[c]; ++r) w.kv.positions.push_back((int32_t)r);
      chunks.push_back(std::move(w));
    }
    fs::create_directories(dir / "kv");
    for (size_t shard = 0; shard < 2; ++shard) {  // even chunks in shard 0, odd ones in shard 1
      KvShardWriter writer(l);
      for (size_t c = shard; c < chunks.size(); c += 2) {
        const HostKv& kv = chunks[c].kv;
        writer.add_chunk(chunks[c].id, kv.k.data(), kv.v.data(), kv.positions.data(), (uint32_t)kv.rows);
      }
      const std::string name = kv_shard_name(l.mode, shard);
      writer.write((dir / name).string());
      manifest.record_file(describe_file(dir.string(), name));
    }
  }

  uint64_t bytes_of(size_t c) const { return (uint64_t)chunks[c].kv.rows * small_layout().row_elems() * 4 * 2; }
  uint64_t id(size_t c) const { return chunks[c].id; }

  fs::path dir;
  std::unique_ptr<Backend> backend;
  Manifest manifest;
  std::vector<Written> chunks;
  std::unique_ptr<KvModeReader> source;
};

TEST_F(ChunkKvCacheTest, CountsHitsAndMisses) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  EXPECT_FALSE(cache.get(id(0)).hit);
  EXPECT_TRUE(cache.get(id(0)).hit);
  EXPECT_FALSE(cache.get(id(1)).hit);
  EXPECT_TRUE(cache.get(id(1)).hit);
  EXPECT_TRUE(cache.get(id(0)).hit);
  const ChunkKvCache::Stats s = cache.stats();
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.chunks_held, 2u);
  EXPECT_EQ(s.bytes_held, bytes_of(0) + bytes_of(1));
  EXPECT_EQ(s.evictions, 0u);
}

TEST_F(ChunkKvCacheTest, EvictsTheLeastRecentlyUsedFirst) {
  ASSERT_EQ(bytes_of(0), bytes_of(1));
  ASSERT_EQ(bytes_of(0), bytes_of(2));
  ChunkKvCache cache(*source, *backend, 2 * bytes_of(0));  // room for two of chunks 0, 1, 2
  cache.get(id(0));
  const auto held = cache.get(id(1)).kv;
  cache.get(id(0));  // 0 is now the most recently used: 1 goes first
  cache.get(id(2));
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.stats().chunks_held, 2u);
  EXPECT_EQ(cache.stats().bytes_held, 2 * bytes_of(0));
  EXPECT_TRUE(cache.get(id(0)).hit);
  EXPECT_TRUE(cache.get(id(2)).hit);
  // The evicted segment is still whole for whoever holds it.
  ASSERT_EQ(held->rows(), chunks[1].kv.rows);
  std::vector<float> k((size_t)(held->rows() * 16));
  backend->copy_to_host(held->k[0], k.data(), k.size() * sizeof(float));
  EXPECT_EQ(k[0], f16_to_f32(f32_to_f16(chunks[1].kv.k[0])));
  EXPECT_FALSE(cache.get(id(1)).hit);  // reloaded, which pushes out 0 (least recent of 0 and 2)
  EXPECT_TRUE(cache.get(id(2)).hit);
  EXPECT_FALSE(cache.get(id(0)).hit);
  EXPECT_EQ(cache.stats().evictions, 3u);
}

TEST_F(ChunkKvCacheTest, BudgetZeroKeepsNothingYetReturnsTheData) {
  ChunkKvCache cache(*source, *backend, 0);
  for (int i = 0; i < 2; ++i) {
    const ChunkKvCache::Lookup got = cache.get(id(3));
    EXPECT_FALSE(got.hit);
    ASSERT_TRUE(got.kv);
    EXPECT_EQ(got.kv->rows(), chunks[3].kv.rows);
    EXPECT_EQ(got.kv->k.size(), 3u);
  }
  const ChunkKvCache::Stats s = cache.stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.chunks_held, 0u);
  EXPECT_EQ(s.bytes_held, 0u);
}

TEST_F(ChunkKvCacheTest, AnEntryBiggerThanTheBudgetIsReturnedButNotKept) {
  ChunkKvCache cache(*source, *backend, bytes_of(4) - 1);
  cache.get(id(0));
  const ChunkKvCache::Lookup big = cache.get(id(4));
  ASSERT_TRUE(big.kv);
  EXPECT_EQ(big.kv->rows(), chunks[4].kv.rows);
  EXPECT_EQ(cache.stats().evictions, 0u);  // nothing was pushed out for it
  EXPECT_TRUE(cache.get(id(0)).hit);
  EXPECT_FALSE(cache.get(id(4)).hit);
}

TEST_F(ChunkKvCacheTest, LoadedKvIsWhatWasWrittenRoundedToF16) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  const KvShardLayout l = small_layout();
  const int64_t row = (int64_t)l.kv_heads * l.head_dim;
  for (size_t c : {3, 4}) {
    const std::shared_ptr<const KvSegment> seg = cache.get(id(c)).kv;
    const HostKv& want = chunks[c].kv;
    EXPECT_EQ(seg->positions, want.positions);
    ASSERT_EQ(seg->k.size(), (size_t)l.n_layers);
    ASSERT_EQ(seg->v.size(), (size_t)l.n_layers);
    std::vector<float> k((size_t)(want.rows * row)), v(k.size());
    for (int64_t layer = 0; layer < l.n_layers; ++layer) {
      EXPECT_EQ(seg->k[layer].shape, (Shape{want.rows, l.kv_heads, l.head_dim}));
      backend->copy_to_host(seg->k[layer], k.data(), k.size() * sizeof(float));
      backend->copy_to_host(seg->v[layer], v.data(), v.size() * sizeof(float));
      for (int64_t r = 0; r < want.rows; ++r)
        for (int64_t i = 0; i < row; ++i) {
          const size_t stored = (size_t)((r * l.stored_layers + layer) * row + i);
          ASSERT_EQ(k[r * row + i], f16_to_f32(f32_to_f16(want.k[stored]))) << "layer " << layer << " row " << r;
          ASSERT_EQ(v[r * row + i], f16_to_f32(f32_to_f16(want.v[stored]))) << "layer " << layer << " row " << r;
        }
    }
  }
  EXPECT_EQ(cache.stats().bytes_held, bytes_of(3) + bytes_of(4));
}

TEST_F(ChunkKvCacheTest, AMissingChunkIsAnErrorNamingItsIdInHex) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  const std::string message = error_of([&] { cache.get(kMissing); });
  EXPECT_THAT(message, HasSubstr("0x" + hex64(kMissing)));
  EXPECT_THAT(message, HasSubstr("independent"));
  EXPECT_THAT(error_of([&] { cache.get(kMissing); }), HasSubstr(hex64(kMissing)));  // not cached
  EXPECT_FALSE(cache.get(id(0)).hit);  // the cache still works
}

TEST_F(ChunkKvCacheTest, ConcurrentGetsOfOneChunkLoadItOnce) {
  for (int round = 0; round < 20; ++round) {
    ChunkKvCache cache(*source, *backend, 1ull << 30);
    std::vector<std::shared_ptr<const KvSegment>> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = cache.get(id(4)).kv; });
    for (std::thread& t : threads) t.join();
    const ChunkKvCache::Stats s = cache.stats();
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.hits, 3u);  // a thread that waited for another's load counts a hit
    for (const auto& kv : got) EXPECT_EQ(kv, got[0]);  // one segment, shared
  }
}

TEST_F(ChunkKvCacheTest, APrefetchedChunkIsAHit) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  BackgroundLoader loader(cache);
  loader.enqueue({id(0), id(4), id(0)});
  loader.wait_idle();
  EXPECT_EQ(cache.stats().misses, 2u);  // the loader's loads; the repeated id only refreshed its place
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_TRUE(cache.get(id(0)).hit);
  EXPECT_TRUE(cache.get(id(4)).hit);
  EXPECT_FALSE(cache.get(id(1)).hit);
}

TEST_F(ChunkKvCacheTest, AFailedPrefetchIsReportedByTheLaterGet) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  BackgroundLoader loader(cache);
  loader.enqueue({kMissing, id(2)});
  loader.wait_idle();
  EXPECT_THAT(error_of([&] { cache.get(kMissing); }), HasSubstr(hex64(kMissing)));
  EXPECT_THAT(error_of([&] { cache.get(kMissing); }), HasSubstr(hex64(kMissing)));  // tried again
  EXPECT_TRUE(cache.get(id(2)).hit);  // the loader went on after the failure
  loader.enqueue({id(3)});
  loader.wait_idle();
  EXPECT_TRUE(cache.get(id(3)).hit);
}

TEST_F(ChunkKvCacheTest, ALoaderDestroyedWithWorkPendingStops) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  {
    BackgroundLoader loader(cache);
    std::vector<uint64_t> ids;
    for (int i = 0; i < 200; ++i) ids.push_back(id((size_t)i % chunks.size()));
    loader.enqueue(ids);
  }  // joins without finishing the queue
  EXPECT_LE(cache.stats().chunks_held, chunks.size());
  EXPECT_TRUE(cache.get(id(0)).kv);  // the cache is whole without its loader
}

}  // namespace
}  // namespace kvf
