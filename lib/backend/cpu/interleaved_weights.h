// Block-format matmul weights with sixteen rows interleaved, laid out once at load for the AVX-512 VNNI column
// kernel (int_dot_columns_avx512.cpp). Weights as the GGUF stores them make that kernel transpose every unit of
// sixteen rows on every call, which a pass of one row (decoding one sequence) pays alone; here the transpose is done
// once, so every row count takes the column kernel, a decoding step's rows included, in the same bits alone or in a
// batch. The bytes are the base format's, rearranged (Q4_K's packed 6-bit scales take a byte each: 148 bytes a
// block against 144), so resident memory stays about the GGUF file's size.
//
// A group of 16 rows (output columns) holds, for each block of the base format in k order, the block's header
// fields (each field's elements in turn, the sixteen columns' values side by side), then its units of 32 values:
//   Q8_0_X16, Q5_0_X16: d[16] (f16);  Q4_1_X16: d[16], m[16] (f16);
//   Q4_K_X16: d[16], dmin[16] (f16), sc[8][16], mn[8][16] (u8, sub-block j's six-bit scale and min);
//   Q6_K_X16: d[16] (f16), sc[16][16] (i8, the scale of values 16s .. 16s + 15 of the block).
// A unit's pair i (its values 2i and 2i + 1) of all sixteen columns sits in 32 values ordered 2c + h (column c,
// value 2i + h): Q8_0_X16 stores them as 32 int8 per pair; the others store u = q + offset (offset 16 for Q5_0, 32
// for Q6_K, 0 for Q4_1 and Q4_K) as bit planes, one uint32 per pair for each bit above the fourth (Q5_0: one
// plane, Q6_K: two), then nibbles[8][32]: byte [j][2c + h] holds u's low four bits of value 4j + h in its low
// nibble and of value 4j + 2 + h in its high nibble. So one load widens to a register holding pair i of all
// sixteen columns: the operand of one vpdpwssd against a broadcast pair of activations.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace kvf::cpu {

constexpr int64_t kInterleavedRows = 16;

bool dtype_is_interleaved(DType t);
// The interleaved type for matmul weights of type t with `rows` rows of k values where this CPU's kernels take one
// (AVX-512 VNNI with the bf16 panels active; Q4_1, Q5_0, Q8_0, Q4_K and Q6_K; rows a multiple of 16), else t.
DType interleaved_dtype_for(DType t, int64_t rows, int64_t k);

// rows x k weights of type base (GGUF layout) -> out in the layout of interleaved_dtype_for(base, ...) (its
// dtype_bytes(t, rows * k) bytes).
void interleave_rows(DType base, const uint8_t* native, int64_t rows, int64_t k, uint8_t* out);

// Values [k0, k0 + kc) (whole blocks) of column c (< 16) of the interleaved group at `group`,
// as f32: the same bits as the base format's dequantization (weight_values).
void interleaved_values(DType t, const uint8_t* group, int c, int64_t k0, int64_t kc, float* out);

}  // namespace kvf::cpu
