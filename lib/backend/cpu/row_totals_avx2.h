// What the AVX2 dot products (int_dot_avx2.cpp, 16-bit activations; int_dot_avx2_int8.cpp, 8-bit) keep for one
// weight row against R activation rows, the sink of int_dot_formats.inc but for its units: each row's running sums
// in two accumulator slots that consecutive units alternate between (so that their additions do not wait for each
// other); the group's weight scales times each row's activation block scales, kept in registers (a unit's scale is
// one lane permute away: stored and read back a lane at a time, every read stalled); and the mins' part of each
// row's sum, added a group at a time. A kernel derives its RowSums from it and adds unit<S, Kind>. Only code
// compiled for AVX2 and FMA (after KVF_ISA_BEGIN, core/isa_target.h) includes it, after simd_reductions.h and
// unit_groups.h; everything sits in an anonymous namespace, as in widen_avx2.h.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace kvf::cpu {
namespace {

template <int R>
class RowTotals {
 public:
  // R rows from the one whose activation block scales start at `scales` and whose d * sum(q) per block start at
  // `block_sums`; `blocks` blocks a row.
  RowTotals(const float* scales, const float* block_sums, int64_t blocks) {
    for (int r = 0; r < R; ++r) {
      d_[r] = scales + r * blocks;
      sums_[r] = block_sums + r * blocks;
      acc_[0][r] = acc_[1][r] = mins_[r] = _mm256_setzero_ps();
    }
  }

  // The group of n units from value e.
  template <class Kind>
  void group(int64_t e, int n, const GroupScales& g) {
    for (int r = 0; r < R; ++r) {
      const __m256 d = load_first(d_[r] + e / 32, n);
      first_[r] = _mm256_mul_ps(g.s0, d);
      if constexpr (Kind::kHalves) second_[r] = _mm256_mul_ps(g.s1, d);
      if constexpr (Kind::kMin) mins_[r] = _mm256_fmadd_ps(g.c, load_first(sums_[r] + e / 32, n), mins_[r]);
    }
  }

  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < R; ++r) y[r * ldy] = hsum(_mm256_add_ps(_mm256_add_ps(acc_[0][r], acc_[1][r]), mins_[r]));
  }

 protected:
  // Row r's scale of unit j of the group (of its first half of 16 values, where the halves have their own), in
  // every lane; of its second half.
  __m256 first(int r, int j) const { return lane(first_[r], j); }
  __m256 second(int r, int j) const { return lane(second_[r], j); }
  // Slot S of row r: += products * scale.
  template <int S>
  void add(int r, __m256 products, __m256 scale) {
    acc_[S][r] = _mm256_fmadd_ps(products, scale, acc_[S][r]);
  }

 private:
  const float* d_[R];
  const float* sums_[R];
  __m256 acc_[2][R];
  __m256 first_[R];
  __m256 second_[R];
  __m256 mins_[R];
};

}  // namespace
}  // namespace kvf::cpu
