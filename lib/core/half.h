// IEEE half and bfloat16 conversions (bit-exact, round-to-nearest-even on the way down).
#pragma once
#include <cstdint>
#include <cstring>

namespace kvf {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));  // inf/nan
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                                      // overflow
  if (absx < 0x38800000u) {  // subnormal or zero in half
    if (absx < 0x33000000u) return (uint16_t)sign;
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t half_m = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) ++half_m;
    return (uint16_t)(sign | half_m);
  }
  uint32_t h = ((absx >> 13) - ((127 - 15) << 10));
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

// The f16 value nearest x on the given side (x finite and within f16's range).
inline uint16_t f16_at_most(float x) {
  uint16_t h = f32_to_f16(x);
  if (f16_to_f32(h) <= x) return h;
  // One step toward -inf: for a positive value the bits go down, for a negative one (or -0) they go up.
  return (h & 0x8000) ? (uint16_t)(h + 1) : (h == 0 ? (uint16_t)0x8001 : (uint16_t)(h - 1));
}
inline uint16_t f16_at_least(float x) {
  uint16_t h = f32_to_f16(x);
  if (f16_to_f32(h) >= x) return h;
  return (h & 0x8000) ? (h == 0x8000 ? (uint16_t)0x0001 : (uint16_t)(h - 1)) : (uint16_t)(h + 1);
}

inline float bf16_to_f32(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

}  // namespace kvf
