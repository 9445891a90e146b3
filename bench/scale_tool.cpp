// Helpers of bench/million_chunks.sh, the corpus-scale measurement (docs/scale.md):
//   embed-synthetic  commits synthetic embeddings for every chunk of a store as its embed stage (clustered unit
//                    vectors, bench/synthetic_vectors.h), so that index and neighbours run at a scale the real
//                    embedder would take hours to reach on this machine;
//   recall           recall@k of the store's neighbour lists against exact search over its embeddings, on
//                    evenly spaced sample rows. Prints one JSON object.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/error.h"
#include "prep/retrieval_stages.h"
#include "store/chunk_table.h"
#include "store/embedding_table.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"
#include "synthetic_vectors.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string in_store(const std::string& store, const char* name) { return (fs::path(store) / name).string(); }

void embed_synthetic(const std::string& store, int dim, int64_t per_cluster) {
  kvf::Manifest m = kvf::load_manifest(store);
  KVF_CHECK(m.find_stage("chunk"), store, ": no chunks yet; run `kvprep chunk` first");
  kvf::EmbeddingTable t;
  t.embedder_fingerprint = 0x5e17e71c;  // no model: marks the table as synthetic
  t.dim = dim;
  t.chunk_ids = kvf::ChunkTable::read_ids(in_store(store, kvf::kChunksFile));
  const int64_t n = (int64_t)t.rows();
  const std::vector<float> centres =
      kvf::bench::make_vectors(std::max<int64_t>(1, n / per_cluster), dim, true, {}, 1);
  t.vectors = kvf::bench::make_vectors(n, dim, false, centres, 2);
  kvf::require_settings(m, "embedding", {{"model", "synthetic-clusters"}, {"dim", dim}}, store);
  kvf::PendingFile file(in_store(store, kvf::kEmbeddingsFile));
  t.write(file);
  kvf::commit_store_file(store, m, file, kvf::kEmbeddingsFile);
  m.record_stage({"embed", kvf::utc_timestamp(), kvf::describe_file(store, kvf::kChunksFile).xxh3,
                  {{"chunks", (uint64_t)n}, {"embedded", (uint64_t)n}}});
  kvf::save_manifest(store, m);
  std::printf("{\"synthetic_embeddings\": %lld, \"dim\": %d, \"clusters\": %lld}\n", (long long)n, dim,
              (long long)(centres.size() / (size_t)dim));
}

void recall(const std::string& store, int64_t samples, int k) {
  const kvf::EmbeddingTable e = kvf::EmbeddingTable::read(in_store(store, kvf::kEmbeddingsFile));
  const kvf::NeighborTable nb = kvf::NeighborTable::read(in_store(store, kvf::kNeighborsFile));
  KVF_CHECK(nb.size() == e.rows() && nb.top_n >= k, store, ": neighbour lists of ", nb.size(), " x ", nb.top_n,
            " cannot be scored at k = ", k, " against ", e.rows(), " embeddings");
  const int64_t n = (int64_t)e.rows();
  samples = std::min(samples, n);
  std::vector<int64_t> rows;
  std::vector<float> queries;
  for (int64_t i = 0; i < samples; ++i) {
    rows.push_back(i * n / samples);
    queries.insert(queries.end(), e.row((size_t)rows.back()), e.row((size_t)rows.back()) + e.dim);
  }
  const auto t0 = Clock::now();
  const kvf::VectorIndex exact = kvf::VectorIndex::build(e.vectors.data(), n, e.dim, kvf::IndexSpec{});
  const kvf::SearchHits hits = exact.search(queries.data(), samples, k + 1);
  const double exact_s = std::chrono::duration<double>(Clock::now() - t0).count();
  int64_t found = 0;
  for (int64_t q = 0; q < samples; ++q) {
    std::vector<int64_t> truth;  // the k nearest other rows (the row itself comes back first)
    for (int64_t j = 0; j <= k && (int)truth.size() < k; ++j)
      if (hits.ids[q * (k + 1) + j] != rows[q]) truth.push_back(hits.ids[q * (k + 1) + j]);
    const std::unordered_set<int64_t> listed(nb.rows.begin() + rows[q] * nb.top_n,
                                             nb.rows.begin() + rows[q] * nb.top_n + k);
    for (const int64_t t : truth) found += listed.count(t);
  }
  const nlohmann::json out = {{"store", store},           {"rows", n},
                              {"samples", samples},       {"k", k},
                              {"recall", (double)found / (double)(samples * k)},
                              {"exact_search_s", exact_s}};
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_scale_tool: synthetic embeddings and neighbour recall for bench/million_chunks.sh"};
  app.require_subcommand(1);
  std::string store;
  int dim = 384, k = 10, threads = 2;
  int64_t per_cluster = 100, samples = 1000;
  CLI::App* embed = app.add_subcommand("embed-synthetic", "commit clustered synthetic embeddings as the embed stage");
  embed->add_option("--store", store, "store after `kvprep chunk`")->required();
  embed->add_option("--dim", dim, "embedding dimension")->capture_default_str();
  embed->add_option("--per-cluster", per_cluster, "chunks per cluster centre")->capture_default_str();
  CLI::App* rec = app.add_subcommand("recall", "recall@k of neighbors.h5 against exact search on sample rows");
  rec->add_option("--store", store, "store after `kvprep neighbors`")->required();
  rec->add_option("--samples", samples, "evenly spaced query rows")->capture_default_str();
  rec->add_option("--k", k, "k of recall@k")->capture_default_str();
  rec->add_option("--threads", threads, "threads for the exact search")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    omp_set_num_threads(threads);
    if (*embed) embed_synthetic(store, dim, per_cluster);
    if (*rec) recall(store, samples, k);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
