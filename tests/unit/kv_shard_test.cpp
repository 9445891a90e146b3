// KV shards: round trips in f16 and bf16 (exactly the f32 -> 16-bit -> f32 rounding) and int8 (within half a
// scale), layer maps, compression, the checksum definitions, and refusal of damaged files (flipped byte, bad
// scale, truncation, bad index, wrong shapes, wrong model).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>

#include "backend/backend.h"
#include "core/error.h"
#include "core/half.h"
#include "core/hex.h"
#include "core/int8_rows.h"
#include "core/low_bit_kv.h"
#include "model/fingerprint.h"
#include "store/chunk_kv.h"
#include "store/hdf5_file.h"
#include "store/kv_shard.h"
#include "store/manifest.h"
#include "support/test_values.h"

#include "support/temp_dir.h"
#include "support/tiny_shard.h"

namespace kvf {
namespace {

using test::error_of;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint64_t kFingerprint = 0x0123456789abcdefULL;

KvShardLayout small_layout(KvDtype dtype) { return test::tiny_shard_layout("independent", kFingerprint, 3, 2, 8, dtype); }

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

void write_shard(const std::string& path, const KvShardLayout& l, const std::vector<Chunk>& chunks,
                 h5::Compression compression = {}) {
  KvShardWriter w(l);
  w.set_compression(compression);
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
  EXPECT_EQ(l.bytes_per_row(), 2 * 2 * 48 + 4);
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

// Anchor scores ride along where given, exactly (f64); a chunk added without them, or a shard without any, has none.
TEST(KvShard, AnchorScoresRoundTrip) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = small_layout(KvDtype::F16);
  const auto chunks = random_chunks(l, {5, 3, 70}, 5);
  const std::vector<double> first = {0.1, 1e-300, 3.0, 0.25, 7.125}, third(70, 1.0 / 3.0);
  KvShardWriter w(l);
  w.add_chunk(chunks[0].id, chunks[0].k.data(), chunks[0].v.data(), chunks[0].positions.data(), 5, 0, first.data());
  w.add_chunk(chunks[1].id, chunks[1].k.data(), chunks[1].v.data(), chunks[1].positions.data(), 3);
  w.add_chunk(chunks[2].id, chunks[2].k.data(), chunks[2].v.data(), chunks[2].positions.data(), 70, 0, third.data());
  w.write((dir / "scored.h5").string());
  const KvShardReader r = KvShardReader::open((dir / "scored.h5").string(), kFingerprint);
  EXPECT_EQ(r.read_anchor_scores(0), first);
  EXPECT_TRUE(r.read_anchor_scores(1).empty());
  EXPECT_EQ(r.read_anchor_scores(2), third);
  expect_round_trip((dir / "scored.h5").string(), l, chunks);
  write_shard((dir / "plain.h5").string(), l, chunks);
  EXPECT_TRUE(KvShardReader::open((dir / "plain.h5").string(), kFingerprint).read_anchor_scores(0).empty());
}

TEST(KvShard, DeflatedRoundTripIsSmaller) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = small_layout(KvDtype::F16);
  auto chunks = random_chunks(l, {200}, 4);
  std::fill(chunks[0].k.begin(), chunks[0].k.begin() + 4000, 0.5f);  // something to compress
  write_shard((dir / "plain.h5").string(), l, chunks);
  write_shard((dir / "deflated.h5").string(), l, chunks, {h5::Compression::Codec::Deflate, 6});
  expect_round_trip((dir / "deflated.h5").string(), l, chunks);
  EXPECT_LT(fs::file_size(dir / "deflated.h5"), fs::file_size(dir / "plain.h5"));
}

TEST(KvShard, EmptyShardRoundTrip) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  write_shard(path, small_layout(KvDtype::F16), {});
  EXPECT_TRUE(KvShardReader::open(path).index().empty());
  EXPECT_TRUE(verify_kv_shard(path).empty());
}

// A chunk's stored f16 k bytes are random enough to occur once in the file: finds 64 of them and flips one bit.
void flip_stored_k_bit(const std::string& path, const Chunk& chunk) {
  std::vector<uint16_t> stored;
  for (size_t i = 100; i < 132; ++i) stored.push_back(f32_to_f16(chunk.k[i]));
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
}

TEST(KvShard, FlippedByteFailsItsChecksum) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  const KvShardLayout l = small_layout(KvDtype::F16);
  const auto chunks = random_chunks(l, {10, 20, 10}, 5);
  write_shard(path, l, chunks);
  flip_stored_k_bit(path, chunks[1]);

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

// Replaces the one occurrence of `from` in the file by `to` (as long).
void replace_unique_bytes(const std::string& path, const std::string& from, const std::string& to) {
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(from, at + 1), std::string::npos);
  bytes.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// An f16 chunk's stored k, v and positions, and their checksum (docs/store.md).
std::string stored_f16(const std::vector<float>& x) {
  std::string out(x.size() * 2, '\0');
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}
std::string f16_checksum_bytes(const std::string& k, const std::string& v, const std::vector<int32_t>& positions) {
  const std::string all = k + v + std::string(reinterpret_cast<const char*>(positions.data()), positions.size() * 4);
  const uint64_t sum = XXH3_64bits(all.data(), all.size());
  return std::string(reinterpret_cast<const char*>(&sum), 8);
}

// Element i (< 32) of the chunk's stored v becomes a NaN with a checksum that matches it, as a writer without a
// finiteness check would have stored it (writers refuse them now): only the reader's own check can catch it.
void store_nan_in_v(const std::string& path, const Chunk& c, size_t i) {
  const std::string k = stored_f16(c.k), v = stored_f16(c.v);
  std::string nan_v = v;
  const uint16_t nan = 0x7E00;
  std::memcpy(&nan_v[2 * i], &nan, 2);
  replace_unique_bytes(path, v.substr(0, 64), nan_v.substr(0, 64));
  replace_unique_bytes(path, f16_checksum_bytes(k, v, c.positions), f16_checksum_bytes(k, nan_v, c.positions));
}

// The query path (KvModeReader::read, what kvrun's chunk cache loads through) checks every chunk it reads: a
// flipped bit or a stored NaN is an error naming the chunk and the shard file, never KV handed to attention.
TEST(KvShard, ModeReaderRefusesDamagedOrNonFiniteChunks) {
  const fs::path dir = test::fresh_test_dir();
  fs::create_directories(dir / "kv");
  const std::string path = (dir / "kv" / "independent-00000.h5").string();
  const KvShardLayout l = small_layout(KvDtype::F16);
  auto chunks = random_chunks(l, {10, 20, 10}, 5);
  write_shard(path, l, chunks);
  store_nan_in_v(path, chunks[2], 7);
  flip_stored_k_bit(path, chunks[1]);
  Manifest m;
  m.record_file(describe_file(dir.string(), "kv/independent-00000.h5"));
  const KvModeReader reader(dir.string(), m, "independent", kFingerprint);
  EXPECT_EQ(reader.read(chunks[0].id).rows, 10);
  const std::string flipped = error_of([&] { reader.read(chunks[1].id); });
  EXPECT_THAT(flipped, HasSubstr(path));
  EXPECT_THAT(flipped, HasSubstr("chunk " + hex64(chunks[1].id)));
  EXPECT_THAT(flipped, HasSubstr("checksum"));
  const std::string nan = error_of([&] { reader.read(chunks[2].id); });
  EXPECT_THAT(nan, HasSubstr(path));
  EXPECT_THAT(nan, HasSubstr("chunk " + hex64(chunks[2].id)));
  EXPECT_THAT(nan, HasSubstr("v of row 30, stored layer 0 is nan"));
  EXPECT_EQ(verify_kv_shard(path, kFingerprint).size(), 2u);

  // decode_segment (the chunk cache's way, straight into per-layer tensors) gives read()'s values and refuses the same.
  const auto backend = make_cpu_backend();
  RawKvChunk raw;
  reader.read_raw(chunks[0].id, raw);
  const HostKv direct = segment_to_host(reader.decode_segment(raw, *backend), *backend);
  const HostKv read = reader.read(chunks[0].id);
  EXPECT_EQ(direct.k, read.k);
  EXPECT_EQ(direct.v, read.v);
  EXPECT_EQ(direct.positions, read.positions);
  reader.read_raw(chunks[2].id, raw);
  EXPECT_THAT(error_of([&] { reader.decode_segment(raw, *backend); }),
              HasSubstr("v of row 30, stored layer 0 is nan"));
  reader.read_raw(chunks[1].id, raw);
  EXPECT_THAT(error_of([&] { reader.decode_segment(raw, *backend); }), HasSubstr("checksum"));
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

// Opens one dataset of a shard for writing and hands it to `edit`, as a damaged or hand-edited file would be made.
template <typename Edit>
void edit_dataset(const std::string& path, const char* dataset, Edit edit) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t dset = H5Dopen2(file, dataset, H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  edit(dset);
  H5Dclose(dset);
  H5Fclose(file);
}

// Overwrites a u64 index dataset in place.
void poke_index(const std::string& path, const char* dataset, const std::vector<uint64_t>& values) {
  edit_dataset(path, dataset, [&](hid_t dset) {
    EXPECT_GE(H5Dwrite(dset, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  });
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

// ---- int8 ----

// What the shard stores for one chunk's k or v in int8: the quantized bytes and the scales.
struct Int8Rows {
  std::vector<int8_t> q;
  std::vector<uint16_t> scales;
  std::vector<float> back;  // q * scale
};

Int8Rows quantized(const KvShardLayout& l, const std::vector<float>& x) {
  const int64_t groups = (int64_t)x.size() / l.head_dim;
  Int8Rows r{std::vector<int8_t>(x.size()), std::vector<uint16_t>(groups), std::vector<float>(x.size())};
  quantize_int8_groups(x.data(), groups, l.head_dim, r.q.data(), r.scales.data());
  dequantize_int8_groups(r.q.data(), r.scales.data(), groups, l.head_dim, r.back.data());
  return r;
}

// Reads every chunk back (checked): positions exact, values exactly the int8 rounding and within half a scale.
void expect_int8_round_trip(const std::string& path, const KvShardLayout& l, const std::vector<Chunk>& chunks) {
  const KvShardReader r = KvShardReader::open(path, kFingerprint);
  EXPECT_EQ(r.layout().dtype, KvDtype::Int8);
  EXPECT_EQ(r.layout().layer_map, l.layer_map);
  ASSERT_EQ(r.index().size(), chunks.size());
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  for (size_t c = chunks.size(); c-- > 0;) {
    r.read_chunk(c, k, v, positions, true);
    EXPECT_EQ(positions, chunks[c].positions);
    const auto pairs = {std::make_tuple("k", &k, &chunks[c].k), std::make_tuple("v", &v, &chunks[c].v)};
    for (const auto& [name, got, want] : pairs) {
      const Int8Rows expected = quantized(l, *want);
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < got->size(); ++i) {
        const float scale = f16_to_f32(expected.scales[i / l.head_dim]);
        ASSERT_EQ((*got)[i], expected.back[i]) << "chunk " << c << " " << name << "[" << i << "]";
        ASSERT_LE(std::abs((*got)[i] - (*want)[i]), scale / 2 * (1 + 1e-6))
            << "chunk " << c << " " << name << "[" << i << "] " << (*want)[i] << " (scale " << scale << ")";
      }
    }
  }
  EXPECT_TRUE(verify_kv_shard(path, kFingerprint).empty());
}

TEST(KvShard, Int8RoundTripWithinHalfAScale) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  const KvShardLayout l = small_layout(KvDtype::Int8);
  const auto chunks = random_chunks(l, {3, 70, 130, 1}, 11);  // rows straddle the 64-row HDF5 chunks
  KvShardWriter w(l);
  add_all(w, chunks);
  EXPECT_EQ(w.rows(), 204u);
  // Per row: k and v 48 bytes each, 3 layers x 2 heads f16 scales for each, a 4-byte position.
  EXPECT_EQ(l.bytes_per_row(), 2 * 48 + 2 * 3 * 2 * 2 + 4);
  EXPECT_EQ((double)w.bytes(), (double)w.rows() * l.bytes_per_row());
  w.write(path);
  expect_int8_round_trip(path, l, chunks);
  const KvShardReader r = KvShardReader::open(path);
  EXPECT_EQ(r.index()[2].first_row, 73u);
}

TEST(KvShard, Int8DeflatedLayerMappedRoundTrip) {
  const fs::path dir = test::fresh_test_dir();
  KvShardLayout l = small_layout(KvDtype::Int8);
  l.n_layers = 5;
  l.stored_layers = 2;
  l.layer_map = {0, 0, 1, 1, 1};
  auto chunks = random_chunks(l, {100, 9}, 12);
  std::fill(chunks[0].v.begin(), chunks[0].v.begin() + 1000, 0.0f);  // all-zero groups: scale 0, zeros back
  write_shard((dir / "plain.h5").string(), l, chunks);
  write_shard((dir / "deflated.h5").string(), l, chunks, {h5::Compression::Codec::Deflate, 6});
  expect_int8_round_trip((dir / "deflated.h5").string(), l, chunks);
  EXPECT_LT(fs::file_size(dir / "deflated.h5"), fs::file_size(dir / "plain.h5"));
  const KvShardReader r = KvShardReader::open((dir / "plain.h5").string());
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  r.read_chunk(0, k, v, positions);
  EXPECT_TRUE(std::all_of(v.begin(), v.begin() + 1000, [](float x) { return x == 0.0f; }));
}

TEST(KvShard, EmptyInt8ShardRoundTrip) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  write_shard(path, small_layout(KvDtype::Int8), {});
  EXPECT_TRUE(KvShardReader::open(path).index().empty());
  EXPECT_TRUE(verify_kv_shard(path).empty());
}

uint64_t xxh3(const std::string& bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

template <typename T>
void append_bytes(std::string& out, const std::vector<T>& values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// The checksum definitions of docs/store.md, computed independently of the writer: f16/bf16 shards keep the one
// the first shards were written with (k, v, positions); int8 adds the scales between v and positions.
TEST(KvShard, ChecksumDefinitions) {
  const fs::path dir = test::fresh_test_dir();
  for (KvDtype dtype : {KvDtype::F16, KvDtype::BF16, KvDtype::Int8}) {
    const KvShardLayout l = small_layout(dtype);
    const auto chunks = random_chunks(l, {7, 66}, 13);
    const std::string path = (dir / ("shard-" + std::to_string((int)dtype) + ".h5")).string();
    write_shard(path, l, chunks);
    const KvShardReader r = KvShardReader::open(path);
    for (size_t c = 0; c < chunks.size(); ++c) {
      std::string bytes;
      if (dtype == KvDtype::Int8) {
        const Int8Rows k = quantized(l, chunks[c].k), v = quantized(l, chunks[c].v);
        append_bytes(bytes, k.q);
        append_bytes(bytes, v.q);
        append_bytes(bytes, k.scales);
        append_bytes(bytes, v.scales);
      } else {
        for (const std::vector<float>* x : {&chunks[c].k, &chunks[c].v}) {
          std::vector<uint16_t> stored;
          for (float f : *x) stored.push_back(dtype == KvDtype::F16 ? f32_to_f16(f) : f32_to_bf16(f));
          append_bytes(bytes, stored);
        }
      }
      append_bytes(bytes, chunks[c].positions);
      EXPECT_EQ(r.index()[c].checksum, xxh3(bytes)) << "dtype " << (int)dtype << " chunk " << c;
    }
  }
}

TEST(KvShard, Int8FlippedScaleByteFailsItsChecksum) {
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  const KvShardLayout l = small_layout(KvDtype::Int8);
  const auto chunks = random_chunks(l, {10, 20, 10}, 14);
  write_shard(path, l, chunks);

  // Chunk 1's k scales (20 rows x 3 layers x 2 heads) are varied enough to occur once in the file.
  const std::vector<uint16_t> scales = quantized(l, chunks[1].k).scales;
  std::string needle;
  append_bytes(needle, scales);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos);
  bytes[at + 20] ^= 0x01;  // a low mantissa bit: still a sound scale, only the checksum can tell
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;

  const std::vector<std::string> problems = verify_kv_shard(path);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr(path));
  EXPECT_THAT(problems[0], HasSubstr("index entry 1"));
  EXPECT_THAT(problems[0], HasSubstr("checksum"));
}

// Rewrites a whole dataset of f16 values through HDF5, changing element `at`.
void poke_f16(const std::string& path, const char* dataset, size_t at, float value) {
  edit_dataset(path, dataset, [&](hid_t dset) {
    const h5::Handle f16 = h5::ieee_f16_type();
    const hid_t space = H5Dget_space(dset);
    std::vector<uint16_t> values((size_t)H5Sget_simple_extent_npoints(space));
    H5Sclose(space);
    ASSERT_LT(at, values.size());
    EXPECT_GE(H5Dread(dset, f16.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    values[at] = f32_to_f16(value);
    EXPECT_GE(H5Dwrite(dset, f16.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  });
}

TEST(KvShard, Int8BadScaleIsRefusedEvenUnchecked) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = small_layout(KvDtype::Int8);
  const auto chunks = random_chunks(l, {4, 5}, 15);
  const std::string negative = (dir / "negative.h5").string(), nan = (dir / "nan.h5").string();
  write_shard(negative, l, chunks);
  write_shard(nan, l, chunks);
  poke_f16(negative, "k_scale", (4 + 2) * 6 + 1 * 2 + 1, -2.5f);  // chunk 1: its row 2, stored layer 1, head 1
  poke_f16(nan, "v_scale", 3, std::numeric_limits<float>::quiet_NaN());  // chunk 0: row 0, layer 1, head 1
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  const KvShardReader r = KvShardReader::open(negative);
  r.read_chunk(0, k, v, positions);
  const std::string error = error_of([&] { r.read_chunk(1, k, v, positions); });
  EXPECT_THAT(error, HasSubstr(negative));
  EXPECT_THAT(error, HasSubstr("chunk " + hex64(chunks[1].id)));
  EXPECT_THAT(error, HasSubstr("k_scale of row 6, stored layer 1, kv head 1 is -2.5"));
  EXPECT_THAT(error_of([&] { KvShardReader::open(nan).read_chunk(0, k, v, positions); }),
              HasSubstr("v_scale of row 0, stored layer 1, kv head 1 is nan"));
  for (const std::string& path : {negative, nan}) {
    const std::vector<std::string> problems = verify_kv_shard(path);
    ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
    EXPECT_THAT(problems[0], HasSubstr(path));
  }
}

// Replaces a dataset by one of another shape or element type, as a damaged or foreign writer would leave it.
void replace_dataset(const std::string& path, const char* dataset, hid_t type, const std::vector<hsize_t>& dims) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_GE(H5Ldelete(file, dataset, H5P_DEFAULT), 0);
  const hid_t space = H5Screate_simple((int)dims.size(), dims.data(), nullptr);
  const hid_t dset = H5Dcreate2(file, dataset, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(dset, 0);
  H5Dclose(dset);
  H5Sclose(space);
  H5Fclose(file);
}

TEST(KvShard, Int8WrongDatasetsAreRefusedNamingThem) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = small_layout(KvDtype::Int8);
  const auto chunks = random_chunks(l, {4, 5}, 16);
  const h5::Handle f16 = h5::ieee_f16_type();
  const std::string shape = (dir / "shape.h5").string(), rows = (dir / "rows.h5").string(),
                    type = (dir / "type.h5").string(), missing = (dir / "missing.h5").string(),
                    k_f16 = (dir / "k_f16.h5").string();
  for (const std::string& p : {shape, rows, type, missing, k_f16}) write_shard(p, l, chunks);
  replace_dataset(shape, "k_scale", f16.get(), {9, 3, 3});
  replace_dataset(rows, "v_scale", f16.get(), {8, 3, 2});
  replace_dataset(type, "k_scale", H5T_IEEE_F32LE, {9, 3, 2});
  {
    const hid_t file = H5Fopen(missing.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    EXPECT_GE(H5Ldelete(file, "v_scale", H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  replace_dataset(k_f16, "k", f16.get(), {9, 3, 2, 8});

  std::string error = error_of([&] { KvShardReader::open(shape); });
  EXPECT_THAT(error, HasSubstr(shape));
  EXPECT_THAT(error, HasSubstr("dataset 'k_scale' is not shaped [rows, stored_layers, kv_heads] = [9, 3, 2]"));
  EXPECT_THAT(error_of([&] { KvShardReader::open(rows); }), HasSubstr("dataset 'v_scale' is not shaped"));
  error = error_of([&] { KvShardReader::open(type); });
  EXPECT_THAT(error, HasSubstr(type));
  EXPECT_THAT(error, HasSubstr("dataset 'k_scale' has the wrong element type"));
  EXPECT_THAT(error_of([&] { KvShardReader::open(missing); }), HasSubstr("missing dataset 'v_scale'"));
  EXPECT_THAT(error_of([&] { KvShardReader::open(k_f16); }), HasSubstr("dataset 'k' has the wrong element type"));
  EXPECT_EQ(verify_kv_shard(shape).size(), 1u);
}

TEST(KvShard, Int8WriterRefusesNonFiniteValuesAndStaysUsable) {
  const KvShardLayout l = small_layout(KvDtype::Int8);
  auto chunks = random_chunks(l, {3, 2}, 17);
  KvShardWriter w(l);
  add_all(w, {chunks[0]});
  const uint64_t bytes = w.bytes();
  const float good = chunks[1].v[21];
  chunks[1].v[21] = std::numeric_limits<float>::infinity();  // row 0, layer 1, head 0, element 5: group 2
  const std::string error = error_of([&] { add_all(w, {chunks[1]}); });
  EXPECT_THAT(error, HasSubstr("chunk " + hex64(chunks[1].id)));
  EXPECT_THAT(error, HasSubstr("v at row 0, stored layer 1, kv head 0 is inf"));
  EXPECT_EQ(w.chunks(), 1u);
  EXPECT_EQ(w.bytes(), bytes);
  chunks[1].v[21] = good;
  add_all(w, {chunks[1]});  // the refused id was not taken
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  w.write(path);
  expect_int8_round_trip(path, l, chunks);
}

TEST(KvShard, LowBitRoundTripsMatchTheCodec) {
  for (const KvDtype dtype : {KvDtype::Int4, KvDtype::Int3, KvDtype::Int2}) {
    KvShardLayout l = small_layout(dtype);
    l.quant_group = dtype == KvDtype::Int3 ? 8 : 4;  // eight 3-bit codes fill 3 bytes
    l.keep_first = 1;
    const auto chunks = random_chunks(l, {3, 9, 1, 6}, 23);
    const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
    write_shard(path, l, chunks, {h5::Compression::Codec::Deflate, 1});
    const KvShardReader r = KvShardReader::open(path, kFingerprint);
    EXPECT_EQ(r.layout().dtype, dtype);
    EXPECT_EQ(r.layout().quant_group, l.quant_group);
    EXPECT_EQ(r.layout().keep_first, 1);
    std::vector<float> k, v;
    std::vector<int32_t> positions;
    for (size_t c = chunks.size(); c-- > 0;) {
      r.read_chunk(c, k, v, positions, true);
      EXPECT_EQ(positions, chunks[c].positions);
      // The reader gives exactly what the codec gives for the chunk alone.
      const int64_t rows = (int64_t)chunks[c].positions.size();
      std::vector<uint8_t> bytes;
      encode_low_bit_chunk(l.low_bit_spec(), chunks[c].k.data(), chunks[c].v.data(), rows, l.row_elems(), bytes);
      std::vector<float> k_want(k.size()), v_want(v.size());
      ASSERT_TRUE(decode_low_bit_chunk(l.low_bit_spec(), bytes.data(), rows, l.row_elems(), k_want.data(),
                                       v_want.data()));
      EXPECT_EQ(k, k_want) << kv_dtype_name(dtype) << " chunk " << c;
      EXPECT_EQ(v, v_want) << kv_dtype_name(dtype) << " chunk " << c;
    }
    EXPECT_TRUE(verify_kv_shard(path, kFingerprint).empty());
  }
}

TEST(KvShard, LowBitDamageIsCaught) {
  KvShardLayout l = small_layout(KvDtype::Int4);
  l.quant_group = 8;
  const auto chunks = random_chunks(l, {5, 5}, 29);
  const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
  write_shard(path, l, chunks);
  edit_dataset(path, "blob", [&](hid_t dset) {  // one code byte of the second chunk flipped
    const hid_t space = H5Dget_space(dset);
    std::vector<uint8_t> blob((size_t)H5Sget_simple_extent_npoints(space));
    H5Sclose(space);
    EXPECT_GE(H5Dread(dset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, blob.data()), 0);
    blob[blob.size() - 3] ^= 0x10;
    EXPECT_GE(H5Dwrite(dset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, blob.data()), 0);
  });
  const std::vector<std::string> problems = verify_kv_shard(path, kFingerprint);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("chunk " + hex64(chunks[1].id) + " (index entry 1) has checksum"));
  KvShardLayout bad = l;
  bad.quant_group = 5;
  EXPECT_THAT(error_of([&] { KvShardWriter w(bad); }), HasSubstr("group size 5 must be 4..4096 and divide the head dimension 8"));
}

// The split that lets chunk loads decode in parallel: read_raw does the file reads, decode_chunk works on the raw
// bytes alone (a byte flipped in memory fails the checksum the file would pass), from many threads at once, and
// gives exactly what read_chunk gives.
// Rewriting a shard (kvprep prune) copies a chunk's stored bytes: every dtype reads back exactly as before, with its
// checksum, context, anchor scores and the shard's compression; a damaged chunk or another layout is refused.
TEST(KvShard, StoredChunksCopyBitForBit) {
  for (const KvDtype dtype : {KvDtype::F16, KvDtype::BF16, KvDtype::Int8, KvDtype::Int4, KvDtype::Int3}) {
    const fs::path dir = test::fresh_test_dir();
    KvShardLayout l = small_layout(dtype);
    if (l.low_bit()) l.quant_group = 8, l.keep_first = 1;
    const auto chunks = random_chunks(l, {4, 9, 2}, 31);
    const std::vector<double> scores = {0.5, 0.25, 2.0, 1.0};
    KvShardWriter w(l);
    w.set_compression({h5::Compression::Codec::Deflate, 3});
    w.add_chunk(chunks[0].id, chunks[0].k.data(), chunks[0].v.data(), chunks[0].positions.data(), 4, 77,
                scores.data());
    w.add_chunk(chunks[1].id, chunks[1].k.data(), chunks[1].v.data(), chunks[1].positions.data(), 9, 88);
    w.add_chunk(chunks[2].id, chunks[2].k.data(), chunks[2].v.data(), chunks[2].positions.data(), 2, 99);
    const std::string from_path = (dir / "from.h5").string(), to_path = (dir / "to.h5").string();
    w.write(from_path);
    const KvShardReader from = KvShardReader::open(from_path, kFingerprint);
    EXPECT_EQ(h5::compression_name(from.compression()), "deflate:3");
    KvShardWriter copy(from.layout());
    copy.set_compression(from.compression());
    RawKvChunk raw;
    for (const size_t e : {size_t(2), size_t(0)}) {  // chunk 1 left out, the order changed
      from.read_raw(e, raw);
      copy.add_stored_chunk(from, raw, from.read_anchor_scores(e));
    }
    copy.write(to_path);
    const KvShardReader to = KvShardReader::open(to_path, kFingerprint);
    EXPECT_EQ(h5::compression_name(to.compression()), "deflate:3");
    ASSERT_EQ(to.index().size(), 2u);
    std::vector<float> k0, v0, k1, v1;
    std::vector<int32_t> p0, p1;
    for (const auto& [to_entry, from_entry] : {std::pair<size_t, size_t>{0, 2}, {1, 0}}) {
      EXPECT_EQ(to.index()[to_entry].chunk_id, from.index()[from_entry].chunk_id);
      EXPECT_EQ(to.index()[to_entry].checksum, from.index()[from_entry].checksum);
      EXPECT_EQ(to.index()[to_entry].context, from.index()[from_entry].context);
      from.read_chunk(from_entry, k0, v0, p0, true);
      to.read_chunk(to_entry, k1, v1, p1, true);
      EXPECT_EQ(k0, k1) << kv_dtype_name(dtype);
      EXPECT_EQ(v0, v1) << kv_dtype_name(dtype);
      EXPECT_EQ(p0, p1);
    }
    EXPECT_EQ(to.read_anchor_scores(1), scores);
    EXPECT_TRUE(to.read_anchor_scores(0).empty());
    EXPECT_TRUE(verify_kv_shard(to_path, kFingerprint).empty());

    from.read_raw(1, raw);
    (l.low_bit() ? raw.bytes : raw.k)[0] ^= 0x10;
    EXPECT_THAT(error_of([&] { copy.add_stored_chunk(from, raw, {}); }), HasSubstr("checksum")) << kv_dtype_name(dtype);
    KvShardLayout other = l;
    other.mode = "similarity";
    KvShardWriter elsewhere(other);
    from.read_raw(1, raw);
    EXPECT_THAT(error_of([&] { elsewhere.add_stored_chunk(from, raw, {}); }), HasSubstr("layout differs"));
  }
}

TEST(KvShard, RawChunksDecodeApartFromTheFile) {
  for (const KvDtype dtype : {KvDtype::F16, KvDtype::BF16, KvDtype::Int8, KvDtype::Int4}) {
    KvShardLayout l = small_layout(dtype);
    l.quant_group = 4;
    const auto chunks = random_chunks(l, {3, 70, 9, 130}, 31);
    const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
    write_shard(path, l, chunks);
    const KvShardReader r = KvShardReader::open(path, kFingerprint);
    std::vector<RawKvChunk> raws(chunks.size());
    std::vector<std::vector<float>> k_want(chunks.size()), v_want(chunks.size());
    std::vector<int32_t> positions;
    for (size_t c = 0; c < chunks.size(); ++c) {
      r.read_raw(c, raws[c]);
      EXPECT_EQ(raws[c].chunk_id, chunks[c].id);
      EXPECT_EQ(raws[c].positions, chunks[c].positions);
      r.read_chunk(c, k_want[c], v_want[c], positions, true);
    }
    std::vector<std::thread> threads;
    std::vector<int> wrong(4);
    for (size_t t = 0; t < wrong.size(); ++t)
      threads.emplace_back([&, t] {
        std::vector<float> k, v;
        for (int round = 0; round < 20; ++round)
          for (size_t c = 0; c < raws.size(); ++c) {
            const size_t at = (c + t) % raws.size();
            r.decode_chunk(raws[at], k, v, true);
            wrong[t] += k != k_want[at] || v != v_want[at];
          }
      });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(wrong, std::vector<int>(4, 0)) << kv_dtype_name(dtype);

    RawKvChunk flipped = raws[1];
    (dtype == KvDtype::Int4 ? flipped.bytes : flipped.v)[5] ^= 0x10;
    std::vector<float> k, v;
    const std::string error = error_of([&] { r.decode_chunk(flipped, k, v, true); });
    EXPECT_THAT(error, HasSubstr(path + ": chunk " + hex64(chunks[1].id) + " (index entry 1) has checksum"));
    if (dtype == KvDtype::Int4) {
      EXPECT_THAT(error_of([&] { r.check_low_bit_encoded(flipped); }), HasSubstr(error));
      r.check_low_bit_encoded(raws[1]);
    } else {
      EXPECT_THAT(error_of([&] { r.check_low_bit_encoded(raws[1]); }),
                  HasSubstr(std::string("a ") + kv_dtype_name(dtype) + " shard has no low-bit encoding"));
    }
  }
}

// ---- rotated low-bit codec (core/low_bit_kv.h rotate, nf V levels) ----

// Rewrites (or, with an empty value, deletes) a root string attribute of an HDF5 file, as another writer would.
void set_string_attribute(const std::string& path, const char* name, const std::string& value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  if (H5Aexists(file, name) > 0) {
    EXPECT_GE(H5Adelete(file, name), 0);
  }
  if (!value.empty()) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size() + 1);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attribute = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attribute, type, value.c_str()), 0);
    H5Aclose(attribute);
    H5Sclose(space);
    H5Tclose(type);
  }
  H5Fclose(file);
}

void set_int_attribute(const std::string& path, const char* name, int64_t value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_GE(H5Adelete(file, name), 0);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attribute, H5T_NATIVE_INT64, &value), 0);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Fclose(file);
}

// A rotated shard records its codec (format version 3) and reads back exactly what the codec gives, with nf or
// uniform V levels, at 4, 3 and 2 bits; verify passes.
TEST(KvShard, RotatedLowBitShardsRecordTheirCodec) {
  for (const KvDtype dtype : {KvDtype::Int4, KvDtype::Int3, KvDtype::Int2})
    for (const LowBitLevels levels : {LowBitLevels::NormalFloat, LowBitLevels::Uniform}) {
      SCOPED_TRACE(::testing::Message() << kv_dtype_name(dtype) << " " << low_bit_levels_name(levels));
      KvShardLayout l = small_layout(dtype);
      l.quant_group = 8;
      l.keep_first = 1;
      l.rotate = true;
      l.v_levels = levels;
      const auto chunks = random_chunks(l, {3, 9, 1, 6}, 41);
      const std::string path = (test::fresh_test_dir() / "independent-00000.h5").string();
      write_shard(path, l, chunks);
      const KvShardReader r = KvShardReader::open(path, kFingerprint);
      EXPECT_EQ(r.format_version(), 3);
      EXPECT_TRUE(r.layout().rotate);
      EXPECT_EQ(r.layout().v_levels, levels);
      const h5::File f = h5::File::open_read(path);
      EXPECT_EQ(f.read_string_attribute("rotation"), "hadamard");
      EXPECT_EQ(f.read_string_attribute("v_levels"), low_bit_levels_name(levels));
      // The stored bytes are the codec's, and the rows kvrun decodes where it reads them (LowBitRows, one model
      // layer at a time) are those the whole chunk decodes to.
      RawKvChunk raw;
      std::vector<float> k, v, k_layer, v_layer;
      for (size_t c = 0; c < chunks.size(); ++c) {
        r.read_raw(c, raw);
        r.decode_chunk(raw, k, v, true);
        const int64_t rows = (int64_t)chunks[c].positions.size();
        std::vector<uint8_t> codec_bytes;
        encode_low_bit_chunk(l.low_bit_spec(), chunks[c].k.data(), chunks[c].v.data(), rows, l.row_elems(),
                             codec_bytes);
        EXPECT_EQ(raw.bytes, codec_bytes) << "chunk " << c;
        LowBitRows encoded{l.low_bit_spec(), rows, l.stored_layers, l.kv_heads, l.head_dim, l.layer_map, raw.bytes};
        std::vector<int32_t> ids((size_t)rows);
        std::iota(ids.begin(), ids.end(), 0);
        const int64_t w = encoded.layer_width();
        k_layer.resize((size_t)(rows * w));
        v_layer.resize(k_layer.size());
        for (int layer = 0; layer < l.n_layers; ++layer) {
          encoded.decode(layer, ids.data(), rows, k_layer.data(), v_layer.data());
          for (int64_t i = 0; i < rows; ++i) {
            const auto at = (std::ptrdiff_t)((i * l.stored_layers + l.layer_map[(size_t)layer]) * w);
            EXPECT_TRUE(std::equal(k_layer.begin() + i * w, k_layer.begin() + (i + 1) * w, k.begin() + at));
            EXPECT_TRUE(std::equal(v_layer.begin() + i * w, v_layer.begin() + (i + 1) * w, v.begin() + at));
          }
        }
      }
      EXPECT_TRUE(verify_kv_shard(path, kFingerprint).empty());
    }
}

// Shards of versions 1 and 2 hold no codec attributes: they read as the unrotated codec with uniform V levels,
// exactly as before. In version 3 a missing or unknown codec attribute is refused, naming the file, the attribute
// and the value.
TEST(KvShard, LowBitCodecAttributesOldAbsentAndBad) {
  KvShardLayout l = small_layout(KvDtype::Int4);
  l.quant_group = 4;
  l.keep_first = 1;
  const auto chunks = random_chunks(l, {5, 7}, 43);
  const fs::path dir = test::fresh_test_dir();
  const std::string current = (dir / "independent-00000.h5").string(), old = (dir / "independent-00001.h5").string();
  write_shard(current, l, chunks);
  write_shard(old, l, chunks);
  EXPECT_EQ(h5::File::open_read(current).read_string_attribute("rotation"), "none");
  EXPECT_EQ(h5::File::open_read(current).read_string_attribute("v_levels"), "uniform");
  set_string_attribute(old, "rotation", "");
  set_string_attribute(old, "v_levels", "");
  set_int_attribute(old, "format_version", 2);
  {  // the readers closed before the file is edited again
    const KvShardReader a = KvShardReader::open(current, kFingerprint), b = KvShardReader::open(old, kFingerprint);
    EXPECT_EQ(b.format_version(), 2);
    EXPECT_FALSE(b.layout().rotate);
    EXPECT_EQ(b.layout().v_levels, LowBitLevels::Uniform);
    std::vector<float> ka, va, kb, vb;
    std::vector<int32_t> pa, pb;
    for (size_t c = 0; c < chunks.size(); ++c) {
      a.read_chunk(c, ka, va, pa, true);
      b.read_chunk(c, kb, vb, pb, true);
      EXPECT_EQ(ka, kb);
      EXPECT_EQ(va, vb);
    }
  }
  EXPECT_TRUE(verify_kv_shard(old, kFingerprint).empty());

  set_int_attribute(old, "format_version", 3);  // version 3 without the attributes: damaged, not old
  EXPECT_THAT(error_of([&] { KvShardReader::open(old); }), HasSubstr(old));
  EXPECT_THAT(error_of([&] { KvShardReader::open(old); }), HasSubstr("rotation"));
  set_string_attribute(old, "rotation", "givens");
  set_string_attribute(old, "v_levels", "uniform");
  EXPECT_THAT(error_of([&] { KvShardReader::open(old); }),
              HasSubstr(old + ": attribute 'rotation' is 'givens', expected none or hadamard"));
  set_string_attribute(old, "rotation", "hadamard");
  set_string_attribute(old, "v_levels", "nf4");
  EXPECT_THAT(error_of([&] { KvShardReader::open(old); }),
              HasSubstr(old + ": attribute 'v_levels' is 'nf4', expected uniform or nf"));
  EXPECT_THAT(verify_kv_shard(old), ::testing::ElementsAre(HasSubstr("attribute 'v_levels' is 'nf4'")));
}

}  // namespace
}  // namespace kvf
