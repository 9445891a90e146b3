// Integer dot products of 16-bit activation rows with block-quantized weight rows on CPUs with AVX2 but no
// AVX-512 VNNI (compiled for AVX2, F16C and FMA; int_dot.h says what they compute): a unit of 32 weights is two
// vpmaddwd (16 values each) against the activations, their pair sums added in 32-bit integers (exact) before one
// conversion to float. The formats' walk: int_dot_formats.inc.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "core/ggml_types.h"  // q4k_scale_min, for int_dot_formats.inc
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,f16c,fma")
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/widen_avx2.h"

namespace kvf::cpu {
namespace {

// Running sums of one weight row against R activation rows (from row0 of x), in two accumulator slots S that
// consecutive units alternate between, so that their additions do not wait for each other.
template <int R>
class RowSums {
 public:
  RowSums(const Int16Rows& x, int64_t row0) : x_(x), row0_(row0) {
    for (int r = 0; r < R; ++r)
      for (int slot = 0; slot < 2; ++slot) {
        acc_[slot][r] = _mm256_setzero_ps();
        off_[slot][r] = 0;
      }
  }

  // s * w
  template <int S>
  void unit(const Widened& w, int64_t e, float s) {
    for (int r = 0; r < R; ++r) {
      const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(w.lo, q(r, e)), _mm256_madd_epi16(w.hi, q(r, e + 16)));
      acc_[S][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(s * x_.d[(size_t)block(r, e)]), acc_[S][r]);
    }
  }

  // s * w + c
  template <int S>
  void unit_with_min(const Widened& w, int64_t e, float s, float c) {
    unit<S>(w, e, s);
    for (int r = 0; r < R; ++r) off_[S][r] += c * x_.sum32[(size_t)block(r, e)];
  }

  // s0 * w for the first 16 values, s1 * w for the last 16.
  template <int S>
  void unit_in_halves(const Widened& w, int64_t e, float s0, float s1) {
    for (int r = 0; r < R; ++r) {
      const float d = x_.d[(size_t)block(r, e)];
      acc_[S][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(w.lo, q(r, e))), _mm256_set1_ps(s0 * d),
                                   acc_[S][r]);
      acc_[S][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(w.hi, q(r, e + 16))), _mm256_set1_ps(s1 * d),
                                   acc_[S][r]);
    }
  }

  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < R; ++r) {
      const __m256 v = _mm256_add_ps(acc_[0][r], acc_[1][r]);
      const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
      const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
      y[r * ldy] = _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t))) + (off_[0][r] + off_[1][r]);
    }
  }

 private:
  int64_t block(int r, int64_t e) const { return (row0_ + r) * (x_.k / 32) + e / 32; }
  __m256i q(int r, int64_t e) const { return _mm256_loadu_si256((const __m256i*)(x_.q.data() + (row0_ + r) * x_.k + e)); }

  const Int16Rows& x_;
  int64_t row0_;
  __m256 acc_[2][R];
  float off_[2][R];
};

#include "backend/cpu/int_dot_formats.inc"

}  // namespace

void int_dot_rows_avx2(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                       int64_t ldy) {
  // Up to 4 activation rows per pass: their 8 accumulators and a unit's temporaries fit the 16 registers.
  for (int64_t r0 = 0; r0 < x.rows; r0 += 4) {
    switch (std::min<int64_t>(4, x.rows - r0)) {
      case 1: rows<RowSums, 1>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 2: rows<RowSums, 2>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 3: rows<RowSums, 3>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      default: rows<RowSums, 4>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
    }
  }
}

}  // namespace kvf::cpu

KVF_ISA_END
