// Small values the engine tests build their inputs from and compare their outputs with.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace kvf::test {

// `n` token ids drawn uniformly from [0, vocab) with a fixed seed.
inline std::vector<int32_t> random_tokens(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, vocab - 1);
  std::vector<int32_t> t((size_t)n);
  for (auto& x : t) x = d(rng);
  return t;
}

// start, start + 1, ..., start + n - 1 (positions, or row indices).
inline std::vector<int32_t> iota_positions(int64_t n, int32_t start = 0) {
  std::vector<int32_t> p((size_t)n);
  for (int64_t i = 0; i < n; ++i) p[(size_t)i] = start + (int32_t)i;
  return p;
}

// The largest |a[i] - b[i]|; a size mismatch fails the test.
template <typename T>
double max_abs_diff(const std::vector<float>& a, const std::vector<T>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs((double)a[i] - (double)b[i]));
  return m;
}

// The message of the kvf::Error that `f` throws; a call that throws none fails the test.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no kvf::Error thrown";
  return "";
}

}  // namespace kvf::test
