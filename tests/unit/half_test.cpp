#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/half.h"

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
}  // namespace kvf
