#include "compress/anchors.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kvf {

std::vector<AnchorSegment> anchor_segments(int32_t n_tokens, int32_t segment, double fraction) {
  KVF_CHECK(fraction > 0 && fraction <= 1, "--anchors must be in (0, 1], got ", fraction);
  KVF_CHECK(segment >= 1, "--segment must be at least 1, got ", segment);
  std::vector<AnchorSegment> out;
  for (int32_t b = 0; b < n_tokens; b += segment) {
    const int32_t e = std::min(n_tokens, b + segment);
    // The small slack keeps an exact product (0.25 * 100) from rounding up through float error.
    const int32_t keep = std::max(1, (int32_t)std::ceil(fraction * (e - b) - 1e-9));
    out.push_back({b, e, std::min(keep, e - b)});
  }
  return out;
}

std::vector<int32_t> select_anchor_positions(const std::vector<double>& scores, int32_t segment, double fraction) {
  std::vector<int32_t> kept;
  for (const AnchorSegment& s : anchor_segments((int32_t)scores.size(), segment, fraction)) {
    std::vector<int32_t> order;
    for (int32_t t = s.begin; t < s.end; ++t) order.push_back(t);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if ((a == 0) != (b == 0)) return a == 0;  // the chunk's first token before everything
      return scores[(size_t)a] > scores[(size_t)b];
    });
    kept.insert(kept.end(), order.begin(), order.begin() + s.keep);
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::vector<int32_t> appended_anchor_positions(const AnchorSegment& s) {
  std::vector<int32_t> out;
  for (int32_t k = 0; k < s.keep; ++k) out.push_back(s.end - s.keep + k);
  return out;
}

}  // namespace kvf
