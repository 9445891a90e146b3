#include "prep/store_search.h"

#include "core/error.h"
#include "core/hex.h"
#include "prep/retrieval_stages.h"
#include "store/manifest.h"

namespace kvf {
namespace {

std::unique_ptr<SentenceEmbedder> load_store_embedder(const std::string& store_dir, const Manifest& m,
                                                      const std::string& embedder_dir, Backend& backend) {
  KVF_CHECK(m.settings.contains("embedding"), store_dir, ": no embeddings yet; run `kvprep embed` first");
  auto embedder = SentenceEmbedder::load(embedder_dir, backend);
  const std::string want = m.settings["embedding"].at("fingerprint").get<std::string>();
  KVF_CHECK(hex64(embedder->fingerprint()) == want, store_dir, ": the store was embedded with ",
            m.settings["embedding"].at("model").get<std::string>(), " (fingerprint ", want, "), not with ",
            embedder_dir, " (", hex64(embedder->fingerprint()), ")");
  return embedder;
}

}  // namespace

StoreSearcher::StoreSearcher(const std::string& store_dir, const std::string& embedder_dir)
    : StoreSearcher(store_dir, load_manifest(store_dir), embedder_dir) {}

StoreSearcher::StoreSearcher(const std::string& store_dir, const Manifest& manifest, const std::string& embedder_dir)
    : backend_(make_cpu_backend()),
      chunks_(ChunkTable::read(reader_table_file(store_dir, manifest, kChunksFile))),
      embedder_(load_store_embedder(store_dir, manifest, embedder_dir, *backend_)),
      index_(VectorIndex::load(reader_table_file(store_dir, manifest, kIndexFile), reader_index_spec(store_dir, manifest))) {
  KVF_CHECK(index_.size() == (int64_t)chunks_.size(), store_dir, ": the index holds ", index_.size(),
            " vectors for ", chunks_.size(), " chunks; run `kvprep embed` and `kvprep index`");
}

std::vector<RetrievedChunk> StoreSearcher::search(const std::string& query, int top_k) const {
  KVF_CHECK(top_k > 0, "--top-k must be positive, got ", top_k);
  const std::vector<float> q = embedder_->embed({query});
  const SearchHits hits = index_.search(q.data(), 1, top_k);
  std::vector<RetrievedChunk> out;
  for (int j = 0; j < top_k; ++j) {
    const int64_t row = hits.ids[j];
    if (row < 0) break;
    out.push_back({(size_t)row, hits.scores[j], &chunks_.chunks()[(size_t)row]});
  }
  return out;
}

}  // namespace kvf
