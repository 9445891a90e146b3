// Compact-weight matmuls (lib/backend/cpu/packed_matmul.h) with every kernel this CPU runs and every weight format:
// close to the f32 product of the dequantized weights, and each output row bit-identical whatever batch (of more
// rows than the few-rows path takes, cpu::packed_matmul_few_rows) and column block it is computed in. The SIMD
// dequantization equals the reference bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/packed_matmul.h"
#include "core/ggml_types.h"
#include "core/half.h"
#include "support/quantized_weights.h"

namespace kvf {
namespace {

using cpu::GemmKernel;

constexpr DType kFormats[] = {DType::BF16, DType::F16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                              DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q6_K};

using Weight = test::QuantizedWeight;

// The most that rounding the activations x[0, k) to 16-bit integers in blocks of 32 (int_dot.h) moves their
// product with the weights w[0, k): half a block scale per value (max |x| / 32767); with 8 bits (max |x| / 127)
// where int8.
double int16_rounding_bound(const float* x, const float* w, int64_t k, bool int8 = false) {
  double bound = 0;
  for (int64_t e = 0; e < k; ++e) {
    float amax = 0;
    for (int v = 0; v < 32; ++v) amax = std::max(amax, std::abs(x[e / 32 * 32 + v]));
    bound += std::abs((double)w[e]) * amax / (int8 ? 254 : 65534);
  }
  return bound;
}

TEST(PackedMatmul, EveryKernelAndFormatIsCloseToTheF32Product) {
  auto b = make_cpu_backend();
  std::mt19937 rng(7);
  const int64_t n = 53, k = 512, m = 100;  // past every few-rows limit; a partial row tile and column panel
  const std::vector<float> x = test::random_rows(n, k, rng);
  for (DType t : kFormats) {
    const Weight w = test::make_quantized_weight(*b, t, m, k, rng);
    for (GemmKernel kernel : cpu::cpu_kernels().matmul_kernels) {
      ASSERT_GT(n, cpu::packed_matmul_few_rows(t, k, kernel)) << "rows the panels take";
      const bool integer = kernel == GemmKernel::Avx2Int16 && cpu::int_dot_available(t);
      std::vector<float> y((size_t)(n * m));
      cpu::packed_matmul(x.data(), n, k, w.t, y.data(), kernel);
      double err = 0, ref_sq = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double ref = 0, mag = 0;
          for (int64_t t2 = 0; t2 < k; ++t2) {
            ref += (double)x[i * k + t2] * w.values[j * k + t2];
            mag += std::abs((double)x[i * k + t2] * w.values[j * k + t2]);
          }
          err += (y[i * m + j] - ref) * (y[i * m + j] - ref);
          ref_sq += ref * ref;
          if (integer) {
            ASSERT_NEAR(y[i * m + j], ref, 2e-6 * mag + int16_rounding_bound(&x[i * k], &w.values[j * k], k))
                << dtype_name(t) << " " << i << "," << j;
          }
        }
      // bf16 rounding of activations and weights: relative error per product ~2^-9; 16-bit activations: ~2^-16
      // of each block's largest; f32 panels: float rounding.
      const bool bf16 = kernel == GemmKernel::Avx512Bf16 || kernel == GemmKernel::AmxBf16;
      const double limit = bf16 ? 1e-4 : integer ? 2e-9 : 1e-10;
      EXPECT_LT(err / ref_sq, limit) << dtype_name(t) << " " << cpu::gemm_kernel_name(kernel);
    }
  }
}

TEST(PackedMatmul, ARowsResultDoesNotDependOnItsBatch) {
  auto b = make_cpu_backend();
  std::mt19937 rng(11);
  const int64_t k = 768, m = 200;
  const int64_t rows = 110;
  const std::vector<float> x = test::random_rows(rows, k, rng);
  for (DType t : {DType::Q4_1, DType::Q8_0, DType::BF16}) {
    const Weight w = test::make_quantized_weight(*b, t, m, k, rng);
    for (GemmKernel kernel : cpu::cpu_kernels().matmul_kernels) {
      const int64_t few = cpu::packed_matmul_few_rows(t, k, kernel);
      std::vector<float> all((size_t)(rows * m));
      cpu::packed_matmul(x.data(), rows, k, w.t, all.data(), kernel);
      for (int64_t first : {0, 5, 33, 60})
        for (int64_t n : {few + 1, few + 2, few + 3, few + 6}) {
          if (first + n > rows) continue;
          std::vector<float> part((size_t)(n * m));
          cpu::packed_matmul(x.data() + first * k, n, k, w.t, part.data(), kernel);
          ASSERT_EQ(0, std::memcmp(part.data(), all.data() + first * m, part.size() * sizeof(float)))
              << dtype_name(t) << " " << cpu::gemm_kernel_name(kernel) << " rows " << first << "+" << n;
        }
      // The same rows against the first 37 weight rows only: a narrower last panel leaves them unchanged too.
      Tensor narrow = w.t.rows(0, 37);
      std::vector<float> y((size_t)(rows * 37));
      cpu::packed_matmul(x.data(), rows, k, narrow, y.data(), kernel);
      for (int64_t i = 0; i < rows; ++i)
        ASSERT_EQ(0, std::memcmp(y.data() + i * 37, all.data() + i * m, 37 * sizeof(float)))
            << dtype_name(t) << " " << cpu::gemm_kernel_name(kernel) << " row " << i;
    }
  }
}

// A product wide enough that a task packs several panels at a time and tall enough that rows pass them in more than
// one slab: each column is as the first 37 columns alone give it (one narrow panel), and the last, narrower group
// is copied out whole.
TEST(PackedMatmul, WideProductsEqualTheirColumnsAlone) {
  auto b = make_cpu_backend();
  std::mt19937 rng(19);
  const int64_t k = 512, m = 1100, rows = 230;
  const std::vector<float> x = test::random_rows(rows, k, rng);
  for (DType t : {DType::Q4_1, DType::BF16}) {
    const Weight w = test::make_quantized_weight(*b, t, m, k, rng);
    for (GemmKernel kernel : cpu::cpu_kernels().matmul_kernels) {
      std::vector<float> all((size_t)(rows * m));
      cpu::packed_matmul(x.data(), rows, k, w.t, all.data(), kernel);
      for (int64_t c0 : {0, 37, 500, 1063}) {
        Tensor slice = w.t.rows(c0, 37);
        std::vector<float> y((size_t)(rows * 37));
        cpu::packed_matmul(x.data(), rows, k, slice, y.data(), kernel);
        for (int64_t i = 0; i < rows; ++i)
          ASSERT_EQ(0, std::memcmp(y.data() + i * 37, all.data() + i * m + c0, 37 * sizeof(float)))
              << dtype_name(t) << " " << cpu::gemm_kernel_name(kernel) << " columns " << c0 << "+37, row " << i;
      }
    }
  }
}

// Few rows: block formats in integer dot products where the CPU has them (within the activation rounding, half a
// block scale per value, 16 or 8 bits: int_dot.h), bf16 weights with bf16 activations where it has AVX-512 BF16 (within the
// activations' bf16 rounding, 2^-9 of each), f32 dot products of the dequantized weights otherwise. Each row alone
// (a decoding step's rule) gets the bits it gets in a call of its own; a plain pass of several rows may take
// another kernel (AVX-512 VNNI: sixteen weight rows at a time), within the same bounds.
TEST(PackedMatmul, FewRowsAreCloseToTheProductWhateverTheirBatch) {
  auto b = make_cpu_backend();
  std::mt19937 rng(5);
  const int64_t k = 768, m = 70;
  const std::vector<float> x = test::random_rows(4, k, rng);
  for (DType t : kFormats) {
    const Weight w = test::make_quantized_weight(*b, t, m, k, rng);
    const bool integer = cpu::int_dot_available(t);
    const bool bf16 = t == DType::BF16 && cpu::cpu_kernels().bf16_dots;
    std::vector<float> four(4 * m), alone(4 * m), one(m);
    cpu::packed_matmul(x.data(), 4, k, w.t, four.data());
    cpu::packed_matmul(x.data(), 4, k, {{&w.t, alone.data()}}, cpu::active_gemm_kernel(), /*each_row_alone=*/true);
    cpu::packed_matmul(x.data() + 3 * k, 1, k, w.t, one.data());
    EXPECT_EQ(0, std::memcmp(one.data(), alone.data() + 3 * m, one.size() * sizeof(float))) << dtype_name(t);
    for (const std::vector<float>* y : {&four, &alone})
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double ref = 0, mag = 0;
          for (int64_t e = 0; e < k; ++e) {
            ref += (double)x[i * k + e] * w.values[j * k + e];
            mag += std::abs((double)x[i * k + e] * w.values[j * k + e]);
          }
          const bool int8 = cpu::cpu_kernels().int_dot == cpu::IntDotKernel::Avx2Int8;  // 8-bit activations
          const double activation_rounding = integer ? int16_rounding_bound(&x[i * k], &w.values[j * k], k, int8)
                                             : bf16  ? mag / 512
                                                     : 0;
          ASSERT_NEAR((*y)[i * m + j], ref, 2e-6 * mag + activation_rounding) << dtype_name(t) << " " << i << "," << j;
        }
  }
}

TEST(PackedMatmul, SimdDequantizationEqualsTheReference) {
  auto b = make_cpu_backend();
  std::mt19937 rng(9);
  for (DType t : kFormats) {
    const int64_t k = 1024;
    const Weight w = test::make_quantized_weight(*b, t, 3, k, rng);
    std::vector<float> got(k);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t k0 : {int64_t{0}, int64_t{256}}) {
        cpu::weight_values(t, w.t.data<uint8_t>() + r * dtype_bytes(t, k), k0, k - k0, got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), w.values.data() + r * k + k0, (size_t)(k - k0) * sizeof(float)))
            << dtype_name(t) << " row " << r << " from " << k0;
      }
  }
}

// Block formats decoded straight into bf16 panels give the panel that packing their f32 values gives, word for
// word: a partial last panel, panels past the first in k, and the k-quants' sub-blocks and scales at every offset.
TEST(PackedMatmul, QuantizedPanelsEqualPackedValues) {
  if (!cpu::cpu_features().avx512_bf16) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  auto b = make_cpu_backend();
  std::mt19937 rng(17);
  const int64_t k = 768, m = 64;
  int checked = 0;
  for (DType t : kFormats) {
    if (!cpu::pack_quant_panel_bf16_supports(t)) continue;
    const Weight w = test::make_quantized_weight(*b, t, m, k, rng);
    const size_t row_bytes = dtype_bytes(t, k);
    const uint8_t* rows[64];
    for (int c = 0; c < m; ++c) rows[c] = w.t.data<uint8_t>() + c * row_bytes;
    for (int cols : {64, 37, 1})
      for (int64_t k0 : {int64_t{0}, int64_t{256}, int64_t{512}}) {
        alignas(64) uint16_t direct[64 * 256], packed[64 * 256];
        std::memset(direct, 0xAB, sizeof direct);
        cpu::pack_quant_panel_bf16(t, rows, cols, k0, 256, direct);
        cpu::kGemmAvx512Bf16.pack_panel(w.values.data() + k0, k, cols, 256, packed);
        ASSERT_EQ(0, std::memcmp(direct, packed, sizeof direct)) << dtype_name(t) << " cols " << cols << " k0 " << k0;
      }
    ++checked;
  }
  EXPECT_EQ(checked, 5) << "Q4_0, Q4_1, Q8_0, Q4_K and Q6_K decode straight into panels";
}

TEST(PackedMatmul, ManyProductsEqualSeparateCalls) {
  auto b = make_cpu_backend();
  std::mt19937 rng(13);
  const int64_t k = 256;
  // Block formats and a bf16 weight: with the 16-bit integer kernel the products take two kinds of panels.
  const Weight wq = test::make_quantized_weight(*b, DType::Q4_1, 192, k, rng),
               wk = test::make_quantized_weight(*b, DType::Q8_0, 64, k, rng),
               wv = test::make_quantized_weight(*b, DType::Q4_K, 100, k, rng),
               wb = test::make_quantized_weight(*b, DType::BF16, 48, k, rng);
  for (int64_t n : {3, 40, 60}) {  // the few-rows paths and the panels
    const std::vector<float> xv = test::random_rows(n, k, rng);
    Tensor x = b->empty(DType::F32, {n, k});
    b->copy_from_host(x, xv.data(), xv.size() * sizeof(float));
    std::vector<Tensor> together, apart;
    for (const Weight* w : {&wq, &wk, &wv, &wb}) {
      together.push_back(b->empty(DType::F32, {n, w->t.dim(0)}));
      apart.push_back(b->empty(DType::F32, {n, w->t.dim(0)}));
    }
    b->matmul_nt_many(x, {&wq.t, &wk.t, &wv.t, &wb.t}, {&together[0], &together[1], &together[2], &together[3]});
    b->matmul_nt(x, wq.t, apart[0]);
    b->matmul_nt(x, wk.t, apart[1]);
    b->matmul_nt(x, wv.t, apart[2]);
    b->matmul_nt(x, wb.t, apart[3]);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(0, std::memcmp(together[i].data<float>(), apart[i].data<float>(), apart[i].nbytes())) << n << " " << i;
  }
}

TEST(PackedMatmul, BackendTakesCompactWeightsAndEmbeddingTables) {
  auto b = make_cpu_backend();
  std::mt19937 rng(3);
  const Weight w = test::make_quantized_weight(*b, DType::Q4_1, 50, 64, rng);
  EXPECT_TRUE(b->accepts_weights(DType::Q4_1, 64));
  EXPECT_FALSE(b->accepts_weights(DType::BF16, 20));  // rows the kernels cannot take stay f32
  Tensor ids = b->empty(DType::I32, {3});
  const int32_t id_values[] = {49, 0, 17};
  b->copy_from_host(ids, id_values, sizeof id_values);
  Tensor out = b->empty(DType::F32, {3, 64});
  b->embedding(w.t, ids, out);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 64; ++j) ASSERT_EQ(out.data<float>()[i * 64 + j], w.values[id_values[i] * 64 + j]);
  Tensor x = b->empty(DType::F32, {4, 64}), y = b->empty(DType::F32, {4, 50});
  const std::vector<float> xv = test::random_rows(4, 64, rng);
  b->copy_from_host(x, xv.data(), xv.size() * 4);
  b->matmul_nt(x, w.t, y);
  std::vector<float> direct(4 * 50);
  cpu::packed_matmul(xv.data(), 4, 64, w.t, direct.data());
  EXPECT_EQ(0, std::memcmp(direct.data(), y.data<float>(), direct.size() * 4));
}

}  // namespace
}  // namespace kvf
