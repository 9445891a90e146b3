#include "eval/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"

namespace kvf {

Interval bootstrap(size_t n, const std::function<double(const std::vector<size_t>&)>& statistic, int resamples,
                   double level, uint64_t seed) {
  KVF_CHECK(n > 0, "bootstrap over no questions");
  KVF_CHECK(resamples > 0 && level > 0 && level < 1, "bootstrap: ", resamples, " resamples at level ", level);
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  Interval out;
  out.value = statistic(all);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<double> stats;
  std::vector<size_t> sample(n);
  for (int r = 0; r < resamples; ++r) {
    for (size_t& i : sample) i = pick(rng);
    const double s = statistic(sample);
    if (std::isfinite(s)) stats.push_back(s);  // a resample can make a ratio's denominator 0
  }
  if (stats.empty()) return {out.value, NAN, NAN};
  std::sort(stats.begin(), stats.end());
  const auto at = [&](double q) { return stats[(size_t)std::llround(q * (double)(stats.size() - 1))]; };
  out.low = at((1 - level) / 2);
  out.high = at(1 - (1 - level) / 2);
  return out;
}

Interval bootstrap_mean(const std::vector<double>& values, int resamples, double level) {
  return bootstrap(
      values.size(),
      [&](const std::vector<size_t>& idx) {
        double sum = 0;
        for (size_t i : idx) sum += values[i];
        return sum / (double)idx.size();
      },
      resamples, level);
}

Interval bootstrap_paired_delta(const std::vector<double>& values, const std::vector<double>& reference,
                                int resamples, double level) {
  KVF_CHECK(values.size() == reference.size(), "bootstrap_paired_delta: ", values.size(), " values against ",
            reference.size(), " references");
  std::vector<double> delta(values.size());
  for (size_t i = 0; i < values.size(); ++i) delta[i] = values[i] - reference[i];
  return bootstrap_mean(delta, resamples, level);
}

}  // namespace kvf
