// A few activation rows times block-quantized weight rows with integer dot products (the decoding path): each
// activation row is rounded once to 8-bit integers in blocks of 32 values (one f32 scale per block), each weight
// block's small unsigned integers meet it in 8-bit multiplies with 32-bit sums (AVX-512 VNNI vpdpbusd), and the
// block scales are applied in f32 once per block. The weights are read once, compact, with no f32 copy.
//
// Accuracy: beyond f32 rounding, only the activation rounding, at most d/2 per value for a block scale
// d = max|x| / 127, so |error| <= sum over blocks of (d_b / 2) * sum |w| in the block; llama.cpp rounds the
// activations of its integer kernels the same way. Measured on the committed fixtures' short prompts (24-25 rows
// through every weight): 0.80 / 0.21 from llama.cpp's f32 logits on SmolLM2 / Qwen2.5 0.5B, against 0.19 / 0.06
// for the bf16 panels and 0.004 / 0.001 with 16-bit activations (vpdpwssd), which decoded 1.3-1.9x slower. So
// the path takes decoding steps only (packed_matmul_few_rows), where its speed counts and one row's rounding
// does not accumulate over a prompt.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace kvf::cpu {

// Activation rows in 8-bit integers, blocks of 32: x ~ q * d[block].
struct Int8Rows {
  int64_t rows = 0, k = 0;
  std::vector<int8_t> q;      // [rows, k]
  std::vector<float> d;       // [rows, k / 32]: each block's scale
  std::vector<float> sum16;   // [rows, k / 16]: d * (sum of q) over each 16 values (weights with offsets use them)
  std::vector<float> sum32;   // [rows, k / 32]: the same over each block
};

// x [rows, k] -> out (k a multiple of 32; buffers reused).
void quantize_rows_int8(const float* x, int64_t rows, int64_t k, Int8Rows& out);

// Whether this CPU has the integer kernel for weights of type t (AVX-512 VNNI; Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q4_K, Q6_K).
bool int_dot_available(DType t);

// y[r * ldy + j] = x row r . weight row j for r < x.rows, j < wrows; weight rows are whole rows of x.k values in
// type t, row_bytes apart. Each output gets the same operations whatever x.rows and wrows are.
void int_dot_rows(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int8Rows& x, float* y, int64_t ldy);

}  // namespace kvf::cpu
