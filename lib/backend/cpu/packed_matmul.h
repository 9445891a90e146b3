// y[n, m] = x[n, k] . w[m, k]^T for weights kept compact in memory (bf16, f16 or a ggml block format as the GGUF
// stores it): the weights are dequantized panel by panel into the active kernel's form (cpu_kernels.h) while
// they are multiplied, so they are never held in f32.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "core/tensor.h"

namespace kvf::cpu {

// Row lengths (k) the active kernel takes are multiples of this.
int64_t packed_matmul_k_step();

// Up to this many rows (decoding, short passes) of weights of type t with rows of k values, no panel is packed:
// block formats meet the rows in integer dot products where the CPU has them (int_dot.h): up to 48 rows with
// AVX-512 VNNI (one row, and every row of a decoding step, weight row by weight row; else sixteen weight rows at a
// time, shared by all rows; weights interleaved at load, interleaved_weights.h, sixteen at a time for any rows),
// 12 on AVX2 where the many-row kernel is avx2-int16, 16 where it is avx2; bf16 weights up to 8 rows in bf16 dot
// products with AVX-512 BF16; else 4 (each weight row dequantized to f32 in L1). The measurements behind each
// limit: docs/engine.md#few-rows. Several products take the smallest of their limits.
// A row's result depends on which path computed it, so with each_row_alone (packed_matmul below) every row takes
// the one-row path.
int64_t packed_matmul_few_rows(DType t, int64_t k, GemmKernel kernel = active_gemm_kernel());

// One input times several weights (y_i[n, m_i] = x . w_i^T, e.g. Q, K and V): the input is converted once and
// one parallel loop covers every product's column blocks. Each y_i is as a separate call would give it. With
// each_row_alone, each row of y is also what a call with that row alone gives (the few-row path for any n: the
// rows of a decoding step, Backend::set_rows_alone).
struct MatmulProduct {
  const Tensor* w;
  float* y;
};
void packed_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products,
                   GemmKernel kernel, bool each_row_alone = false);
void packed_matmul(const float* x, int64_t n, int64_t k, const std::vector<MatmulProduct>& products);

// With `kernel` (available on this CPU), or the active one.
void packed_matmul(const float* x, int64_t n, int64_t k, const Tensor& w, float* y, GemmKernel kernel);
void packed_matmul(const float* x, int64_t n, int64_t k, const Tensor& w, float* y);

// Values [k0, k0 + kc) of one row of a weight of type t (f32, bf16, f16 or a block format; k0 and kc whole blocks)
// as f32.
void weight_values(DType t, const uint8_t* row, int64_t k0, int64_t kc, float* out);

}  // namespace kvf::cpu
