// AVX-512 BF16 kernel (its code compiled for AVX-512 BF16 and FMA): activations and weights rounded to bf16 (nearest
// even), products summed in f32 by vdpbf16ps, two k values per instruction. A panel holds 64 columns as [kc / 2][64][2]
// bf16; a micro tile is 6 rows x 64 columns (24 accumulators).
#include <immintrin.h>

#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,fma")
#include "backend/cpu/transpose_avx512.h"

// GCC 12 reports the placeholders inside the shuffle intrinsics as maybe-uninitialized (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {
namespace {

constexpr int kCols = 64, kRows = 6;

void convert_x(const float* x, int64_t n, void* out) {
  auto* o = static_cast<uint16_t*>(out);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm512_storeu_si512(o + i, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i)));
  for (; i < n; i += 16) {
    const __mmask16 m = (__mmask16)((n - i) >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(o + i, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// Sixteen columns at a time: each column's 32 values of a k step become 16 bf16 pairs (one word each), and a
// transpose puts pair j of the sixteen columns side by side where the panel keeps them.
void pack_rows(const float* const* rows, int cols, int kc, uint32_t* p) {
  for (int c0 = 0; c0 < kCols; c0 += 16)
    for (int k = 0; k < kc; k += 32) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        const float* row = c0 + i < cols ? rows[c0 + i] + k : nullptr;
        // cvtne2ps puts its second operand (row) in the low half: word j holds k + 2j and k + 2j + 1.
        r[i] = row ? (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + 16), _mm512_loadu_ps(row))
                   : _mm512_setzero_si512();
      }
      transpose_16x16(r);
      for (int j = 0; j < 16; ++j) _mm512_store_si512(p + (k / 2 + j) * kCols + c0, r[j]);
    }
}

void pack_panel(const float* w, int64_t ldw, int cols, int kc, void* panel) {
  const float* rows[kCols];
  for (int c = 0; c < cols; ++c) rows[c] = w + c * ldw;
  pack_rows(rows, cols, kc, static_cast<uint32_t*>(panel));
}

template <int R>
inline void tile(const uint16_t* x, int64_t ldx, const uint32_t* panel, int kc, __mmask16 last, float* y, int64_t ldy,
                 bool accumulate) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j)
      acc[r][j] = accumulate ? _mm512_maskz_loadu_ps(j == 3 ? last : (__mmask16)0xFFFF, y + r * ldy + 16 * j)
                             : _mm512_setzero_ps();
  for (int kk = 0; kk < kc / 2; ++kk) {
    const uint32_t* b = panel + kk * kCols;
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
    const __m512bh b2 = (__m512bh)_mm512_load_si512(b + 32), b3 = (__m512bh)_mm512_load_si512(b + 48);
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      __builtin_memcpy(&pair, x + r * ldx + 2 * kk, 4);
      const __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
      acc[r][2] = _mm512_dpbf16_ps(acc[r][2], a, b2);
      acc[r][3] = _mm512_dpbf16_ps(acc[r][3], a, b3);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(y + r * ldy, acc[r][0]);
    _mm512_storeu_ps(y + r * ldy + 16, acc[r][1]);
    _mm512_storeu_ps(y + r * ldy + 32, acc[r][2]);
    _mm512_mask_storeu_ps(y + r * ldy + 48, last, acc[r][3]);
  }
}

void multiply(const void* xv, int64_t ldx, int rows, const void* panelv, int kc, int cols, float* y, int64_t ldy,
              bool accumulate) {
  const auto* x = static_cast<const uint16_t*>(xv);
  const auto* panel = static_cast<const uint32_t*>(panelv);
  if (cols < 48) {  // columns past `cols` must neither be read nor written: go through a scratch tile
    alignas(64) float scratch[kRows * kCols];
    for (int r0 = 0; r0 < rows; r0 += kRows) {
      const int rr = rows - r0 < kRows ? rows - r0 : kRows;
      for (int r = 0; r < rr; ++r)
        for (int c = 0; c < kCols; ++c) scratch[r * kCols + c] = accumulate && c < cols ? y[(r0 + r) * ldy + c] : 0.0f;
      multiply(x + r0 * ldx, ldx, rr, panel, kc, kCols, scratch, kCols, true);
      for (int r = 0; r < rr; ++r)
        for (int c = 0; c < cols; ++c) y[(r0 + r) * ldy + c] = scratch[r * kCols + c];
    }
    return;
  }
  const __mmask16 last = (__mmask16)(cols >= kCols ? 0xFFFF : (1u << (cols - 48)) - 1);
  int r = 0;
  for (; r + kRows <= rows; r += kRows) tile<kRows>(x + r * ldx, ldx, panel, kc, last, y + r * ldy, ldy, accumulate);
  switch (rows - r) {
    case 5: tile<5>(x + r * ldx, ldx, panel, kc, last, y + r * ldy, ldy, accumulate); break;
    case 4: tile<4>(x + r * ldx, ldx, panel, kc, last, y + r * ldy, ldy, accumulate); break;
    case 3: tile<3>(x + r * ldx, ldx, panel, kc, last, y + r * ldy, ldy, accumulate); break;
    case 2: tile<2>(x + r * ldx, ldx, panel, kc, last, y + r * ldy, ldy, accumulate); break;
    case 1: tile<1>(x + r * ldx, ldx, panel, kc, last, y + r * ldy, ldy, accumulate); break;
    default: break;
  }
}

}  // namespace

const GemmIsa kGemmAvx512Bf16 = {kCols, 32, 2, convert_x, pack_panel, multiply};

void pack_panel_rows_bf16(const float* const* rows, int cols, int kc, void* panel) {
  pack_rows(rows, cols, kc, static_cast<uint32_t*>(panel));
}

}  // namespace kvf::cpu

KVF_ISA_END
#pragma GCC diagnostic pop
