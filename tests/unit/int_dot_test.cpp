// Integer dot products of 16-bit activation rows with block-quantized weights (lib/backend/cpu/int_dot.h): the
// activation rounding stays within half a block scale, the products equal the exact product of the dequantized
// weights and the rounded activations to f32 rounding (a layout slip in any format shows as an O(1) error), and
// each output row is the same bit for bit whatever batch of rows it is computed in.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "support/quantized_weights.h"

namespace kvf {
namespace {

constexpr DType kIntegerFormats[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                     DType::Q8_0, DType::Q4_K, DType::Q6_K};

// Which activation rounding a reference takes: the kernel table's integer kernel's (8 bits where it is avx2-int8,
// else 16), 16 bits (the AVX-512 VNNI column kernel's, whatever the table runs), or 8 bits.
enum class Rounding { Table, Int16, Int8 };

// Row i of the rounded activations x times the weight values w (x.k of them), in double, and the sum of the
// products' magnitudes (the scale of f32 rounding).

std::pair<double, double> rounded_product(const cpu::Int16Rows& x, int64_t i, const float* w,
                                          Rounding rounding = Rounding::Table) {
  const bool int8 = rounding == Rounding::Int8 ||
                    (rounding == Rounding::Table && cpu::cpu_kernels().int_dot == cpu::IntDotKernel::Avx2Int8);
  double ref = 0, mag = 0;
  for (int64_t e = 0; e < x.k; ++e) {
    const int64_t at = i * x.k + e;
    const double xe = int8 ? (double)x.q8[at] * x.d8[at / 32] : (double)x.q[at] * x.d[at / 32];
    ref += xe * w[e];
    mag += std::abs(xe * w[e]);
  }
  return {ref, mag};
}

TEST(IntDot, ActivationRoundingStaysWithinHalfABlockScale) {
  std::mt19937 rng(1);
  std::vector<float> x = test::random_rows(3, 96, rng);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
  cpu::Int16Rows q;
  cpu::quantize_rows_int16(x.data(), 3, 96, q);
  ASSERT_EQ(q.q.size(), 288u);
  ASSERT_EQ(q.d.size(), 9u);
  EXPECT_EQ(q.d[1], 0.0f);
  for (int64_t b = 0; b < 9; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[b * 32 + i]));
    const float inv = amax > 0 ? 32767.0f / amax : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int qi = q.q[b * 32 + i];
      sum += qi;
      // The rounding every kernel assumes (the SIMD quantizer's included): to the nearest integer, ties to even.
      ASSERT_EQ(qi, (int)std::lrint(x[b * 32 + i] * inv)) << "block " << b << " value " << i;
      ASSERT_LE(std::abs(x[b * 32 + i] - qi * q.d[b]), q.d[b] * 0.5f * 1.0001f) << "block " << b << " value " << i;
    }
    EXPECT_EQ(q.d[b], amax / 32767.0f);
    EXPECT_EQ(q.sum32[b], q.d[b] * (float)sum);
  }
  EXPECT_THROW(cpu::quantize_rows_int16(x.data(), 1, 40, q), Error);
}

TEST(IntDot, Int8RoundingStaysWithinHalfABlockScale) {
  std::mt19937 rng(2);
  std::vector<float> x = test::random_rows(3, 96, rng);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
  cpu::Int16Rows q;
  cpu::quantize_rows_int8(x.data(), 3, 96, q);
  ASSERT_EQ(q.q8.size(), 288u);
  ASSERT_EQ(q.d8.size(), 9u);
  EXPECT_EQ(q.d8[1], 0.0f);
  for (int64_t b = 0; b < 9; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[b * 32 + i]));
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int qi = q.q8[b * 32 + i];
      sum += qi;
      ASSERT_EQ(qi, (int)std::lrint(x[b * 32 + i] * inv)) << "block " << b << " value " << i;
      ASSERT_LE(std::abs(qi), 127);
      ASSERT_LE(std::abs(x[b * 32 + i] - qi * q.d8[b]), q.d8[b] * 0.5f * 1.0001f) << "block " << b << " value " << i;
    }
    EXPECT_EQ(q.d8[b], amax / 127.0f);
    EXPECT_EQ(q.sum8[b], q.d8[b] * (float)sum);
  }
  EXPECT_THROW(cpu::quantize_rows_int8(x.data(), 1, 40, q), Error);
}

// The 8-bit kernel (avx2-int8) on any AVX2 CPU, whatever the table chose: the exact product of the dequantized
// weights and the 8-bit activations to f32 rounding, and within the stated bound of the f32 product of the
// unrounded activations: |y - x.w| <= sum over blocks of (d8 / 2) * sum |w| in the block (int_dot.h).
TEST(IntDot, Int8KernelIsWithinItsBoundOfTheF32Product) {
  if (!cpu::cpu_features().avx2_fma) GTEST_SKIP() << "this CPU has no AVX2";
  auto b = make_cpu_backend();
  std::mt19937 rng(13);
  const int64_t n = 6, m = 21;
  for (DType t : kIntegerFormats) {
    const int64_t k = dtype_block_elems(t) == 256 ? 768 : 800;
    const std::vector<float> x = test::random_rows(n, k, rng);
    cpu::Int16Rows q;
    cpu::quantize_rows_int8(x.data(), n, k, q);
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    std::vector<float> y(n * m);
    cpu::int_dot_rows_avx2_int8(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, q, y.data(), m);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const float* wj = &w.values[j * k];
        const auto [ref, mag] = rounded_product(q, i, wj, Rounding::Int8);
        ASSERT_NEAR(y[i * m + j], ref, 2e-6 * mag + 1e-30) << dtype_name(t) << " row " << i << " column " << j;
        double exact = 0, bound = 0;
        for (int64_t e = 0; e < k; ++e) {
          exact += (double)x[i * k + e] * wj[e];
          bound += 0.5 * q.d8[(i * k + e) / 32] * std::abs(wj[e]);
        }
        ASSERT_NEAR(y[i * m + j], exact, bound * 1.0001 + 2e-6 * mag + 1e-30)
            << dtype_name(t) << " row " << i << " column " << j;
      }
  }
}

TEST(IntDot, EqualsTheProductOfTheDequantizedWeightsAndRoundedActivations) {
  auto b = make_cpu_backend();
  std::mt19937 rng(11);
  // More rows than one AVX2 pass takes (4), columns in two groups of 16 and a partial one (AVX-512), and for the
  // formats with blocks of 32 a row that ends in a partial chunk of 256 values with an odd number of blocks.
  const int64_t n = 11, m = 37;
  for (DType t : kIntegerFormats) {
    if (!cpu::int_dot_available(t)) GTEST_SKIP() << "this CPU has no integer dot-product kernel (AVX-512 VNNI or AVX2)";
    const int64_t k = dtype_block_elems(t) == 256 ? 768 : 800;
    const std::vector<float> x = test::random_rows(n, k, rng);
    cpu::Int16Rows q;
    cpu::quantize_rows_int16(x.data(), n, k, q);
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    std::vector<float> y(n * m);
    cpu::int_dot_rows(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, q, y.data(), m);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const auto [ref, mag] = rounded_product(q, i, &w.values[j * k]);
        ASSERT_NEAR(y[i * m + j], ref, 2e-6 * mag + 1e-30) << dtype_name(t) << " row " << i << " column " << j;
      }
  }
}

TEST(IntDot, EachRowIsTheSameWhateverItsBatch) {
  auto b = make_cpu_backend();
  std::mt19937 rng(12);
  const int64_t k = 512, m = 9;
  const int64_t n = 11;  // a full pass of 8 rows and a partial one
  const std::vector<float> x = test::random_rows(n, k, rng);
  for (DType t : kIntegerFormats) {
    if (!cpu::int_dot_available(t)) GTEST_SKIP() << "this CPU has no integer dot-product kernel (AVX-512 VNNI or AVX2)";
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    cpu::Int16Rows all, one;
    cpu::quantize_rows_int16(x.data(), n, k, all);
    std::vector<float> together(n * m), alone(m);
    cpu::int_dot_rows(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, all, together.data(), m);
    for (int64_t i = 0; i < n; ++i) {
      cpu::quantize_rows_int16(x.data() + i * k, 1, k, one);
      cpu::int_dot_rows(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, one, alone.data(), m);
      ASSERT_EQ(0, std::memcmp(alone.data(), together.data() + i * m, m * sizeof(float))) << dtype_name(t) << " " << i;
    }
  }
}

// The column kernel of passes of a few dozen rows (AVX-512 VNNI): the same product, to f32 rounding, over rows
// longer than its chunk of 2048 values and columns in groups of sixteen and a partial one; and each row the same
// bits in any batch, a batch of one included.
TEST(IntDot, ColumnKernelEqualsTheProductWhateverTheBatch) {
  if (!cpu::cpu_features().avx512_vnni) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  auto b = make_cpu_backend();
  std::mt19937 rng(14);
  const int64_t n = 11, m = 37;
  for (DType t : kIntegerFormats) {
    const int64_t k = dtype_block_elems(t) == 256 ? 2304 : 2080;
    const std::vector<float> x = test::random_rows(n, k, rng);
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    cpu::Int16Rows all, some;
    cpu::quantize_rows_int16(x.data(), n, k, all);
    std::vector<float> y(n * m);
    cpu::int_dot_columns_avx512_vnni(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, all, y.data(), m);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const auto [ref, mag] = rounded_product(all, i, &w.values[j * k], Rounding::Int16);
        ASSERT_NEAR(y[i * m + j], ref, 2e-6 * mag + 1e-30) << dtype_name(t) << " row " << i << " column " << j;
      }
    for (auto [first, rows] : {std::pair<int64_t, int64_t>{3, 2}, {7, 1}}) {
      cpu::quantize_rows_int16(x.data() + first * k, rows, k, some);
      std::vector<float> part(rows * m);
      cpu::int_dot_columns_avx512_vnni(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, some, part.data(), m);
      ASSERT_EQ(0, std::memcmp(part.data(), y.data() + first * m, part.size() * sizeof(float)))
          << dtype_name(t) << " rows " << first << "+" << rows;
    }
  }
}

}  // namespace
}  // namespace kvf
