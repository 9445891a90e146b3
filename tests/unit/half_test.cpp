#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "core/half_arrays.h"

namespace kvf {
namespace {

// Every one of the 65536 half bit patterns survives f16 -> f32 -> f16 exactly (NaNs stay NaN).
TEST(Half, F16RoundTripsEveryBitPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32((uint16_t)h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), h) << "bits " << h;
  }
}

TEST(Half, F16KnownValuesAndRounding) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties to even gives 1.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);  // overflow to inf
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  uint32_t bits = 0x3f808000u;  // exactly halfway between two bf16 values, lower one even
  float f;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f32_to_bf16(f), 0x3f80);
  bits = 0x3f818000u;  // halfway, lower one odd: rounds up
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f32_to_bf16(f), 0x3f82);
}

}  // namespace
// all_finite finds one infinity or NaN wherever it lies (vector body or tail) and passes the extremes of the
// finite range, subnormals included.
TEST(HalfArrays, AllFiniteFindsOneBadValueAnywhere) {
  const float bad[] = {INFINITY, -INFINITY, NAN, -NAN};
  const float good[] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::denorm_min(), -0.0f};
  for (const size_t n : {1, 7, 16, 33, 100}) {
    std::vector<float> x(n, 1.5f);
    for (size_t i = 0; i < n; ++i) x[i] = good[i % 4];
    EXPECT_TRUE(kvf::all_finite(x.data(), n)) << n;
    for (size_t at = 0; at < n; ++at)
      for (const float b : bad) {
        std::vector<float> y = x;
        y[at] = b;
        ASSERT_FALSE(kvf::all_finite(y.data(), n)) << n << " " << at << " " << b;
      }
  }
}

}  // namespace kvf

// The array conversions (vectorised where the CPU allows) give the per-element results for all 2^16 inputs, at
// every alignment and tail length: NaN stays NaN, everything else bit for bit.
TEST(HalfArrays, EqualThePerElementConversionsForEveryValue) {
  std::vector<uint16_t> all(65536 + 3);
  for (size_t i = 0; i < all.size(); ++i) all[i] = (uint16_t)i;
  for (const bool bf16 : {false, true})
    for (size_t start : {0, 1, 3}) {
      const size_t n = all.size() - start;
      std::vector<float> out(n);
      bf16 ? kvf::bf16_to_f32_array(all.data() + start, n, out.data())
           : kvf::f16_to_f32_array(all.data() + start, n, out.data());
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = all[start + i];
        const float want = bf16 ? kvf::bf16_to_f32(h) : kvf::f16_to_f32(h);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(out[i])) << std::hex << h;
        } else {
          uint32_t a, b;
          std::memcpy(&a, &out[i], 4);
          std::memcpy(&b, &want, 4);
          ASSERT_EQ(a, b) << (bf16 ? "bf16 " : "f16 ") << std::hex << h;
        }
      }
    }
}
