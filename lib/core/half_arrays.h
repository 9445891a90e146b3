// Whole arrays of f16 / bf16 widened to f32: the hot loop of every stored-KV load. Each gives exactly what the
// per-element conversions in core/half.h give for every finite and infinite value.
#pragma once
#include <cstddef>

namespace kvf {

// `in` holds n little-endian 16-bit values (no alignment needed).
void f16_to_f32_array(const void* in, size_t n, float* out);
void bf16_to_f32_array(const void* in, size_t n, float* out);

}  // namespace kvf
