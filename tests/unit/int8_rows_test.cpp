// int8 groups with f16 scales: the error bound of core/int8_rows.h over several magnitudes (f16-subnormal scales
// included), all-zero groups, the choice of scale, and refusal of non-finite input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/int8_rows.h"
#include "support/test_values.h"

namespace kvf {
namespace {

using test::error_of;
using ::testing::HasSubstr;

struct Quantized {
  std::vector<int8_t> q;
  std::vector<uint16_t> scales;
  std::vector<float> back;
};

Quantized round_trip(const std::vector<float>& x, int64_t width) {
  const int64_t groups = (int64_t)x.size() / width;
  Quantized r{std::vector<int8_t>(x.size()), std::vector<uint16_t>(groups), std::vector<float>(x.size())};
  quantize_int8_groups(x.data(), groups, width, r.q.data(), r.scales.data());
  dequantize_int8_groups(r.q.data(), r.scales.data(), groups, width, r.back.data());
  return r;
}

// Checks every promise of the header for each group of x.
void expect_bounds(const std::vector<float>& x, int64_t width, const Quantized& r) {
  for (size_t g = 0; g < r.scales.size(); ++g) {
    const float* xg = x.data() + g * width;
    float m = 0;
    size_t arg = 0;
    for (int64_t i = 0; i < width; ++i) {
      if (std::abs(xg[i]) > m) {
        m = std::abs(xg[i]);
        arg = g * width + i;
      }
    }
    const uint16_t h = r.scales[g];
    const float s = f16_to_f32(h);
    ASSERT_TRUE(std::isfinite(s) && s >= 0) << "group " << g;
    ASSERT_EQ(f32_to_f16(s), h) << "group " << g;  // a plain f16 value, no NaN payloads
    if (m == 0) {
      ASSERT_EQ(h, 0u) << "group " << g;
    } else {
      // The smallest f16 >= m / 127: products of an f16 and 127 are exact in double.
      ASSERT_GE((double)s * 127, (double)m) << "group " << g;
      ASSERT_LT((double)f16_to_f32((uint16_t)(h - 1)) * 127, (double)m) << "group " << g;
    }
    for (int64_t i = 0; i < width; ++i) {
      const size_t at = g * width + i;
      ASSERT_LE(std::abs((int)r.q[at]), 127) << "element " << at;
      ASSERT_EQ(r.back[at], (float)r.q[at] * s) << "element " << at;
      ASSERT_LE(std::abs((double)x[at] - r.back[at]), s / 2.0 + 1e-6 * m)
          << "element " << at << ": " << x[at] << " came back as " << r.back[at] << " (scale " << s << ")";
    }
    if (s >= 0x1p-14f) {  // a normal f16 scale is within 2^-10 of m / 127: the largest element reaches the end
      const int q = std::abs((int)r.q[arg]);
      ASSERT_TRUE(q == 127 || q == 126) << "group " << g << ": max |x| " << m << " became " << (int)r.q[arg];
      ASSERT_EQ((r.q[arg] > 0), (x[arg] > 0)) << "group " << g;
    }
  }
}

TEST(Int8Rows, RoundTripWithinHalfAScaleAtEveryMagnitude) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t width = 64;
  for (int e : {-40, -30, -24, -20, -14, -8, 0, 4, 12, 20}) {  // -40..-20: scales down in f16 subnormals
    std::vector<float> x;
    for (int g = 0; g < 50; ++g)
      for (int64_t i = 0; i < width; ++i) x.push_back(std::ldexp(normal(rng), e));
    const Quantized r = round_trip(x, width);
    SCOPED_TRACE("magnitude 2^" + std::to_string(e));
    expect_bounds(x, width, r);
  }
}

TEST(Int8Rows, MixedGroupsZerosAndOddWidths) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 10);
  for (int64_t width : {1, 3, 8, 80}) {
    std::vector<float> x;
    for (int g = 0; g < 40; ++g) {
      const int e = exponent(rng);
      for (int64_t i = 0; i < width; ++i) x.push_back(g % 7 == 3 ? 0.0f : std::ldexp(normal(rng), e));
    }
    x[0] = -0.0f;  // a negative zero alone in its group is still zero
    const Quantized r = round_trip(x, width);
    SCOPED_TRACE("width " + std::to_string(width));
    expect_bounds(x, width, r);
    for (int g = 3; g < 40; g += 7) {
      EXPECT_EQ(r.scales[g], 0u) << "group " << g;
      for (int64_t i = 0; i < width; ++i) EXPECT_EQ(r.back[g * width + i], 0.0f);
    }
  }
}

TEST(Int8Rows, ScaleStepsUpWhereF16RoundsDown) {
  // 127 * (1 + 2^-11) / 127 lies halfway between 1 and the next f16 and rounds (to even) down to 1.0; a scale of
  // 1.0 would map the element to 127.0156 > 127, so the scale must be the next f16 up.
  const float m = 127.0f * (1.0f + 0x1p-11f);
  const std::vector<float> x = {m, -m / 2, 0.25f, 0};
  const Quantized r = round_trip(x, 4);
  EXPECT_EQ(f16_to_f32(r.scales[0]), 1.0f + 0x1p-10f);
  EXPECT_EQ(r.q[0], 127);
  expect_bounds(x, 4, r);
  // Exactly 127 * an f16 takes that f16 itself.
  const Quantized exact = round_trip({127.0f * 0.375f, 1.0f}, 2);
  EXPECT_EQ(f16_to_f32(exact.scales[0]), 0.375f);
  EXPECT_EQ(exact.q[0], 127);
}

TEST(Int8Rows, HalfwayRoundsToEven) {
  // scale 1.0 (max 127): 2.5 -> 2, 3.5 -> 4, -2.5 -> -2.
  const Quantized r = round_trip({127.0f, 2.5f, 3.5f, -2.5f}, 4);
  ASSERT_EQ(f16_to_f32(r.scales[0]), 1.0f);
  EXPECT_EQ(r.q, (std::vector<int8_t>{127, 2, 4, -2}));
}

TEST(Int8Rows, NonFiniteAndHugeInputsAreRefusedNamingTheGroup) {
  std::vector<float> x(4 * 8, 1.0f);
  std::vector<int8_t> q(x.size());
  std::vector<uint16_t> scales(4);
  x[2 * 8 + 5] = std::numeric_limits<float>::quiet_NaN();
  std::string error = error_of([&] { quantize_int8_groups(x.data(), 4, 8, q.data(), scales.data()); });
  EXPECT_THAT(error, HasSubstr("group 2 element 5"));
  EXPECT_THAT(error, HasSubstr("nan"));
  x[2 * 8 + 5] = 1.0f;
  x[3 * 8] = -std::numeric_limits<float>::infinity();
  error = error_of([&] { quantize_int8_groups(x.data(), 4, 8, q.data(), scales.data()); });
  EXPECT_THAT(error, HasSubstr("group 3 element 0 is -inf"));
  x[3 * 8] = 9e6f;  // 9e6 / 127 > 65504, the largest f16
  EXPECT_THAT(error_of([&] { quantize_int8_groups(x.data(), 4, 8, q.data(), scales.data()); }),
              HasSubstr("group 3 has max |x| 9e+06"));
  x[3 * 8] = 8e6f;  // fits
  quantize_int8_groups(x.data(), 4, 8, q.data(), scales.data());
  EXPECT_TRUE(std::isfinite(f16_to_f32(scales[3])));
}

}  // namespace
}  // namespace kvf
