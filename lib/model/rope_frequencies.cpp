#include "model/rope_frequencies.h"

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

std::vector<float> rope_cos_sin_table(const std::vector<float>& inv_freq, int n_positions) {
  const size_t half = inv_freq.size();
  std::vector<float> table((size_t)n_positions * half * 2);
  for (int p = 0; p < n_positions; ++p)
    for (size_t i = 0; i < half; ++i) {
      const double angle = (double)p * (double)inv_freq[i];
      table[(p * half + i) * 2] = (float)std::cos(angle);
      table[(p * half + i) * 2 + 1] = (float)std::sin(angle);
    }
  return table;
}

}  // namespace kvf
