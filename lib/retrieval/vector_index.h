// Inner-product search over unit vectors (cosine similarity) with FAISS: exact Flat (default), IVF-Flat, IVF-PQ
// (compressed codes, candidates re-ranked exactly) or HNSW for large corpora. Row i of the indexed matrix has id i.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace faiss {
struct Index;
}

namespace kvf {

class PendingFile;

struct IndexSpec {
  std::string kind = "flat";     // flat | ivf | ivfpq | hnsw
  int ivf_nlist = 0;             // ivf, ivfpq: number of lists; 0 picks min(4 sqrt(n), n / 39)
  int ivf_nprobe = 16;           // ivf, ivfpq: lists visited per query
  int pq_m = 0;                  // ivfpq: bytes per code (8-bit sub-quantizers); 0: dim / 8. Must divide dim
  int pq_refine = 4;             // ivfpq: re-rank refine x k candidates with the exact vectors; 0: codes only
  int64_t train_sample = 0;      // ivf, ivfpq: vectors k-means trains on (evenly spaced rows); 0: 256 per list
  int hnsw_m = 32;               // hnsw: links per node
  int hnsw_ef_construction = 80;
  int hnsw_ef_search = 64;
};

struct SearchHits {
  int64_t k = 0;
  std::vector<float> scores;  // [n_queries, k], best first
  std::vector<int64_t> ids;   // [n_queries, k]; -1 where fewer than k rows exist
};

class VectorIndex {
 public:
  // Builds over n rows of `dim` floats. Throws kvf::Error on an unknown kind or bad parameters.
  static VectorIndex build(const float* vectors, int64_t n, int dim, const IndexSpec& spec);
  // Loads an index written by save(); the spec's search-time parameters (nprobe, ef_search) apply.
  static VectorIndex load(const std::string& path, const IndexSpec& spec);
  // Writes a temporary through a checked, synced stream, then renames it over path (io/durable_file.h): a
  // failed write (a full disk) throws and leaves path as it was.
  void save(const std::string& path) const;
  void save(PendingFile& out) const;  // into out.temp(), closed; the caller commits

  SearchHits search(const float* queries, int64_t n_queries, int64_t k) const;
  int dim() const;
  int64_t size() const;

  VectorIndex(VectorIndex&&) noexcept;
  VectorIndex& operator=(VectorIndex&&) noexcept;
  ~VectorIndex();

 private:
  explicit VectorIndex(std::unique_ptr<faiss::Index> index);
  std::unique_ptr<faiss::Index> index_;
};

}  // namespace kvf
