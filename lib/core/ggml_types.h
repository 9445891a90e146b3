// ggml tensor types as stored in GGUF files, their block layouts, and conversion of rows to f32.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace kvf {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, I8 = 24, I16 = 25, I32 = 26, I64 = 27,
  F64 = 28, BF16 = 30,
};

const char* ggml_type_name(GgmlType t);           // "Q4_1", or "type 17" for unknown values
bool ggml_type_supported(GgmlType t);             // can be dequantized to f32 by this build
int64_t ggml_block_elems(GgmlType t);             // elements per block (1 for plain types); 0 if unknown
size_t ggml_block_bytes(GgmlType t);              // bytes per block; 0 if unknown
// Bytes of a row of n elements; throws kvf::Error if n is not a multiple of the block size or type unknown.
size_t ggml_row_bytes(GgmlType t, int64_t n);

// Converts n elements (a multiple of the block size) starting at src to f32.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);
// The tensor dtype that holds a GGUF type's data as stored, and back; false / throws for types without one.
bool dtype_of_ggml(GgmlType t, DType* out);
GgmlType ggml_type_of(DType t);

// Q4_K packs 8 six-bit scales and 8 six-bit mins into 12 bytes: sub-blocks 0..3 use the low 6 bits of bytes
// 0..3 (scales) and 4..7 (mins); sub-blocks 4..7 take their low 4 bits from bytes 8..11 and their top 2 bits
// from the spare top bits of bytes 0..7. The scale and min of sub-block j from the 12 bytes at s.
// Inline: the integer kernels call it per sub-block.
inline void q4k_scale_min(int j, const uint8_t* s, uint8_t& sc, uint8_t& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    mn = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The small integers q of one block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K or Q6_K in element order, the value of
// each being q times the block's (or sub-block's) scale, plus its min where the format has one; the offsets of
// the formats without a min (Q4_0 8, Q5_0 16, Q6_K 32) already subtracted. q holds ggml_block_elems(t) entries.
void block_quants(GgmlType t, const uint8_t* block, int* q);

// Reference quantizers (round-to-nearest as ggml's reference code), for writing test models.
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

}  // namespace kvf
