// y[n, m] = x[n, k] . w[m, k]^T for weights kept compact in memory (bf16, f16 or a ggml block format as the GGUF
// stores it): the weights are dequantized panel by panel into the active kernel's form (cpu_features.h) while
// they are multiplied, so they are never held in f32.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "core/tensor.h"

namespace kvf::cpu {

// Row lengths (k) the active kernel takes are multiples of this.
int64_t packed_matmul_k_step();

// Up to this many rows (decoding) each weight row is read once and dotted with every row, with no panel to pack: in
// integer dot products where the CPU has them (int_dot.h says why only decoding), else dequantized to f32 while it sits
// in L1. A row's result depends on which of the two paths computed it.
constexpr int64_t kFewRowsMatmul = 4;

// One input times several weights (y_i[n, m_i] = x . w_i^T, e.g. Q, K and V): the input is converted once and
// one parallel loop covers every product's column blocks. Each y_i is as a separate call would give it.
struct MatmulProduct {
  const Tensor* w;
  float* y;
};
void packed_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products,
                   GemmKernel kernel);
void packed_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products);

// With `kernel` (available on this CPU), or the active one.
void packed_matmul(const float* x, int64_t n, int64_t k, const Tensor& w, float* y, GemmKernel kernel);
void packed_matmul(const float* x, int64_t n, int64_t k, const Tensor& w, float* y);

// Values [k0, k0 + kc) of one row of a weight of type t (f32, bf16, f16 or a block format; k0 and kc whole blocks)
// as f32.
void weight_values(DType t, const uint8_t* row, int64_t k0, int64_t kc, float* out);

}  // namespace kvf::cpu
