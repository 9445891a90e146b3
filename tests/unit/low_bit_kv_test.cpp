// Low-bit KV (core/low_bit_kv.h): every value within half its group's scale, the kept rows exactly their f16
// rounding, constant groups exact, the byte count, and refusals. The rotated codec (rotate, nf V levels) against the
// study's independent round trip (compress/kv_quantizers.h: hadamard for K, hnf for V).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compress/kv_quantizers.h"
#include "core/hadamard.h"
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

// The store's rotated codec decodes, bit for bit, to what the study's codecs give on their own: K as
// `hadamard:B:G` (rotate, uniform levels, rotate back), V as `hnf:B:G` (nf levels) or `hadamard:B:G` (uniform),
// both with the same keep_first. Kept rows differ by design: the store keeps them in f16 as given, the study in f16
// of the rotated row, so they are checked against their own f16 rounding.
TEST(LowBitKv, RotatedCodecEqualsTheStudysQuantizers) {
  constexpr int64_t kHeadDim = 64, kWidth = 3 * kHeadDim;
  const auto bits_of = [](const std::vector<float>& x) {
    std::vector<uint32_t> out(x.size());
    if (!x.empty()) std::memcpy(out.data(), x.data(), x.size() * sizeof(float));  // (a null pointer otherwise)
    return out;
  };
  for (const int bits : {4, 3, 2})
    for (const int group : {32, 64})
      for (const int keep : {0, 3})
        for (const LowBitLevels levels : {LowBitLevels::NormalFloat, LowBitLevels::Uniform})
          for (const int64_t rows : {1, 45}) {
            SCOPED_TRACE(::testing::Message() << bits << " bits, group " << group << ", keep " << keep << ", "
                                              << low_bit_levels_name(levels) << ", " << rows << " rows");
            const LowBitSpec s{bits, group, keep, true, levels, (int)kHeadDim};
            const Encoded e = round_trip(s, rows, kWidth, (uint32_t)(bits * 1000 + group * 10 + keep + rows));
            const std::string tail = ":" + std::to_string(bits) + ":" + std::to_string(group) +
                                     (keep ? ":keep=" + std::to_string(keep) : "");
            const KvQuantized k_want = quantize_kv_matrix(parse_kv_quantizer("hadamard" + tail), KvMatrix::Key,
                                                          e.k.data(), rows, kWidth, kHeadDim);
            const KvQuantized v_want = quantize_kv_matrix(
                parse_kv_quantizer((levels == LowBitLevels::NormalFloat ? "hnf" : "hadamard") + tail),
                KvMatrix::Value, e.v.data(), rows, kWidth, kHeadDim);
            const int64_t kept = std::min<int64_t>(keep, rows);
            std::vector<float> k_got(e.k_out.begin() + kept * kWidth, e.k_out.end());
            std::vector<float> v_got(e.v_out.begin() + kept * kWidth, e.v_out.end());
            EXPECT_EQ(bits_of(k_got), bits_of({k_want.values.begin() + kept * kWidth, k_want.values.end()}));
            EXPECT_EQ(bits_of(v_got), bits_of({v_want.values.begin() + kept * kWidth, v_want.values.end()}));
            for (int64_t i = 0; i < kept * kWidth; ++i) {
              EXPECT_EQ(e.k_out[(size_t)i], f16_to_f32(f32_to_f16(e.k[(size_t)i])));
              EXPECT_EQ(e.v_out[(size_t)i], f16_to_f32(f32_to_f16(e.v[(size_t)i])));
            }
            // The bits the study counts, exactly: nf stores one f16 scale per V group, uniform a scale and minimum.
            EXPECT_EQ(8 * e.bytes.size(), k_want.bits + v_want.bits);
          }
}

// The rotation is orthonormal and its own inverse (up to f32 rounding), head by head; nf levels ascend, are
// symmetric, span [-1, 1], and a value halfway between two levels takes the lower.
TEST(LowBitKv, HadamardAndNfLevels) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(3 * 2 * 16);
  for (float& a : x) a = normal(rng);
  std::vector<float> y = x;
  hadamard_rows(y.data(), 3, 32, 16);
  for (int64_t h = 0; h < 6; ++h) {
    double before = 0, after = 0;
    for (int64_t c = 0; c < 16; ++c) before += x[(size_t)(h * 16 + c)] * x[(size_t)(h * 16 + c)];
    for (int64_t c = 0; c < 16; ++c) after += y[(size_t)(h * 16 + c)] * y[(size_t)(h * 16 + c)];
    EXPECT_NEAR(after, before, 1e-4 * before);
  }
  std::vector<float> e(16, 0.0f);
  e[0] = 1;
  hadamard_rows(e.data(), 1, 16, 16);  // the first column of H / 4: every entry 1/4
  for (const float a : e) EXPECT_FLOAT_EQ(a, 0.25f);
  inverse_hadamard_rows(y.data(), 3, 32, 16);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-5f);
  EXPECT_NE(error_of([&] { hadamard_rows(y.data(), 1, 24, 12); }).find("power-of-2 head dimension (12)"),
            std::string::npos);
  // The unrolled transform gives the bits of the plain butterfly loop the study's figures were computed with.
  for (const int64_t n : {4, 8, 16, 64, 128, 256}) {
    std::vector<float> a(2 * (size_t)n), b;
    for (float& z : a) z = normal(rng);
    b = a;
    hadamard_rows(a.data(), 1, 2 * n, n);
    for (int64_t h = 0; h < 2; ++h) {
      float* w = b.data() + h * n;
      for (int64_t len = 1; len < n; len <<= 1)
        for (int64_t i = 0; i < n; i += len << 1)
          for (int64_t j = i; j < i + len; ++j) {
            const float p = w[j], q = w[j + len];
            w[j] = p + q;
            w[j + len] = p - q;
          }
      for (int64_t c = 0; c < n; ++c) w[c] *= 1.0f / std::sqrt((float)n);
    }
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << n;
  }
  for (const int bits : {2, 3, 4}) {
    const std::vector<float>& levels = normal_float_levels_cached(bits);
    ASSERT_EQ(levels.size(), (size_t)1 << bits);
    EXPECT_EQ(levels.front(), -1.0f);
    EXPECT_EQ(levels.back(), 1.0f);
    for (size_t i = 0; i + 1 < levels.size(); ++i) EXPECT_LT(levels[i], levels[i + 1]);
    for (size_t i = 0; i < levels.size(); ++i) EXPECT_NEAR(levels[i], -levels[levels.size() - 1 - i], 1e-6f);
    const float mid = 0.5f * (levels[1] + levels[2]);  // a tie where f32 makes it one; else the nearer level
    EXPECT_EQ(nearest_level(levels, mid), mid - levels[1] <= levels[2] - mid ? 1 : 2);
    EXPECT_EQ(nearest_level(levels, levels[1]), 1);
    EXPECT_EQ(nearest_level(levels, 5.0f), (int)levels.size() - 1);
    EXPECT_EQ(nearest_level(levels, -5.0f), 0);
  }
}

// decode_low_bit_rows gives, for whole heads of any rows, exactly the rows decode_low_bit_chunk gives; with the
// rotation it refuses values that are not whole heads.
TEST(LowBitKv, RotatedRowsDecodeAsTheWholeChunk) {
  constexpr int64_t kHeadDim = 32, kLayerWidth = 2 * kHeadDim, kWidth = 3 * kLayerWidth, kRows = 37;
  for (const int bits : {4, 3, 2}) {
    const LowBitSpec s{bits, 16, 2, true, LowBitLevels::NormalFloat, (int)kHeadDim};
    const Encoded e = round_trip(s, kRows, kWidth, (uint32_t)bits);
    const std::vector<int32_t> picked = {0, 1, 2, 5, 17, 18, 36};
    for (int64_t l = 0; l < 3; ++l) {
      std::vector<float> k((size_t)(picked.size() * kLayerWidth)), v(k.size());
      ASSERT_TRUE(decode_low_bit_rows(s, e.bytes.data(), kRows, kWidth, l * kLayerWidth, kLayerWidth, picked.data(),
                                      (int64_t)picked.size(), k.data(), v.data()));
      for (size_t i = 0; i < picked.size(); ++i)
        for (int64_t c = 0; c < kLayerWidth; ++c) {
          const size_t at = (size_t)(picked[i] * kWidth + l * kLayerWidth + c);
          ASSERT_EQ(k[i * kLayerWidth + (size_t)c], e.k_out[at]) << "layer " << l << " row " << picked[i];
          ASSERT_EQ(v[i * kLayerWidth + (size_t)c], e.v_out[at]) << "layer " << l << " row " << picked[i];
        }
    }
    std::vector<float> out(kHeadDim);
    const int32_t row = 3;
    EXPECT_NE(error_of([&] {
                decode_low_bit_rows(s, e.bytes.data(), kRows, kWidth, s.group, s.group, &row, 1, out.data(),
                                    out.data());
              }).find("are not whole heads of 32, which the rotation needs"),
              std::string::npos);
  }
}

TEST(LowBitKv, RotatedCodecRefusalsAndBytes) {
  EXPECT_NE(error_of([&] { check_low_bit_spec({4, 16, 0, true, LowBitLevels::Uniform, 48}, 48, "x"); })
                .find("x: the Hadamard rotation needs a head dimension that is a power of 2, not 48"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_low_bit_spec({4, 16, 0, true, LowBitLevels::Uniform, 32}, 64, "x"); })
                .find("the rotation's head dimension 32 is not the KV's 64"),
            std::string::npos);
  check_low_bit_spec({4, 16, 0, false, LowBitLevels::NormalFloat, 0}, 48, "x");  // nf alone needs no power of 2
  // nf: one f16 scale per V group instead of scale and minimum; K unchanged.
  const LowBitSpec uniform{3, 32, 2}, nf{3, 32, 2, true, LowBitLevels::NormalFloat, 64};
  EXPECT_EQ(low_bit_chunk_bytes(uniform, 40, 128) - low_bit_chunk_bytes(nf, 40, 128), 40u * (128 / 32) * 2);
  // An all-zero V group decodes to +0 (scale 0), as a constant K group to itself.
  std::vector<float> k(4 * 64, 1.5f), v(4 * 64, 0.0f), k_out(k.size()), v_out(v.size());
  std::vector<uint8_t> bytes;
  encode_low_bit_chunk(nf, k.data(), v.data(), 4, 64, bytes);
  ASSERT_TRUE(decode_low_bit_chunk(nf, bytes.data(), 4, 64, k_out.data(), v_out.data()));
  for (const float x : v_out) EXPECT_FALSE(std::signbit(x) || x != 0.0f);
  for (size_t i = 2 * 64; i < k.size(); ++i) EXPECT_NEAR(k_out[i], 1.5f, 1e-5f);
}

}  // namespace
}  // namespace kvf
