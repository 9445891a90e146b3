// exp(x) for 16 float lanes with AVX-512F. Included by vec_math.h where the build targets AVX-512, and by files
// that compile their own code for it (KVF_ISA_BEGIN, core/isa_target.h) after the portable headers.
#pragma once
#include <immintrin.h>

// GCC 12 reports the _mm512_undefined_ps() placeholders inside its own intrinsics as maybe-uninitialized once
// they are inlined here (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {

// exp(x) for 16 lanes: 2^(x log2 e) split into 2^n * 2^f with a degree-6 polynomial for 2^f, f in [-0.5, 0.5].
inline __m512 exp_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)), _mm512_set1_ps(-87.3365447504f));
  const __m512 y = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // f = x - n ln2 in two steps (Cody-Waite) keeps the reduction exact enough.
  __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  f = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), f);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(f, f), _mm512_add_ps(f, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

}  // namespace kvf::cpu

#pragma GCC diagnostic pop
