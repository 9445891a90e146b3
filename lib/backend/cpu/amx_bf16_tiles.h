// The AMX BF16 kernel's walk over tiles (gemm_amx_bf16.cpp runs it on the CPU's tiles), written against a tile unit
// so that a software model of the tiles can run the same walk where the CPU has none (tests/unit/amx_tiles_test.cpp).
// `Tiles` has static members load<T>(base, stride bytes), zero<T>(), store<T>(base, stride bytes) and
// dot<C, A, B>() (C += A . B as tdpbf16ps computes it), over tiles 0-7 of 16 rows of 64 bytes each.
//
// The activations and panels are the AVX-512 BF16 kernel's: bf16 rows, panels of [kc / 2][64][2] bf16. A micro tile
// is 32 rows x 32 columns: accumulators in tiles 0-3 (16 x 16 f32 each), A in tiles 4-5 (16 rows x 32 values), B in
// tiles 6-7 (16 value pairs x 16 columns), read from the panel where it lies (its pair rows 256 bytes apart). Rows
// past a multiple of 32, and panels narrower than 64 columns, go through zero-padded scratch, so every row gets
// the same operations wherever it sits in its batch.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace kvf::cpu::amx {

constexpr int kCols = 64, kTileRows = 32, kPairBytes = kCols * 4;  // a panel's pair row: 64 columns x 2 bf16

// 32 rows of a (bf16, lda bytes apart) times 32 columns of the panel from column c0, over kc values, into or onto
// c (f32, ldc bytes apart).
template <class Tiles>
void tile_32x32(const uint16_t* a, int64_t lda, const uint32_t* panel, int c0, int kc, float* c, int64_t ldc,
                bool accumulate) {
  float* c_lo = c + c0;
  float* c_hi = c + c0 + 16 * (ldc / 4);
  if (accumulate) {
    Tiles::template load<0>(c_lo, ldc);
    Tiles::template load<1>(c_lo + 16, ldc);
    Tiles::template load<2>(c_hi, ldc);
    Tiles::template load<3>(c_hi + 16, ldc);
  } else {
    Tiles::template zero<0>();
    Tiles::template zero<1>();
    Tiles::template zero<2>();
    Tiles::template zero<3>();
  }
  for (int k = 0; k < kc; k += 32) {
    Tiles::template load<4>(a + k, lda);
    Tiles::template load<5>(a + 16 * (lda / 2) + k, lda);
    const uint32_t* b = panel + (k / 2) * kCols + c0;
    Tiles::template load<6>(b, kPairBytes);
    Tiles::template load<7>(b + 16, kPairBytes);
    Tiles::template dot<0, 4, 6>();
    Tiles::template dot<1, 4, 7>();
    Tiles::template dot<2, 5, 6>();
    Tiles::template dot<3, 5, 7>();
  }
  Tiles::template store<0>(c_lo, ldc);
  Tiles::template store<1>(c_lo + 16, ldc);
  Tiles::template store<2>(c_hi, ldc);
  Tiles::template store<3>(c_hi + 16, ldc);
}

// GemmIsa::multiply: y[r][0, cols) (+)= x[r][0, kc) . panel for r < rows (x rows ldx values apart, y rows ldy).
template <class Tiles>
void multiply(const uint16_t* x, int64_t ldx, int rows, const uint32_t* panel, int kc, int cols, float* y,
              int64_t ldy, bool accumulate) {
  static thread_local std::vector<uint16_t> a_pad;  // a partial row group, zero rows below it
  static thread_local std::vector<float> c_pad;     // outputs of a partial row group or narrow panel
  for (int r0 = 0; r0 < rows; r0 += kTileRows) {
    const int rr = rows - r0 < kTileRows ? rows - r0 : kTileRows;
    const uint16_t* a = x + r0 * ldx;
    int64_t lda = ldx * 2;
    if (rr < kTileRows) {
      a_pad.assign((size_t)kTileRows * kc, 0);
      for (int r = 0; r < rr; ++r) std::memcpy(a_pad.data() + (size_t)r * kc, a + r * ldx, (size_t)kc * 2);
      a = a_pad.data(), lda = (int64_t)kc * 2;
    }
    if (rr == kTileRows && cols == kCols) {
      for (int c0 = 0; c0 < kCols; c0 += 32)
        tile_32x32<Tiles>(a, lda, panel, c0, kc, y + r0 * ldy, ldy * 4, accumulate);
      continue;
    }
    c_pad.assign((size_t)kTileRows * kCols, 0.0f);
    if (accumulate)
      for (int r = 0; r < rr; ++r) std::memcpy(c_pad.data() + r * kCols, y + (r0 + r) * ldy, (size_t)cols * 4);
    for (int c0 = 0; c0 < kCols; c0 += 32) tile_32x32<Tiles>(a, lda, panel, c0, kc, c_pad.data(), kCols * 4, true);
    for (int r = 0; r < rr; ++r) std::memcpy(y + (r0 + r) * ldy, c_pad.data() + r * kCols, (size_t)cols * 4);
  }
}

}  // namespace kvf::cpu::amx
