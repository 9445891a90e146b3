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

}  // namespace kvf
