#include "prep/prefill_stage.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <unordered_set>

#include "backend/backend.h"
#include "cluster/cluster.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "io/gguf.h"
#include "io/hf_folder.h"
#include "model/decoder.h"
#include "model/fingerprint.h"
#include "model/gguf_tokenizer.h"
#include "prep/precompute_view.h"
#include "prep/received_attention.h"
#include "prep/retrieval_stages.h"
#include "prep/shard_sink.h"
#include "prep/store_publish.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<int32_t> iota(int64_t n, int32_t start) {
  std::vector<int32_t> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + (int32_t)i;
  return v;
}

// Every layer's KV, or for a condensed-KV model only the layers that compute KV.
KvShardLayout layout_for(const Decoder& d, const std::string& mode, uint64_t fingerprint, KvDtype dtype) {
  const LlamaConfig& c = d.config();
  KvShardLayout l;
  l.mode = mode;
  l.model_fingerprint = fingerprint;
  l.n_layers = c.n_layers;
  l.layer_map = layer_map_of_sources(d.kv_sources(), c.n_layers);
  l.stored_layers = *std::max_element(l.layer_map.begin(), l.layer_map.end()) + 1;
  l.kv_heads = c.n_kv_heads;
  l.head_dim = c.head_dim;
  l.dtype = dtype;
  return l;
}

// Anchor scores: every layer's attention column sums over all of the chunk's own rows (as compress select probes).
void probe_every_layer(ForwardRequest& r, int n_layers) {
  for (int l = 0; l < n_layers; ++l) r.probe_layers.push_back(l);
  for (size_t i = 0; i < r.tokens.size(); ++i) r.probe_rows.push_back((int32_t)i);
}

// The chunk ids a run limited to `o.only_docs` computes (see PrefillStageOptions).
std::unordered_set<uint64_t> chunks_of_documents(const PrefillStageOptions& o, const ChunkTable& chunks) {
  std::unordered_set<uint64_t> out;
  std::vector<bool> listed(chunks.size());
  std::set<std::string> found;
  for (size_t row = 0; row < chunks.size(); ++row) {
    const ChunkRecord& c = chunks.chunks()[row];
    if (!o.only_docs.count(c.doc_id)) continue;
    listed[row] = true;
    found.insert(c.doc_id);
    out.insert(c.id);
  }
  for (const std::string& doc : o.only_docs)
    KVF_CHECK(found.count(doc), o.store_dir, ": no chunk of document '", doc, "' in the store");
  if (!o.with_similarity_neighbors) return out;
  const NeighborTable nb = NeighborTable::read(store_file_path(o.store_dir, kNeighborsFile));
  KVF_CHECK(nb.size() == chunks.size(), o.store_dir, ": ", kNeighborsFile, " lists ", nb.size(), " chunks, the store ",
            chunks.size(), "; run `kvprep neighbors`");
  const int top_n = std::min(o.top_n, nb.top_n);
  // The similarity stage batches as this one does (the pipeline gives both the same batch_tokens).
  for (const auto& [begin, end] : fixed_chunk_batches(chunks, o.batch_tokens)) {
    if (std::none_of(listed.begin() + (std::ptrdiff_t)begin, listed.begin() + (std::ptrdiff_t)end,
                     [](bool b) { return b; }))
      continue;
    for (size_t row = begin; row < end; ++row)
      for (int k = 0; k < top_n; ++k) {
        const int64_t neighbor = nb.rows[row * (size_t)nb.top_n + (size_t)k];
        if (neighbor >= 0) out.insert(nb.chunk_ids[(size_t)neighbor]);
      }
  }
  return out;
}

}  // namespace

bool is_prefill_mode(const std::string& mode) { return mode == "independent" || mode == "similarity"; }

PrefillStageResult run_prefill_stage(const PrefillStageOptions& o) {
  const auto t0 = Clock::now();
  const bool similarity = o.mode == "similarity";
  KVF_CHECK(is_prefill_mode(o.mode), "--mode must be independent or similarity, got '", o.mode, "'");
  KVF_CHECK(has_manifest(o.store_dir), o.store_dir, ": not a kvfuse store (no manifest.json); run `kvprep chunk`");
  Manifest m = load_manifest(o.store_dir);
  KVF_CHECK(m.find_stage("chunk"), o.store_dir, ": no chunks yet; run `kvprep chunk` first");
  if (similarity)
    KVF_CHECK(m.find_stage("neighbors") && m.find_stage("prefill-independent"), o.store_dir,
              ": similarity mode needs the neighbour lists and the independent KV; run `kvprep neighbors` and "
              "`kvprep prefill --mode independent` first");

  const auto file = open_decoder_file(o.model_path);
  const uint64_t fingerprint = model_fingerprint(*file);
  require_same_model(m, fingerprint, fs::path(o.model_path).filename().string(), o.store_dir);
  const BpeTokenizer tokenizer(bpe_vocabulary_from_gguf(*file));
  const std::string system_text = rag_system_prefix(chat_template_from_gguf(*file), o.system_message);
  // Stores built before the fast compute mode existed were computed in f32.
  if (m.settings.contains("prefill") && !m.settings["prefill"].contains("compute")) m.settings["prefill"]["compute"] = "f32";
  require_settings(m, "prefill",
                   {{"system_prompt", system_text},
                    {"dtype", kv_dtype_name(o.dtype)},
                    {"compute", compute_mode_name(o.compute)}},
                   o.store_dir);
  if (similarity) {
    // Recorded only when not the default, so stores made before the setting keep matching.
    nlohmann::json wanted = {{"top_n", o.top_n}};
    if (o.neighbor_order != NeighborOrder::BestFirst) wanted["neighbor_order"] = neighbor_order_name(o.neighbor_order);
    require_settings(m, "prefill_similarity", wanted, o.store_dir);
  }

  const auto t_load = Clock::now();
  auto backend = make_backend(o.backend);
  const auto decoder = Decoder::load(o.model_path, *backend, o.compute);
  PrefillStageResult res;
  res.load_seconds = seconds_since(t_load);
  const LlamaConfig& c = decoder->config();
  const ChunkTable chunks = ChunkTable::read((fs::path(o.store_dir) / kChunksFile).string());

  // S: computed once per store, stored as its own shard.
  const std::vector<int32_t> s_tokens = tokenizer.encode(system_text, false, true);
  const int32_t s_len = (int32_t)s_tokens.size();
  const uint64_t s_id = chunk_id(s_tokens, fingerprint);
  const Cluster& cluster = Cluster::world();
  if (!KvModeReader(o.store_dir, m, kSystemKvMode, fingerprint).contains(s_id)) {
    if (cluster.leader()) {  // one S for the store
      ForwardRequest r;
      r.tokens = s_tokens;
      r.positions = iota(s_len, 0);
      r.return_kv = true;
      ShardSink sink(o.store_dir, m, layout_for(*decoder, kSystemKvMode, fingerprint, o.dtype), 0);
      sink.add(s_id, segment_to_host(source_layers_of(decoder->forward(r).kv, decoder->kv_sources()), *backend));
      sink.flush();
    }
    cluster.barrier();
    if (!cluster.leader()) m = load_manifest(o.store_dir);  // the leader's commit of S
  }
  const PrecomputeView view(o.store_dir, m, chunks, o.mode, o.top_n, o.neighbor_order, fingerprint, s_tokens,
                            c.context_length, *backend, o.neighbor_cache_bytes);
  const std::string stage = "prefill-" + o.mode;
  const KvModeReader existing(o.store_dir, m, o.mode, fingerprint);
  const bool limited = !o.only_docs.empty();
  const std::unordered_set<uint64_t> wanted = limited ? chunks_of_documents(o, chunks) : std::unordered_set<uint64_t>();
  const auto needs = [&](size_t row) {
    const uint64_t id = chunks.chunks()[row].id;
    if (limited && !wanted.count(id)) return false;
    return !existing.contains(id) || (o.refresh_changed_neighbors && existing.context(id) != view.context_hash(row));
  };
  std::unordered_set<uint64_t> left_without_kv;  // by a limited run
  for (const ChunkRecord& c : chunks.chunks())
    if (limited && !wanted.count(c.id) && !existing.contains(c.id)) left_without_kv.insert(c.id);
  if (!o.refresh_changed_neighbors)
    for (size_t row = 0; row < chunks.size(); ++row) {
      const uint64_t id = chunks.chunks()[row].id;
      res.stale += existing.contains(id) && existing.context(id) != view.context_hash(row);
    }
  std::vector<std::pair<size_t, size_t>> groups;  // fixed batches with at least one chunk to compute
  size_t missing = 0;
  for (const auto& [begin, end] : fixed_chunk_batches(chunks, o.batch_tokens)) {
    size_t todo_here = 0;
    for (size_t row = begin; row < end; ++row) todo_here += needs(row);
    if (todo_here) groups.push_back({begin, end});
    missing += todo_here;
  }
  res.chunks = chunks.size();
  if (missing == 0 && m.find_stage(stage)) {
    res.unchanged = true;
    res.seconds = seconds_since(t0);
    return res;
  }

  remove_unlisted_shards(cluster, o.store_dir, o.mode);
  const KvShardLayout layout = layout_for(*decoder, o.mode, fingerprint, o.dtype);
  ShardSink sink(o.store_dir, m, layout, o.shard_bytes, o.deflate_level, cluster);
  // Groups go round-robin to the ranks (alone: one round, the sink committing each full shard). With several
  // ranks a round gives each about one shard's worth of groups, and ends with the leader committing every rank's
  // shard of it.
  const uint64_t group_bytes = std::max<uint64_t>(1, (uint64_t)(o.batch_tokens * layout.bytes_per_row()));
  const size_t per_round = cluster.alone() ? groups.size()
                                           : (size_t)cluster.size() * std::max<uint64_t>(1, o.shard_bytes / group_bytes);
  size_t missing_here = 0;  // this rank's share: the leader's progress shows its own
  for (size_t g = 0; g < groups.size(); ++g)
    if ((int)(g % (size_t)cluster.size()) == cluster.rank())
      for (size_t row = groups[g].first; row < groups[g].second; ++row) missing_here += needs(row);
  Progress progress("prefill " + o.mode + (cluster.alone() ? "" : " (" + cluster.describe() + ")"), "chunks",
                    missing_here, leader_progress(o.progress));
  const auto compute_group = [&](size_t g) {
    const auto [begin, end] = groups[g];
    std::vector<size_t> rows;
    for (size_t row = begin; row < end; ++row) rows.push_back(row);
    std::vector<std::vector<KvSegment>> placed;
    auto t = Clock::now();
    std::vector<ForwardRequest> batch = view.chunk_requests(rows, placed);
    res.view_seconds += seconds_since(t);
    for (ForwardRequest& r : batch) {
      r.return_kv = true;
      if (o.record_anchor_scores && (int64_t)r.tokens.size() > kFewQueryRows) probe_every_layer(r, c.n_layers);
    }
    t = Clock::now();
    // On a GPU the neighbours' keys are rotated once for every layer, so each layer reads them where they lie: a
    // launch per chunk instead of a gather and a rotation per neighbour, layer and sequence. The CPU gathers the
    // rows cheaply and keeps its memory for the batch.
    if (backend->device() != Device::Host)
      for (std::vector<KvSegment>& segments : placed) {
        std::vector<KvSegment> roped = decoder->with_roped_keys(segments);
        for (size_t i = 0; i < segments.size(); ++i) segments[i] = std::move(roped[i]);  // in place: views point here
      }
    const std::vector<ForwardResult> out = decoder->forward(batch);
    backend->synchronize();
    res.forward_seconds += seconds_since(t);
    t = Clock::now();
    const double readback_before = res.readback_seconds;
    for (size_t i = 0; i < out.size(); ++i) {
      const uint64_t id = chunks.chunks()[begin + i].id;
      if (!needs(begin + i)) continue;  // computed only to keep the batch as it always is
      const auto t_readback = Clock::now();
      HostKv kv = segment_to_host(source_layers_of(out[i].kv, decoder->kv_sources()), *backend);
      res.readback_seconds += seconds_since(t_readback);
      kv.positions = iota(kv.rows, 0);  // stored rows carry in-chunk positions
      std::vector<double> scores;
      if (!batch[i].probe_layers.empty()) {
        int64_t view_rows = 0;
        for (const KvSegment* seg : batch[i].view) view_rows += seg->rows();
        scores = received_attention(out[i].attn_colsum, view_rows, kv.rows, AnchorScore::Sum);
        ++res.scored;
      }
      sink.add(id, kv, view.context_hash(begin + i), scores);
      res.tokens += (uint64_t)kv.rows;
      res.context_rows += (uint64_t)batch[i].positions.front();
      ++res.computed;
      progress.advance(1);
    }
    res.store_seconds += seconds_since(t) - (res.readback_seconds - readback_before);
  };
  run_in_rounds(cluster, groups.size(), per_round, compute_group, [&](size_t round, bool) { sink.end_round(round); });
  progress.finish();
  if (cluster.alone()) sink.flush();  // the last shard, so that the counts below include it
  res.shards_written = sink.written();
  res.stored_bytes = sink.bytes();
  const std::vector<uint64_t> totals =
      cluster.sum_at_leader({res.computed, res.tokens, res.context_rows, res.shards_written, res.stored_bytes,
                             res.scored});
  res.computed = totals[0], res.tokens = totals[1], res.context_rows = totals[2];
  res.shards_written = totals[3], res.stored_bytes = totals[4], res.scored = totals[5];
  std::map<std::string, uint64_t> counts = {{"chunks", res.chunks}, {"computed", res.computed}, {"tokens", res.tokens}};
  if (!left_without_kv.empty()) counts["missing"] = left_without_kv.size();
  if (res.stale) counts["stale"] = res.stale;
  sink.finish_stage(stage, counts);
  if (cluster.leader()) publish_store_generation(o.store_dir);  // when this KV completes the store
  cluster.barrier();
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace kvf
