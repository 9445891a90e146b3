#include "support/test_store.h"

#include "io/model_paths.h"
#include "prep/chunk_stage.h"
#include "prep/prefill_stage.h"
#include "prep/retrieval_stages.h"

namespace kvf::test {

void chunk_test_store(const std::string& corpus, const std::string& store, const std::string& model) {
  ChunkStageOptions c;
  c.corpus = corpus;
  c.store_dir = store;
  c.model_path = model;
  c.progress.out = nullptr;
  run_chunk_stage(c);
}

void index_test_store(const std::string& store, int top_n, const std::string& embedder) {
  EmbedStageOptions e;
  e.store_dir = store;
  e.embedder_dir = embedder.empty() ? resolve_model("minilm") : embedder;
  e.progress.out = nullptr;
  run_embed_stage(e);
  run_index_stage({store, IndexSpec{}});
  NeighborStageOptions n;
  n.store_dir = store;
  n.top_n = top_n;
  n.progress.out = nullptr;
  run_neighbor_stage(n);
}

void build_test_store(const std::string& corpus, const std::string& store, const std::string& model, int top_n,
                      const std::vector<std::string>& modes, const std::string& embedder) {
  chunk_test_store(corpus, store, model);
  index_test_store(store, top_n, embedder);
  for (const std::string& mode : modes) {
    PrefillStageOptions p;
    p.store_dir = store;
    p.model_path = model;
    p.mode = mode;
    p.top_n = top_n;
    p.progress.out = nullptr;
    run_prefill_stage(p);
  }
}

}  // namespace kvf::test
