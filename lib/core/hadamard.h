// The two pieces of the rotated low-bit KV codec (core/low_bit_kv.h with `rotate` and nf V levels) that
// compress/kv_quantizers' study shares: the normalized Walsh-Hadamard rotation of each head's vector, and the
// normal-quantile (nf) levels with their nearest-level rounding.
#pragma once
#include <cstdint>
#include <vector>

namespace kvf {

// In place: each of the width / head_dim vectors of head_dim values (a power of 2) of each row times
// H / sqrt(head_dim) (with signs: H D / sqrt(head_dim), D the fixed signs of kv_hadamard_sign), and the inverse.
// H / sqrt(n) is orthonormal and its own inverse: the rotation costs no stored bits.
void hadamard_rows(float* x, int64_t rows, int64_t width, int64_t head_dim, bool signs = false);
void inverse_hadamard_rows(float* x, int64_t rows, int64_t width, int64_t head_dim, bool signs = false);
// The fixed sign (+1 or -1) of channel c of a head (the same for every head, layer and chunk).
float kv_hadamard_sign(int64_t c);
// Whether n > 0 is a power of 2 (the Walsh-Hadamard transform's sizes).
inline bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The normalized nf levels of `bits` (1..8) bits: level i of 2^bits is the standard normal's quantile at
// (i + 0.5) / 2^bits divided by the largest, so they ascend, are symmetric and span [-1, 1] exactly.
std::vector<float> normal_float_levels(int bits);
// The same levels for 2, 3 or 4 bits, computed once (a reader's hot path).
const std::vector<float>& normal_float_levels_cached(int bits);
// The index of the level nearest t (levels ascending); a tie goes to the lower level.
int nearest_level(const std::vector<float>& levels, float t);
// The same over n levels at `levels`.
int nearest_level(const float* levels, int n, float t);

}  // namespace kvf
