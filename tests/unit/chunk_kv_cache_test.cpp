// The chunk KV cache over a real store mode (shards + manifest, read by KvModeReader): hit/miss counting, LRU
// eviction under a byte budget, the f16 round trip, errors naming the chunk id, one load for concurrent gets,
// and the background loader (prefetches become hits; a failed prefetch is reported by the later get); loads
// decoding in parallel (many threads, many chunks, a damaged one), low-bit modes kept encoded or decoded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "backend/backend.h"
#include "core/error.h"
#include "core/half.h"
#include "core/hex.h"
#include "core/low_bit_kv.h"
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

  void write_store(const std::vector<int64_t>& rows, const KvShardLayout& l = small_layout()) {
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

  // Whether seg is chunk c as written, rounded to f16, in every layer.
  bool holds_chunk(const KvSegment& seg, size_t c) const {
    const KvShardLayout l = small_layout();
    const int64_t row = (int64_t)l.kv_heads * l.head_dim;
    const HostKv& want = chunks[c].kv;
    if (seg.positions != want.positions || seg.k.size() != (size_t)l.n_layers || seg.v.size() != seg.k.size())
      return false;
    std::vector<float> k((size_t)(want.rows * row)), v(k.size());
    for (int64_t layer = 0; layer < l.n_layers; ++layer) {
      if (seg.k[layer].shape != Shape{want.rows, l.kv_heads, l.head_dim}) return false;
      backend->copy_to_host(seg.k[layer], k.data(), k.size() * sizeof(float));
      backend->copy_to_host(seg.v[layer], v.data(), v.size() * sizeof(float));
      for (int64_t r = 0; r < want.rows; ++r)
        for (int64_t i = 0; i < row; ++i) {
          const size_t stored = (size_t)((r * l.stored_layers + layer) * row + i);
          if (k[r * row + i] != f16_to_f32(f32_to_f16(want.k[stored])) ||
              v[r * row + i] != f16_to_f32(f32_to_f16(want.v[stored])))
            return false;
        }
    }
    return true;
  }

  // Flips one bit of element `at` of a dataset of shard `shard`, in place.
  void flip_stored_bit(size_t shard, const char* dataset, size_t at) const {
    const std::string path = (dir / kv_shard_name("independent", shard)).string();
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t dset = H5Dopen2(file, dataset, H5P_DEFAULT), type = H5Dget_type(dset), space = H5Dget_space(dset);
    std::vector<uint8_t> data((size_t)H5Sget_simple_extent_npoints(space) * H5Tget_size(type));
    EXPECT_GE(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
    data.at(at * H5Tget_size(type)) ^= 0x10;
    EXPECT_GE(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(dset);
    H5Fclose(file);
  }

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
  for (size_t c : {3, 4}) EXPECT_TRUE(holds_chunk(*cache.get(id(c)).kv, c)) << "chunk " << c;
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

// Loads read under the cache's lock and decode after it (in parallel): with nothing kept, every get of every
// thread loads, and each gets its own chunk's KV, never rows another thread's load was decoding at the same time.
TEST_F(ChunkKvCacheTest, ConcurrentLoadsOfManyChunksEachGetTheirOwnKv) {
  ChunkKvCache cache(*source, *backend, 0);
  std::vector<int> wrong(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < wrong.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < 25 * chunks.size(); ++i) {
        const size_t c = (i * (t + 1) + t) % chunks.size();
        try {
          wrong[t] += !holds_chunk(*cache.get(id(c)).kv, c);
        } catch (const Error&) {  // bytes another load overwrote: a checksum error
          ++wrong[t];
        }
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
  EXPECT_EQ(cache.stats().misses + cache.stats().hits, 4 * 25 * chunks.size());  // hits: waited for another's load
}

// The checksum is checked after the lock is released: a damaged chunk is still an error naming its shard and
// chunk for every thread that asks, while the other chunks load as usual.
TEST_F(ChunkKvCacheTest, ADamagedChunkIsAChecksumErrorForEveryThreadAndOnlyForIt) {
  source.reset();  // HDF5 opens a file for writing only where it is not open already
  flip_stored_bit(1, "k", 5);  // shard 1 holds chunks 1 and 3: chunk 1's first row
  source = std::make_unique<KvModeReader>(dir.string(), manifest, "independent", kFingerprint);
  ChunkKvCache cache(*source, *backend, 0);
  const std::string want = (dir / kv_shard_name("independent", 1)).string() + ": chunk " + hex64(id(1)) +
                           " (index entry 0) has checksum ";
  std::vector<std::string> errors(4);
  std::vector<int> wrong(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < errors.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < 10 * chunks.size(); ++i) {
        const size_t c = (i + t) % chunks.size();
        try {
          const std::shared_ptr<const KvSegment> kv = cache.get(id(c)).kv;
          wrong[t] += c == 1 || !holds_chunk(*kv, c);
        } catch (const Error& e) {
          wrong[t] += c != 1 || std::string(e.what()).find(want) == std::string::npos;
          errors[t] = e.what();
        }
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0)) << ::testing::PrintToString(errors);
  for (const std::string& e : errors) EXPECT_THAT(e, HasSubstr(want));
}

// A low-bit mode's chunk is kept as stored (its codec bytes, checked: a flipped byte is a checksum error), or
// decoded to f32 at load when asked, exactly as the codec decodes it.
TEST_F(ChunkKvCacheTest, ALowBitChunkIsKeptEncodedOrDecodedAsAsked) {
  KvShardLayout l = small_layout();
  l.dtype = KvDtype::Int4;
  l.quant_group = 4;
  dir = test::fresh_test_dir();
  manifest = Manifest();
  chunks.clear();
  write_store({4, 9, 600}, l);
  flip_stored_bit(1, "blob", 7);  // shard 1 holds chunk 1
  source = std::make_unique<KvModeReader>(dir.string(), manifest, "independent", kFingerprint);
  ChunkKvCache encoded(*source, *backend, 1ull << 30), decoded(*source, *backend, 1ull << 30, true);
  const int64_t row = (int64_t)l.kv_heads * l.head_dim;
  for (size_t c : {0, 2}) {
    const HostKv& kv = chunks[c].kv;
    std::vector<uint8_t> bytes;
    encode_low_bit_chunk(l.low_bit_spec(), kv.k.data(), kv.v.data(), kv.rows, l.row_elems(), bytes);
    const std::shared_ptr<const KvSegment> kept = encoded.get(id(c)).kv;
    ASSERT_TRUE(kept->encoded);
    EXPECT_EQ(kept->encoded->bytes, bytes);
    EXPECT_EQ(kept->positions, kv.positions);
    std::vector<float> k_want(kv.k.size()), v_want(k_want.size()), k((size_t)(kv.rows * row)), v(k.size());
    ASSERT_TRUE(decode_low_bit_chunk(l.low_bit_spec(), bytes.data(), kv.rows, l.row_elems(), k_want.data(),
                                     v_want.data()));
    const std::shared_ptr<const KvSegment> seg = decoded.get(id(c)).kv;
    ASSERT_FALSE(seg->encoded);
    EXPECT_EQ(seg->positions, kv.positions);
    for (int layer = 0; layer < l.n_layers; ++layer) {
      backend->copy_to_host(seg->k[layer], k.data(), k.size() * sizeof(float));
      backend->copy_to_host(seg->v[layer], v.data(), v.size() * sizeof(float));
      for (int64_t r = 0; r < kv.rows; ++r)
        for (int64_t i = 0; i < row; ++i) {
          ASSERT_EQ(k[r * row + i], k_want[(r * l.stored_layers + layer) * row + i]) << c << " " << layer;
          ASSERT_EQ(v[r * row + i], v_want[(r * l.stored_layers + layer) * row + i]) << c << " " << layer;
        }
    }
  }
  for (ChunkKvCache* cache : {&encoded, &decoded})
    EXPECT_THAT(error_of([&] { cache->get(id(1)); }),
                HasSubstr("chunk " + hex64(id(1)) + " (index entry 0) has checksum"));
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

TEST_F(ChunkKvCacheTest, SeveralLoaderThreadsLoadEachChunkOnce) {
  ChunkKvCache cache(*source, *backend, 1ull << 30);
  BackgroundLoader loader(cache, 3);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 60; ++i) ids.push_back(id((size_t)i % chunks.size()));  // each chunk asked for many times
  loader.enqueue(ids);
  loader.wait_idle();
  EXPECT_EQ(cache.stats().misses, chunks.size());  // a chunk in flight is not loaded again by another thread
  for (size_t c = 0; c < chunks.size(); ++c) EXPECT_TRUE(cache.get(id(c)).hit) << c;
  EXPECT_THAT(error_of([&] { BackgroundLoader bad(cache, 0); }),
              HasSubstr("0 threads"));
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
    BackgroundLoader loader(cache, 2);
    std::vector<uint64_t> ids;
    for (int i = 0; i < 200; ++i) ids.push_back(id((size_t)i % chunks.size()));
    loader.enqueue(ids);
  }  // joins without finishing the queue
  EXPECT_LE(cache.stats().chunks_held, chunks.size());
  EXPECT_TRUE(cache.get(id(0)).kv);  // the cache is whole without its loader
}

}  // namespace
}  // namespace kvf
