#include "core/int8_rows.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/half.h"

namespace kvf {
namespace {

constexpr uint16_t kF16Inf = 0x7c00;

// The smallest f16 s with s * 127 >= m (m > 0 finite), or kF16Inf when none is finite. f32_to_f16 rounds to
// nearest, so its answer may sit one ulp below; the products are exact in double (11 bits times 7 bits).
uint16_t scale_for(float m) {
  const auto covers = [m](uint16_t h) { return (double)f16_to_f32(h) * 127.0 >= (double)m; };
  uint16_t h = f32_to_f16(m / 127.0f);
  while (h < kF16Inf && !covers(h)) ++h;  // positive f16 bit patterns increase with their value
  while (h > 0 && covers((uint16_t)(h - 1))) --h;
  return h;
}

}  // namespace

void quantize_int8_groups(const float* x, int64_t groups, int64_t width, int8_t* q, uint16_t* scales_f16) {
  KVF_CHECK(groups >= 0 && width > 0, "int8 quantization: ", groups, " groups of width ", width);
  for (int64_t g = 0; g < groups; ++g) {
    const float* xg = x + g * width;
    int8_t* qg = q + g * width;
    float m = 0;
    for (int64_t i = 0; i < width; ++i) {
      KVF_CHECK(std::isfinite(xg[i]), "int8 quantization: group ", g, " element ", i, " is ", xg[i]);
      m = std::max(m, std::abs(xg[i]));
    }
    if (m == 0) {  // all zeros: scale 0, and nothing to divide
      scales_f16[g] = 0;
      for (int64_t i = 0; i < width; ++i) qg[i] = 0;
      continue;
    }
    const uint16_t h = scale_for(m);
    KVF_CHECK(h < kF16Inf, "int8 quantization: group ", g, " has max |x| ", m, ", beyond f16 scales (",
              65504.0 * 127, ")");
    scales_f16[g] = h;
    const double s = f16_to_f32(h);
    for (int64_t i = 0; i < width; ++i) {
      // std::nearbyint rounds half to even in the default rounding mode; the clamp only absorbs rounding noise.
      const double r = std::nearbyint((double)xg[i] / s);
      qg[i] = (int8_t)std::min(127.0, std::max(-127.0, r));
    }
  }
}

void dequantize_int8_groups(const int8_t* q, const uint16_t* scales_f16, int64_t groups, int64_t width, float* x) {
  KVF_CHECK(groups >= 0 && width > 0, "int8 dequantization: ", groups, " groups of width ", width);
  for (int64_t g = 0; g < groups; ++g) {
    const float s = f16_to_f32(scales_f16[g]);
    for (int64_t i = 0; i < width; ++i) x[g * width + i] = (float)q[g * width + i] * s;
  }
}

}  // namespace kvf
