// Whole arrays of f16 / bf16 widened to f32: the hot loop of every stored-KV load. Each gives exactly what the
// per-element conversions in core/half.h give for every finite and infinite value.
#pragma once
#include <cstddef>

namespace kvf {

// `in` holds n little-endian 16-bit values (no alignment needed).
void f16_to_f32_array(const void* in, size_t n, float* out);
void bf16_to_f32_array(const void* in, size_t n, float* out);

// Whether none of x[0, n) is infinite or NaN: one branch-free pass over the exponent bits, so that checking every
// loaded value costs a fraction of loading it.
bool all_finite(const float* x, size_t n);

}  // namespace kvf
