// Low-bit KV (core/low_bit_kv.h): every value within half its group's scale, the kept rows exactly their f16
// rounding, constant groups exact, the byte count, and refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/half.h"
#include "core/low_bit_kv.h"
#include "support/test_values.h"

namespace kvf {
namespace {

using test::error_of;

struct Encoded {
  std::vector<float> k, v, k_out, v_out;
  std::vector<uint8_t> bytes;
};

Encoded round_trip(const LowBitSpec& s, int64_t rows, int64_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Encoded e;
  for (int64_t i = 0; i < rows * width; ++i) {
    // K has outlier channels (KIVI's reason to group K per channel); V does not.
    e.k.push_back(normal(rng) * (i % width == 3 ? 20.0f : 1.0f) + (i % width == 5 ? 7.0f : 0.0f));
    e.v.push_back(normal(rng));
  }
  encode_low_bit_chunk(s, e.k.data(), e.v.data(), rows, width, e.bytes);
  EXPECT_EQ(e.bytes.size(), low_bit_chunk_bytes(s, rows, width));
  e.k_out.resize(e.k.size());
  e.v_out.resize(e.v.size());
  EXPECT_TRUE(decode_low_bit_chunk(s, e.bytes.data(), rows, width, e.k_out.data(), e.v_out.data()));
  return e;
}

// The largest error allowed for value (r, c): half the scale of the group it is in, recomputed from the inputs
// (the scale is at most span / levels rounded up to f16, plus f32 rounding of min + q * scale).
double bound(const std::vector<float>& x, int64_t width, int64_t r0, int64_t rows, int64_t c0, int64_t cols,
             int bits) {
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t r = r0; r < r0 + rows; ++r)
    for (int64_t c = c0; c < c0 + cols; ++c) lo = std::min(lo, x[r * width + c]), hi = std::max(hi, x[r * width + c]);
  const double scale = (hi - lo) / ((1 << bits) - 1) * (1 + 2e-3) + 1e-4 * std::abs(lo);
  return scale / 2 + 1e-5 * (std::abs(lo) + std::abs(hi));
}

TEST(LowBitKv, EveryValueWithinHalfItsGroupScale) {
  const int64_t width = 2 * 64;  // two heads of 64
  for (const int bits : {4, 3, 2})
    for (const int keep : {0, 4})
      for (const int64_t rows : {1, 31, 70}) {
        const LowBitSpec s{bits, 32, keep};
        const Encoded e = round_trip(s, rows, width, (uint32_t)(bits * 100 + keep * 10 + rows));
        const int64_t kept = std::min<int64_t>(keep, rows);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < width; ++c) {
            const size_t i = (size_t)(r * width + c);
            if (r < kept) {  // attention sinks: f16 as stored
              ASSERT_EQ(e.k_out[i], f16_to_f32(f32_to_f16(e.k[i])));
              ASSERT_EQ(e.v_out[i], f16_to_f32(f32_to_f16(e.v[i])));
              continue;
            }
            const int64_t g0 = kept + (r - kept) / 32 * 32, gn = std::min<int64_t>(32, rows - g0);
            ASSERT_LE(std::abs(e.k_out[i] - e.k[i]), bound(e.k, width, g0, gn, c, 1, bits))
                << bits << " bits, keep " << keep << ", rows " << rows << ", k[" << r << "][" << c << "]";
            ASSERT_LE(std::abs(e.v_out[i] - e.v[i]), bound(e.v, width, r, 1, c / 32 * 32, 32, bits))
                << bits << " bits, keep " << keep << ", rows " << rows << ", v[" << r << "][" << c << "]";
          }
      }
}

// Any rows of any one stored layer, decoded alone, are exactly those values of the whole chunk's decoding.
TEST(LowBitKv, RowsOfOneLayerDecodeAsTheWholeChunk) {
  const int64_t layer_width = 2 * 16, layers = 3, width = layers * layer_width;
  for (const int bits : {4, 3, 2})
    for (const int keep : {0, 3}) {
      const LowBitSpec s{bits, 8, keep};
      const int64_t rows = 29;
      const Encoded e = round_trip(s, rows, width, (uint32_t)(bits * 10 + keep));
      const std::vector<int32_t> picked{0, 2, 3, 9, 16, 17, 28};  // kept rows, several K groups, the short last
      for (int64_t l = 0; l < layers; ++l) {
        std::vector<float> k((size_t)(picked.size() * layer_width)), v(k.size());
        ASSERT_TRUE(decode_low_bit_rows(s, e.bytes.data(), rows, width, l * layer_width, layer_width, picked.data(),
                                        (int64_t)picked.size(), k.data(), v.data()));
        for (size_t i = 0; i < picked.size(); ++i)
          for (int64_t c = 0; c < layer_width; ++c) {
            const size_t whole = (size_t)(picked[i] * width + l * layer_width + c), part = i * layer_width + c;
            ASSERT_EQ(k[part], e.k_out[whole]) << bits << " bits, keep " << keep << ", row " << picked[i];
            ASSERT_EQ(v[part], e.v_out[whole]) << bits << " bits, keep " << keep << ", row " << picked[i];
          }
      }
      EXPECT_TRUE(low_bit_chunk_finite(s, e.bytes.data(), rows, width));
      std::vector<uint8_t> damaged = e.bytes;
      damaged[damaged.size() - 1 - (size_t)(2 * rows * width * bits / 8)] = 0x7e;  // the high byte of V's last min
      EXPECT_FALSE(low_bit_chunk_finite(s, damaged.data(), rows, width));
    }
  std::vector<float> out(8);
  const int32_t row = 0;
  EXPECT_NE(error_of([&] { decode_low_bit_rows({4, 8, 0}, nullptr, 1, 16, 4, 8, &row, 1, out.data(), out.data()); })
                .find("values [4, 12) of rows of 16 are not whole groups of 8"),
            std::string::npos);
}

TEST(LowBitKv, ConstantGroupsAreExactAndBytesAsDocumented) {
  const LowBitSpec s{2, 8, 0};
  std::vector<float> k(16 * 8, 0.375f), v(16 * 8, -2.5f), k_out(k.size()), v_out(v.size());
  std::vector<uint8_t> bytes;
  encode_low_bit_chunk(s, k.data(), v.data(), 16, 8, bytes);
  ASSERT_TRUE(decode_low_bit_chunk(s, bytes.data(), 16, 8, k_out.data(), v_out.data()));
  EXPECT_EQ(k_out, k);
  EXPECT_EQ(v_out, v);
  // 2 K groups x 8 values and 16 rows x 1 V group, (scale, min) each; 16 rows x 8 values x 2 bits, twice.
  EXPECT_EQ(bytes.size(), 2u * 8 * 4 + 16 * 1 * 4 + 2 * 16 * 8 * 2 / 8);
}

// 3-bit codes straddle bytes: eight codes 0..7 of one V row are the bits of 0 | 1 << 3 | 2 << 6 | ... | 7 << 21,
// least significant byte first (docs/store.md).
TEST(LowBitKv, ThreeBitCodesArePackedAsDocumented) {
  const LowBitSpec s{3, 8, 0};
  std::vector<float> k(8, 1.0f), v{0, 1, 2, 3, 4, 5, 6, 7}, k_out(8), v_out(8);
  std::vector<uint8_t> bytes;
  encode_low_bit_chunk(s, k.data(), v.data(), 1, 8, bytes);
  // K: 8 channels x (scale, min); V: 1 group x (scale, min); then 3 code bytes for K and 3 for V.
  ASSERT_EQ(bytes.size(), 8u * 4 + 4 + 3 + 3);
  EXPECT_EQ(std::vector<uint8_t>(bytes.end() - 3, bytes.end()), (std::vector<uint8_t>{0x88, 0xc6, 0xfa}));
  ASSERT_TRUE(decode_low_bit_chunk(s, bytes.data(), 1, 8, k_out.data(), v_out.data()));
  EXPECT_EQ(v_out, v);
  EXPECT_EQ(k_out, k);
}

TEST(LowBitKv, RefusesWhatItCannotEncode) {
  const LowBitSpec s{4, 4, 0};
  std::vector<float> k(8, 1.0f), v(8, 1.0f);
  std::vector<uint8_t> bytes;
  v[5] = NAN;
  EXPECT_NE(error_of([&] { encode_low_bit_chunk(s, k.data(), v.data(), 2, 4, bytes); })
                .find("v of row 1, value 1 is nan"),
            std::string::npos);
  v[5] = 1e6f;
  EXPECT_NE(error_of([&] { encode_low_bit_chunk(s, k.data(), v.data(), 2, 4, bytes); }).find("within f16's range"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_low_bit_spec({5, 32, 0}, 64, "x"); }).find("x: 5 bits; low-bit KV has 4, 3 or 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_low_bit_spec({3, 4, 0}, 64, "x"); }).find("group size 4 must be a multiple of 8 for 3 bits"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_low_bit_spec({4, 48, 0}, 64, "x"); }).find("group size 48 must be 4..4096 and divide the head dimension 64"),
            std::string::npos);
  // A damaged scale decodes to an error, not to values.
  encode_low_bit_chunk(s, k.data(), k.data(), 2, 4, bytes);
  bytes[0] = 0x00;
  bytes[1] = 0x7e;  // the first K scale: an f16 NaN
  std::vector<float> out(8);
  EXPECT_FALSE(decode_low_bit_chunk(s, bytes.data(), 2, 4, out.data(), out.data()));
}

}  // namespace
}  // namespace kvf
