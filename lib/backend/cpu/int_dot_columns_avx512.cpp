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
#include <type_traits>
#include <vector>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "core/error.h"
#include "core/ggml_types.h"  // q4k_scale_min, for int_dot_formats.inc
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

  template <int S>
  void unit(__m512i w, int64_t e, float s) {
    unit_in_halves<S>(w, e, s, s);
  }
  template <int S>
  void unit_with_min(__m512i w, int64_t e, float s, float c) {
    unit_in_halves<S>(w, e, s, s);
    units_.min[e / 32][c_] = c;
  }
  template <int S>
  void unit_in_halves(__m512i w, int64_t e, float s0, float s1) {
    _mm512_store_si512(units_.q[e / 32][c_], w);
    units_.s0[e / 32][c_] = s0;
    units_.s1[e / 32][c_] = s1;
  }

 private:
  ChunkUnits& units_;
  int c_;
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
  std::fill_n(sums.begin(), 2 * kCols * x.rows, 0.0f);  // the buffer is sized for four groups' rows
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

// The same product for the sixteen interleaved columns at group (interleaved_weights.h): no walk and no transpose,
// each unit's pairs widened straight from memory, so a single row costs sixteen widenings and sixteen vpdpwssd per
// unit.
template <DType T>
void sixteen_interleaved_columns(const uint8_t* group, const Int16Rows& x, float* y, int64_t ldy,
                                 std::vector<float>& sums) {
  using F = InterleavedFormat<T>;
  std::fill_n(sums.begin(), 2 * kCols * x.rows, 0.0f);  // the buffer is sized for four groups' rows
  for (int64_t e = 0; e < x.k; e += 32 * F::kUnits, group += interleaved_block_bytes<F>())
    for (int u = 0; u < F::kUnits; ++u) {
      __m512i pairs[kCols];
      widen_interleaved<F>(group + F::kHeader + u * interleaved_unit_bytes<F>(), pairs);
      const UnitScales s = F::scales(group, u);
      add_unit<F::kHalves, F::kMin>(pairs, s.s0, s.s1, s.min, x, e + 32 * u, sums.data());
    }
  store_sums(sums, kCols, x, y, ldy);
}

// Several rows over interleaved weights take kGroups groups (64 columns) and kRowBlock rows at a time: each group's
// two pairs are widened once for the block's rows and each broadcast pair of a row feeds all four groups, where
// sixteen_interleaved_columns pays a broadcast for every vpdpwssd (one core of an AMD EPYC Zen 5, Q4_K weights in L3,
// cycles a row and unit of sixteen columns: 16 rows 15.9 -> 12.9, 4 rows 17.1 -> 14.4). A (row, column) gets
// add_unit's operations in the same order, so the same bits. One or two rows stay with sixteen_interleaved_columns:
// alone on a core such a pass is faster this way too (1 row 30 -> 25 cycles), but decoding, bound by memory there,
// was slower (one sequence of Qwen2.5 0.5B: 84 against 102 tokens/s, two 147-149 against 160, the prefetch below
// included).
constexpr int kGroups = 4, kRowBlock = 4, kGroupsFromRows = 3;
// Bytes ahead of each group's unit that the walk prefetches. Four streams at once, 15-40 KB apart, were not followed
// by the hardware prefetchers as one group's single stream is: decoding 4 Qwen2.5 0.5B sequences (weights in
// memory, not in cache) ran at 166-175 tokens/s against 227-231 one group at a time, and at 220-225 with 2 or 4 KB
// prefetched (1 KB-2 KB measured best across models and batches; 8 KB: 188-197).
constexpr int kPrefetchAhead = 1536;

// acc[r][g] += pairs [2 j0, 2 j1) of the unit of group g (at units[g]) times those of row r0 + r from value e.
template <class F, int R>
inline void add_pairs(const uint8_t* const* units, int j0, int j1, const Int16Rows& x, int64_t r0, int64_t e,
                      __m512i (&acc)[R][kGroups]) {
#pragma GCC unroll 8
  for (int j = j0; j < j1; ++j) {
    __m512i even[kGroups], odd[kGroups];
#pragma GCC unroll 4
    for (int g = 0; g < kGroups; ++g) widen_interleaved_two<F>(units[g], j, even[g], odd[g]);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int16_t* q = x.q.data() + (r0 + r) * x.k + e + 4 * j;
      const __m512i a0 = pair_everywhere(q), a1 = pair_everywhere(q + 2);
#pragma GCC unroll 4
      for (int g = 0; g < kGroups; ++g)
        acc[r][g] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(acc[r][g], even[g], a0), odd[g], a1);
    }
  }
}

// scaled[r][g] += float(acc[r][g]) * (s[g] * d), d the activation scale of row r0 + r's block at e; sums is
// [row][group][scaled, mins][column].
template <int R>
inline void scale_into(const __m512i (&acc)[R][kGroups], const __m512* s, const Int16Rows& x, int64_t r0, int64_t e,
                       float* sums) {
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 d = _mm512_set1_ps(x.d[(size_t)((r0 + r) * (x.k / 32) + e / 32)]);
#pragma GCC unroll 4
    for (int g = 0; g < kGroups; ++g) {
      float* scaled = sums + 2 * kCols * (kGroups * (r0 + r) + g);
      _mm512_storeu_ps(scaled, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][g]), _mm512_mul_ps(s[g], d),
                                               _mm512_loadu_ps(scaled)));
    }
  }
}

// add_unit for rows r0 .. r0 + R and the kGroups groups' unit at value e (units[g]: its bytes, scales[g]: its
// scales).
template <class F, int R>
inline void add_groups_unit(const uint8_t* const* units, const UnitScales* scales, const Int16Rows& x, int64_t r0,
                            int64_t e, float* sums) {
  __m512 s0[kGroups], s1[kGroups];
  for (int g = 0; g < kGroups; ++g) s0[g] = scales[g].s0, s1[g] = scales[g].s1;
  __m512i acc[R][kGroups];
  const auto clear = [&acc] {
    for (auto& row : acc)
      for (__m512i& a : row) a = _mm512_setzero_si512();
  };
  clear();
  if constexpr (F::kHalves) {  // values 0-15, then 16-31, each half scaled on its own
    add_pairs<F, R>(units, 0, 4, x, r0, e, acc);
    scale_into<R>(acc, s0, x, r0, e, sums);
    clear();
    add_pairs<F, R>(units, 4, 8, x, r0, e, acc);
    scale_into<R>(acc, s1, x, r0, e, sums);
  } else {
    add_pairs<F, R>(units, 0, 8, x, r0, e, acc);
    scale_into<R>(acc, s0, x, r0, e, sums);
  }
  if constexpr (F::kMin)
    for (int r = 0; r < R; ++r) {
      const __m512 sum = _mm512_set1_ps(x.sum32[(size_t)((r0 + r) * (x.k / 32) + e / 32)]);
      for (int g = 0; g < kGroups; ++g) {
        float* m = sums + 2 * kCols * (kGroups * (r0 + r) + g) + kCols;
        _mm512_storeu_ps(m, _mm512_fmadd_ps(scales[g].min, sum, _mm512_loadu_ps(m)));
      }
    }
}

// The product for the kGroups interleaved groups at group (group_bytes apart), kGroupsFromRows rows or more: blocks
// of kRowBlock rows, the rest in blocks of three (five rows: three and two).
template <DType T>
void interleaved_groups(const uint8_t* group, size_t group_bytes, const Int16Rows& x, float* y, int64_t ldy,
                        std::vector<float>& sums) {
  using F = InterleavedFormat<T>;
  const int64_t rows = x.rows, threes = rows == 5 ? 1 : (kRowBlock - rows % kRowBlock) % kRowBlock;
  const int64_t fours_end = rows - 3 * threes - (rows == 5 ? 2 : 0);
  std::fill(sums.begin(), sums.end(), 0.0f);
  for (int64_t e = 0, block = 0; e < x.k; e += 32 * F::kUnits, block += interleaved_block_bytes<F>())
    for (int u = 0; u < F::kUnits; ++u) {
      const uint8_t* units[kGroups];
      UnitScales scales[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        const uint8_t* b = group + g * group_bytes + block;
        units[g] = b + F::kHeader + u * interleaved_unit_bytes<F>();
        scales[g] = F::scales(b, u);
        for (int off = 0; off < interleaved_unit_bytes<F>(); off += 64)
          _mm_prefetch((const char*)units[g] + kPrefetchAhead + off, _MM_HINT_T0);
      }
      const int64_t ue = e + 32 * u;
      int64_t r0 = 0;
      for (; r0 < fours_end; r0 += kRowBlock) add_groups_unit<F, kRowBlock>(units, scales, x, r0, ue, sums.data());
      for (; r0 + 3 <= rows; r0 += 3) add_groups_unit<F, 3>(units, scales, x, r0, ue, sums.data());
      if (r0 < rows) add_groups_unit<F, 2>(units, scales, x, r0, ue, sums.data());  // five rows' last two
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int g = 0; g < kGroups; ++g) {
      const float* s = sums.data() + 2 * kCols * (kGroups * r + g);
      _mm512_storeu_ps(y + r * ldy + kCols * g, _mm512_add_ps(_mm512_loadu_ps(s), _mm512_loadu_ps(s + kCols)));
    }
}

std::vector<float>& row_sums(int64_t rows) {
  static thread_local std::vector<float> sums;
  sums.resize((size_t)(2 * kCols * kGroups * rows));  // [row][group][scaled, mins][column]
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

// Every column of wrows interleaved weight rows: four groups at a time where there are enough rows, the rest one
// group at a time.
template <DType T>
void interleaved_columns(const uint8_t* w, int wrows, const Int16Rows& x, float* y, int64_t ldy) {
  std::vector<float>& sums = row_sums(x.rows);
  const size_t group_bytes = kCols * dtype_bytes(T, x.k);
  int c0 = 0;
  if (x.rows >= kGroupsFromRows)
    for (; c0 + kGroups * kCols <= wrows; c0 += kGroups * kCols, w += kGroups * group_bytes)
      interleaved_groups<T>(w, group_bytes, x, y + c0, ldy, sums);
  for (; c0 < wrows; c0 += kCols, w += group_bytes) sixteen_interleaved_columns<T>(w, x, y + c0, ldy, sums);
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
