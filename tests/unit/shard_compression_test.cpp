// Entropy-coded shards (store/h5_compression.h, store/hdf5_zstd_filter.h): the text form and its refusals, every KV
// dtype read back exactly through zstd and deflate, the stored chunk a plain zstd frame (what other tools decode),
// and the compressed size a reader reports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/h5_compression.h"
#include "store/hdf5_file.h"
#include "store/hdf5_zstd_filter.h"
#include "store/kv_shard.h"
#include "support/temp_dir.h"
#include "support/test_values.h"
#include "support/tiny_shard.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using ::testing::HasSubstr;

constexpr uint64_t kFingerprint = 0x5eed5eed5eed5eedULL;

TEST(ShardCompression, TextFormRoundTripsAndRefusesWhatItCannotStore) {
  for (const std::string text : {"none", "deflate:1", "deflate:9", "zstd:1", "zstd:19", "zstd:22"})
    EXPECT_EQ(h5::compression_name(h5::parse_compression(text, "--entropy")), text);
  EXPECT_EQ(h5::parse_compression("zstd:7", "x").codec, h5::Compression::Codec::Zstd);
  EXPECT_EQ(h5::parse_compression("zstd:7", "x").level, 7);
  for (const std::string bad : {"zstd", "zstd:", "zstd:0", "zstd:23", "deflate:10", "deflate:0", "lz4:3", "zstd:x",
                                "zstd:-1", "zstd:100", ""}) {
    const std::string e = error_of([&] { h5::parse_compression(bad, "--entropy"); });
    EXPECT_THAT(e, HasSubstr("--entropy")) << bad;
    EXPECT_THAT(e, HasSubstr("'" + bad + "'")) << bad;
  }
}

// KV with the structure real KV has (channels of different scales, neighbouring rows alike), so that an entropy
// coder has something to find; random signs keep it from being trivially compressible.
std::vector<float> structured_kv(const KvShardLayout& l, uint32_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> x((size_t)rows * l.row_elems());
  for (uint32_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < l.row_elems(); ++c)
      x[r * l.row_elems() + c] = (float)((c % 5) + 1) * (1.0f + noise(rng));
  return x;
}

struct ShardFile {
  std::string path;
  std::vector<float> k, v;
  std::vector<int32_t> positions;
};

ShardFile write_shard(const fs::path& dir, KvDtype dtype, h5::Compression compression, const std::string& name) {
  KvShardLayout l = test::tiny_shard_layout("similarity", kFingerprint, 3, 2, 16, dtype);
  if (l.low_bit()) l.quant_group = 8;
  ShardFile s{(dir / name).string(), structured_kv(l, 40, 1), structured_kv(l, 40, 2), {}};
  for (int32_t r = 0; r < 40; ++r) s.positions.push_back(r);
  KvShardWriter w(l);
  w.set_compression(compression);
  w.add_chunk(0xabc, s.k.data(), s.v.data(), s.positions.data(), 40);
  w.write(s.path);
  return s;
}

TEST(ShardCompression, EveryDtypeReadsBackAsTheUncompressedShardDoes) {
  const fs::path dir = test::fresh_test_dir();
  for (KvDtype dtype : {KvDtype::F16, KvDtype::BF16, KvDtype::Int8, KvDtype::Int4, KvDtype::Int3, KvDtype::Int2}) {
    const std::string name = kv_dtype_name(dtype);
    const ShardFile plain = write_shard(dir, dtype, {}, name + "-plain.h5");
    const KvShardReader plain_reader = KvShardReader::open(plain.path, kFingerprint);
    std::vector<float> k0, v0, k1, v1;
    std::vector<int32_t> p0, p1;
    plain_reader.read_chunk(0, k0, v0, p0, true);
    EXPECT_EQ(h5::compression_name(plain_reader.compression()), "none");
    for (const std::string codec : {"zstd:3", "zstd:19", "deflate:6"}) {
      const ShardFile packed = write_shard(dir, dtype, h5::parse_compression(codec, "test"), name + "-" + codec + ".h5");
      const KvShardReader reader = KvShardReader::open(packed.path, kFingerprint);
      EXPECT_EQ(h5::compression_name(reader.compression()), codec) << name;
      reader.read_chunk(0, k1, v1, p1, true);  // checksum verified: the very bytes the writer encoded
      EXPECT_EQ(k1, k0) << name << " " << codec;
      EXPECT_EQ(v1, v0) << name << " " << codec;
      EXPECT_EQ(p1, p0) << name << " " << codec;
      EXPECT_LT(reader.stored_kv_bytes(), plain_reader.stored_kv_bytes()) << name << " " << codec;
      EXPECT_LT(fs::file_size(packed.path), fs::file_size(plain.path)) << name << " " << codec;
    }
  }
}

// The stored HDF5 chunk is one standard zstd frame of the dataset's bytes (byte-shuffled first, a no-op for the
// 1-byte low-bit codes): libzstd alone decodes it, as the public HDF5 zstd plugin does.
TEST(ShardCompression, ZstdChunksArePlainZstdFrames) {
  const fs::path dir = test::fresh_test_dir();
  const ShardFile packed = write_shard(dir, KvDtype::Int4, {h5::Compression::Codec::Zstd, 5}, "int4.h5");
  const h5::File file = h5::File::open_read(packed.path);
  const uint64_t n = file.raw_shape("blob", H5T_STD_U8LE)[0];
  std::vector<uint8_t> blob(n);
  file.read_raw_rows("blob", H5T_STD_U8LE, 0, n, blob.data());
  hid_t dset = H5Dopen2(file.id(), "blob", H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  hsize_t chunk_bytes = 0;
  const hsize_t offset[1] = {0};
  ASSERT_GE(H5Dget_chunk_storage_size(dset, offset, &chunk_bytes), 0);
  std::vector<uint8_t> frame(chunk_bytes);
  uint32_t filter_mask = 0;
  ASSERT_GE(H5Dread_chunk(dset, H5P_DEFAULT, offset, &filter_mask, frame.data()), 0);
  H5Dclose(dset);
  EXPECT_EQ(filter_mask, 0u);  // every filter of the pipeline applied to this chunk
  EXPECT_LT(frame.size(), n);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), n);  // one chunk holds the whole small blob
  std::vector<uint8_t> decoded(n);
  EXPECT_EQ(ZSTD_decompress(decoded.data(), n, frame.data(), frame.size()), n);
  EXPECT_EQ(decoded, blob);
}

TEST(ShardCompression, WriterRefusesLevelsOutsideTheCodecsRange) {
  KvShardWriter w(test::tiny_shard_layout("similarity", kFingerprint, 1, 1, 8));
  EXPECT_THAT(error_of([&] { w.set_compression({h5::Compression::Codec::Deflate, 10}); }), HasSubstr("deflate:10"));
  EXPECT_THAT(error_of([&] { w.set_compression({h5::Compression::Codec::Zstd, 0}); }), HasSubstr("zstd:0"));
  w.set_compression({h5::Compression::Codec::Zstd, 22});
}

}  // namespace
}  // namespace kvf
