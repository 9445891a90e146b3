// Integer dot products of 16-bit activation rows with block-quantized weight rows on CPUs with AVX2 but no
// AVX-512 VNNI (compiled for AVX2, F16C and FMA; int_dot.h says what they compute): a unit of 32 weights is two
// vpmaddwd (16 values each) against the activations, their pair sums added in 32-bit integers (exact) before one
// conversion to float. The formats' walk: int_dot_formats.inc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/unit_groups.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,f16c,fma")
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/row_totals_avx2.h"
#include "backend/cpu/widen_avx2.h"

namespace kvf::cpu {
namespace {

// One weight row against R activation rows (from row0 of x), 16-bit: a unit is two vpmaddwd.
template <int R>
class RowSums : public RowTotals<R> {
 public:
  RowSums(const Int16Rows& x, int64_t row0)
      : RowTotals<R>(x.d.data() + row0 * (x.k / 32), x.sum32.data() + row0 * (x.k / 32), x.k / 32) {
    for (int r = 0; r < R; ++r) q_[r] = x.q.data() + (row0 + r) * x.k;
  }

  template <int S, class Kind>
  void unit(const Widened& w, int64_t e, int j) {
    for (int r = 0; r < R; ++r) {
      const __m256i lo = _mm256_madd_epi16(w.lo, q(r, e)), hi = _mm256_madd_epi16(w.hi, q(r, e + 16));
      if constexpr (Kind::kHalves) {
        this->template add<S>(r, _mm256_cvtepi32_ps(lo), this->first(r, j));
        this->template add<S>(r, _mm256_cvtepi32_ps(hi), this->second(r, j));
      } else {
        this->template add<S>(r, _mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), this->first(r, j));
      }
    }
  }

 private:
  __m256i q(int r, int64_t e) const { return _mm256_loadu_si256((const __m256i*)(q_[r] + e)); }

  const int16_t* q_[R];
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
