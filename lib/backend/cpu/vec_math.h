// Vectorised float kernels for the CPU backend's hot loops (softmax exp, silu). AVX-512 when the build targets
// it, portable scalar code otherwise; both accurate to a few ulp of float.
#pragma once
#include <cmath>
#include <cstdint>
#if defined(__AVX512F__)
#include "backend/cpu/exp_avx512.h"
#endif

// GCC 12 reports the _mm512_undefined_ps() placeholders inside its own intrinsics as maybe-uninitialized once
// they are inlined here (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {

// x[i] = exp(x[i] - shift); returns the sum of the results.
inline float exp_shift_sum(float* x, int64_t n, float shift) {
  int64_t i = 0;
  float sum = 0.0f;
#if defined(__AVX512F__)
  __m512 acc = _mm512_setzero_ps();
  const __m512 s = _mm512_set1_ps(shift);
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
    _mm512_storeu_ps(x + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s));
    _mm512_mask_storeu_ps(x + i, m, e);
    acc = _mm512_add_ps(acc, _mm512_maskz_mov_ps(m, e));
    i = n;
  }
  sum = _mm512_reduce_add_ps(acc);
#endif
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    sum += x[i];
  }
  return sum;
}

// Sum of x[i]^2 accumulated in double (a row norm must not depend on the row's length or order of magnitude).
inline double sum_squares(const float* x, int64_t n) {
  int64_t i = 0;
  double sum = 0.0;
#if defined(__AVX512F__)
  __m512d acc_lo = _mm512_setzero_pd(), acc_hi = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    acc_lo = _mm512_fmadd_pd(lo, lo, acc_lo);
    acc_hi = _mm512_fmadd_pd(hi, hi, acc_hi);
  }
  sum = _mm512_reduce_add_pd(_mm512_add_pd(acc_lo, acc_hi));
#endif
  for (; i < n; ++i) sum += (double)x[i] * x[i];
  return sum;
}

// out[i] = silu(gate[i]) * up[i]
inline void swiglu_row(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 one = _mm512_set1_ps(1.0f);
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 sig = _mm512_div_ps(one, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_mul_ps(g, sig), _mm512_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace kvf::cpu

#pragma GCC diagnostic pop
