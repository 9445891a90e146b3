// FAISS index build time, query time and recall@10 against exact (Flat) search, on synthetic unit vectors.
// Clustered data (a Gaussian mixture, like real embeddings) by default; --uniform draws them uniformly on the
// sphere, the hardest case for approximate indexes. Prints one JSON object per index kind.
#include <omp.h>
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "retrieval/vector_index.h"
#include "synthetic_vectors.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_index_bench: FAISS build/query time and recall@10 against Flat"};
  int64_t n = 10000, n_queries = 1000;
  int dim = 384, threads = 2, k = 10;
  bool uniform = false;
  kvf::IndexSpec base;
  app.add_option("--n", n, "indexed vectors")->capture_default_str();
  app.add_option("--dim", dim, "dimension")->capture_default_str();
  app.add_option("--queries", n_queries, "queries")->capture_default_str();
  app.add_option("--threads", threads, "threads (FAISS uses OpenMP)")->capture_default_str();
  app.add_option("--ivf-nprobe", base.ivf_nprobe, "ivf lists per query")->capture_default_str();
  app.add_option("--hnsw-ef-search", base.hnsw_ef_search, "hnsw search breadth")->capture_default_str();
  app.add_flag("--uniform", uniform, "uniform on the sphere instead of clustered");
  CLI11_PARSE(app, argc, argv);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  omp_set_num_threads(threads);

  const std::vector<float> centres = kvf::bench::make_vectors(std::max<int64_t>(1, n / 100), dim, true, {}, 1);
  const std::vector<float> data = kvf::bench::make_vectors(n, dim, uniform, centres, 2);
  const std::vector<float> queries = kvf::bench::make_vectors(n_queries, dim, uniform, centres, 3);
  std::vector<int64_t> truth;
  for (const std::string kind : {"flat", "ivf", "hnsw"}) {
    kvf::IndexSpec spec = base;
    spec.kind = kind;
    auto t0 = Clock::now();
    const kvf::VectorIndex index = kvf::VectorIndex::build(data.data(), n, dim, spec);
    const double build_s = since(t0);
    t0 = Clock::now();
    const kvf::SearchHits hits = index.search(queries.data(), n_queries, k);
    const double query_s = since(t0);
    if (kind == "flat") truth = hits.ids;
    int64_t found = 0;
    for (int64_t q = 0; q < n_queries; ++q)
      for (int r = 0; r < k; ++r)
        found += std::count(hits.ids.begin() + q * k, hits.ids.begin() + (q + 1) * k, truth[q * k + r]);
    const nlohmann::json out = {{"kind", kind},
                                {"n", n},
                                {"dim", dim},
                                {"data", uniform ? "uniform" : "clustered"},
                                {"threads", threads},
                                {"build_s", build_s},
                                {"query_ms", 1000.0 * query_s / n_queries},
                                {"recall_at_10", (double)found / (double)(n_queries * k)}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}
