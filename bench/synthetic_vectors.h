// Synthetic unit vectors for the retrieval benchmarks: a Gaussian mixture like real embeddings (topics), or
// uniform on the sphere, the hardest case for approximate search.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace kvf::bench {

// n unit vectors: a centre picked at random plus noise (or pure noise when uniform), normalised. Noise about as
// long as a centre: clusters overlap, as topics in real corpora do. Deterministic for a seed.
inline std::vector<float> make_vectors(int64_t n, int dim, bool uniform, const std::vector<float>& centres,
                                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, uniform ? 1.0f : 1.0f / std::sqrt((float)dim));
  const int64_t n_centres = (int64_t)centres.size() / dim;
  std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(0, n_centres - 1));
  std::vector<float> v((size_t)(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    const float* c = uniform ? nullptr : centres.data() + pick(rng) * dim;
    double norm = 0;
    for (int j = 0; j < dim; ++j) {
      float& x = v[i * dim + j];
      x = (c ? c[j] : 0.0f) + noise(rng);
      norm += (double)x * x;
    }
    for (int j = 0; j < dim; ++j) v[i * dim + j] /= (float)std::sqrt(norm);
  }
  return v;
}

}  // namespace kvf::bench
