// Small vector helpers shared by the kernels compiled for x86 instruction-set extensions. Include only after
// KVF_ISA_BEGIN (core/isa_target.h) of a set with what each helper a file uses needs (F16C for f16_at, AVX-512F for
// hsum of __m512).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace kvf::cpu {

// The f16 value stored (little-endian) at p, as f32.
inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Sum of the 16 lanes, in a fixed order. (The zero-masked extracts compile to the same instructions as the plain
// ones, whose GCC 12 headers trip -Wmaybe-uninitialized.)
inline float hsum(__m512 v) {
  const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 0));
  const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 1));
  const __m256 h = _mm256_add_ps(lo, hi);
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

}  // namespace kvf::cpu
