// AVX2 + FMA kernel (compiled with -mavx2 -mfma, see lib/CMakeLists.txt), for CPUs without AVX-512 BF16: weights
// dequantized to f32 panels of 16 columns ([kc][16]), f32 activations, a micro tile of 6 rows x 16 columns.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/gemm_isa.h"

namespace kvf::cpu {
namespace {

constexpr int kCols = 16, kRows = 6;

void convert_x(const float* x, int64_t n, void* out) { std::memcpy(out, x, (size_t)n * sizeof(float)); }

void pack_panel(const float* w, int64_t ldw, int cols, int kc, void* panel) {
  auto* p = static_cast<float*>(panel);
  for (int c = 0; c < kCols; ++c)
    for (int k = 0; k < kc; ++k) p[k * kCols + c] = c < cols ? w[c * ldw + k] : 0.0f;
}

template <int R>
inline void tile(const float* x, int64_t ldx, const float* panel, int kc, float* y, int64_t ldy, bool accumulate) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 2; ++j) acc[r][j] = accumulate ? _mm256_loadu_ps(y + r * ldy + 8 * j) : _mm256_setzero_ps();
  for (int k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(panel + k * kCols), b1 = _mm256_load_ps(panel + k * kCols + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(x + r * ldx + k);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(y + r * ldy, acc[r][0]);
    _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
  }
}

template <int R>
void tile_rows(const float* x, int64_t ldx, const float* panel, int kc, int cols, float* y, int64_t ldy,
               bool accumulate) {
  if (cols == kCols) return tile<R>(x, ldx, panel, kc, y, ldy, accumulate);
  alignas(32) float scratch[kRows * kCols];  // a narrower last panel: its missing columns are never touched
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kCols; ++c) scratch[r * kCols + c] = accumulate && c < cols ? y[r * ldy + c] : 0.0f;
  tile<R>(x, ldx, panel, kc, scratch, kCols, true);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < cols; ++c) y[r * ldy + c] = scratch[r * kCols + c];
}

void multiply(const void* xv, int64_t ldx, int rows, const void* panelv, int kc, int cols, float* y, int64_t ldy,
              bool accumulate) {
  const auto* x = static_cast<const float*>(xv);
  const auto* panel = static_cast<const float*>(panelv);
  int r = 0;
  for (; r + kRows <= rows; r += kRows) tile_rows<kRows>(x + r * ldx, ldx, panel, kc, cols, y + r * ldy, ldy, accumulate);
  switch (rows - r) {
    case 5: tile_rows<5>(x + r * ldx, ldx, panel, kc, cols, y + r * ldy, ldy, accumulate); break;
    case 4: tile_rows<4>(x + r * ldx, ldx, panel, kc, cols, y + r * ldy, ldy, accumulate); break;
    case 3: tile_rows<3>(x + r * ldx, ldx, panel, kc, cols, y + r * ldy, ldy, accumulate); break;
    case 2: tile_rows<2>(x + r * ldx, ldx, panel, kc, cols, y + r * ldy, ldy, accumulate); break;
    case 1: tile_rows<1>(x + r * ldx, ldx, panel, kc, cols, y + r * ldy, ldy, accumulate); break;
    default: break;
  }
}

}  // namespace

const GemmIsa kGemmAvx2F32 = {kCols, 8, 4, convert_x, pack_panel, multiply};

}  // namespace kvf::cpu
