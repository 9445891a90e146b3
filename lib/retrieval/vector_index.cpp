#include "retrieval/vector_index.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexRefine.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "io/durable_file.h"

namespace kvf {
namespace {

// Search-time knobs live on the index object; applied after build and after load.
void apply_search_params(faiss::Index& index, const IndexSpec& spec) {
  if (auto* refine = dynamic_cast<faiss::IndexRefine*>(&index)) {
    refine->k_factor = (float)std::max(1, spec.pq_refine);
    apply_search_params(*refine->base_index, spec);
  }
  if (auto* ivf = dynamic_cast<faiss::IndexIVF*>(&index)) ivf->nprobe = (size_t)spec.ivf_nprobe;
  if (auto* hnsw = dynamic_cast<faiss::IndexHNSW*>(&index)) hnsw->hnsw.efSearch = spec.hnsw_ef_search;
}

// The rows k-means trains on: all of them, or `sample` evenly spaced ones (a corpus in file order is often grouped
// by source; a stride sees every part of it).
std::vector<float> training_rows(const float* vectors, int64_t n, int dim, int64_t sample) {
  sample = std::min(n, sample);
  std::vector<float> rows((size_t)(sample * dim));
  for (int64_t i = 0; i < sample; ++i) {
    const int64_t row = (int64_t)((double)i * (double)n / (double)sample);
    std::copy(vectors + row * dim, vectors + (row + 1) * dim, rows.begin() + i * dim);
  }
  return rows;
}

// An IVF index over `quantizer`'s lists: IVF-Flat, or IVF-PQ (wrapped in an exact re-ranking when refine > 0).
std::unique_ptr<faiss::Index> build_ivf(const float* vectors, int64_t n, int dim, const IndexSpec& spec) {
  // Default: about 4 sqrt(n) lists, but at least 39 training points per list, which k-means needs.
  const int64_t nlist =
      spec.ivf_nlist > 0 ? spec.ivf_nlist
                         : std::max<int64_t>(1, std::min<int64_t>((int64_t)(4 * std::sqrt((double)n)), n / 39));
  KVF_CHECK(n >= nlist, "index: ", spec.kind, " needs at least nlist = ", nlist, " vectors to train, got ", n);
  const int m = spec.pq_m > 0 ? spec.pq_m : std::max(1, dim / 8);
  KVF_CHECK(spec.kind == "ivf" || dim % m == 0, "index: pq_m = ", m, " does not divide the embedding dimension ", dim);
  auto quantizer = std::make_unique<faiss::IndexFlatIP>(dim);
  std::unique_ptr<faiss::IndexIVF> ivf;
  if (spec.kind == "ivf") {
    ivf = std::make_unique<faiss::IndexIVFFlat>(quantizer.get(), dim, (size_t)nlist, faiss::METRIC_INNER_PRODUCT);
  } else {
    ivf = std::make_unique<faiss::IndexIVFPQ>(quantizer.get(), dim, (size_t)nlist, (size_t)m, 8,
                                              faiss::METRIC_INNER_PRODUCT);
  }
  quantizer.release();
  ivf->own_fields = true;  // the IVF index deletes its quantizer from here on
  const int64_t sample = spec.train_sample > 0 ? spec.train_sample : 256 * nlist;
  const std::vector<float> train = training_rows(vectors, n, dim, std::max<int64_t>(nlist, sample));
  ivf->train((int64_t)(train.size() / (size_t)dim), train.data());
  if (spec.kind == "ivfpq" && spec.pq_refine > 0) {
    auto refine = std::make_unique<faiss::IndexRefineFlat>(ivf.release());
    refine->own_fields = true;
    return refine;
  }
  return ivf;
}

}  // namespace

VectorIndex::VectorIndex(std::unique_ptr<faiss::Index> index) : index_(std::move(index)) {}
VectorIndex::VectorIndex(VectorIndex&&) noexcept = default;
VectorIndex& VectorIndex::operator=(VectorIndex&&) noexcept = default;
VectorIndex::~VectorIndex() = default;

VectorIndex VectorIndex::build(const float* vectors, int64_t n, int dim, const IndexSpec& spec) {
  KVF_CHECK(dim > 0 && n >= 0, "index: bad shape ", n, " x ", dim);
  KVF_CHECK(spec.ivf_nprobe > 0 && spec.hnsw_m > 1 && spec.hnsw_ef_construction > 0 && spec.hnsw_ef_search > 0,
            "index: nprobe, M, efConstruction and efSearch must be positive");
  KVF_CHECK(spec.pq_m >= 0 && spec.pq_refine >= 0 && spec.train_sample >= 0,
            "index: pq_m, pq_refine and train_sample must not be negative");
  std::unique_ptr<faiss::Index> index;
  try {
    if (spec.kind == "flat") {
      index = std::make_unique<faiss::IndexFlatIP>(dim);
    } else if (spec.kind == "hnsw") {
      auto hnsw = std::make_unique<faiss::IndexHNSWFlat>(dim, spec.hnsw_m, faiss::METRIC_INNER_PRODUCT);
      hnsw->hnsw.efConstruction = spec.hnsw_ef_construction;
      index = std::move(hnsw);
    } else if (spec.kind == "ivf" || spec.kind == "ivfpq") {
      index = build_ivf(vectors, n, dim, spec);
    } else {
      fail("index: unknown kind '", spec.kind, "' (flat, ivf, ivfpq, hnsw)");
    }
    index->add(n, vectors);
  } catch (const faiss::FaissException& e) {
    fail("index: faiss: ", e.what());
  }
  apply_search_params(*index, spec);
  return VectorIndex(std::move(index));
}

VectorIndex VectorIndex::load(const std::string& path, const IndexSpec& spec) {
  std::unique_ptr<faiss::Index> index;
  try {
    index.reset(faiss::read_index(path.c_str()));
  } catch (const faiss::FaissException& e) {
    fail(path, ": not a readable FAISS index (", e.what(), ")");
  }
  apply_search_params(*index, spec);
  return VectorIndex(std::move(index));
}

void VectorIndex::save(const std::string& path) const {
  PendingFile out(path);
  save(out);
  out.commit();
}

void VectorIndex::save(PendingFile& out) const {
  // FAISS's own file writer ignores fclose's status (a full disk gave a short file): it writes to our stream,
  // whose flush, fsync and close are checked before the rename.
  std::FILE* f = std::fopen(out.temp().c_str(), "wb");
  KVF_CHECK(f, out.temp(), ": cannot create: ", std::strerror(errno));
  try {
    faiss::FileIOWriter writer(f);
    faiss::write_index(index_.get(), &writer);
  } catch (const faiss::FaissException& e) {
    std::fclose(f);
    fail(out.final_path(), ": cannot write the index (", e.what(), ")");
  }
  close_stream_checked(f, out.temp());
}

SearchHits VectorIndex::search(const float* queries, int64_t n_queries, int64_t k) const {
  SearchHits hits;
  hits.k = k;
  hits.scores.resize((size_t)(n_queries * k));
  hits.ids.resize((size_t)(n_queries * k));
  if (n_queries == 0 || k == 0) return hits;
  try {
    index_->search(n_queries, queries, k, hits.scores.data(), hits.ids.data());
  } catch (const faiss::FaissException& e) {
    fail("index search: faiss: ", e.what());
  }
  return hits;
}

int VectorIndex::dim() const { return (int)index_->d; }
int64_t VectorIndex::size() const { return index_->ntotal; }

}  // namespace kvf
