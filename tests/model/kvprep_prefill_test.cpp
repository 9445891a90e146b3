// The prefill stage against direct engine forwards: independent KV = [S, chunk] computed directly; similarity KV =
// the chunk computed after S and its neighbours' own [S, neighbour] KV (FusionRAG eq. 10), most similar first or
// last; both to f16 rounding.
// Reruns compute nothing; a grown corpus computes only its new chunks; a store built in parts (some documents'
// chunks at a time) holds the same bits as one built at once.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "io/model_paths.h"
#include "model/decoder.h"
#include "model/gguf_tokenizer.h"
#include "prep/chunk_stage.h"
#include "prep/prefill_stage.h"
#include "prep/retrieval_stages.h"
#include "prep/store_report.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/neighbor_table.h"
#include "support/model_files.h"
#include "support/temp_dir.h"
#include "support/test_store.h"
#include "support/test_values.h"
#include "support/tiny_corpus.h"
#include "text/chat_template.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

using test::iota_positions;
using test::max_abs_diff;
using test::random_tokens;

class KvprepPrefill : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    backend = make_cpu_backend().release();
    decoder = Decoder::load(test::smollm2_gguf(), *backend).release();  // the fast mode, as the stage runs
    system_tokens = new std::vector<int32_t>(test::smollm2_tokenizer().encode(
        rag_system_prefix(chat_template_from_gguf(*test::smollm2_file()), ""), false, true));
  }
  static void TearDownTestSuite() {
    delete system_tokens;
    delete decoder;
    delete backend;
  }
  void SetUp() override {
    dir = test::fresh_test_dir();
    store = (dir / "store").string();
  }
  void build(size_t n_docs) {
    const std::string corpus = (dir / "corpus.jsonl").string();
    test::write_tiny_corpus(corpus, n_docs);
    test::chunk_test_store(corpus, store, test::smollm2_gguf());
  }
  // embed, index and neighbors over the current chunks
  void retrieval(int top_n) { test::index_test_store(store, top_n); }
  PrefillStageResult prefill(const std::string& mode, int top_n = 3, NeighborOrder order = NeighborOrder::BestFirst) {
    PrefillStageOptions o;
    o.store_dir = store;
    o.model_path = test::smollm2_gguf();
    o.mode = mode;
    o.top_n = top_n;
    o.neighbor_order = order;
    o.batch_tokens = 40;  // several ragged batches even on a tiny corpus
    o.progress.out = nullptr;
    return run_prefill_stage(o);
  }
  // Direct forward of `tokens` over `view` at positions after it; the computed rows' K/V as stored rows.
  HostKv direct(const std::vector<int32_t>& tokens, int32_t start, std::vector<const KvSegment*> view) {
    ForwardRequest r;
    r.tokens = tokens;
    r.positions = iota_positions((int64_t)tokens.size(), start);
    r.view = std::move(view);
    r.return_kv = true;
    return segment_to_host(decoder->forward(r).kv, *backend);
  }
  // Stored KV against a direct forward: in the f32 mode at most `tol` apart per value (relative to max(1,
  // |value|)), what f16 storage rounds. In the fast mode a pass's matmuls depend on its rows (up to 48 rows of
  // block-format weights: integer dot products; more: bf16 panels; packed_matmul.h), and the store computes chunks
  // in ragged batches of other sizes than a direct forward of one chunk; where the two computations also see
  // differently rounded inputs (S or neighbours as stored vs as computed), the same amplification applies. Both
  // measured up to 0.11 per value at NMSE ~1e-5: in the fast mode the bound is on the NMSE.
  static void expect_f16_close(const HostKv& stored, const HostKv& ref, double tol, const std::string& what) {
    ASSERT_EQ(stored.rows, ref.rows) << what;
    double worst = 0, err_sq = 0, ref_sq = 0;
    for (size_t i = 0; i < ref.k.size(); ++i) {
      worst = std::max(worst, std::abs(stored.k[i] - ref.k[i]) / std::max(1.0, (double)std::abs(ref.k[i])));
      worst = std::max(worst, std::abs(stored.v[i] - ref.v[i]) / std::max(1.0, (double)std::abs(ref.v[i])));
      err_sq += (stored.k[i] - ref.k[i]) * (stored.k[i] - ref.k[i]) + (stored.v[i] - ref.v[i]) * (stored.v[i] - ref.v[i]);
      ref_sq += ref.k[i] * ref.k[i] + ref.v[i] * ref.v[i];
    }
    if (decoder->compute_mode() == ComputeMode::F32)
      EXPECT_LT(worst, tol) << what;
    else
      EXPECT_LT(err_sq / ref_sq, 1e-4) << what << " (largest difference " << worst << ")";
    std::printf("  %-24s largest %.5f, NMSE %.2e\n", what.c_str(), worst, err_sq / ref_sq);
    EXPECT_EQ(stored.positions, iota_positions(ref.rows, 0)) << what << ": stored rows carry in-chunk positions";
  }

  // Each chunk's stored similarity KV against a direct forward after S and its two nearest neighbours' own
  // [S, neighbour] KV, placed one after another in `order`; and closer to that than to the view in the other order
  // (so the test tells the orders apart).
  void expect_similarity_views(NeighborOrder order) {
    const Manifest m = load_manifest(store);
    const KvModeReader stored(store, m, "similarity", m.model_fingerprint);
    const ChunkTable chunks = ChunkTable::read(store + "/" + kChunksFile);
    const NeighborTable nb = NeighborTable::read(store + "/" + kNeighborsFile);
    const int32_t s_len = (int32_t)system_tokens->size();
    ForwardRequest s_req;
    s_req.tokens = *system_tokens;
    s_req.positions = iota_positions(s_len, 0);
    s_req.return_kv = true;
    const KvSegment s_kv = decoder->forward(s_req).kv;
    const auto reference = [&](size_t i, bool best_last) {
      std::vector<KvSegment> placed;
      int32_t at = s_len;
      for (int n = 0; n < 2; ++n) {
        const int j = best_last ? 1 - n : n;
        const ChunkRecord& other = chunks.chunks()[(size_t)nb.rows[i * nb.top_n + j]];
        ForwardRequest r;
        r.tokens = other.tokens;
        r.positions = iota_positions((int64_t)other.tokens.size(), s_len);
        r.view = {&s_kv};
        r.return_kv = true;
        KvSegment kv = decoder->forward(r).kv;
        kv.positions = iota_positions(kv.rows(), at);
        at += (int32_t)kv.rows();
        placed.push_back(std::move(kv));
      }
      std::vector<const KvSegment*> view{&s_kv};
      for (const KvSegment& p : placed) view.push_back(&p);
      return direct(chunks.chunks()[i].tokens, at, view);
    };
    const bool best_last = order == NeighborOrder::BestLast;
    double right = 0, wrong = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const HostKv kv = stored.read(chunks.chunks()[i].id), ref = reference(i, best_last);
      // The stage reads neighbours back from f16 storage, the reference keeps them in f32: a little more slack.
      expect_f16_close(kv, ref, 1e-2, chunks.chunks()[i].title);
      right += nmse(kv, ref);
      wrong += nmse(kv, reference(i, !best_last));
    }
    std::printf("  NMSE against the view in this order %.2e, in the other %.2e\n", right, wrong);
    EXPECT_LT(right * 10, wrong) << "the stored KV is not clearly nearer the view in its own order";
  }
  static double nmse(const HostKv& a, const HostKv& ref) {
    double err = 0, total = 0;
    for (size_t i = 0; i < ref.k.size(); ++i) {
      err += (a.k[i] - ref.k[i]) * (a.k[i] - ref.k[i]) + (a.v[i] - ref.v[i]) * (a.v[i] - ref.v[i]);
      total += ref.k[i] * ref.k[i] + ref.v[i] * ref.v[i];
    }
    return err / total;
  }

  static Backend* backend;
  static Decoder* decoder;
  static std::vector<int32_t>* system_tokens;
  std::filesystem::path dir;
  std::string store;
};
Backend* KvprepPrefill::backend = nullptr;
Decoder* KvprepPrefill::decoder = nullptr;
std::vector<int32_t>* KvprepPrefill::system_tokens = nullptr;

TEST_F(KvprepPrefill, IndependentKvEqualsDirectForwardAfterTheSystemPrompt) {
  build(6);
  const PrefillStageResult r = prefill("independent");
  EXPECT_EQ(r.computed, 6u);
  const Manifest m = load_manifest(store);
  const KvModeReader stored(store, m, "independent", m.model_fingerprint);
  EXPECT_EQ(r.shards_written, stored.shards()) << "the last shard, committed at the stage's end, is counted";
  EXPECT_GT(r.stored_bytes, 0u);
  const ChunkTable chunks = ChunkTable::read(store + "/" + kChunksFile);
  const int32_t s_len = (int32_t)system_tokens->size();
  const KvModeReader stored_s(store, m, "system", m.model_fingerprint);
  ASSERT_EQ(stored_s.chunks(), 1u);
  const KvSegment s_kv = host_to_segment(stored_s.read(stored_s.ids().front()), stored_s.layout(), *backend,
                                         iota_positions(s_len, 0));
  for (const ChunkRecord& c : chunks.chunks()) {
    // Over S exactly as stored: the chunk's KV only rounded to f16.
    expect_f16_close(stored.read(c.id), direct(c.tokens, s_len, {&s_kv}), 1e-3, c.title + " over stored S");
    std::vector<int32_t> both = *system_tokens;
    both.insert(both.end(), c.tokens.begin(), c.tokens.end());
    HostKv ref = direct(both, 0, {});
    // Keep the chunk's rows of the one-call prefill of [S, chunk].
    const int64_t row = (int64_t)ref.k.size() / ref.rows;
    ref.k.erase(ref.k.begin(), ref.k.begin() + s_len * row);
    ref.v.erase(ref.v.begin(), ref.v.begin() + s_len * row);
    ref.rows -= s_len;
    // One f32 call over [S, chunk]: S's own f16 rounding in the store moves the chunk's KV a little more.
    expect_f16_close(stored.read(c.id), ref, 5e-3, c.title);
  }
  EXPECT_TRUE(prefill("independent").unchanged);
}

TEST_F(KvprepPrefill, SimilarityKvIsTheChunkAfterItsNeighboursIndependentKv) {
  build(8);
  retrieval(3);
  prefill("independent");
  EXPECT_EQ(prefill("similarity", 2).computed, 8u);
  expect_similarity_views(NeighborOrder::BestFirst);
  EXPECT_FALSE(load_manifest(store).settings["prefill_similarity"].contains("neighbor_order"))
      << "the default is not recorded, so stores made before the setting keep matching";
}

TEST_F(KvprepPrefill, SimilarityKvBestLastHasTheNearestNeighbourNextToTheChunk) {
  build(8);
  retrieval(3);
  prefill("independent");
  EXPECT_EQ(prefill("similarity", 2, NeighborOrder::BestLast).computed, 8u);
  expect_similarity_views(NeighborOrder::BestLast);
  EXPECT_EQ(load_manifest(store).settings["prefill_similarity"]["neighbor_order"], "best-last");
  // The stored KV depends on the order: another order is refused, naming the setting.
  try {
    prefill("similarity", 2);
    ADD_FAILURE() << "a rerun in the other order was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("neighbor_order"), std::string::npos) << e.what();
  }
}

TEST_F(KvprepPrefill, RefreshRecomputesExactlyTheChunksWhoseNeighboursChanged) {
  build(8);
  retrieval(2);
  prefill("independent");
  prefill("similarity", 2);
  // Neighbour lists of the first eight chunks as their KV was computed.
  const NeighborTable before = NeighborTable::read(store + "/" + kNeighborsFile);
  build(12);
  retrieval(2);
  prefill("independent");
  const NeighborTable after = NeighborTable::read(store + "/" + kNeighborsFile);
  uint64_t changed = 0;
  for (size_t i = 0; i < 8; ++i)
    changed += !std::equal(before.rows.begin() + i * 2, before.rows.begin() + i * 2 + 2, after.rows.begin() + i * 2);
  EXPECT_EQ(prefill("similarity", 2).computed, 4u);  // without the flag: only the new chunks
  PrefillStageOptions o;
  o.store_dir = store;
  o.model_path = test::smollm2_gguf();
  o.mode = "similarity";
  o.top_n = 2;
  o.batch_tokens = 40;
  o.refresh_changed_neighbors = true;
  o.progress.out = nullptr;
  EXPECT_EQ(run_prefill_stage(o).computed, changed);
  EXPECT_GT(changed, 0u);  // the new passages are the nearest neighbours of some old ones
}

// The system prompt S shapes every stored row, so a store keeps the one it was built with: a prefill after another
// S (e.g. a store built before kvfuse's default RAG system message changed) is refused, naming the setting.
TEST_F(KvprepPrefill, AnotherSystemPromptIsRefused) {
  build(2);
  PrefillStageOptions o;
  o.store_dir = store;
  o.model_path = test::smollm2_gguf();
  o.system_message = "You are a librarian.";
  o.progress.out = nullptr;
  EXPECT_EQ(run_prefill_stage(o).computed, 2u);
  const std::string error = test::error_of([&] { prefill("independent"); });
  EXPECT_NE(error.find("prefill settings differ from those it was built with; system_prompt = "), std::string::npos)
      << error;
  EXPECT_NE(error.find("You are a librarian."), std::string::npos) << error;
}

TEST_F(KvprepPrefill, AGrownCorpusComputesOnlyItsNewChunks) {
  build(5);
  EXPECT_EQ(prefill("independent").computed, 5u);
  build(9);
  const PrefillStageResult r = prefill("independent");
  EXPECT_EQ(r.computed, 4u);
  EXPECT_EQ(r.chunks, 9u);
}

// kvrun eval builds the KV of a few questions' passages at a time: a run limited to some documents computes
// their chunks (and, in independent mode, every neighbour their similarity batches read), records how many chunks
// are still missing, leaves a store that verifies, and the store completed later equals one built at once.
TEST_F(KvprepPrefill, AStoreBuiltDocumentByDocumentEqualsOneBuiltAtOnce) {
  build(8);
  retrieval(2);
  const ChunkTable chunks = ChunkTable::read(store + "/" + kChunksFile);
  const std::set<std::string> docs = {chunks.chunks()[1].doc_id, chunks.chunks()[6].doc_id};
  const auto limited = [&](const std::string& mode) {
    PrefillStageOptions o;
    o.store_dir = store;
    o.model_path = test::smollm2_gguf();
    o.mode = mode;
    o.top_n = 2;
    o.batch_tokens = 40;
    o.only_docs = docs;
    o.with_similarity_neighbors = mode == "independent";
    o.progress.out = nullptr;
    return run_prefill_stage(o);
  };
  const auto missing = [&](const std::string& mode) {
    const StageRecord* r = load_manifest(store).find_stage("prefill-" + mode);
    EXPECT_NE(r, nullptr) << mode;
    return r && r->counts.count("missing") ? r->counts.at("missing") : 0;
  };
  size_t of_docs = 0;
  for (const ChunkRecord& c : chunks.chunks()) of_docs += docs.count(c.doc_id);
  const uint64_t independent = limited("independent").computed;
  EXPECT_GT(independent, of_docs);  // the neighbours similarity reads
  EXPECT_LT(independent, chunks.size());
  EXPECT_EQ(missing("independent"), chunks.size() - independent);
  EXPECT_EQ(limited("similarity").computed, of_docs);
  EXPECT_EQ(missing("similarity"), chunks.size() - of_docs);
  EXPECT_TRUE(limited("similarity").unchanged);
  EXPECT_TRUE(verify_store(store).empty()) << verify_store(store)[0].what;
  const std::vector<std::string> notes = incomplete_stages(store);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("prefill-similarity: " + std::to_string(chunks.size() - of_docs) + " of " +
                          std::to_string(chunks.size()) + " chunks have no KV yet"),
            std::string::npos)
      << notes[1];

  EXPECT_EQ(prefill("independent").computed, chunks.size() - independent);
  EXPECT_EQ(prefill("similarity", 2).computed, chunks.size() - of_docs);
  EXPECT_EQ(missing("independent"), 0u);
  EXPECT_EQ(missing("similarity"), 0u);
  EXPECT_TRUE(incomplete_stages(store).empty());

  const std::string in_parts = store;
  store = (dir / "at-once").string();
  test::chunk_test_store((dir / "corpus.jsonl").string(), store, test::smollm2_gguf());
  retrieval(2);
  prefill("independent");
  prefill("similarity", 2);
  const Manifest parts_manifest = load_manifest(in_parts), once_manifest = load_manifest(store);
  for (const char* mode : {"independent", "similarity"}) {
    const KvModeReader a(in_parts, parts_manifest, mode, parts_manifest.model_fingerprint);
    const KvModeReader b(store, once_manifest, mode, once_manifest.model_fingerprint);
    for (const ChunkRecord& c : chunks.chunks()) {
      const HostKv x = a.read(c.id), y = b.read(c.id);
      EXPECT_TRUE(x.k == y.k && x.v == y.v) << mode << " KV of " << c.title << " differs";
    }
  }
}

}  // namespace
}  // namespace kvf
