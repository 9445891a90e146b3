// Rotary frequencies: theta^(-2i/d), divided by the scaling factor (linear) and by per-frequency factors
// (llama3-style scaling arrives in GGUF as a rope_freqs tensor of such factors).
#pragma once
#include <vector>

namespace kvf {

std::vector<float> rope_inv_frequencies(int rotary_dim, double theta, double linear_factor,
                                        const std::vector<float>& per_frequency_factors);

}  // namespace kvf
