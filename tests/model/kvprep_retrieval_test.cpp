// The stages after chunking, end to end with the real tokenizer and embedder on a small corpus written here:
// embeddings for every chunk (and only for new ones on a rerun), an index that finds each chunk itself, neighbour
// lists equal to a brute-force top-n, and search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "io/model_paths.h"
#include "prep/chunk_stage.h"
#include "prep/retrieval_stages.h"
#include "prep/store_search.h"
#include "store/chunk_table.h"
#include "store/embedding_table.h"
#include "store/neighbor_table.h"
#include "support/model_files.h"
#include "support/temp_dir.h"
#include "support/tiny_corpus.h"

namespace kvf {
namespace {

class KvprepRetrieval : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::fresh_test_dir();
    store = (dir / "store").string();
    corpus = (dir / "corpus.jsonl").string();
  }
  void chunk(size_t n_docs) {
    test::write_tiny_corpus(corpus, n_docs);
    ChunkStageOptions o;
    o.corpus = corpus;
    o.store_dir = store;
    o.model_path = test::smollm2_gguf();
    o.progress.out = nullptr;
    run_chunk_stage(o);
  }
  EmbedStageResult embed() {
    EmbedStageOptions o;
    o.store_dir = store;
    o.embedder_dir = resolve_model("minilm");
    o.progress.out = nullptr;
    return run_embed_stage(o);
  }
  NeighborStageResult neighbors(int top_n) {
    NeighborStageOptions o;
    o.store_dir = store;
    o.top_n = top_n;
    o.progress.out = nullptr;
    return run_neighbor_stage(o);
  }
  std::filesystem::path dir;
  std::string store, corpus;
};

TEST_F(KvprepRetrieval, EmbedsEveryChunkOnceAndOnlyNewOnesOnARerun) {
  chunk(8);
  const EmbedStageResult first = embed();
  EXPECT_EQ(first.embedded, 8u);
  EXPECT_TRUE(embed().unchanged);
  const EmbeddingTable t8 = EmbeddingTable::read(store + "/" + kEmbeddingsFile);
  chunk(12);
  const EmbedStageResult grown = embed();
  EXPECT_EQ(grown.embedded, 4u);
  const EmbeddingTable t12 = EmbeddingTable::read(store + "/" + kEmbeddingsFile);
  const ChunkTable chunks = ChunkTable::read(store + "/" + kChunksFile);
  ASSERT_EQ(t12.rows(), chunks.size());
  for (size_t i = 0; i < t12.rows(); ++i) {
    EXPECT_EQ(t12.chunk_ids[i], chunks.chunks()[i].id);
    double norm = 0;
    for (int j = 0; j < t12.dim; ++j) norm += t12.row(i)[j] * t12.row(i)[j];
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  // The first eight rows are the ones embedded before the corpus grew, bit for bit.
  EXPECT_TRUE(std::equal(t8.vectors.begin(), t8.vectors.end(), t12.vectors.begin()));
}

TEST_F(KvprepRetrieval, NeighboursEqualBruteForceTopN) {
  chunk(12);
  embed();
  run_index_stage({store, IndexSpec{}});
  const NeighborStageResult r = neighbors(3);
  EXPECT_EQ(r.chunks, 12u);
  EXPECT_TRUE(neighbors(3).unchanged);
  const EmbeddingTable e = EmbeddingTable::read(store + "/" + kEmbeddingsFile);
  const NeighborTable n = NeighborTable::read(store + "/" + kNeighborsFile);
  ASSERT_EQ(n.top_n, 3);
  for (size_t i = 0; i < e.rows(); ++i) {
    std::vector<std::pair<float, int64_t>> all;
    for (size_t j = 0; j < e.rows(); ++j) {
      if (j == i) continue;
      float s = 0;
      for (int d = 0; d < e.dim; ++d) s += e.row(i)[d] * e.row(j)[d];
      all.push_back({-s, (int64_t)j});
    }
    std::sort(all.begin(), all.end());
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(n.rows[i * 3 + k], all[k].second) << "chunk " << i << " rank " << k;
      EXPECT_NEAR(n.scores[i * 3 + k], -all[k].first, 1e-5);
    }
  }
  // Related topics find each other: the violin's nearest chunk is the cello.
  EXPECT_EQ(n.rows[2 * 3], 3);
}

TEST_F(KvprepRetrieval, SearchFindsTheChunkAQueryDescribes) {
  chunk(12);
  embed();
  IndexSpec hnsw;
  hnsw.kind = "hnsw";
  run_index_stage({store, hnsw});
  const StoreSearcher searcher(store, resolve_model("minilm"));
  const auto hits = searcher.search("Which planet has rings?", 3);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].chunk->title, "Saturn");
  EXPECT_GE(hits[0].score, hits[1].score);
}

TEST_F(KvprepRetrieval, StagesRefuseToRunOutOfOrder) {
  chunk(4);
  try {
    run_index_stage({store, IndexSpec{}});
    FAIL() << "index before embed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run `kvprep embed` first"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvf
