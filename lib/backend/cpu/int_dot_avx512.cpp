// Integer dot products of 16-bit activation rows with block-quantized weight rows (compiled for AVX-512 VNNI, F16C and
// FMA; int_dot.h says what they compute): a unit of 32 weights is one vpdpwssd against the activations (|u * q| pair
// sums stay below 2^24). The formats' walk: int_dot_formats.inc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/unit_groups.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/widen_avx512.h"

// GCC 12 reports the placeholder inside _mm512_inserti64x4 as maybe-uninitialized (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {
namespace {

// Running sums of one weight row against R activation rows (from row0 of x). Units alternate between two
// accumulator slots S (fixed by their place in the row), so that consecutive units' additions do not wait for
// each other.
template <int R>
class RowSums {
 public:
  RowSums(const Int16Rows& x, int64_t row0) {
    for (int r = 0; r < R; ++r) {
      q_[r] = x.q.data() + (row0 + r) * x.k;
      d_[r] = x.d.data() + (row0 + r) * (x.k / 32);
      sum32_[r] = x.sum32.data() + (row0 + r) * (x.k / 32);
      acc_[0][r] = acc_[1][r] = _mm512_setzero_ps();
      mins_[r] = _mm256_setzero_ps();
    }
  }

  // Each row's scale per unit (and half) of the group, and the mins' part of the whole group, as the AVX2 kernels'
  // (row_totals_avx2.h).
  template <class Kind>
  void group(int64_t e, int n, const GroupScales& g) {
    for (int r = 0; r < R; ++r) {
      const __m256 d = load_first(d_[r] + e / 32, n);
      const __m256 s0 = _mm256_mul_ps(g.s0, d);
      // Lanes 0-7 and 8-15 both the group's scales (the second halves' in 8-15 where they differ), so that one
      // permute puts unit j's scale of each half of 16 values over the 8 lanes that hold that half's sums.
      const __m256 s1 = Kind::kHalves ? _mm256_mul_ps(g.s1, d) : s0;
      scales_[r] = _mm512_castpd_ps(
          _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(s0)), _mm256_castps_pd(s1), 1));
      if constexpr (Kind::kMin) mins_[r] = _mm256_fmadd_ps(g.c, load_first(sum32_[r] + e / 32, n), mins_[r]);
    }
  }

  // The 32 weights at value e of the row, widened to 16 bits: one vpdpwssd, lanes 0-7 the first 16 values.
  template <int S, class Kind>
  void unit(__m512i w, int64_t e, int j) {
    const __m512i second_halves = _mm512_set_epi32(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i at = _mm512_add_epi32(_mm512_set1_epi32(j), second_halves);  // lane j, then lane j + 8
    for (int r = 0; r < R; ++r) {
      acc_[S][r] = _mm512_fmadd_ps(products(w, r, e), _mm512_permutexvar_ps(at, scales_[r]), acc_[S][r]);
    }
  }

  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < R; ++r) y[r * ldy] = hsum(_mm512_add_ps(acc_[0][r], acc_[1][r])) + hsum(mins_[r]);
  }

 private:
  // Pairwise sums w * q of the unit (widened to 16 bits) against row r's activations, as 16 floats.
  __m512 products(__m512i w, int r, int64_t e) const {
    const __m512i q = _mm512_loadu_si512(q_[r] + e);
    return _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_dpwssd_epi32(_mm512_setzero_si512(), w, q));
  }

  const int16_t* q_[R];
  const float* d_[R];
  const float* sum32_[R];
  __m512 acc_[2][R];
  __m256 mins_[R];
  __m512 scales_[R];  // each row's scales of the group's units: lanes 0-7 first halves, 8-15 second halves
};

#include "backend/cpu/int_dot_formats.inc"

}  // namespace

void int_dot_rows_avx512_vnni(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                               int64_t ldy) {
  // Up to 8 activation rows per pass, so each weight unit is widened once for all of them (16 accumulators of the
  // 32 registers; measured against 4: docs/engine.md#int-dot-pass).
  for (int64_t r0 = 0; r0 < x.rows; r0 += 8) {
    switch (std::min<int64_t>(8, x.rows - r0)) {
      case 1: rows<RowSums, 1>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 2: rows<RowSums, 2>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 3: rows<RowSums, 3>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 4: rows<RowSums, 4>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 5: rows<RowSums, 5>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 6: rows<RowSums, 6>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 7: rows<RowSums, 7>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      default: rows<RowSums, 8>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
    }
  }
}

}  // namespace kvf::cpu

KVF_ISA_END
#pragma GCC diagnostic pop
