// Block-format matmul weights with sixteen rows interleaved, laid out once at load for the AVX-512 VNNI column
// kernel (int_dot_columns_avx512.cpp). Weights as the GGUF stores them make that kernel transpose every unit of
// sixteen rows on every call, which a pass of one row (decoding one sequence) pays alone; here the transpose is done
// once, so every row count takes the column kernel, a decoding step's rows included, in the same bits alone or in a
// batch. The bytes are the base format's, rearranged: resident memory stays the GGUF file's size.
//
// A group of 16 rows (output columns) holds its units of 32 values in k order. Unit layouts, for column c of the
// group and pair i (values 2i and 2i + 1 of the unit, i < 16):
//   Q8_0_X16 (544 bytes): d[16] (each column's block scale, f16), then q[16][16][2] int8: q[i][c][h] = value 2i + h.
//   Q5_0_X16 (352 bytes): d[16] (f16); fifth[16] (uint32): bit 2c + h of fifth[i] is the fifth bit of value 2i + h;
//     then nibbles[8][16][2] bytes: byte [j][c][h] holds the low four bits of value 4j + h in its low nibble and of
//     value 4j + 2 + h in its high nibble.
// So the 32 bytes at q[i] (or a nibble half of nibbles[i / 2]) widen to one register holding pair i of all sixteen
// columns, the operand of one vpdpwssd against a broadcast pair of activations.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace kvf::cpu {

constexpr int64_t kInterleavedRows = 16;

bool dtype_is_interleaved(DType t);
// Q8_0_X16 -> Q8_0; other types are their own base.
DType base_dtype(DType t);
// The interleaved type for matmul weights of type t with `rows` rows of k values where this CPU's kernels take one
// (AVX-512 VNNI, Q5_0 and Q8_0, rows a multiple of 16), else t.
DType interleaved_dtype_for(DType t, int64_t rows, int64_t k);

// rows x k weights of type base (GGUF layout) -> out in interleaved_dtype_for's layout (the same number of bytes).
void interleave_rows(DType base, const uint8_t* native, int64_t rows, int64_t k, uint8_t* out);

// Values [k0, k0 + kc) (whole units) of column c (< 16) of the interleaved group at `group`, as f32: each value
// q * d, the same bits as the base format's dequantization.
void interleaved_values(DType t, const uint8_t* group, int c, int64_t k0, int64_t kc, float* out);

}  // namespace kvf::cpu
