#include "fusion/token_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace kvf {

int64_t recompute_count(double ratio, int64_t n) {
  KVF_CHECK(ratio >= 0.0 && ratio <= 1.0, "recompute ratio ", ratio, " is outside [0, 1]");
  return std::min<int64_t>(n, (int64_t)std::floor(ratio * (double)n + 0.5));
}

std::vector<int64_t> top_scored(const std::vector<float>& scores, int64_t count) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  count = std::clamp<int64_t>(count, 0, (int64_t)order.size());
  std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int64_t a, int64_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  order.resize((size_t)count);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<float> l2_deviation(const float* fresh, const float* stored, int64_t rows, int64_t width) {
  std::vector<float> out((size_t)rows);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < width; ++j) {
      const double d = (double)fresh[r * width + j] - stored[r * width + j];
      sum += d * d;
    }
    out[r] = (float)std::sqrt(sum);
  }
  return out;
}

}  // namespace kvf
