#include "model/rope_frequencies.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kvf {

std::vector<float> rope_inv_frequencies(int rotary_dim, double theta, double linear_factor,
                                        const std::vector<float>& per_frequency_factors) {
  const int half = rotary_dim / 2;
  KVF_CHECK(per_frequency_factors.empty() || (int)per_frequency_factors.size() == half, "rope_freqs has ",
            per_frequency_factors.size(), " factors for ", half, " frequencies");
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) {
    double f = std::pow(theta, -2.0 * i / rotary_dim) / linear_factor;
    if (!per_frequency_factors.empty()) f /= per_frequency_factors[i];
    inv[i] = (float)f;
  }
  return inv;
}

namespace {

// The dimension at which a frequency turns n_turns times over the original context (float, as llama.cpp).
float yarn_correction_dim(int rotary_dim, int original_context, float n_turns, float theta) {
  return (float)rotary_dim * std::log((float)original_context / (n_turns * 2.0f * (float)M_PI)) /
         (2.0f * std::log(theta));
}

}  // namespace

void rope_yarn_correction_dims(int rotary_dim, double theta, const YarnScaling& yarn, float dims[2]) {
  KVF_CHECK(yarn.original_context > 0, "yarn: original context ", yarn.original_context, " must be positive");
  const float low = std::floor(yarn_correction_dim(rotary_dim, yarn.original_context, yarn.beta_fast, (float)theta));
  const float high = std::ceil(yarn_correction_dim(rotary_dim, yarn.original_context, yarn.beta_slow, (float)theta));
  dims[0] = std::max(0.0f, low);
  dims[1] = std::min((float)(rotary_dim - 1), high);
}

std::vector<float> rope_yarn_inv_frequencies(int rotary_dim, double theta, const YarnScaling& yarn,
                                             const std::vector<float>& per_frequency_factors) {
  KVF_CHECK(yarn.factor > 0 && std::isfinite(yarn.factor), "yarn: factor ", yarn.factor, " must be positive");
  std::vector<float> inv = rope_inv_frequencies(rotary_dim, theta, 1.0, per_frequency_factors);
  float dims[2];
  rope_yarn_correction_dims(rotary_dim, theta, yarn, dims);
  const double interpolated = 1.0 / yarn.factor;
  for (size_t i = 0; i < inv.size(); ++i) {
    // 1 at low frequency indices (fast-turning: extrapolated, kept), 0 past the high end (interpolated).
    const float y = ((float)i - dims[0]) / std::max(0.001f, dims[1] - dims[0]);
    const double ramp = 1.0 - std::min(1.0f, std::max(0.0f, y));
    inv[i] = (float)((double)inv[i] * (interpolated * (1.0 - ramp) + ramp));
  }
  return inv;
}

float rope_yarn_magnitude(const YarnScaling& yarn) {
  return yarn.attn_factor * (1.0f + 0.1f * std::log((float)yarn.factor));
}

std::vector<float> rope_cos_sin_table(const std::vector<float>& inv_freq, int n_positions, float magnitude) {
  const size_t half = inv_freq.size();
  std::vector<float> table((size_t)n_positions * half * 2);
  const bool scaled = magnitude != 1.0f;
  for (int p = 0; p < n_positions; ++p)
    for (size_t i = 0; i < half; ++i) {
      const double angle = (double)p * (double)inv_freq[i];
      float c = (float)std::cos(angle), s = (float)std::sin(angle);
      if (scaled) {
        c *= magnitude;
        s *= magnitude;
      }
      table[(p * half + i) * 2] = c;
      table[(p * half + i) * 2 + 1] = s;
    }
  return table;
}

}  // namespace kvf
