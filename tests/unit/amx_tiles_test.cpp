// The AMX BF16 kernel's walk over tiles (amx_bf16_tiles.h) on a software model of the tiles, so that its
// addressing, padding and accumulation are checked on every CPU; on a CPU with AMX the hardware tiles run the same
// walk in the PackedMatmul tests (kernel amx-bf16) and in the start-up check of amx_bf16_usable().
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/amx_bf16_tiles.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "core/half.h"

namespace kvf {
namespace {

// Eight tiles of 16 rows x 64 bytes (the kernel's configuration); dot is tdpbf16ps: C[m][n] += sum over the 16 pairs
// p of A[m][2p] B[p][2n] + A[m][2p + 1] B[p][2n + 1], bf16 values, f32 sums.
struct SoftwareTiles {
  static constexpr int kBytes = 64, kRows = 16;
  using Tile = std::array<uint8_t, kRows * kBytes>;
  static Tile& tile(int t) {
    static thread_local std::array<Tile, 8> tiles;
    return tiles[(size_t)t];
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    for (int r = 0; r < kRows; ++r)
      std::memcpy(tile(T).data() + r * kBytes, static_cast<const uint8_t*>(base) + r * stride, kBytes);
  }
  template <int T>
  static void zero() {
    tile(T).fill(0);
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    for (int r = 0; r < kRows; ++r)
      std::memcpy(static_cast<uint8_t*>(base) + r * stride, tile(T).data() + r * kBytes, kBytes);
  }
  template <int C, int A, int B>
  static void dot() {
    float c[16][16];
    uint16_t a[16][32], b[16][32];
    std::memcpy(c, tile(C).data(), sizeof c);
    std::memcpy(a, tile(A).data(), sizeof a);
    std::memcpy(b, tile(B).data(), sizeof b);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n)
        for (int p = 0; p < 16; ++p)
          c[m][n] += bf16_to_f32(a[m][2 * p]) * bf16_to_f32(b[p][2 * n]) +
                     bf16_to_f32(a[m][2 * p + 1]) * bf16_to_f32(b[p][2 * n + 1]);
    std::memcpy(tile(C).data(), c, sizeof c);
  }
};

struct Product {
  int64_t rows, k;
  std::vector<uint16_t> x;     // [rows][k] bf16
  std::vector<uint32_t> panel;  // [k / 2][64] bf16 pairs
  std::vector<float> w;        // [64][k], the panel's values
};

Product random_product(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Product p{rows, k, std::vector<uint16_t>((size_t)(rows * k)), std::vector<uint32_t>((size_t)(k / 2 * 64)),
            std::vector<float>((size_t)(64 * k))};
  for (uint16_t& v : p.x) v = f32_to_bf16(normal(rng));
  for (float& v : p.w) v = bf16_to_f32(f32_to_bf16(normal(rng)));
  for (int64_t pair = 0; pair < k / 2; ++pair)
    for (int c = 0; c < 64; ++c)
      p.panel[(size_t)(pair * 64 + c)] = (uint32_t)f32_to_bf16(p.w[(size_t)(c * k + 2 * pair)]) |
                                         (uint32_t)f32_to_bf16(p.w[(size_t)(c * k + 2 * pair + 1)]) << 16;
  return p;
}

// Every shape of the walk: one and several row groups, partial ones, narrow panels, k of one and several steps;
// set, then accumulated; against sums in double, and each row as it comes alone.
TEST(AmxTiles, TheWalkOverTilesComputesThePanelProduct) {
  for (int64_t rows : {1, 16, 31, 32, 37, 70})
    for (int64_t k : {32, 96, 256})
      for (int cols : {64, 40}) {
        const Product p = random_product(rows, k, (uint32_t)(rows * 1000 + k + cols));
        std::vector<float> y((size_t)(rows * cols));  // rows exactly cols apart: a write past them is caught
        for (bool accumulate : {false, true})
          cpu::amx::multiply<SoftwareTiles>(p.x.data(), k, (int)rows, p.panel.data(), (int)k, cols, y.data(), cols,
                                            accumulate);
        for (int64_t r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c) {
            double want = 0, mag = 0;
            for (int64_t i = 0; i < k; ++i) {
              const double term = (double)bf16_to_f32(p.x[(size_t)(r * k + i)]) * p.w[(size_t)(c * k + i)];
              want += term, mag += std::abs(term);
            }
            ASSERT_NEAR(y[(size_t)(r * cols + c)], 2 * want, 2e-5 * mag)
                << rows << " rows, k " << k << ", " << cols << " columns: row " << r << ", column " << c;
          }
        for (int64_t r = 0; r < rows; r += 7) {  // a row alone gets the bits it gets in its batch
          float alone[64];
          cpu::amx::multiply<SoftwareTiles>(p.x.data() + r * k, k, 1, p.panel.data(), (int)k, cols, alone, cols,
                                            false);
          cpu::amx::multiply<SoftwareTiles>(p.x.data() + r * k, k, 1, p.panel.data(), (int)k, cols, alone, cols,
                                            true);
          ASSERT_EQ(0, std::memcmp(alone, y.data() + r * cols, (size_t)cols * sizeof(float))) << "row " << r;
        }
      }
}

// AMX is offered only where the CPU has it and the start-up check passed; elsewhere asking for it names the kernels
// the CPU has.
TEST(AmxTiles, TheKernelIsOfferedOnlyWhereItRan) {
  const std::vector<cpu::GemmKernel>& have = cpu::cpu_kernels().matmul_kernels;
  const bool offered = std::find(have.begin(), have.end(), cpu::GemmKernel::AmxBf16) != have.end();
  EXPECT_EQ(offered, cpu::amx_bf16_usable());
  if (!cpu::cpu_features().amx_bf16) {
    EXPECT_FALSE(offered);
  }
}

}  // namespace
}  // namespace kvf
