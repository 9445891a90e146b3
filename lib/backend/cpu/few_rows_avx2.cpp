// Dot products of a few activation rows with a few f32 weight rows (compiled for AVX2 and FMA): the path for
// decoding and other short passes, where each weight row is dequantized once and read by every activation row
// while it is in L1. Four weight rows at a time give the FMA units independent chains to work on.
#include <immintrin.h>

#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,fma")

namespace kvf::cpu {
namespace {

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// y[j] = x . w[j] for j < W (weight rows ldw floats apart); k a multiple of 8.
template <int W>
void dots(const float* x, const float* w, int64_t ldw, int64_t k, float* y) {
  __m256 acc[W][2];
  for (int j = 0; j < W; ++j) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    for (int j = 0; j < W; ++j) {
      acc[j][0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + j * ldw + i), acc[j][0]);
      acc[j][1] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + j * ldw + i + 8), acc[j][1]);
    }
  }
  if (i < k) {
    const __m256 x0 = _mm256_loadu_ps(x + i);
    for (int j = 0; j < W; ++j) acc[j][0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + j * ldw + i), acc[j][0]);
  }
  for (int j = 0; j < W; ++j) y[j] = hsum(_mm256_add_ps(acc[j][0], acc[j][1]));
}

}  // namespace

void dot_rows_avx2(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw, int wrows, int64_t k, float* y,
                   int64_t ldy) {
  for (int r = 0; r < rows; ++r) {
    float* out = y + r * ldy;
    int j = 0;
    for (; j + 4 <= wrows; j += 4) dots<4>(x + r * ldx, w + j * ldw, ldw, k, out + j);
    for (; j < wrows; ++j) dots<1>(x + r * ldx, w + j * ldw, ldw, k, out + j);
  }
}

}  // namespace kvf::cpu

KVF_ISA_END
