// Integer dot products of 16-bit activation rows with block-quantized weight rows on CPUs with AVX2 but no
// AVX-512 VNNI (compiled for AVX2, F16C and FMA; int_dot.h says what they compute): a unit of 32 weights is two
// vpmaddwd (16 values each) against the activations, their pair sums added in 32-bit integers (exact) before one
// conversion to float. The formats' walk: int_dot_formats.inc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/unit_groups.h"
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
  RowSums(const Int16Rows& x, int64_t row0) {
    for (int r = 0; r < R; ++r) {
      q_[r] = x.q.data() + (row0 + r) * x.k;
      d_[r] = x.d.data() + (row0 + r) * (x.k / 32);
      sum32_[r] = x.sum32.data() + (row0 + r) * (x.k / 32);
      acc_[0][r] = acc_[1][r] = mins_[r] = _mm256_setzero_ps();
    }
  }

  // Each row's scale per unit (and half) of the group: the weights' times the activation block's. The mins' part
  // of the whole group is added here.
  template <class Kind>
  void group(int64_t e, int n, const GroupScales& g) {
    for (int r = 0; r < R; ++r) {
      const __m256 d = load_first(d_[r] + e / 32, n);
      scale0_[r] = _mm256_mul_ps(g.s0, d);
      if constexpr (Kind::kHalves) scale1_[r] = _mm256_mul_ps(g.s1, d);
      if constexpr (Kind::kMin) mins_[r] = _mm256_fmadd_ps(g.c, load_first(sum32_[r] + e / 32, n), mins_[r]);
    }
  }

  template <int S, class Kind>
  void unit(const Widened& w, int64_t e, int j) {
    for (int r = 0; r < R; ++r) {
      const __m256i lo = _mm256_madd_epi16(w.lo, q(r, e)), hi = _mm256_madd_epi16(w.hi, q(r, e + 16));
      if constexpr (Kind::kHalves) {
        acc_[S][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), lane(scale0_[r], j), acc_[S][r]);
        acc_[S][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), lane(scale1_[r], j), acc_[S][r]);
      } else {
        acc_[S][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), lane(scale0_[r], j), acc_[S][r]);
      }
    }
  }

  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < R; ++r) y[r * ldy] = hsum(_mm256_add_ps(_mm256_add_ps(acc_[0][r], acc_[1][r]), mins_[r]));
  }

 private:
  __m256i q(int r, int64_t e) const { return _mm256_loadu_si256((const __m256i*)(q_[r] + e)); }

  const int16_t* q_[R];
  const float* d_[R];
  const float* sum32_[R];
  __m256 acc_[2][R];
  __m256 mins_[R];
  __m256 scale0_[R];  // each row's scale of the group's units (and of their second halves)
  __m256 scale1_[R];
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
