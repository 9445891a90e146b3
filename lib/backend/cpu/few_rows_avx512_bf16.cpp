// Dot products of a few bf16 activation rows with bf16 weight rows (compiled for AVX-512 BF16): the decoding path for
// weights kept as bf16, 32 products per vdpbf16ps, summed in f32 as the bf16 panels sum them. Each weight row is read
// once for every activation row.
#include <immintrin.h>

#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,fma")
#include "backend/cpu/simd_reductions.h"

namespace kvf::cpu {
namespace {

// y[r * ldy] = x row r . w for r < R; two accumulators per row take alternate steps of 32 values.
template <int R>
void row_dots(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t k, float* y, int64_t ldy) {
  __m512 acc[2][R];
  for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w + i), w1 = (__m512bh)_mm512_loadu_si512(w + i + 32);
    for (int r = 0; r < R; ++r) {
      acc[0][r] = _mm512_dpbf16_ps(acc[0][r], w0, (__m512bh)_mm512_loadu_si512(x + r * ldx + i));
      acc[1][r] = _mm512_dpbf16_ps(acc[1][r], w1, (__m512bh)_mm512_loadu_si512(x + r * ldx + i + 32));
    }
  }
  if (i < k) {  // k is a multiple of 32
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w + i);
    for (int r = 0; r < R; ++r)
      acc[0][r] = _mm512_dpbf16_ps(acc[0][r], w0, (__m512bh)_mm512_loadu_si512(x + r * ldx + i));
  }
  for (int r = 0; r < R; ++r) y[r * ldy] = hsum(_mm512_add_ps(acc[0][r], acc[1][r]));
}

}  // namespace

void dot_rows_bf16_avx512(const uint16_t* x, int64_t ldx, int rows, const uint16_t* w, int64_t ldw, int wrows,
                          int64_t k, float* y, int64_t ldy) {
  for (int r0 = 0; r0 < rows; r0 += 4)
    for (int j = 0; j < wrows; ++j) {
      const uint16_t* xr = x + r0 * ldx;
      float* out = y + r0 * ldy + j;
      switch (rows - r0 >= 4 ? 4 : rows - r0) {
        case 1: row_dots<1>(xr, ldx, w + j * ldw, k, out, ldy); break;
        case 2: row_dots<2>(xr, ldx, w + j * ldw, k, out, ldy); break;
        case 3: row_dots<3>(xr, ldx, w + j * ldw, k, out, ldy); break;
        default: row_dots<4>(xr, ldx, w + j * ldw, k, out, ldy); break;
      }
    }
}

}  // namespace kvf::cpu

KVF_ISA_END
