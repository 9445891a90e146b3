// Symmetric int8 quantization in groups of `width` values, one f16 scale per group (the KV shards' int8 storage:
// one group = one row's one stored layer's one kv head, width = head_dim). Format: docs/store.md ("KV shards").
//
// For a group with m = max |x|:
//   scale = the smallest f16 value >= m / 127 (exactly 0 when m == 0)
//   q     = clamp(round-to-nearest-even(x / scale), -127, 127)   (all 0 when scale == 0)
//   x'    = q * scale                                              (exact in f32: 7 bits times 11 bits)
// Guarantee: |q| <= 127 and |x - x'| <= scale / 2, plus the rounding of x / scale (done in double: under 1e-13 of
// scale). Whenever scale is a normal f16 (m >= 127 * 2^-14, about 0.0078) it is below (m / 127) * (1 + 2^-10), so
// the error is under m / 253.7 and the largest element maps to +-127. Smaller groups get an f16-subnormal scale,
// coarser relative to m but still within scale / 2 (a group with m <= 2^-25 dequantizes to zeros).
#pragma once
#include <cstdint>

namespace kvf {

// x: groups * width floats; q: groups * width; scales_f16: groups (IEEE binary16 bits). Throws kvf::Error naming
// the group, the element and the value for a non-finite input, or a group whose scale would overflow f16
// (m > 65504 * 127).
void quantize_int8_groups(const float* x, int64_t groups, int64_t width, int8_t* q, uint16_t* scales_f16);

// The inverse: x = q * scale, groups * width floats. Scales are taken as they are (readers check them first).
void dequantize_int8_groups(const int8_t* q, const uint16_t* scales_f16, int64_t groups, int64_t width, float* x);

}  // namespace kvf
