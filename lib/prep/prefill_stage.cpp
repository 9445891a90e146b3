#include "prep/prefill_stage.h"

#include <xxhash.h>

#include <chrono>
#include <filesystem>

#include "backend/backend.h"
#include "core/error.h"
#include "fusion/chunk_kv_cache.h"
#include "io/gguf.h"
#include "model/decoder.h"
#include "model/fingerprint.h"
#include "prep/chunk_kv.h"
#include "prep/retrieval_stages.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kSystemMode = "system";

std::vector<int32_t> iota(int64_t n, int32_t start) {
  std::vector<int32_t> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + (int32_t)i;
  return v;
}

KvShardLayout layout_for(const LlamaConfig& c, const std::string& mode, uint64_t fingerprint, KvDtype dtype) {
  KvShardLayout l;
  l.mode = mode;
  l.model_fingerprint = fingerprint;
  l.n_layers = c.n_layers;
  l.layer_map = iota(c.n_layers, 0);
  l.stored_layers = c.n_layers;
  l.kv_heads = c.n_kv_heads;
  l.head_dim = c.head_dim;
  l.dtype = dtype;
  return l;
}

// Writes shards of one mode as they fill, committing each with the manifest.
class ShardSink {
 public:
  ShardSink(const std::string& dir, Manifest& m, KvShardLayout layout, uint64_t shard_bytes, size_t next_number,
            int deflate_level = 0)
      : dir_(dir), m_(m), layout_(std::move(layout)), shard_bytes_(shard_bytes), next_(next_number),
        deflate_level_(deflate_level), writer_(layout_) {
    writer_.set_deflate_level(deflate_level_);
  }
  void add(uint64_t chunk_id, const HostKv& kv, uint64_t context = 0) {
    writer_.add_chunk(chunk_id, kv.k.data(), kv.v.data(), kv.positions.data(), (uint32_t)kv.rows, context);
    if (writer_.bytes() >= shard_bytes_) flush();
  }
  void flush() {
    if (writer_.chunks() == 0) return;
    const std::string name = kv_shard_name(layout_.mode, next_++);
    fs::create_directories(fs::path(dir_) / "kv");
    writer_.write((fs::path(dir_) / name).string());
    bytes_ += writer_.bytes();
    m_.record_file(describe_file(dir_, name));
    save_manifest(dir_, m_);  // the shard is committed: a killed run resumes after it
    ++written_;
    writer_ = KvShardWriter(layout_);
    writer_.set_deflate_level(deflate_level_);
  }
  uint64_t written() const { return written_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string dir_;
  Manifest& m_;
  KvShardLayout layout_;
  uint64_t shard_bytes_;
  size_t next_;
  int deflate_level_;
  KvShardWriter writer_;
  uint64_t written_ = 0, bytes_ = 0;
};

size_t count_shards(const Manifest& m, const std::string& mode) {
  size_t n = 0;
  for (const CommittedFile& f : m.files) n += f.path.rfind("kv/" + mode + "-", 0) == 0;
  return n;
}

}  // namespace

PrefillStageResult run_prefill_stage(const PrefillStageOptions& o) {
  const auto t0 = Clock::now();
  const bool similarity = o.mode == "similarity";
  KVF_CHECK(similarity || o.mode == "independent", "--mode must be independent or similarity, got '", o.mode, "'");
  KVF_CHECK(has_manifest(o.store_dir), o.store_dir, ": not a kvfuse store (no manifest.json); run `kvprep chunk`");
  Manifest m = load_manifest(o.store_dir);
  KVF_CHECK(m.find_stage("chunk"), o.store_dir, ": no chunks yet; run `kvprep chunk` first");
  if (similarity)
    KVF_CHECK(m.find_stage("neighbors") && m.find_stage("prefill-independent"), o.store_dir,
              ": similarity mode needs the neighbour lists and the independent KV; run `kvprep neighbors` and "
              "`kvprep prefill --mode independent` first");

  const auto file = gguf::File::open(o.model_path);
  const uint64_t fingerprint = model_fingerprint(*file);
  require_same_model(m, fingerprint, fs::path(o.model_path).filename().string(), o.store_dir);
  const BpeTokenizer tokenizer(bpe_vocabulary_from_gguf(*file));
  const std::string system_text = rag_system_prefix(chat_template_from_gguf(*file), o.system_message);
  require_settings(m, "prefill",
                   {{"system_prompt", system_text}, {"dtype", o.dtype == KvDtype::F16 ? "f16" : "bf16"}},
                   o.store_dir);
  if (similarity) require_settings(m, "prefill_similarity", {{"top_n", o.top_n}}, o.store_dir);

  auto backend = make_cpu_backend();
  const auto decoder = Decoder::load_gguf(o.model_path, *backend);
  const LlamaConfig& c = decoder->config();
  const ChunkTable chunks = ChunkTable::read((fs::path(o.store_dir) / kChunksFile).string());

  // S: computed once per store, stored as its own shard.
  const std::vector<int32_t> s_tokens = tokenizer.encode(system_text, false, true);
  const int32_t s_len = (int32_t)s_tokens.size();
  const uint64_t s_id = XXH3_64bits_withSeed(s_tokens.data(), s_tokens.size() * sizeof(int32_t), fingerprint);
  if (!KvModeReader(o.store_dir, m, kSystemMode, fingerprint).contains(s_id)) {
    ForwardRequest r;
    r.tokens = s_tokens;
    r.positions = iota(s_len, 0);
    r.return_kv = true;
    ShardSink sink(o.store_dir, m, layout_for(c, kSystemMode, fingerprint, o.dtype), 0, count_shards(m, kSystemMode));
    sink.add(s_id, segment_to_host(decoder->forward(r).kv, *backend));
    sink.flush();
  }
  // Always S as stored (rounded to the store's dtype), so a first run and a resumed one see the same view.
  const KvModeReader system_store(o.store_dir, m, kSystemMode, fingerprint);
  const KvSegment system_kv =
      host_to_segment(system_store.read(s_id), system_store.layout(), *backend, iota(s_len, 0));

  std::unique_ptr<KvModeReader> independent;
  std::unique_ptr<ChunkKvCache> cache;  // neighbours' independent KV, reused across chunks
  NeighborTable neighbors;
  if (similarity) {
    independent = std::make_unique<KvModeReader>(o.store_dir, m, "independent", fingerprint);
    cache = std::make_unique<ChunkKvCache>(*independent, *backend, o.neighbor_cache_bytes);
    neighbors = NeighborTable::read((fs::path(o.store_dir) / kNeighborsFile).string());
    KVF_CHECK(neighbors.size() == chunks.size(), o.store_dir, ": neighbors.h5 covers ", neighbors.size(),
              " chunks, the chunk table ", chunks.size(), "; run `kvprep embed`, `index` and `neighbors`");
  }
  const int top_n = similarity ? std::min(o.top_n, neighbors.top_n) : 0;
  // What a chunk's KV is computed after, beyond S: its neighbours' ids (similarity), recorded with the KV.
  const auto context_of = [&](size_t row) -> uint64_t {
    if (!similarity) return 0;
    std::vector<uint64_t> ids;
    for (int j = 0; j < top_n && neighbors.rows[row * neighbors.top_n + j] >= 0; ++j)
      ids.push_back(chunks.chunks()[(size_t)neighbors.rows[row * neighbors.top_n + j]].id);
    return XXH3_64bits(ids.data(), ids.size() * sizeof(uint64_t));
  };
  const std::string stage = "prefill-" + o.mode;
  const KvModeReader existing(o.store_dir, m, o.mode, fingerprint);
  const auto needs = [&](size_t row) {
    const uint64_t id = chunks.chunks()[row].id;
    return !existing.contains(id) || (o.refresh_changed_neighbors && existing.context(id) != context_of(row));
  };
  // Batches are fixed groups of the chunk table (cut every batch_tokens tokens), whichever chunks are missing:
  // a chunk's KV depends on nothing but its own inputs only if its batch is always the same (GEMM rounding
  // follows the batch's shape), so a resumed or incremental run stores exactly what one run would have.
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) rows with at least one chunk to compute
  size_t missing = 0;
  for (size_t begin = 0; begin < chunks.size();) {
    size_t end = begin, tokens = 0, todo_here = 0;
    while (end < chunks.size() && (end == begin || tokens < (size_t)o.batch_tokens)) {
      tokens += chunks.chunks()[end].tokens.size();
      todo_here += needs(end);
      ++end;
    }
    if (todo_here) groups.push_back({begin, end});
    missing += todo_here;
    begin = end;
  }
  PrefillStageResult res;
  res.chunks = chunks.size();
  if (missing == 0 && m.find_stage(stage)) {
    res.unchanged = true;
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }

  ShardSink sink(o.store_dir, m, layout_for(c, o.mode, fingerprint, o.dtype), o.shard_bytes,
                 count_shards(m, o.mode), o.deflate_level);
  Progress progress("prefill " + o.mode, "chunks", missing, o.progress);
  for (const auto& [begin, end] : groups) {
    // One ragged batch; each request owns its view's placed segments.
    std::vector<ForwardRequest> batch;
    std::vector<std::vector<KvSegment>> placed;
    for (size_t row = begin; row < end; ++row) {
      const ChunkRecord& chunk = chunks.chunks()[row];
      std::vector<KvSegment> views;
      int32_t at = s_len;
      if (similarity) {
        for (int j = 0; j < top_n; ++j) {
          const int64_t nb_row = neighbors.rows[row * neighbors.top_n + j];
          if (nb_row < 0) break;
          const std::shared_ptr<const KvSegment> nb = cache->get(chunks.chunks()[(size_t)nb_row].id).kv;
          if (at + nb->rows() + (int64_t)chunk.tokens.size() > c.context_length) break;  // the view must fit
          KvSegment moved = *nb;  // same tensors, placed at this view's positions
          moved.positions = iota(nb->rows(), at);
          at += (int32_t)nb->rows();
          views.push_back(std::move(moved));
        }
      }
      ForwardRequest r;
      r.tokens = chunk.tokens;
      r.positions = iota((int64_t)chunk.tokens.size(), at);
      r.return_kv = true;
      batch.push_back(std::move(r));
      placed.push_back(std::move(views));
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].view.push_back(&system_kv);
      for (const KvSegment& seg : placed[i]) batch[i].view.push_back(&seg);
    }
    const std::vector<ForwardResult> out = decoder->forward(batch);
    for (size_t i = 0; i < out.size(); ++i) {
      const uint64_t id = chunks.chunks()[begin + i].id;
      if (!needs(begin + i)) continue;  // computed only to keep the batch as it always is
      HostKv kv = segment_to_host(out[i].kv, *backend);
      kv.positions = iota(kv.rows, 0);  // stored rows carry in-chunk positions
      sink.add(id, kv, context_of(begin + i));
      res.tokens += (uint64_t)kv.rows;
      res.context_rows += (uint64_t)batch[i].positions.front();
      ++res.computed;
      progress.advance(1);
    }
  }
  progress.finish();
  sink.flush();
  res.shards_written = sink.written();
  res.stored_bytes = sink.bytes();
  m.record_stage({stage, utc_timestamp(), m.find_stage("chunk")->inputs_hash,
                  {{"chunks", res.chunks}, {"computed", res.computed}, {"tokens", res.tokens}}});
  save_manifest(o.store_dir, m);
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace kvf
