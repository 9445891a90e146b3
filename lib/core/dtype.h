// Element types of tensors that live in backend memory. Besides plain element types, a tensor can hold weights in
// a ggml block format exactly as a GGUF file stores them (a row of k values is k / block_elems blocks of
// block_bytes each); only matmul weights and embedding tables take those. The *_X16 types hold their base
// format's blocks (Q4_K's with its scales unpacked), sixteen rows interleaved: the CPU backend's layout for
// matmul weights only (lib/backend/cpu/interleaved_weights.h); their rows are not contiguous, so they are read
// 16 rows at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvf {

enum class DType : uint8_t {
  F32, F16, BF16, I8, I32, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K,
  Q4_1_X16, Q5_0_X16, Q8_0_X16, Q4_K_X16, Q6_K_X16
};

// Values per block: 1 for plain types, 32 for the *_0 / *_1 formats, 256 for the K formats.
inline int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: return 32;
    case DType::Q4_1_X16: case DType::Q5_0_X16: case DType::Q8_0_X16: return 32;
    case DType::Q4_K_X16: case DType::Q6_K_X16: return 256;
    case DType::Q4_K: case DType::Q6_K: return 256;
    default: return 1;
  }
}

// Bytes per block (the element size for plain types).
inline size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I8: return 1;
    case DType::I32: return 4;
    case DType::Q4_0: return 18;
    case DType::Q4_1: return 20;
    case DType::Q5_0: return 22;
    case DType::Q5_1: return 24;
    case DType::Q8_0: return 34;
    case DType::Q4_K: return 144;
    case DType::Q6_K: return 210;
    case DType::Q4_1_X16: return 20;
    case DType::Q5_0_X16: return 22;
    case DType::Q8_0_X16: return 34;
    case DType::Q4_K_X16: return 148;  // the 6-bit scales and mins unpacked to bytes: 4 more per block
    case DType::Q6_K_X16: return 210;
  }
  return 0;
}

inline bool dtype_is_block(DType t) { return dtype_block_elems(t) > 1; }

// Bytes of one element of a plain type; block formats have none (use dtype_block_bytes).
inline size_t dtype_size(DType t) { return dtype_is_block(t) ? 0 : dtype_block_bytes(t); }

// Bytes of n consecutive values (n a multiple of the block size).
inline size_t dtype_bytes(DType t, int64_t n) { return (size_t)(n / dtype_block_elems(t)) * dtype_block_bytes(t); }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "int8";
    case DType::I32: return "i32";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_1: return "q4_1";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::Q8_0: return "q8_0";
    case DType::Q4_K: return "q4_k";
    case DType::Q6_K: return "q6_k";
    case DType::Q4_1_X16: return "q4_1x16";
    case DType::Q5_0_X16: return "q5_0x16";
    case DType::Q8_0_X16: return "q8_0x16";
    case DType::Q4_K_X16: return "q4_kx16";
    case DType::Q6_K_X16: return "q6_kx16";
  }
  return "?";
}

}  // namespace kvf
