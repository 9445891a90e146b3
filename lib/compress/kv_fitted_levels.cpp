#include "compress/kv_fitted_levels.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kvf {

KvLevelFitter::KvLevelFitter(int bits, int64_t width) : bits_(bits), width_(width) {
  KVF_CHECK(bits >= 1 && bits <= 8 && width > 0, "KvLevelFitter: ", bits, " bits over ", width,
            " channels (1..8 bits, at least one channel)");
  counts_.assign((size_t)(width * kBins), 0);
}

void KvLevelFitter::add(int64_t channel, float t) {
  const float clamped = std::isfinite(t) ? std::clamp(t, -1.0f, 1.0f) : 0.0f;
  const int bin = std::min(kBins - 1, (int)((clamped + 1.0f) * 0.5f * kBins));
  ++counts_[(size_t)(channel * kBins + bin)];
}

KvFittedLevels KvLevelFitter::fit(int iterations) const {
  const int n = 1 << bits_;
  KvFittedLevels out{bits_, width_, std::vector<float>((size_t)(width_ * n))};
  const auto centre = [](int bin) { return -1.0 + (bin + 0.5) * 2.0 / kBins; };
  std::vector<double> level((size_t)n), sum((size_t)n), weight((size_t)n);
  for (int64_t c = 0; c < width_; ++c) {
    const uint32_t* h = counts_.data() + c * kBins;
    for (int i = 0; i < n; ++i) level[(size_t)i] = n == 1 ? 0.0 : -1.0 + 2.0 * i / (n - 1);
    for (int it = 0; it < iterations; ++it) {
      std::fill(sum.begin(), sum.end(), 0.0);
      std::fill(weight.begin(), weight.end(), 0.0);
      int nearest = 0;  // bins ascend, so each one's nearest level never lies below the previous bin's
      for (int b = 0; b < kBins; ++b) {
        const double x = centre(b);
        while (nearest + 1 < n && std::fabs(level[(size_t)nearest + 1] - x) < std::fabs(level[(size_t)nearest] - x))
          ++nearest;
        sum[(size_t)nearest] += h[b] * x;
        weight[(size_t)nearest] += h[b];
      }
      bool moved = false;
      for (int i = 0; i < n; ++i) {
        if (weight[(size_t)i] == 0) continue;  // no values nearest: the level stays
        const double next = sum[(size_t)i] / weight[(size_t)i];
        moved |= next != level[(size_t)i];
        level[(size_t)i] = next;
      }
      std::sort(level.begin(), level.end());
      if (!moved) break;
    }
    for (int i = 0; i < n; ++i) out.levels[(size_t)(c * n + i)] = (float)level[(size_t)i];
  }
  return out;
}

}  // namespace kvf
