// A few activation rows times block-quantized weight rows with integer dot products (decoding steps and short
// passes, packed_matmul_few_rows; with AVX-512 VNNI, passes of 2-48 rows other than decoding steps, and every
// pass over interleaved weights (interleaved_weights.h), take the column kernels declared in gemm_isa.h, which round
// the activations the same way): each activation row is rounded once to 16-bit integers in blocks of 32 values
// (one f32 scale per block), each weight block's small integers (<= 8 bits) meet it in 16-bit multiplies with
// 32-bit sums (AVX-512 VNNI vpdpwssd, or AVX2 vpmaddwd), and the block scales are applied in f32 once per block. The weights are read
// once, compact, with no f32 copy.
//
// Accuracy: beyond f32 rounding, only the activation rounding, at most d/2 per value for a block scale
// d = max|x| / 32767, so |error| <= sum over blocks of (d_b / 2) * sum |w| in the block: about 2^-16 of the
// largest |x| of each block, finer than the panels' bf16 rounding (2^-9 of each value). 16 bits and not 8, because
// 8-bit activations moved the logits two orders of magnitude further from llama.cpp's f32 ones
// (docs/engine.md#int16-activations).
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace kvf::cpu {

// Activation rows in 16-bit integers, blocks of 32: x ~ q * d[block]; where the kernel table's integer kernel is
// avx2-int8 (cpu_kernels.h), also in 8-bit integers: x ~ q8 * d8[block] (what that kernel reads).
struct Int16Rows {
  int64_t rows = 0, k = 0;
  std::vector<int16_t> q;     // [rows, k]
  std::vector<float> d;       // [rows, k / 32]: each block's scale
  std::vector<float> sum32;   // [rows, k / 32]: d * (sum of q) over each block (weights with a min use it)
  std::vector<int8_t> q8;     // [rows, k], or empty
  std::vector<float> d8;      // [rows, k / 32]: each block's scale, max|x| / 127
  std::vector<float> sum8;    // [rows, k / 32]: d8 * (sum of q8) over each block
};

// x [rows, k] -> out (k a multiple of 32; buffers reused): the 16-bit rows, and the 8-bit ones where the table's
// integer kernel is avx2-int8.
void quantize_rows_int16(const float* x, int64_t rows, int64_t k, Int16Rows& out);
// The 8-bit rows alone (q8, d8, sum8): q8 = x * (127 / max|x|) to the nearest integer, ties to even, per block.
void quantize_rows_int8(const float* x, int64_t rows, int64_t k, Int16Rows& out);

// With 8-bit activations (avx2-int8) the rounding is d8/2 per value, d8 = max|x| / 127 per block: |error| <= sum over
// blocks of (d8_b / 2) * sum |w| in the block, 258x the 16-bit bound.
//
// Whether the kernel table (cpu_kernels.h) has an integer kernel for weights of type t (AVX-512 VNNI or AVX2;
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K; the interleaved types with AVX-512 VNNI).
bool int_dot_available(DType t);

// y[r * ldy + j] = x row r . weight row j for r < x.rows, j < wrows; weight rows are whole rows of x.k values in
// type t, row_bytes apart. Each output gets the same operations whatever x.rows and wrows are.
void int_dot_rows(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y, int64_t ldy);

}  // namespace kvf::cpu
