#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "retrieval/vector_index.h"

namespace kvf {
namespace {

std::vector<float> unit_vectors(int64_t n, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v((size_t)(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    double norm = 0;
    for (int j = 0; j < dim; ++j) norm += std::pow(v[i * dim + j] = d(rng), 2);
    for (int j = 0; j < dim; ++j) v[i * dim + j] /= (float)std::sqrt(norm);
  }
  return v;
}

TEST(VectorIndex, FlatIsExactInnerProductSearch) {
  const int dim = 24, n = 500, k = 7;
  const auto base = unit_vectors(n, dim, 1), queries = unit_vectors(20, dim, 2);
  const VectorIndex index = VectorIndex::build(base.data(), n, dim, {});
  const SearchHits hits = index.search(queries.data(), 20, k);
  for (int q = 0; q < 20; ++q) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < dim; ++j) s += (double)queries[q * dim + j] * base[i * dim + j];
      all.push_back({-s, i});
    }
    std::sort(all.begin(), all.end());
    for (int r = 0; r < k; ++r) {
      EXPECT_EQ(hits.ids[q * k + r], all[r].second) << "query " << q << " rank " << r;
      EXPECT_NEAR(hits.scores[q * k + r], -all[r].first, 1e-5);
    }
  }
}

TEST(VectorIndex, ApproximateIndexesRecallTheFlatNeighbours) {
  const int dim = 32, n = 3000, nq = 100, k = 10;
  const auto base = unit_vectors(n, dim, 3), queries = unit_vectors(nq, dim, 4);
  const SearchHits exact = VectorIndex::build(base.data(), n, dim, {}).search(queries.data(), nq, k);
  for (const std::string kind : {"ivf", "ivfpq", "hnsw"}) {
    IndexSpec spec;
    spec.kind = kind;
    spec.ivf_nprobe = 32;
    spec.pq_m = 8;        // 4-d sub-vectors: coarse codes, made exact again by re-ranking
    spec.pq_refine = 10;
    spec.train_sample = 1500;  // k-means on every other row
    const SearchHits approx = VectorIndex::build(base.data(), n, dim, spec).search(queries.data(), nq, k);
    int found = 0;
    for (int q = 0; q < nq; ++q)
      for (int r = 0; r < k; ++r)
        found += std::count(approx.ids.begin() + q * k, approx.ids.begin() + (q + 1) * k, exact.ids[q * k + r]);
    EXPECT_GE(found / double(nq * k), 0.9) << kind << " recall@10";
  }
}

TEST(VectorIndex, SaveAndLoadGiveTheSameResults) {
  const auto base = unit_vectors(300, 16, 5), queries = unit_vectors(5, 16, 6);
  for (const std::string kind : {"hnsw", "ivfpq"}) {
    IndexSpec spec;
    spec.kind = kind;
    spec.ivf_nlist = 4;
    spec.pq_m = 4;
    const VectorIndex built = VectorIndex::build(base.data(), 300, 16, spec);
    const auto path = (std::filesystem::temp_directory_path() / "kvf-index-test.faiss").string();
    built.save(path);
    const VectorIndex loaded = VectorIndex::load(path, spec);
    EXPECT_EQ(loaded.size(), 300) << kind;
    EXPECT_EQ(loaded.dim(), 16) << kind;
    EXPECT_EQ(loaded.search(queries.data(), 5, 4).ids, built.search(queries.data(), 5, 4).ids) << kind;
  }
}

TEST(VectorIndex, BadInputIsNamed) {
  const auto base = unit_vectors(10, 8, 7);
  IndexSpec spec;
  spec.kind = "annoy";
  EXPECT_THROW(VectorIndex::build(base.data(), 10, 8, spec), Error);
  spec.kind = "ivf";
  spec.ivf_nlist = 64;
  EXPECT_THROW(VectorIndex::build(base.data(), 10, 8, spec), Error);  // fewer vectors than lists
  spec.kind = "ivfpq";
  spec.ivf_nlist = 2;
  spec.pq_m = 3;
  try {
    VectorIndex::build(base.data(), 10, 8, spec);
    ADD_FAILURE() << "pq_m 3 over 8 dimensions was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pq_m = 3 does not divide the embedding dimension 8"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(VectorIndex::load("/nonexistent/index.faiss", {}), Error);
}

}  // namespace
}  // namespace kvf
