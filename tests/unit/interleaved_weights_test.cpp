// Block-format weights interleaved at load (lib/backend/cpu/interleaved_weights.h): the column kernel over them gives
// every row the bits the column kernel gives over the base format, in any batch and alone; their values, panels and
// products are the base format's bit for bit; and the CPU backend interleaves only what its kernels take.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/interleaved_weights.h"
#include "backend/cpu/packed_matmul.h"
#include "core/error.h"
#include "support/quantized_weights.h"

namespace kvf {
namespace {

constexpr DType kInterleavable[] = {DType::Q4_1, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K};

// w's rows interleaved, or an undefined tensor where this CPU's kernels take no interleaved layout.
Tensor interleaved(Backend& b, const Tensor& w) {
  if (cpu::interleaved_dtype_for(w.dtype, w.dim(0), w.dim(1)) == w.dtype) return {};
  Tensor out = b.matmul_weight(w.dtype, w.shape, w.data<uint8_t>());
  EXPECT_TRUE(cpu::dtype_is_interleaved(out.dtype)) << dtype_name(w.dtype);
  // The same bytes, rearranged; Q4_K's packed scales take a byte each.
  EXPECT_EQ(out.nbytes(), w.dtype == DType::Q4_K ? w.nbytes() / 144 * 148 : w.nbytes()) << dtype_name(w.dtype);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(InterleavedWeights, ColumnKernelGivesTheBaseFormatsBitsInAnyBatch) {
  auto b = make_cpu_backend();
  std::mt19937 rng(21);
  const int64_t m = 80;  // a task's column block of 64 (four groups) and one of 16
  for (DType t : kInterleavable) {
    const int64_t k = dtype_block_elems(t) == 256 ? 2304 : 2080;  // longer than the base kernel's chunk of 2048
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    const Tensor wi = interleaved(*b, w.t);
    if (!wi.defined()) GTEST_SKIP() << "no interleaved layout on this CPU (AVX-512 VNNI and bf16 panels)";
    for (int64_t n : {1, 2, 3, 4, 5, 6, 11, 48}) {  // one decoding row to a few-row pass's 48
      const std::vector<float> x = test::random_rows(n, k, rng);
      cpu::Int16Rows q;
      cpu::quantize_rows_int16(x.data(), n, k, q);
      std::vector<float> base(n * m), ours(n * m);
      cpu::int_dot_columns_avx512_vnni(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, q, base.data(), m);
      cpu::int_dot_interleaved_avx512_vnni(wi.dtype, wi.data<uint8_t>(), (int)m, q, ours.data(), m);
      ASSERT_TRUE(same_bits(base, ours)) << dtype_name(t) << ", " << n << " rows";
    }
  }
}

TEST(InterleavedWeights, ValuesAreTheBaseFormatsDequantization) {
  auto b = make_cpu_backend();
  std::mt19937 rng(22);
  const int64_t m = 32, k = 512;
  for (DType t : kInterleavable) {
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    const Tensor wi = interleaved(*b, w.t);
    if (!wi.defined()) GTEST_SKIP() << "no interleaved layout on this CPU";
    const size_t group_bytes = 16 * dtype_bytes(wi.dtype, k);
    for (int64_t j = 0; j < m; ++j) {
      std::vector<float> base(k), ours(k);
      cpu::weight_values(t, w.t.data<uint8_t>() + j * dtype_bytes(t, k), 0, k, base.data());
      cpu::interleaved_values(wi.dtype, wi.data<uint8_t>() + j / 16 * group_bytes, (int)(j % 16), 0, k, ours.data());
      ASSERT_TRUE(same_bits(base, ours)) << dtype_name(t) << " row " << j;
      // A later block alone.
      const int64_t k0 = k / 2;
      cpu::interleaved_values(wi.dtype, wi.data<uint8_t>() + j / 16 * group_bytes, (int)(j % 16), k0, k - k0,
                              ours.data());
      ASSERT_EQ(0, std::memcmp(ours.data(), base.data() + k0, (k - k0) * sizeof(float))) << dtype_name(t);
    }
  }
}

// Every kernel this CPU has (but avx2-int16) over enough rows for its panels, then a decoding step's rows alone.
TEST(InterleavedWeights, ProductsAreTheBaseFormatsOnEveryPath) {
  auto b = make_cpu_backend();
  std::mt19937 rng(23);
  const int64_t m = 80, k = 512;  // a panel of 64 columns and one of 16
  for (DType t : kInterleavable) {
    const test::QuantizedWeight w = test::make_quantized_weight(*b, t, m, k, rng);
    const Tensor wi = interleaved(*b, w.t);
    if (!wi.defined()) GTEST_SKIP() << "no interleaved layout on this CPU";
    const int64_t n = 60;
    const std::vector<float> x = test::random_rows(n, k, rng);
    for (cpu::GemmKernel kernel : cpu::cpu_kernels().matmul_kernels) {
      // avx2-int16 would multiply interleaved weights in f32 panels, not its integer ones; the backend never
      // interleaves for it (interleaved_dtype_for).
      if (kernel == cpu::GemmKernel::Avx2Int16) continue;
      std::vector<float> base(n * m), ours(n * m);
      cpu::packed_matmul(x.data(), n, k, w.t, base.data(), kernel);
      cpu::packed_matmul(x.data(), n, k, wi, ours.data(), kernel);
      ASSERT_TRUE(same_bits(base, ours)) << dtype_name(t) << " " << cpu::gemm_kernel_name(kernel) << " panels";
    }
    // A decoding step: each row what it is alone, and what the base format's column kernel gives it.
    const int64_t rows = 5;
    std::vector<float> step(rows * m), alone(m), base(rows * m);
    cpu::packed_matmul(x.data(), rows, k, {{&wi, step.data()}}, cpu::active_gemm_kernel(), true);
    cpu::Int16Rows q;
    cpu::quantize_rows_int16(x.data(), rows, k, q);
    cpu::int_dot_columns_avx512_vnni(t, w.t.data<uint8_t>(), dtype_bytes(t, k), (int)m, q, base.data(), m);
    ASSERT_TRUE(same_bits(step, base)) << dtype_name(t);
    for (int64_t r = 0; r < rows; ++r) {
      cpu::packed_matmul(x.data() + r * k, 1, k, wi, alone.data());
      ASSERT_EQ(0, std::memcmp(alone.data(), step.data() + r * m, m * sizeof(float))) << dtype_name(t) << " " << r;
    }
  }
}

TEST(InterleavedWeights, BackendInterleavesOnlyMatmulWeightsItsKernelsTake) {
  auto b = make_cpu_backend();
  std::mt19937 rng(24);
  const test::QuantizedWeight q8 = test::make_quantized_weight(*b, DType::Q8_0, 32, 64, rng);
  const Tensor q8i = b->matmul_weight(q8.t.dtype, q8.t.shape, q8.t.data<uint8_t>());
  if (!cpu::dtype_is_interleaved(q8i.dtype)) GTEST_SKIP() << "no interleaved layout on this CPU";
  // Rows not in sixteens and formats without the layout stay as they are.
  const test::QuantizedWeight odd = test::make_quantized_weight(*b, DType::Q8_0, 40, 64, rng);
  EXPECT_EQ(b->matmul_weight(odd.t.dtype, odd.t.shape, odd.t.data<uint8_t>()).dtype, DType::Q8_0);
  const test::QuantizedWeight q51 = test::make_quantized_weight(*b, DType::Q5_1, 32, 64, rng);
  EXPECT_EQ(b->matmul_weight(q51.t.dtype, q51.t.shape, q51.t.data<uint8_t>()).dtype, DType::Q5_1);
  // An embedding table is never interleaved: a lookup into one is refused, naming the type.
  Tensor ids = b->empty(DType::I32, {1});
  const int32_t id = 3;
  b->copy_from_host(ids, &id, sizeof id);
  Tensor out = b->empty(DType::F32, {1, 64});
  try {
    b->embedding(q8i, ids, out);
    FAIL() << "a lookup into interleaved rows was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q8_0x16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvf
