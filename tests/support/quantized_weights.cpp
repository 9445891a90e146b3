#include "support/quantized_weights.h"

#include <cstring>

#include "core/ggml_types.h"
#include "core/half.h"

namespace kvf::test {

QuantizedWeight make_quantized_weight(Backend& b, DType t, int64_t m, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> f((size_t)(m * k));
  for (float& v : f) v = d(rng);
  QuantizedWeight w{b.empty(t, {m, k}), std::vector<float>((size_t)(m * k))};
  std::vector<uint8_t> bytes(w.t.nbytes());
  const size_t row = dtype_bytes(t, k);
  for (int64_t r = 0; r < m; ++r) {
    uint8_t* dst = bytes.data() + r * row;
    if (t == DType::BF16 || t == DType::F16) {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = t == DType::BF16 ? f32_to_bf16(f[r * k + i]) : f32_to_f16(f[r * k + i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else if (t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q8_0) {
      quantize_row(ggml_type_of(t), f.data() + r * k, dst, k);
    } else {  // random block bytes; every 16-bit scale field made a small f16 by rewriting the whole block's scales
      for (size_t i = 0; i < row; ++i) dst[i] = (uint8_t)rng();
      const size_t block = dtype_block_bytes(t);
      const uint16_t scale = f32_to_f16(0.002f);
      for (size_t at = 0; at < row; at += block) {
        if (t == DType::Q4_K) {  // d, dmin first
          std::memcpy(dst + at, &scale, 2);
          std::memcpy(dst + at + 2, &scale, 2);
        } else if (t == DType::Q6_K) {  // d last
          std::memcpy(dst + at + block - 2, &scale, 2);
        } else {  // Q5_0 / Q5_1: d (and m) first
          std::memcpy(dst + at, &scale, 2);
          if (t == DType::Q5_1) std::memcpy(dst + at + 2, &scale, 2);
        }
      }
    }
    dequantize_row(ggml_type_of(t), dst, w.values.data() + r * k, k);
  }
  b.copy_from_host(w.t, bytes.data(), bytes.size());
  return w;
}

std::vector<float> random_rows(int64_t n, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x((size_t)(n * k));
  for (float& v : x) v = d(rng);
  return x;
}

}  // namespace kvf::test
