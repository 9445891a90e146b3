// An 8 x 8 transpose of 32-bit words in AVX registers, shared by the kernels that pack AVX2 panels (gemm_avx2.cpp:
// f32 weights; gemm_int16_avx2.cpp: pairs of 16-bit weights). Include only after KVF_ISA_BEGIN with AVX2; the
// anonymous namespace gives each its own copy, shared with no portable code.
#pragma once
#include <immintrin.h>

namespace kvf::cpu {
namespace {

// Rows r[0..8) of 8 words -> their transpose, in place.
inline void transpose_8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + j] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + j + 2] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  // u[0..4) hold columns (0|4), (2|6), (1|5), (3|7) of rows 0-3 in their 128-bit halves; u[4..8) those of rows 4-7.
  const int order[4] = {0, 2, 1, 3};
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[order[i]], u[order[i] + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[order[i]], u[order[i] + 4], 0x31);
  }
}

}  // namespace
}  // namespace kvf::cpu
