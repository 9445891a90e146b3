// AVX2 + FMA kernel (its code compiled for AVX2 and FMA), for CPUs without AVX-512 BF16: weights dequantized to f32
// panels of 16 columns ([kc][16]), f32 activations, a micro tile of 6 rows x 16 columns.
#include <immintrin.h>

#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,fma")
#include "backend/cpu/transpose_avx2.h"

namespace kvf::cpu {
namespace {

constexpr int kCols = 16, kRows = 6;

// Eight columns at a time: 8 k values of each of 8 weight rows transposed into 8 panel rows (columns past `cols`
// are zeros).
void pack_panel(const float* w, int64_t ldw, int cols, int kc, void* panel) {
  auto* p = static_cast<float*>(panel);
  for (int c0 = 0; c0 < kCols; c0 += 8)
    for (int k = 0; k < kc; k += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = c0 + i < cols ? _mm256_loadu_ps(w + (c0 + i) * ldw + k) : _mm256_setzero_ps();
      transpose_8x8(r);
      for (int i = 0; i < 8; ++i) _mm256_store_ps(p + (k + i) * kCols + c0, r[i]);
    }
}

// The accumulators are named registers, not an array: GCC kept an array of them in memory and stored all twelve
// on every k step, which halved the kernel's speed (a 512-token SmolLM2 prefill 4.29 -> s of matmuls).
template <int R>
inline void tile(const float* x, int64_t ldx, const float* panel, int kc, float* y, int64_t ldy, bool accumulate) {
  static_assert(R >= 1 && R <= kRows, "tile rows");
  const auto start = [&](int r, int j) {
    return r < R && accumulate ? _mm256_loadu_ps(y + r * ldy + 8 * j) : _mm256_setzero_ps();
  };
  __m256 a00 = start(0, 0), a01 = start(0, 1), a10 = start(1, 0), a11 = start(1, 1), a20 = start(2, 0),
         a21 = start(2, 1), a30 = start(3, 0), a31 = start(3, 1), a40 = start(4, 0), a41 = start(4, 1),
         a50 = start(5, 0), a51 = start(5, 1);
  const float* x0 = x;
  for (int k = 0; k < kc; ++k, ++x0) {
    const __m256 b0 = _mm256_load_ps(panel + k * kCols), b1 = _mm256_load_ps(panel + k * kCols + 8);
    __m256 a = _mm256_broadcast_ss(x0);
    a00 = _mm256_fmadd_ps(a, b0, a00);
    a01 = _mm256_fmadd_ps(a, b1, a01);
    if constexpr (R > 1) {
      a = _mm256_broadcast_ss(x0 + ldx);
      a10 = _mm256_fmadd_ps(a, b0, a10);
      a11 = _mm256_fmadd_ps(a, b1, a11);
    }
    if constexpr (R > 2) {
      a = _mm256_broadcast_ss(x0 + 2 * ldx);
      a20 = _mm256_fmadd_ps(a, b0, a20);
      a21 = _mm256_fmadd_ps(a, b1, a21);
    }
    if constexpr (R > 3) {
      a = _mm256_broadcast_ss(x0 + 3 * ldx);
      a30 = _mm256_fmadd_ps(a, b0, a30);
      a31 = _mm256_fmadd_ps(a, b1, a31);
    }
    if constexpr (R > 4) {
      a = _mm256_broadcast_ss(x0 + 4 * ldx);
      a40 = _mm256_fmadd_ps(a, b0, a40);
      a41 = _mm256_fmadd_ps(a, b1, a41);
    }
    if constexpr (R > 5) {
      a = _mm256_broadcast_ss(x0 + 5 * ldx);
      a50 = _mm256_fmadd_ps(a, b0, a50);
      a51 = _mm256_fmadd_ps(a, b1, a51);
    }
  }
  const auto store = [&](int r, __m256 lo, __m256 hi) {
    if (r >= R) return;
    _mm256_storeu_ps(y + r * ldy, lo);
    _mm256_storeu_ps(y + r * ldy + 8, hi);
  };
  store(0, a00, a01);
  store(1, a10, a11);
  store(2, a20, a21);
  store(3, a30, a31);
  store(4, a40, a41);
  store(5, a50, a51);
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

const GemmIsa kGemmAvx2F32 = {kCols, 8, 4, nullptr, pack_panel, multiply};

}  // namespace kvf::cpu

KVF_ISA_END
