// Weight matrices in every compact format the CPU backend keeps (bf16, f16, ggml blocks), with their values as
// f32, and activation rows, for the matmul kernel tests.
#pragma once
#include <random>
#include <vector>

#include "backend/backend.h"

namespace kvf::test {

struct QuantizedWeight {
  Tensor t;
  std::vector<float> values;  // [m, k]: what t's rows dequantize to
};

// A weight [m, k] in `t`: random values rounded to t, or (formats without a quantizer here) random blocks whose
// scales are rewritten to a small f16.
QuantizedWeight make_quantized_weight(Backend& b, DType t, int64_t m, int64_t k, std::mt19937& rng);

// n rows of k activations drawn from N(0, 1).
std::vector<float> random_rows(int64_t n, int64_t k, std::mt19937& rng);

}  // namespace kvf::test
