// Block-quantized weights times many activation rows in 16-bit integers on AVX2 (compiled for AVX2, F16C and FMA;
// gemm_isa.h says what it computes). A unit's small integers are widened to 16 bits into a panel of 16 columns,
// stored as pairs of k values ([kc / 2][16][2]), so one vpmaddwd multiplies a broadcast pair of an activation row
// with the pairs of 8 columns and adds each pair in 32 bits. Per block of 32 values (16 for Q6_K, whose scales
// cover 16) the integer sums become f32 once: y += sum * (s * d), plus c * (d * sum(q)) for formats with a min.
// Against the f32 panels (weights dequantized to f32, FMA) this does twice the multiply-adds per instruction, for
// the activations' rounding to 16 bits (int_dot.h).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/unit_groups.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,f16c,fma")
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/transpose_avx2.h"
#include "backend/cpu/widen_avx2.h"

namespace kvf::cpu {
namespace {

constexpr int kCols = kInt16PanelCols, kRows = 4;

// A panel: this header, then q [kc / 2][16][2] int16, scale [kc / 16][16] f32 (one per 16 values, the two halves
// of a 32-value unit alike where the format has one scale per unit), min [kc / 32][16] f32.
struct PanelHeader {
  int32_t kc, scale_values, has_min, pad[13];
};
static_assert(sizeof(PanelHeader) == 64, "the panel's arrays start 64-byte aligned");

struct PanelView {
  int16_t* q;
  float* scale;
  float* min;
};
PanelView view(void* panel, int kc) {
  auto* base = static_cast<uint8_t*>(panel) + sizeof(PanelHeader);
  auto* scale = reinterpret_cast<float*>(base + (size_t)kc * kCols * 2);
  return {reinterpret_cast<int16_t*>(base), scale, scale + kc / 16 * kCols};
}

// Where the formats' walk (int_dot_formats.inc) leaves one column's units: its values in order, its scales and mins.
class ColumnSink {
 public:
  ColumnSink(int16_t* values, const PanelView& panel, int column) : values_(values), panel_(panel), c_(column) {}

  template <class Kind>
  void group(int64_t, int, const GroupScales& g) {
    group_.take<Kind>(g);
  }
  template <int S, class Kind>
  void unit(const Widened& w, int64_t e, int j) {
    _mm256_storeu_si256((__m256i*)(values_ + e), w.lo);
    _mm256_storeu_si256((__m256i*)(values_ + e + 16), w.hi);
    panel_.scale[e / 16 * kCols + c_] = group_.s0[j];
    panel_.scale[(e / 16 + 1) * kCols + c_] = group_.s1[j];
    if constexpr (Kind::kMin) panel_.min[e / 32 * kCols + c_] = group_.c[j];
  }

 private:
  int16_t* values_;
  PanelView panel_;
  int c_;
  GroupScaleArrays group_;
};

#include "backend/cpu/int_dot_formats.inc"

// y[r][0, 16) (+)= x rows [row0, row0 + R) (row0 a multiple of 4), values [k0, k0 + kc), . the panel. Every
// output gets the same operations in the same order whatever R is. The float sums live in y (L1) between blocks:
// with 2R integer accumulators, two weight vectors and a broadcast, the 16 registers hold no more.
template <int R, int kScaleValues, bool kMin>
void tile(const Int16RowTiles& x, int64_t row0, int64_t k0, const PanelView& p, int kc, float* y, int64_t ldy,
          bool accumulate) {
  static_assert(R >= 1 && R <= kRows, "tile rows");
  const int32_t* pairs = x.pairs.data() + (row0 / 4 * (x.k / 2) + k0 / 2) * 4;  // this four's pairs from k0
  const float* xd[R];
  const float* xs[R];
  for (int r = 0; r < R; ++r) {
    xd[r] = x.d.data() + (row0 + r) * (x.k / 32) + k0 / 32;
    xs[r] = x.sum32.data() + (row0 + r) * (x.k / 32) + k0 / 32;
    if (!accumulate) std::memset(y + r * ldy, 0, kCols * sizeof(float));
  }
  for (int b = 0; b < kc; b += kScaleValues) {
    // Named accumulators, not an array: GCC rotated an array's registers through copies on every step.
    __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
    const int16_t* w = p.q + b * kCols;
    const int32_t* a4 = pairs + b * 2;  // the block's pairs of the four rows, 4 a step
#pragma GCC unroll 16
    for (int pair = 0; pair < kScaleValues / 2; ++pair, w += 2 * kCols) {
      __m256i w0 = _mm256_load_si256((const __m256i*)w), w1 = _mm256_load_si256((const __m256i*)(w + 16));
      // Loaded once for the four rows: GCC folded them into every vpmaddwd, and the loads (12 a step, 2 a cycle)
      // then bounded the kernel.
      __asm__("" : "+x"(w0), "+x"(w1));
      const auto step = [&](int r, __m256i& lo, __m256i& hi) {
        const __m256i a = _mm256_set1_epi32(a4[pair * 4 + r]);
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(a, w0));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(a, w1));
        // Integer sums reassociate freely: without this GCC regrouped the unrolled steps' additions into a tree
        // of products spilled to the stack (half the speed). Pinned here, each step adds into its accumulator.
        __asm__("" : "+x"(lo), "+x"(hi));
      };
      step(0, a00, a01);
      if constexpr (R > 1) step(1, a10, a11);
      if constexpr (R > 2) step(2, a20, a21);
      if constexpr (R > 3) step(3, a30, a31);
    }
    const __m256i acc[kRows][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
    const __m256 s0 = _mm256_load_ps(p.scale + b / 16 * kCols), s1 = _mm256_load_ps(p.scale + b / 16 * kCols + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 d = _mm256_broadcast_ss(xd[r] + b / 32);
      float* yr = y + r * ldy;
      _mm256_storeu_ps(yr, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][0]), _mm256_mul_ps(s0, d), _mm256_loadu_ps(yr)));
      _mm256_storeu_ps(yr + 8,
                       _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][1]), _mm256_mul_ps(s1, d), _mm256_loadu_ps(yr + 8)));
    }
    // A min is constant over 32 values: added once, after the unit's last scale block.
    if constexpr (kMin) {
      if ((b + kScaleValues) % 32 != 0) continue;
      const __m256 c0 = _mm256_load_ps(p.min + b / 32 * kCols), c1 = _mm256_load_ps(p.min + b / 32 * kCols + 8);
      for (int r = 0; r < R; ++r) {
        const __m256 sum = _mm256_broadcast_ss(xs[r] + b / 32);
        float* yr = y + r * ldy;
        _mm256_storeu_ps(yr, _mm256_fmadd_ps(c0, sum, _mm256_loadu_ps(yr)));
        _mm256_storeu_ps(yr + 8, _mm256_fmadd_ps(c1, sum, _mm256_loadu_ps(yr + 8)));
      }
    }
  }
}

template <int kScaleValues, bool kMin>
void multiply_rows(const Int16RowTiles& x, int64_t row0, int rows, int64_t k0, const PanelView& p, int kc, float* y,
                   int64_t ldy, bool accumulate) {
  int r = 0;
  for (; r + kRows <= rows; r += kRows)
    tile<kRows, kScaleValues, kMin>(x, row0 + r, k0, p, kc, y + r * ldy, ldy, accumulate);
  switch (rows - r) {
    case 3: return tile<3, kScaleValues, kMin>(x, row0 + r, k0, p, kc, y + r * ldy, ldy, accumulate);
    case 2: return tile<2, kScaleValues, kMin>(x, row0 + r, k0, p, kc, y + r * ldy, ldy, accumulate);
    case 1: return tile<1, kScaleValues, kMin>(x, row0 + r, k0, p, kc, y + r * ldy, ldy, accumulate);
    default: return;
  }
}

// Four rows of k / 2 pairs each (rows past `rows` zero) -> [k / 2][4], eight pairs at a time.
void interleave_four(const int16_t* const q[4], int64_t k, int32_t* out) {
  for (int64_t i = 0; i < k / 2; i += 8, out += 32) {
    __m256i r[4];
    for (int j = 0; j < 4; ++j) r[j] = _mm256_loadu_si256((const __m256i*)(q[j] + 2 * i));
    const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);  // pairs 0|4, 1|5
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);  // pairs 2|6, 3|7
    _mm256_storeu_si256((__m256i*)out, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i*)(out + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i*)(out + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i*)(out + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
  }
}

}  // namespace

void quantize_row_int16_avx2(const float* x, int64_t k, int16_t* q, float* d, float* sum32) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / 32; ++b, x += 32, q += 32) {
    __m256 v[4], m = _mm256_setzero_ps();
    // max(|v|, m) keeps m where v is NaN, as std::max(amax, |v|) does in the scalar rounding.
    for (int i = 0; i < 4; ++i) m = _mm256_max_ps(_mm256_andnot_ps(sign, v[i] = _mm256_loadu_ps(x + 8 * i)), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    const float amax = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
    // As quantize_rows_int16 rounds: x * (32767 / amax) to the nearest integer, ties to even.
    const __m256 inv = _mm256_set1_ps(amax > 0 ? 32767.0f / amax : 0.0f);
    __m256i n[4];
    for (int i = 0; i < 4; ++i) n[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inv));
    __m256i total = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    // packs interleaves the 128-bit lanes: undo it so the values stay in order.
    const __m256i lo = _mm256_permute4x64_epi64(_mm256_packs_epi32(n[0], n[1]), 0xD8);
    const __m256i hi = _mm256_permute4x64_epi64(_mm256_packs_epi32(n[2], n[3]), 0xD8);
    _mm256_storeu_si256((__m256i*)q, lo);
    _mm256_storeu_si256((__m256i*)(q + 16), hi);
    const float scale = amax / 32767.0f;
    d[b] = scale;
    sum32[b] = scale * (float)_mm_cvtsi128_si32(t);
  }
}

void quantize_row_tiles_int16(const float* x, int64_t rows, int64_t k, int64_t four, int16_t* scratch,
                              Int16RowTiles& out) {
  const int16_t* q[4];
  for (int j = 0; j < 4; ++j) {
    const int64_t r = 4 * four + j;
    int16_t* row = scratch + j * k;
    q[j] = row;
    if (r < rows)
      quantize_row_int16_avx2(x + r * k, k, row, out.d.data() + r * (k / 32), out.sum32.data() + r * (k / 32));
    else
      std::memset(row, 0, (size_t)k * sizeof(int16_t));
  }
  interleave_four(q, k, out.pairs.data() + four * (k / 2) * 4);
}

size_t int16_panel_bytes(int kc) {
  return sizeof(PanelHeader) + (size_t)kc * kCols * 2 + (size_t)(kc / 16 + kc / 32) * kCols * sizeof(float);
}

void pack_int16_panel(DType t, const uint8_t* const* rows, int cols, int64_t k0, int kc, void* panel) {
  auto* header = static_cast<PanelHeader*>(panel);
  *header = PanelHeader{kc, t == DType::Q6_K ? 16 : 32, t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K, {}};
  const PanelView p = view(panel, kc);
  std::memset(p.scale, 0, (size_t)(kc / 16 + kc / 32) * kCols * sizeof(float));  // missing columns stay 0
  alignas(32) int16_t values[8][256];  // eight columns' widened values, then transposed into the panel
  const size_t offset = dtype_bytes(t, k0);
  for (int c0 = 0; c0 < kCols; c0 += 8) {
    for (int i = 0; i < 8; ++i) {
      if (c0 + i >= cols) {
        std::memset(values[i], 0, sizeof(values[i]));
        continue;
      }
      ColumnSink sink(values[i], p, c0 + i);
      walk_row(t, rows[c0 + i] + offset, sink, kc);
    }
    // Eight pairs of k values of eight columns at a time: a transpose of 32-bit words.
    for (int k = 0; k < kc; k += 16) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_castsi256_ps(_mm256_load_si256((const __m256i*)(values[i] + k)));
      transpose_8x8(r);
      for (int j = 0; j < 8; ++j) _mm256_store_ps((float*)(p.q + (k / 2 + j) * 2 * kCols + 2 * c0), r[j]);
    }
  }
}

void multiply_int16_panel(const Int16RowTiles& x, int64_t row0, int rows, int64_t k0, const void* panel, float* y,
                          int64_t ldy, bool accumulate) {
  const auto* header = static_cast<const PanelHeader*>(panel);
  const int kc = header->kc;
  const PanelView p = view(const_cast<void*>(panel), kc);
  if (header->scale_values == 16)
    return multiply_rows<16, false>(x, row0, rows, k0, p, kc, y, ldy, accumulate);
  if (header->has_min) return multiply_rows<32, true>(x, row0, rows, k0, p, kc, y, ldy, accumulate);
  multiply_rows<32, false>(x, row0, rows, k0, p, kc, y, ldy, accumulate);
}

}  // namespace kvf::cpu

KVF_ISA_END
