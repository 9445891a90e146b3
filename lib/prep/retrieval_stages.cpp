#include "prep/retrieval_stages.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <unordered_map>

#include "backend/backend.h"
#include "cluster/cluster.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/stopwatch.h"
#include "model/bert_encoder.h"
#include "store/chunk_table.h"
#include "store/embedding_table.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"
#include "text/chunker.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string in_store(const std::string& dir, const char* name) { return (fs::path(dir) / name).string(); }

// The manifest of a store whose `needed` stage has completed, or an error telling which command to run first.
Manifest load_after(const std::string& dir, const char* needed, const char* command) {
  KVF_CHECK(has_manifest(dir), dir, ": not a kvfuse store (no manifest.json); run `kvprep chunk` first");
  Manifest m = load_manifest(dir);
  KVF_CHECK(m.find_stage(needed), dir, ": the ", needed, " stage has not completed; run `kvprep ", command,
            "` first");
  return m;
}

// Whether `stage` completed from exactly these inputs and its output file is still the one recorded.
bool up_to_date(const Manifest& m, const std::string& dir, const char* stage, uint64_t inputs_hash,
                const char* output) {
  const StageRecord* rec = m.find_stage(stage);
  if (!rec || rec->inputs_hash != inputs_hash) return false;
  std::error_code ec;
  const uint64_t size = fs::file_size(in_store(dir, output), ec);
  return !ec && std::any_of(m.files.begin(), m.files.end(),
                            [&](const CommittedFile& f) { return f.path == output && f.bytes == size; });
}

// Writes a stage's output file through `write` (into a temporary) and commits it with its manifest record.
template <typename Write>
void commit_output(Manifest& m, const std::string& dir, const char* output, const Write& write) {
  PendingFile file(in_store(dir, output));
  write(file);
  commit_store_file(dir, m, file, output);
}

void commit_stage(Manifest& m, const std::string& dir, const char* stage, uint64_t inputs_hash,
                  std::map<std::string, uint64_t> counts) {
  m.record_stage({stage, utc_timestamp(), inputs_hash, std::move(counts)});
  save_manifest(dir, m);
}

// Embeddings of the chunks in table order, from `done` (chunk id -> vector), for the rows that have one.
EmbeddingTable ordered_table(const ChunkTable& chunks, const std::unordered_map<uint64_t, std::vector<float>>& done,
                             uint64_t fingerprint, int dim) {
  EmbeddingTable t;
  t.embedder_fingerprint = fingerprint;
  t.dim = dim;
  for (const ChunkRecord& c : chunks.chunks()) {
    const auto it = done.find(c.id);
    if (it == done.end()) continue;
    t.chunk_ids.push_back(c.id);
    t.vectors.insert(t.vectors.end(), it->second.begin(), it->second.end());
  }
  return t;
}

// The end of a distributed stage on every rank: the leader has committed, so the next stage reads its manifest.
template <typename Result>
Result finish_on_rank(const Cluster& cluster, Result r, Clock::time_point t0) {
  cluster.barrier();
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace

EmbedStageResult run_embed_stage(const EmbedStageOptions& o) {
  const auto t0 = Clock::now();
  Manifest m = load_after(o.store_dir, "chunk", "chunk");
  const std::string chunks_path = in_store(o.store_dir, kChunksFile), out = in_store(o.store_dir, kEmbeddingsFile);
  const ChunkTable chunks = ChunkTable::read(chunks_path);
  auto backend = make_backend(o.backend);
  const auto embedder = SentenceEmbedder::load(o.embedder_dir, *backend);
  require_settings(m, "embedding",
                   {{"model", fs::path(o.embedder_dir).filename().string()},
                    {"fingerprint", hex64(embedder->fingerprint())},
                    {"dim", embedder->dim()},
                    {"max_length", embedder->max_length()}},
                   o.store_dir);

  // What an earlier (possibly interrupted) run committed.
  std::unordered_map<uint64_t, std::vector<float>> done;
  if (fs::exists(out)) {
    const EmbeddingTable old = EmbeddingTable::read(out);
    KVF_CHECK(old.embedder_fingerprint == embedder->fingerprint() && old.dim == embedder->dim(), out,
              ": made by another embedder (fingerprint ", hex64(old.embedder_fingerprint), ", now ",
              hex64(embedder->fingerprint()), ")");
    for (size_t i = 0; i < old.rows(); ++i)
      if (chunks.contains(old.chunk_ids[i])) done[old.chunk_ids[i]].assign(old.row(i), old.row(i) + old.dim);
  }
  std::vector<const ChunkRecord*> todo;
  for (const ChunkRecord& c : chunks.chunks())
    if (!done.count(c.id)) todo.push_back(&c);

  EmbedStageResult r;
  r.chunks = chunks.size();
  r.dim = embedder->dim();
  const uint64_t inputs = describe_file(o.store_dir, kChunksFile).xxh3;
  if (todo.empty() && up_to_date(m, o.store_dir, "embed", inputs, kEmbeddingsFile)) {
    r.unchanged = true;
    r.seconds = seconds_since(t0);
    return r;
  }

  // Batches of the todo list go round-robin to the ranks; each round ends with the leader merging every rank's
  // vectors (the only copy it keeps) and committing them when the checkpoint is due. Alone, a round is one batch,
  // so --checkpoint-seconds holds on small stores too. The batches are those embed() would make of the whole list.
  const Cluster& cluster = Cluster::world();
  Progress progress("embed", "chunks", todo.size(), leader_progress(o.progress));
  auto last_checkpoint = Clock::now();
  const size_t group = (size_t)std::max(1, o.batch_size);
  const size_t batches = (todo.size() + group - 1) / group;
  MessageWriter fresh;  // this rank's vectors of the round: (id, dim floats) each
  const auto embed_batch = [&](size_t b) {
    const size_t begin = b * group, end = std::min(todo.size(), begin + group);
    std::vector<std::string> texts;
    for (size_t i = begin; i < end; ++i) texts.push_back(render_chunk(todo[i]->title, todo[i]->text));
    const std::vector<float> vecs = embedder->embed(texts, o.batch_size);
    for (size_t i = begin; i < end; ++i) {
      fresh.put(todo[i]->id);
      fresh.put_vector(std::vector<float>(vecs.begin() + (i - begin) * r.dim, vecs.begin() + (i - begin + 1) * r.dim));
    }
  };
  const auto end_round = [&](size_t, bool last) {
    for (const std::vector<uint8_t>& message : cluster.gather(fresh.bytes())) {
      MessageReader in(message);
      while (!in.done()) {
        const uint64_t id = in.get<uint64_t>();
        done[id] = in.get_vector<float>();
        progress.advance(1);
      }
    }
    fresh = MessageWriter();
    if (!last && cluster.leader() && seconds_since(last_checkpoint) >= o.checkpoint_seconds) {
      commit_output(m, o.store_dir, kEmbeddingsFile, [&](PendingFile& f) {  // recorded; the stage is not done
        ordered_table(chunks, done, embedder->fingerprint(), r.dim).write(f);
      });
      last_checkpoint = Clock::now();
    }
  };
  run_in_rounds(cluster, batches, cluster.alone() ? 1 : (size_t)cluster.size() * 8, embed_batch, end_round);
  progress.finish();
  r.embedded = todo.size();
  if (!cluster.leader()) return finish_on_rank(cluster, r, t0);
  commit_output(m, o.store_dir, kEmbeddingsFile,
                [&](PendingFile& f) { ordered_table(chunks, done, embedder->fingerprint(), r.dim).write(f); });
  commit_stage(m, o.store_dir, "embed", inputs, {{"chunks", r.chunks}, {"embedded", r.embedded}});
  return finish_on_rank(cluster, r, t0);
}

IndexSpec store_index_spec(const std::string& store_dir) {
  return index_spec_of(load_after(store_dir, "index", "index").settings.at("index"));
}

IndexSpec reader_index_spec(const std::string& store_dir, const Manifest& m) {
  KVF_CHECK(m.find_stage("index"), store_dir, ": the index stage has not completed; run `kvprep index` first");
  const bool pinned = m.published.number > 0 && m.find_file(m.published.index) && m.published.index_settings.is_object();
  return index_spec_of(pinned ? m.published.index_settings : m.settings.at("index"));
}

IndexSpec index_spec_of(const nlohmann::json& s) {
  IndexSpec spec;
  spec.kind = s.at("kind").get<std::string>();
  spec.ivf_nlist = s.at("ivf_nlist").get<int>();
  spec.ivf_nprobe = s.at("ivf_nprobe").get<int>();
  spec.hnsw_m = s.at("hnsw_m").get<int>();
  spec.hnsw_ef_construction = s.at("hnsw_ef_construction").get<int>();
  spec.hnsw_ef_search = s.at("hnsw_ef_search").get<int>();
  spec.pq_m = s.value("pq_m", spec.pq_m);  // recorded only where they matter (index_settings)
  spec.pq_refine = s.value("pq_refine", spec.pq_refine);
  spec.train_sample = s.value("train_sample", spec.train_sample);
  return spec;
}

namespace {

// The manifest's "index" section: the settings of every kind, and those of IVF-PQ and sampled training only when
// used (so stores indexed before they existed keep their settings).
nlohmann::json index_settings(const IndexSpec& spec) {
  nlohmann::json settings = {{"kind", spec.kind},
                             {"ivf_nlist", spec.ivf_nlist},
                             {"ivf_nprobe", spec.ivf_nprobe},
                             {"hnsw_m", spec.hnsw_m},
                             {"hnsw_ef_construction", spec.hnsw_ef_construction},
                             {"hnsw_ef_search", spec.hnsw_ef_search}};
  if (spec.kind == "ivfpq") settings.update({{"pq_m", spec.pq_m}, {"pq_refine", spec.pq_refine}});
  if (spec.train_sample > 0) settings["train_sample"] = spec.train_sample;
  return settings;
}

IndexStageResult build_index(const IndexStageOptions& o) {
  const auto t0 = Clock::now();
  Manifest m = load_after(o.store_dir, "embed", "embed");
  const nlohmann::json settings = index_settings(o.spec);
  // The index is derived data: new settings rebuild it rather than being refused.
  const bool same_settings = m.settings.contains("index") && m.settings["index"] == settings;
  m.settings["index"] = settings;
  const uint64_t inputs = describe_file(o.store_dir, kEmbeddingsFile).xxh3;
  IndexStageResult r;
  if (same_settings && up_to_date(m, o.store_dir, "index", inputs, kIndexFile)) {
    r.unchanged = true;
    r.vectors = m.find_stage("index")->counts.at("vectors");
    r.seconds = seconds_since(t0);
    return r;
  }
  const EmbeddingTable table = EmbeddingTable::read(in_store(o.store_dir, kEmbeddingsFile));
  const VectorIndex index = VectorIndex::build(table.vectors.data(), (int64_t)table.rows(), table.dim, o.spec);
  commit_output(m, o.store_dir, kIndexFile, [&](PendingFile& f) { index.save(f); });
  r.vectors = table.rows();
  commit_stage(m, o.store_dir, "index", inputs, {{"vectors", r.vectors}});
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace

IndexStageResult run_index_stage(const IndexStageOptions& o) {
  const Cluster& cluster = Cluster::world();
  const auto t0 = Clock::now();
  IndexStageResult r;
  if (cluster.leader()) r = build_index(o);  // one index for the store: built by the leader while the others wait
  return finish_on_rank(cluster, r, t0);
}

NeighborStageResult run_neighbor_stage(const NeighborStageOptions& o) {
  const auto t0 = Clock::now();
  KVF_CHECK(o.top_n > 0, "--top-n must be positive, got ", o.top_n);
  Manifest m = load_after(o.store_dir, "index", "index");
  m.settings["neighbors"] = {{"top_n", o.top_n}};
  // Neighbours follow from the embeddings, the index and top_n.
  const uint64_t parts[3] = {describe_file(o.store_dir, kIndexFile).xxh3,
                             describe_file(o.store_dir, kEmbeddingsFile).xxh3, (uint64_t)o.top_n};
  const uint64_t inputs = XXH3_64bits(parts, sizeof(parts));
  NeighborStageResult r;
  if (up_to_date(m, o.store_dir, "neighbors", inputs, kNeighborsFile)) {
    r.unchanged = true;
    r.chunks = m.find_stage("neighbors")->counts.at("chunks");
    r.seconds = seconds_since(t0);
    return r;
  }
  const EmbeddingTable table = EmbeddingTable::read(in_store(o.store_dir, kEmbeddingsFile));
  const VectorIndex index = VectorIndex::load(in_store(o.store_dir, kIndexFile), store_index_spec(o.store_dir));
  KVF_CHECK(index.size() == (int64_t)table.rows(), o.store_dir, ": index.faiss holds ", index.size(),
            " vectors but embeddings.h5 ", table.rows(), "; run `kvprep index`");
  const int64_t n = (int64_t)table.rows();
  const Cluster& cluster = Cluster::world();
  NeighborTable out;  // filled by the leader
  out.top_n = o.top_n;
  if (cluster.leader()) {
    out.chunk_ids = table.chunk_ids;
    out.rows.assign((size_t)(n * o.top_n), -1);
    out.scores.assign((size_t)(n * o.top_n), 0.0f);
  }
  // A few extra hits make room for the chunk itself and for exact duplicates (identical embeddings).
  const int64_t k = std::min<int64_t>(n, o.top_n + 4);
  constexpr int64_t kQueries = 512;
  Progress progress("neighbors", "chunks", (uint64_t)n, leader_progress(o.progress));
  double score_sum = 0;
  uint64_t score_count = 0;
  // Blocks of kQueries rows go round-robin to the ranks (the same blocks whatever the rank count, so FAISS takes
  // the same code path for each query); each round ends with the leader placing every rank's lists.
  MessageWriter found;  // this rank's blocks of the round: first row, rows kept and their scores
  const auto search_block = [&](size_t block) {
    const int64_t q0 = (int64_t)block * kQueries, nq = std::min(kQueries, n - q0);
    const SearchHits hits = index.search(table.row((size_t)q0), nq, k);
    std::vector<int64_t> rows((size_t)(nq * o.top_n), -1);
    std::vector<float> scores((size_t)(nq * o.top_n), 0.0f);
    for (int64_t q = 0; q < nq; ++q) {
      int kept = 0;
      for (int64_t j = 0; j < k && kept < o.top_n; ++j) {
        const int64_t row = hits.ids[q * k + j];
        const float score = hits.scores[q * k + j];
        if (row < 0 || row == q0 + q || score >= 1.0f - 1e-6f) continue;
        rows[q * o.top_n + kept] = row;
        scores[q * o.top_n + kept] = score;
        ++kept;
      }
    }
    found.put(q0);
    found.put_vector(rows);
    found.put_vector(scores);
  };
  const auto end_round = [&](size_t, bool) {
    for (const std::vector<uint8_t>& message : cluster.gather(found.bytes())) {
      MessageReader in(message);
      while (!in.done()) {
        const int64_t q0 = in.get<int64_t>();
        const std::vector<int64_t> rows = in.get_vector<int64_t>();
        const std::vector<float> scores = in.get_vector<float>();
        std::copy(rows.begin(), rows.end(), out.rows.begin() + q0 * o.top_n);
        std::copy(scores.begin(), scores.end(), out.scores.begin() + q0 * o.top_n);
        for (size_t i = 0; i < rows.size(); ++i)
          if (rows[i] >= 0) score_sum += scores[i], ++score_count;
        progress.advance(rows.size() / (size_t)o.top_n);
      }
    }
    found = MessageWriter();
  };
  const size_t blocks = (size_t)((n + kQueries - 1) / kQueries);
  run_in_rounds(cluster, blocks, (size_t)cluster.size() * 4, search_block, end_round);
  progress.finish();
  r.chunks = (uint64_t)n;
  if (!cluster.leader()) return finish_on_rank(cluster, r, t0);
  commit_output(m, o.store_dir, kNeighborsFile, [&](PendingFile& f) { out.write(f); });
  r.mean_score = score_count ? score_sum / score_count : 0.0;
  commit_stage(m, o.store_dir, "neighbors", inputs, {{"chunks", r.chunks}, {"top_n", (uint64_t)o.top_n}});
  return finish_on_rank(cluster, r, t0);
}

}  // namespace kvf
