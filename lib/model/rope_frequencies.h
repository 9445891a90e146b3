// Rotary frequencies: theta^(-2i/d), divided by the scaling factor (linear) and by per-frequency factors
// (llama3-style scaling arrives in GGUF as a rope_freqs tensor of such factors), or mixed between interpolated and
// extrapolated per frequency (YaRN).
#pragma once
#include <vector>

namespace kvf {

std::vector<float> rope_inv_frequencies(int rotary_dim, double theta, double linear_factor,
                                        const std::vector<float>& per_frequency_factors);

// YaRN (Peng et al. 2023) as llama.cpp computes it (GGUF rope.scaling.type = yarn): frequency i keeps its
// extrapolated value below the correction dims' low end, takes the interpolated value (divided by `factor`) above
// their high end, and a linear ramp between; the correction dims are where a frequency turns beta_fast and
// beta_slow times over original_context positions. cos and sin are then multiplied by yarn_magnitude().
struct YarnScaling {
  double factor = 1.0;        // context extension; the interpolated frequencies are divided by it
  int original_context = 0;   // the context the model was trained at
  float beta_fast = 32.0f;    // llama.cpp's defaults (its context parameters, not read from the file)
  float beta_slow = 1.0f;
  float attn_factor = 1.0f;   // multiplies the magnitude below
};
std::vector<float> rope_yarn_inv_frequencies(int rotary_dim, double theta, const YarnScaling& yarn,
                                             const std::vector<float>& per_frequency_factors);
// attn_factor * (1 + 0.1 ln(factor)): the magnitude cos and sin take (RopeSpec::attn_factor).
float rope_yarn_magnitude(const YarnScaling& yarn);
// The correction dims [low, high] (in frequency indices) the ramp runs between.
void rope_yarn_correction_dims(int rotary_dim, double theta, const YarnScaling& yarn, float dims[2]);

// Positions a decoder's cos/sin table covers at most (32768 x rotary_dim floats: 16 MiB at rotary_dim 128).
inline constexpr int kRopeTablePositions = 1 << 15;

// cos and sin of position * inv_freq[i] for positions [0, n_positions), each times `magnitude`: [position][i][2],
// angles computed in double.
std::vector<float> rope_cos_sin_table(const std::vector<float>& inv_freq, int n_positions, float magnitude = 1.0f);

}  // namespace kvf
