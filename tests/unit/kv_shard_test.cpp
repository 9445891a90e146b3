// KV shards: round trips in f16 and bf16 (exactly the f32 -> 16-bit -> f32 rounding), layer maps, compression,
// and refusal of damaged files (flipped byte, truncation, bad index, wrong model).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "support/test_values.h"
#include "core/error.h"
#include "core/half.h"
#include "store/kv_shard.h"

#include "support/temp_dir.h"

namespace kvf {
namespace {

using test::error_of;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint64_t kFingerprint = 0x0123456789abcdefULL;

KvShardLayout small_layout(KvDtype dtype) {
  KvShardLayout l;
  l.mode = "independent";
  l.model_fingerprint = kFingerprint;
  l.n_layers = 3;
  l.layer_map = {0, 1, 2};
  l.stored_layers = 3;
  l.kv_heads = 2;
  l.head_dim = 8;
  l.dtype = dtype;
  return l;
}

struct Chunk {
  uint64_t id;
  std::vector<float> k, v;
  std::vector<int32_t> positions;
};

// Values over a wide range (tiny ones fall into f16 subnormals); positions with gaps, as after anchor compression.
std::vector<Chunk> random_chunks(const KvShardLayout& l, const std::vector<uint32_t>& rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-20, 8);
  std::vector<Chunk> chunks;
  for (size_t c = 0; c < rows.size(); ++c) {
    Chunk ch{0x1000 + c * 7919, {}, {}, {}};
    const size_t n = rows[c] * (size_t)l.row_elems();
    for (size_t i = 0; i < n; ++i) {
      ch.k.push_back(std::ldexp(normal(rng), scale(rng)));
      ch.v.push_back(std::ldexp(normal(rng), scale(rng)));
    }
    for (uint32_t r = 0; r < rows[c]; ++r) ch.positions.push_back((int32_t)(r * 2 + (r % 3)));
    chunks.push_back(std::move(ch));
  }
  return chunks;
}

void add_all(KvShardWriter& w, const std::vector<Chunk>& chunks) {
  for (const Chunk& c : chunks)
    w.add_chunk(c.id, c.k.data(), c.v.data(), c.positions.data(), (uint32_t)c.positions.size());
}

void write_shard(const std::string& path, const KvShardLayout& l, const std::vector<Chunk>& chunks, int deflate = 0) {
  KvShardWriter w(l);
  w.set_deflate_level(deflate);
  add_all(w, chunks);
  w.write(path);
}

float rounded(KvDtype d, float x) {
  return d == KvDtype::F16 ? f16_to_f32(f32_to_f16(x)) : bf16_to_f32(f32_to_bf16(x));
}

void expect_round_trip(const std::string& path, const KvShardLayout& l, const std::vector<Chunk>& chunks) {
  const KvShardReader r = KvShardReader::open(path, kFingerprint);
  EXPECT_EQ(r.layout().mode, l.mode);
  EXPECT_EQ(r.layout().model_fingerprint, l.model_fingerprint);
  EXPECT_EQ(r.layout().layer_map, l.layer_map);
  EXPECT_EQ(r.layout().row_elems(), l.row_elems());
  EXPECT_EQ(r.layout().dtype, l.dtype);
  ASSERT_EQ(r.index().size(), chunks.size());
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  for (size_t c = chunks.size(); c-- > 0;) {  // backwards: each read is its own row range
    EXPECT_EQ(r.index()[c].chunk_id, chunks[c].id);
    r.read_chunk(c, k, v, positions, true);
    EXPECT_EQ(positions, chunks[c].positions);
    ASSERT_EQ(k.size(), chunks[c].k.size());
    ASSERT_EQ(v.size(), chunks[c].v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      ASSERT_EQ(k[i], rounded(l.dtype, chunks[c].k[i])) << "chunk " << c << " k[" << i << "]";
      ASSERT_EQ(v[i], rounded(l.dtype, chunks[c].v[i])) << "chunk " << c << " v[" << i << "]";
    }
  }
  EXPECT_TRUE(verify_kv_shard(path, kFingerprint).empty());
}

TEST(KvShard, RoundTripF16AcrossHdf5Chunks) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  const KvShardLayout l = small_layout(KvDtype::F16);
  const auto chunks = random_chunks(l, {3, 70, 130, 1}, 1);  // rows straddle the 64-row HDF5 chunks
  KvShardWriter w(l);
  add_all(w, chunks);
  EXPECT_EQ(w.chunks(), 4u);
  EXPECT_EQ(w.rows(), 204u);
  EXPECT_EQ(w.bytes(), 204u * (2 * 2 * 48 + 4));
  w.write(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  expect_round_trip(path, l, chunks);
  const KvShardReader r = KvShardReader::open(path);
  EXPECT_EQ(r.index()[2].first_row, 73u);
  EXPECT_EQ(r.index()[2].rows, 130u);
}

TEST(KvShard, RoundTripBf16) {
  const std::string path = (test::fresh_test_dir() / "similarity-00001.h5").string();
  KvShardLayout l = small_layout(KvDtype::BF16);
  l.mode = "similarity";
  const auto chunks = random_chunks(l, {5, 64, 65}, 2);
  write_shard(path, l, chunks);
  expect_round_trip(path, l, chunks);
}

TEST(KvShard, LayerMapRoundTrip) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  KvShardLayout l = small_layout(KvDtype::F16);
  l.n_layers = 5;
  l.stored_layers = 2;
  l.layer_map = {0, 0, 1, 1, 1};
  const auto chunks = random_chunks(l, {4, 9}, 3);
  write_shard(path, l, chunks);
  expect_round_trip(path, l, chunks);
}

TEST(KvShard, DeflatedRoundTripIsSmaller) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = small_layout(KvDtype::F16);
  auto chunks = random_chunks(l, {200}, 4);
  std::fill(chunks[0].k.begin(), chunks[0].k.begin() + 4000, 0.5f);  // something to compress
  write_shard((dir / "plain.h5").string(), l, chunks);
  write_shard((dir / "deflated.h5").string(), l, chunks, 6);
  expect_round_trip((dir / "deflated.h5").string(), l, chunks);
  EXPECT_LT(fs::file_size(dir / "deflated.h5"), fs::file_size(dir / "plain.h5"));
}

TEST(KvShard, EmptyShardRoundTrip) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  write_shard(path, small_layout(KvDtype::F16), {});
  EXPECT_TRUE(KvShardReader::open(path).index().empty());
  EXPECT_TRUE(verify_kv_shard(path).empty());
}

TEST(KvShard, FlippedByteFailsItsChecksum) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  const KvShardLayout l = small_layout(KvDtype::F16);
  const auto chunks = random_chunks(l, {10, 20, 10}, 5);
  write_shard(path, l, chunks);

  // Chunk 1's stored k bytes are random enough to occur once in the file: find 64 of them and flip one.
  std::vector<uint16_t> stored;
  for (size_t i = 100; i < 132; ++i) stored.push_back(f32_to_f16(chunks[1].k[i]));
  std::string needle(stored.size() * 2, '\0');
  std::memcpy(needle.data(), stored.data(), needle.size());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos);
  bytes[at + 5] ^= 0x10;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;

  const std::vector<std::string> problems = verify_kv_shard(path);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr(path));
  EXPECT_THAT(problems[0], HasSubstr("index entry 1"));
  EXPECT_THAT(problems[0], HasSubstr("checksum"));
  const KvShardReader r = KvShardReader::open(path);
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  EXPECT_THROW(r.read_chunk(1, k, v, positions, true), Error);
  r.read_chunk(1, k, v, positions);  // unchecked reads still return the (damaged) rows
  r.read_chunk(0, k, v, positions, true);
}

TEST(KvShard, TruncatedFileIsRefused) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  write_shard(path, small_layout(KvDtype::F16), random_chunks(small_layout(KvDtype::F16), {50, 50}, 6));
  fs::resize_file(path, fs::file_size(path) / 2);
  EXPECT_THAT(error_of([&] { KvShardReader::open(path); }), HasSubstr(path));
  const std::vector<std::string> problems = verify_kv_shard(path);
  ASSERT_FALSE(problems.empty());
  EXPECT_THAT(problems[0], HasSubstr(path));
  EXPECT_FALSE(verify_kv_shard(path + ".missing").empty());
}

TEST(KvShard, WrongFingerprintIsRefusedNamingBoth) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  write_shard(path, small_layout(KvDtype::BF16), random_chunks(small_layout(KvDtype::BF16), {4}, 7));
  const std::string error = error_of([&] { KvShardReader::open(path, 0xfedcba9876543210ULL); });
  EXPECT_THAT(error, HasSubstr("0123456789abcdef"));
  EXPECT_THAT(error, HasSubstr("fedcba9876543210"));
  EXPECT_THAT(error, HasSubstr(path));
  EXPECT_EQ(verify_kv_shard(path, 0xfedcba9876543210ULL).size(), 1u);
}

// Overwrites a u64 index dataset in place, as a damaged or hand-edited file would hold it.
void poke_index(const std::string& path, const char* dataset, const std::vector<uint64_t>& values) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t dset = H5Dopen2(file, dataset, H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  EXPECT_GE(H5Dwrite(dset, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(dset);
  H5Fclose(file);
}

TEST(KvShard, BadIndexIsRefused) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = small_layout(KvDtype::F16);
  const auto chunks = random_chunks(l, {10, 10}, 8);
  const std::string overlap = (dir / "overlap.h5").string(), outside = (dir / "outside.h5").string();
  write_shard(overlap, l, chunks);
  write_shard(outside, l, chunks);
  poke_index(overlap, "index/first_row", {0, 5});
  poke_index(outside, "index/first_row", {0, 15});
  EXPECT_THAT(error_of([&] { KvShardReader::open(overlap); }), HasSubstr("index entries 0 and 1 overlap"));
  EXPECT_THAT(error_of([&] { KvShardReader::open(outside); }), HasSubstr("index entry 1 (chunk"));
}

TEST(KvShard, WriterRefusesBadInput) {
  KvShardLayout l = small_layout(KvDtype::F16);
  l.layer_map = {0, 3, 1};
  EXPECT_THAT(error_of([&] { KvShardWriter w(l); }), HasSubstr("layer_map[1] is 3"));
  l.layer_map = {0, 1};
  EXPECT_THAT(error_of([&] { KvShardWriter w(l); }), HasSubstr("layer_map has 2 entries"));
  KvShardWriter w(small_layout(KvDtype::F16));
  const auto chunks = random_chunks(small_layout(KvDtype::F16), {2}, 9);
  add_all(w, chunks);
  EXPECT_THAT(error_of([&] { add_all(w, chunks); }), HasSubstr("added twice"));
  EXPECT_THAT(error_of([&] { w.add_chunk(2, nullptr, nullptr, nullptr, 0); }), HasSubstr("no rows"));
}

}  // namespace
}  // namespace kvf
