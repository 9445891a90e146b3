// Integer dot products of 16-bit activation rows with block-quantized weight rows (compiled for AVX-512 VNNI, F16C and
// FMA; int_dot.h says what they compute): a unit of 32 weights is one vpdpwssd against the activations (|u * q| pair
// sums stay below 2^24). The formats' walk: int_dot_formats.inc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "core/ggml_types.h"  // q4k_scale_min, for int_dot_formats.inc
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
  RowSums(const Int16Rows& x, int64_t row0) : x_(x), row0_(row0) {
    for (int r = 0; r < R; ++r)
      for (int slot = 0; slot < 2; ++slot) {
        acc_[slot][r] = _mm512_setzero_ps();
        off_[slot][r] = 0;
      }
  }

  // The 32 weights at value e of the row, widened to 16 bits: s * w.
  template <int S>
  void unit(__m512i w, int64_t e, float s) {
    for (int r = 0; r < R; ++r)
      acc_[S][r] = _mm512_fmadd_ps(products(w, r, e), _mm512_set1_ps(s * x_.d[(size_t)block(r, e)]), acc_[S][r]);
  }

  // The same with a min: s * w + c.
  template <int S>
  void unit_with_min(__m512i w, int64_t e, float s, float c) {
    unit<S>(w, e, s);
    for (int r = 0; r < R; ++r) off_[S][r] += c * x_.sum32[(size_t)block(r, e)];
  }

  // s0 * w for the first 16 values, s1 * w for the last 16 (vpdpwssd lanes 0-7 and 8-15).
  template <int S>
  void unit_in_halves(__m512i w, int64_t e, float s0, float s1) {
    const __m512 s = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(s0), _mm512_set1_ps(s1));
    for (int r = 0; r < R; ++r) {
      const __m512 scale = _mm512_mul_ps(s, _mm512_set1_ps(x_.d[(size_t)block(r, e)]));
      acc_[S][r] = _mm512_fmadd_ps(products(w, r, e), scale, acc_[S][r]);
    }
  }

  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < R; ++r)
      y[r * ldy] = hsum(_mm512_add_ps(acc_[0][r], acc_[1][r])) + (off_[0][r] + off_[1][r]);
  }

 private:
  int64_t block(int r, int64_t e) const { return (row0_ + r) * (x_.k / 32) + e / 32; }

  // Pairwise sums w * q of the unit (widened to 16 bits) against row r's activations, as 16 floats.
  __m512 products(__m512i w, int r, int64_t e) const {
    const __m512i q = _mm512_loadu_si512(x_.q.data() + (row0_ + r) * x_.k + e);
    return _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_dpwssd_epi32(_mm512_setzero_si512(), w, q));
  }

  const Int16Rows& x_;
  int64_t row0_;
  __m512 acc_[2][R];
  float off_[2][R];
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
