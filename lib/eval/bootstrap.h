// Percentile bootstrap over questions, so that small differences between methods are not over-read: the
// statistic is recomputed on resamples (with replacement) of the question indices.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace kvf {

struct Interval {
  double value = 0;      // the statistic on all questions
  double low = 0, high = 0;  // the central `level` share of the resampled statistics
};

// `statistic` gets a list of question indices (repeats allowed). Deterministic for a given seed.
Interval bootstrap(size_t n, const std::function<double(const std::vector<size_t>&)>& statistic,
                   int resamples = 1000, double level = 0.95, uint64_t seed = 20261122);

// The mean of `values` with its bootstrap interval.
Interval bootstrap_mean(const std::vector<double>& values, int resamples = 1000, double level = 0.95);

// The mean of values[i] - reference[i] (paired per question, equal lengths) with its bootstrap interval.
Interval bootstrap_paired_delta(const std::vector<double>& values, const std::vector<double>& reference,
                                int resamples = 1000, double level = 0.95);

}  // namespace kvf
