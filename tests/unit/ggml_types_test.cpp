// ggml block layouts, (de)quantization against hand-built blocks, error bounds, and bit-exact agreement with
// gguf-py (tests/fixtures/quant, made by tests/reference/make_quant_fixtures.py).
#include "support/test_values.h"
#include "core/ggml_types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/half.h"
#include "core/json_file.h"
#include "io/gguf.h"
#include "support/model_files.h"

namespace kvf {
namespace {

using test::error_of;

using ::testing::HasSubstr;

TEST(GgmlTypes, BlockLayoutsMatchGgml) {
  struct Layout {
    GgmlType type;
    const char* name;
    int64_t elems;
    size_t bytes;
  };
  const Layout layouts[] = {
      {GgmlType::F32, "F32", 1, 4},       {GgmlType::F16, "F16", 1, 2},       {GgmlType::Q4_0, "Q4_0", 32, 18},
      {GgmlType::Q4_1, "Q4_1", 32, 20},   {GgmlType::Q5_0, "Q5_0", 32, 22},   {GgmlType::Q5_1, "Q5_1", 32, 24},
      {GgmlType::Q8_0, "Q8_0", 32, 34},   {GgmlType::Q8_1, "Q8_1", 32, 36},   {GgmlType::Q2_K, "Q2_K", 256, 84},
      {GgmlType::Q3_K, "Q3_K", 256, 110}, {GgmlType::Q4_K, "Q4_K", 256, 144}, {GgmlType::Q5_K, "Q5_K", 256, 176},
      {GgmlType::Q6_K, "Q6_K", 256, 210}, {GgmlType::Q8_K, "Q8_K", 256, 292}, {GgmlType::I8, "I8", 1, 1},
      {GgmlType::I16, "I16", 1, 2},       {GgmlType::I32, "I32", 1, 4},       {GgmlType::I64, "I64", 1, 8},
      {GgmlType::F64, "F64", 1, 8},       {GgmlType::BF16, "BF16", 1, 2},
  };
  for (const Layout& l : layouts) {
    EXPECT_STREQ(ggml_type_name(l.type), l.name);
    EXPECT_EQ(ggml_block_elems(l.type), l.elems) << l.name;
    EXPECT_EQ(ggml_block_bytes(l.type), l.bytes) << l.name;
  }
  EXPECT_STREQ(ggml_type_name((GgmlType)17), "type 17");
  EXPECT_EQ(ggml_block_elems((GgmlType)17), 0);
  EXPECT_EQ(ggml_block_bytes((GgmlType)17), 0u);
}

TEST(GgmlTypes, SupportedTypes) {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                     GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K})
    EXPECT_TRUE(ggml_type_supported(t)) << ggml_type_name(t);
  for (GgmlType t : {GgmlType::Q8_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q8_K, GgmlType::I8,
                     GgmlType::I32, GgmlType::F64, (GgmlType)16})
    EXPECT_FALSE(ggml_type_supported(t)) << ggml_type_name(t);
}

TEST(GgmlTypes, RowBytes) {
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q4_1, 576), 18u * 20);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q8_0, 576), 18u * 34);
  EXPECT_EQ(ggml_row_bytes(GgmlType::F32, 576), 576u * 4);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q6_K, 512), 2u * 210);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q4_0, 0), 0u);
  EXPECT_THAT(error_of([] { ggml_row_bytes(GgmlType::Q4_K, 576); }),
              HasSubstr("576 elements of Q4_K are not a whole number of 256-element blocks"));
  EXPECT_THAT(error_of([] { ggml_row_bytes((GgmlType)99, 32); }), HasSubstr("unknown ggml type type 99"));
  EXPECT_THAT(error_of([] { ggml_row_bytes(GgmlType::F64, INT64_MAX); }), HasSubstr("overflow"));
}

// Blocks built by hand from the ggml struct definitions, with values chosen so every product is exact.
TEST(GgmlTypes, DequantizesHandBuiltBlocks) {
  float y[32];
  uint8_t q4_1[20];  // {f16 d = 0.5, f16 m = -1, qs[j] = j | (15 - j) << 4}
  const uint16_t half_05 = 0x3800, half_m1 = 0xbc00, half_2 = 0x4000, half_025 = 0x3400, half_1 = 0x3c00;
  std::memcpy(q4_1, &half_05, 2);
  std::memcpy(q4_1 + 2, &half_m1, 2);
  for (int j = 0; j < 16; ++j) q4_1[4 + j] = (uint8_t)(j | (15 - j) << 4);
  dequantize_row(GgmlType::Q4_1, q4_1, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.5f - 1) << j;
    EXPECT_EQ(y[j + 16], (15 - j) * 0.5f - 1) << j;
  }

  uint8_t q4_0[18];  // {f16 d = 2, same nibbles}: (q - 8) * d
  std::memcpy(q4_0, &half_2, 2);
  std::memcpy(q4_0 + 2, q4_1 + 4, 16);
  dequantize_row(GgmlType::Q4_0, q4_0, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 2.0f);
    EXPECT_EQ(y[j + 16], (7 - j) * 2.0f);
  }

  uint8_t q8_0[34];  // {f16 d = 0.25, qs[j] = j - 16}
  std::memcpy(q8_0, &half_025, 2);
  for (int j = 0; j < 32; ++j) q8_0[2 + j] = (uint8_t)(int8_t)(j - 16);
  dequantize_row(GgmlType::Q8_0, q8_0, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j - 16) * 0.25f);

  uint8_t q5_0[22] = {};  // {f16 d = 1, qh = bits of the odd elements, qs = 0}: (16 * odd - 16) * d
  std::memcpy(q5_0, &half_1, 2);
  const uint32_t qh = 0xAAAAAAAAu;
  std::memcpy(q5_0 + 2, &qh, 4);
  dequantize_row(GgmlType::Q5_0, q5_0, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], j % 2 ? 0.0f : -16.0f) << j;

  uint8_t q5_1[24];  // {d = 1, m = -1, same qh, qs[j] = 1 | 2 << 4}: q * d + m
  std::memcpy(q5_1, &half_1, 2);
  std::memcpy(q5_1 + 2, &half_m1, 2);
  std::memcpy(q5_1 + 4, &qh, 4);
  std::memset(q5_1 + 8, 0x21, 16);
  dequantize_row(GgmlType::Q5_1, q5_1, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (float)((j < 16 ? 1 : 2) + (j % 2 ? 16 : 0)) - 1) << j;
}

// Largest rounding error of f32 -> f16 for a value of magnitude v (normal or subnormal half).
double f16_err(double v) { return std::max(std::fabs(v) * std::ldexp(1.0, -11), std::ldexp(1.0, -25)); }

// Blocks of 32 at scales from 1e-3 to 1e3, with an all-zero and a constant block.
std::vector<float> test_data(size_t n_blocks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> x(n_blocks * 32);
  for (size_t b = 0; b < n_blocks; ++b) {
    const float scale = std::pow(10.0f, -3.0f + 6.0f * (float)b / (float)n_blocks);
    for (int j = 0; j < 32; ++j) x[b * 32 + j] = scale * normal(rng);
  }
  std::fill(x.begin(), x.begin() + 32, 0.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.75f);
  return x;
}

// dequantize(quantize(x)) stays within each format's error bound, block by block.
TEST(GgmlTypes, QuantizeDequantizeWithinBound) {
  const std::vector<float> x = test_data(256);
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1}) {
    SCOPED_TRACE(ggml_type_name(t));
    std::vector<uint8_t> q(ggml_row_bytes(t, (int64_t)x.size()));
    std::vector<float> y(x.size());
    quantize_row(t, x.data(), q.data(), (int64_t)x.size());
    dequantize_row(t, q.data(), y.data(), (int64_t)x.size());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      const float* xb = &x[b * 32];
      const double max = *std::max_element(xb, xb + 32), min = *std::min_element(xb, xb + 32);
      const double amax = std::max(std::fabs(max), std::fabs(min));
      for (int j = 0; j < 32; ++j) {
        const double v = xb[j];
        double bound = 0;
        switch (t) {
          case GgmlType::F16: bound = f16_err(v); break;
          case GgmlType::BF16: bound = std::fabs(v) * std::ldexp(1.0, -8); break;
          case GgmlType::Q8_0: bound = 0.5 * amax / 127 + 127 * f16_err(amax / 127); break;
          // The element opposite the one setting the scale can clamp from +8 to +7: a whole step.
          case GgmlType::Q4_0: bound = amax / 8 + 8 * f16_err(amax / 8); break;
          case GgmlType::Q4_1: bound = 0.5 * (max - min) / 15 + 15 * f16_err((max - min) / 15) + f16_err(min); break;
          default: break;
        }
        bound += 1e-6 * amax;  // f32 arithmetic inside the quantizer
        ASSERT_LE(std::fabs(y[b * 32 + j] - v), bound) << "block " << b << " element " << j << " x=" << v;
      }
    }
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.0f);  // the zero block stays exactly zero
    if (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::Q4_1) {
      for (int j = 32; j < 64; ++j) EXPECT_EQ(y[j], 0.75f);  // a constant block is exact where 0.75 is
    }
  }
}

TEST(GgmlTypes, UnsupportedConversionsThrow) {
  std::vector<uint8_t> buf(1024);
  float y[256];
  EXPECT_THAT(error_of([&] { dequantize_row(GgmlType::Q2_K, buf.data(), y, 256); }),
              HasSubstr("converting Q2_K to f32 is not supported"));
  EXPECT_THAT(error_of([&] { quantize_row(GgmlType::Q4_K, y, buf.data(), 256); }),
              HasSubstr("converting f32 to Q4_K is not supported"));
  EXPECT_THAT(error_of([&] { dequantize_row(GgmlType::Q4_0, buf.data(), y, 33); }),
              HasSubstr("33 elements of Q4_0 are not a whole number of 32-element blocks"));
  EXPECT_THAT(error_of([&] { dequantize_row((GgmlType)77, buf.data(), y, 1); }), HasSubstr("type 77"));
}

// --- gguf-py reference ---

struct Reference {
  std::shared_ptr<const gguf::File> file = gguf::File::open(test::fixture_path("quant/reference.gguf.fixture"));
  nlohmann::json expected;
  std::vector<float> values;
  Reference() {
    expected = read_json_file(test::fixture_path("quant/expected.json"));
    std::ifstream bin(test::fixture_path("quant/expected.f32"), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(bin)), {});
    values.resize(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
  }
};

TEST(GgmlTypes, DequantizationMatchesGgufPyBitExact) {
  const Reference ref;
  int checked = 0;
  for (const auto& [name, want] : ref.expected["tensors"].items()) {
    if (!want.contains("count")) continue;
    SCOPED_TRACE(name);
    const gguf::TensorInfo& t = ref.file->tensor(name);
    const size_t count = want["count"].get<size_t>(), offset = want["offset"].get<size_t>();
    ASSERT_EQ(t.n_elements, count);
    ASSERT_LE(offset + count, ref.values.size());
    std::vector<float> y(count);
    ref.file->dequantize_rows(t, 0, t.rows(), y.data());
    for (size_t i = 0; i < count; ++i) {
      uint32_t got, exp;
      std::memcpy(&got, &y[i], 4);
      std::memcpy(&exp, &ref.values[offset + i], 4);
      ASSERT_EQ(got, exp) << "element " << i << ": " << y[i] << " vs " << ref.values[offset + i];
    }
    ++checked;
  }
  EXPECT_EQ(checked, 11);
  float y[1024];
  EXPECT_THAT(error_of([&] { ref.file->dequantize_rows(ref.file->tensor("q2_k"), 0, 1, y); }),
              HasSubstr("tensor 'q2_k': converting Q2_K to f32 is not supported"));
}

// Our reference quantizers produce the very bytes gguf-py's do (ggml's reference algorithms).
TEST(GgmlTypes, QuantizersMatchGgufPyBytes) {
  const Reference ref;
  const gguf::TensorInfo& src = ref.file->tensor("src");
  std::vector<float> x((size_t)src.n_elements);
  ref.file->dequantize_rows(src, 0, src.rows(), x.data());
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_1"}) {
    SCOPED_TRACE(name);
    const gguf::TensorInfo& t = ref.file->tensor(name);
    std::vector<uint8_t> q(t.n_bytes);
    const int64_t row = t.ne[0];
    const size_t row_bytes = ggml_row_bytes(t.type, row);
    for (int64_t r = 0; r < t.rows(); ++r) quantize_row(t.type, x.data() + r * row, q.data() + r * row_bytes, row);
    const uint8_t* want = ref.file->tensor_data(t);
    for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(q[i], want[i]) << "byte " << i;
  }
}

}  // namespace
}  // namespace kvf
