// Integer dot products of 16-bit activation rows with block-quantized weight rows for passes of a few dozen rows
// (compiled for AVX-512 VNNI, F16C and FMA; gemm_isa.h says what it computes, and int_dot.h how the activations are
// rounded). Sixteen weight rows (output columns) are walked together (int_dot_formats.inc), a chunk of 2048 values at a
// time, and each unit of 32 values is transposed into pairs: pair i of all sixteen columns in one register. One
// vpdpwssd then multiplies a broadcast pair of an activation row with the pairs of all sixteen columns, so a unit costs
// each activation row sixteen instructions whatever the format, and its transpose is shared by every row. Each column's
// unit sum is exact in 32-bit integers (|sum| < 2^27) before one conversion to float.
//
// Why not for every row count over weights as the GGUF stores them: a single row pays the transposes alone
// (decoding one Qwen2.5 0.5B sequence ran at about half the speed of int_dot_avx512.cpp's kernel, which sums each
// weight row's products in its lanes), and its arithmetic differs from that kernel's, so the decoding steps, which
// must give a sequence the same bits in any batch, stay with that kernel. Weights interleaved at load
// (interleaved_weights.h) need no transpose: over them every pass takes this kernel, one row included
// (int_dot_interleaved_avx512_vnni; packed_matmul.cpp says which passes take which).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/unit_groups.h"
#include "core/error.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#include "backend/cpu/interleaved_avx512.h"
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/transpose_avx512.h"
#include "backend/cpu/widen_avx512.h"

// GCC 12 reports the placeholders inside _mm512_inserti64x4 and the shuffles as maybe-uninitialized (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {
namespace {

constexpr int kCols = 16;        // weight rows walked together: one output column per 32-bit lane
constexpr int64_t kChunk = 2048;  // values of each row walked at a time: long runs the prefetchers follow
constexpr int kUnits = (int)(kChunk / 32);
// A chunk of sixteen weight rows, as the walk leaves it: each unit's values widened to 16 bits, its scale for each
// half of 16 values (the same twice where the format has one per unit) and its min.
struct ChunkUnits {
  alignas(64) int16_t q[kUnits][kCols][32];
  alignas(64) float s0[kUnits][kCols];
  alignas(64) float s1[kUnits][kCols];
  alignas(64) float min[kUnits][kCols];
};

// The walk's sink for one column of a chunk.
class ColumnSink {
 public:
  ColumnSink(ChunkUnits& units, int column) : units_(units), c_(column) {}

  template <class Kind>
  void group(int64_t, int, const GroupScales& g) {
    group_.take<Kind>(g);
  }
  template <int S, class Kind>
  void unit(__m512i w, int64_t e, int j) {
    _mm512_store_si512(units_.q[e / 32][c_], w);
    units_.s0[e / 32][c_] = group_.s0[j];
    units_.s1[e / 32][c_] = group_.s1[j];
    if constexpr (Kind::kMin) units_.min[e / 32][c_] = group_.c[j];
  }

 private:
  ChunkUnits& units_;
  int c_;
  GroupScaleArrays group_;
};

#include "backend/cpu/int_dot_formats.inc"

// The pair of 16-bit activations at p, in every 32-bit lane.
inline __m512i pair_everywhere(const int16_t* p) {
  int32_t pair;
  std::memcpy(&pair, p, 4);
  return _mm512_set1_epi32(pair);
}

// One unit at value e of sixteen columns, pairs[i] holding values 2i and 2i + 1 of every column (s0, s1 the
// columns' scales over the unit's halves, mins their mins), into every row's sums ([row][scaled, mins][column]):
// per row and column, sum = the unit's exact integer sum (per half with kHalves), then scaled += float(sum) *
// (s * d) and, with kMin, mins += min * (d * sum(q)).
template <bool kHalves, bool kMin>
inline void add_unit(const __m512i* pairs, __m512 s0, __m512 s1, __m512 mins, const Int16Rows& x, int64_t e,
                     float* sums) {
  const int64_t k = x.k, blocks = k / 32;
  for (int64_t r = 0; r < x.rows; ++r) {
    const int16_t* q = x.q.data() + r * k + e;
    // Four chains of four, so consecutive multiply-adds do not wait for each other (integer sums are exact in any
    // order).
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, b0 = a0, b1 = a0;
    for (int i = 0; i < 4; ++i) {
      a0 = _mm512_dpwssd_epi32(a0, pairs[i], pair_everywhere(q + 2 * i));
      a1 = _mm512_dpwssd_epi32(a1, pairs[4 + i], pair_everywhere(q + 8 + 2 * i));
      b0 = _mm512_dpwssd_epi32(b0, pairs[8 + i], pair_everywhere(q + 16 + 2 * i));
      b1 = _mm512_dpwssd_epi32(b1, pairs[12 + i], pair_everywhere(q + 24 + 2 * i));
    }
    const __m512i first = _mm512_add_epi32(a0, a1), second = _mm512_add_epi32(b0, b1);  // values 0-15, 16-31
    const __m512 d = _mm512_set1_ps(x.d[(size_t)(r * blocks + e / 32)]);
    float* scaled = sums + 2 * kCols * r;
    __m512 acc = _mm512_loadu_ps(scaled);
    if constexpr (kHalves) {
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(first), _mm512_mul_ps(s0, d), acc);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(second), _mm512_mul_ps(s1, d), acc);
    } else {
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(first, second)), _mm512_mul_ps(s0, d), acc);
    }
    _mm512_storeu_ps(scaled, acc);
    if constexpr (kMin) {
      const __m512 sum = _mm512_set1_ps(x.sum32[(size_t)(r * blocks + e / 32)]);
      float* m = scaled + kCols;
      _mm512_storeu_ps(m, _mm512_fmadd_ps(mins, sum, _mm512_loadu_ps(m)));
    }
  }
}

// y[r * ldy + c] = scaled + mins of row r and column c < ncols.
void store_sums(const std::vector<float>& sums, int ncols, const Int16Rows& x, float* y, int64_t ldy) {
  const __mmask16 real = (__mmask16)((1u << ncols) - 1);
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* row = sums.data() + 2 * kCols * r;
    const __m512 scaled = _mm512_loadu_ps(row), m = _mm512_loadu_ps(row + kCols);
    _mm512_mask_storeu_ps(y + r * ldy, real, _mm512_add_ps(scaled, m));
  }
}

// y[r * ldy + c] = x row r . weight row c for sixteen weight rows at w (ncols of them real), every row of x.
template <bool kHalves, bool kMin>
void sixteen_columns(DType t, const uint8_t* w, size_t row_bytes, int ncols, const Int16Rows& x, float* y,
                     int64_t ldy, ChunkUnits& units, std::vector<float>& sums) {
  const int64_t k = x.k;
  std::fill_n(sums.begin(), 2 * kCols * x.rows, 0.0f);
  if (ncols < kCols) std::memset(&units, 0, sizeof units);    // the missing columns: zeros throughout
  for (int64_t e0 = 0; e0 < k; e0 += kChunk) {
    const int64_t len = std::min(kChunk, k - e0);
    for (int c = 0; c < ncols; ++c) {
      ColumnSink sink(units, c);
      walk_row(t, w + c * row_bytes + dtype_bytes(t, e0), sink, len);
    }
    for (int u = 0; u < len / 32; ++u) {
      __m512i pairs[kCols];  // pairs[i]: values 2i, 2i + 1 of every column
      for (int c = 0; c < kCols; ++c) pairs[c] = _mm512_load_si512(units.q[u][c]);
      transpose_16x16(pairs);
      add_unit<kHalves, kMin>(pairs, _mm512_load_ps(units.s0[u]), _mm512_load_ps(units.s1[u]),
                              _mm512_load_ps(units.min[u]), x, e0 + 32 * u, sums.data());
    }
  }
  store_sums(sums, ncols, x, y, ldy);
}

// Bytes ahead of the block being read that the walk over interleaved columns prefetches, a block's worth at a time.
// The hardware prefetchers alone keep too few lines in flight to fill the two cores' share of the memory's bandwidth
// (decoding one Qwen2.5 1.5B sequence at about 35 GB/s where the memory gives 65-80): with 8 KB, one Qwen2.5 1.5B
// sequence decoded at 41-52 tokens/s against 34-35 (AMD EPYC Zen 5, 2 threads), one Qwen2.5 0.5B sequence at 107-127
// against 94-99 (4 KB: 106-111; 12 KB: 108-120; 32 KB: no gain). docs/engine.md has the sweep.
constexpr int kPrefetchAhead = 8192;

// The same product for the sixteen interleaved columns at group (interleaved_weights.h): no walk and no transpose,
// each unit's pairs widened straight from memory, so a single row costs sixteen widenings and sixteen vpdpwssd per
// unit.
template <DType T>
void sixteen_interleaved_columns(const uint8_t* group, const Int16Rows& x, float* y, int64_t ldy,
                                 std::vector<float>& sums) {
  using F = InterleavedFormat<T>;
  std::fill_n(sums.begin(), 2 * kCols * x.rows, 0.0f);
  for (int64_t e = 0; e < x.k; e += 32 * F::kUnits, group += interleaved_block_bytes<F>()) {
    for (int off = 0; off < interleaved_block_bytes<F>(); off += 64)
      _mm_prefetch((const char*)group + kPrefetchAhead + off, _MM_HINT_T0);
    for (int u = 0; u < F::kUnits; ++u) {
      __m512i pairs[kCols];
      widen_interleaved<F>(group + F::kHeader + u * interleaved_unit_bytes<F>(), pairs);
      const UnitScales s = F::scales(group, u);
      add_unit<F::kHalves, F::kMin>(pairs, s.s0, s.s1, s.min, x, e + 32 * u, sums.data());
    }
  }
  store_sums(sums, kCols, x, y, ldy);
}

std::vector<float>& row_sums(int64_t rows) {
  static thread_local std::vector<float> sums;
  sums.resize((size_t)(2 * kCols * rows));  // [row][scaled, mins][column]
  return sums;
}

template <bool kHalves, bool kMin>
void all_columns(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                 int64_t ldy) {
  std::vector<float>& sums = row_sums(x.rows);
  static thread_local std::unique_ptr<ChunkUnits> units = std::make_unique<ChunkUnits>();  // 77 KB: not on the stack
  for (int c0 = 0; c0 < wrows; c0 += kCols)
    sixteen_columns<kHalves, kMin>(t, w + c0 * row_bytes, row_bytes, std::min(kCols, wrows - c0), x, y + c0, ldy,
                                   *units, sums);
}

// Every column of wrows interleaved weight rows, a group of sixteen at a time.
template <DType T>
void interleaved_columns(const uint8_t* w, int wrows, const Int16Rows& x, float* y, int64_t ldy) {
  std::vector<float>& sums = row_sums(x.rows);
  const size_t group_bytes = kCols * dtype_bytes(T, x.k);
  for (int c0 = 0; c0 < wrows; c0 += kCols, w += group_bytes) sixteen_interleaved_columns<T>(w, x, y + c0, ldy, sums);
}

}  // namespace

void int_dot_interleaved_avx512_vnni(DType t, const uint8_t* w, int wrows, const Int16Rows& x, float* y,
                                     int64_t ldy) {
  switch (t) {
    case DType::Q4_1_X16: return interleaved_columns<DType::Q4_1_X16>(w, wrows, x, y, ldy);
    case DType::Q5_0_X16: return interleaved_columns<DType::Q5_0_X16>(w, wrows, x, y, ldy);
    case DType::Q8_0_X16: return interleaved_columns<DType::Q8_0_X16>(w, wrows, x, y, ldy);
    case DType::Q4_K_X16: return interleaved_columns<DType::Q4_K_X16>(w, wrows, x, y, ldy);
    case DType::Q6_K_X16: return interleaved_columns<DType::Q6_K_X16>(w, wrows, x, y, ldy);
    default: fail("int_dot_interleaved: ", dtype_name(t), " is not interleaved");
  }
}

void int_dot_columns_avx512_vnni(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                                  int64_t ldy) {
  switch (t) {
    case DType::Q6_K: return all_columns<true, false>(t, w, row_bytes, wrows, x, y, ldy);
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K:
      return all_columns<false, true>(t, w, row_bytes, wrows, x, y, ldy);
    default: return all_columns<false, false>(t, w, row_bytes, wrows, x, y, ldy);
  }
}

}  // namespace kvf::cpu

KVF_ISA_END
#pragma GCC diagnostic pop
