// Small vector helpers shared by the kernels compiled for x86 instruction-set extensions. Include only after
// KVF_ISA_BEGIN (core/isa_target.h) of a set with what each helper a file uses needs (F16C for f16_at, AVX2 for
// load_first and lane, AVX-512F for hsum of __m512).
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

// Sum of the 8 lanes, in a fixed order.
inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// The first n (<= 8) floats at p, zeros after them: no read past p[n - 1].
inline __m256 load_first(const float* p, int n) {
  if (n == 8) return _mm256_loadu_ps(p);
  return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// Lane j of v in every lane.
inline __m256 lane(__m256 v, int j) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(j)); }

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
