// Rotary frequencies: theta^(-2i/d), divided by the scaling factor (linear) and by per-frequency factors
// (llama3-style scaling arrives in GGUF as a rope_freqs tensor of such factors).
#pragma once
#include <vector>

namespace kvf {

std::vector<float> rope_inv_frequencies(int rotary_dim, double theta, double linear_factor,
                                        const std::vector<float>& per_frequency_factors);

// Positions a decoder's cos/sin table covers at most (32768 x rotary_dim floats: 16 MiB at rotary_dim 128).
inline constexpr int kRopeTablePositions = 1 << 15;

// cos/sin of position * inv_freq[i] for positions [0, n_positions): [position][i][2], computed in double.
std::vector<float> rope_cos_sin_table(const std::vector<float>& inv_freq, int n_positions);

}  // namespace kvf
