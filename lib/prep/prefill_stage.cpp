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
#include "text/tokenizer.h"
#include "text/chat_template.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Probing a sequence sends its attention down the staged path, which matches the unprobed one only above
// kFewQueryRows query rows: a chunk scored must keep the KV it would have unscored.
static_assert(kMaxUnscoredChunkTokens >= kFewQueryRows, "anchor probes would change the stored KV of short chunks");

std::vector<int32_t> iota(int64_t n, int32_t start) {
  std::vector<int32_t> values((size_t)n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + (int32_t)i;
  return values;
}

// Every layer's KV, or for a condensed-KV model only the layers that compute KV.
KvShardLayout layout_for(const Decoder& decoder, const std::string& mode, uint64_t fingerprint, KvDtype dtype) {
  const LlamaConfig& config = decoder.config();
  KvShardLayout layout;
  layout.mode = mode;
  layout.model_fingerprint = fingerprint;
  layout.n_layers = config.n_layers;
  layout.layer_map = layer_map_of_sources(decoder.kv_sources(), config.n_layers);
  layout.stored_layers = *std::max_element(layout.layer_map.begin(), layout.layer_map.end()) + 1;
  layout.kv_heads = config.n_kv_heads;
  layout.head_dim = config.head_dim;
  layout.dtype = dtype;
  return layout;
}

// Anchor scores: every layer's attention column sums over all of the chunk's own rows (as compress select probes).
void probe_every_layer(ForwardRequest& request, int n_layers) {
  for (int layer = 0; layer < n_layers; ++layer) request.probe_layers.push_back(layer);
  for (size_t i = 0; i < request.tokens.size(); ++i) request.probe_rows.push_back((int32_t)i);
}

// The chunk ids a run limited to `options.only_docs` computes (see PrefillStageOptions).
std::unordered_set<uint64_t> chunks_of_documents(const PrefillStageOptions& options, const ChunkTable& chunks) {
  std::unordered_set<uint64_t> out;
  std::vector<bool> listed(chunks.size());
  std::set<std::string> found;
  for (size_t row = 0; row < chunks.size(); ++row) {
    const ChunkRecord& chunk = chunks.chunks()[row];
    if (!options.only_docs.count(chunk.doc_id)) continue;
    listed[row] = true;
    found.insert(chunk.doc_id);
    out.insert(chunk.id);
  }
  for (const std::string& doc : options.only_docs)
    KVF_CHECK(found.count(doc), options.store_dir, ": no chunk of document '", doc, "' in the store");
  if (!options.with_similarity_neighbors) return out;
  const NeighborTable neighbors = NeighborTable::read(store_file_path(options.store_dir, kNeighborsFile));
  KVF_CHECK(neighbors.size() == chunks.size(), options.store_dir, ": ", kNeighborsFile, " lists ", neighbors.size(),
            " chunks, the store ", chunks.size(), "; run `kvprep neighbors`");
  const int top_n = std::min(options.top_n, neighbors.top_n);
  // The similarity stage batches as this one does (the pipeline gives both the same batch_tokens).
  for (const auto& [begin, end] : fixed_chunk_batches(chunks, options.batch_tokens)) {
    if (std::none_of(listed.begin() + (std::ptrdiff_t)begin, listed.begin() + (std::ptrdiff_t)end,
                     [](bool is_listed) { return is_listed; }))
      continue;
    for (size_t row = begin; row < end; ++row)
      for (int k = 0; k < top_n; ++k) {
        const int64_t neighbor = neighbors.rows[row * (size_t)neighbors.top_n + (size_t)k];
        if (neighbor >= 0) out.insert(neighbors.chunk_ids[(size_t)neighbor]);
      }
  }
  return out;
}

// The store as this run finds it, checked against the options and the model, and S (the system prompt).
struct PrefillStore {
  Manifest manifest;
  std::shared_ptr<const gguf::File> model_file;
  uint64_t fingerprint = 0;
  std::string system_text;
  std::vector<int32_t> system_tokens;
};

// The manifest, once the mode is known and the stages this mode reads are done.
Manifest load_manifest_for_mode(const PrefillStageOptions& options) {
  KVF_CHECK(is_prefill_mode(options.mode), "--mode must be independent or similarity, got '", options.mode, "'");
  KVF_CHECK(has_manifest(options.store_dir), options.store_dir,
            ": not a kvfuse store (no manifest.json); run `kvprep chunk`");
  Manifest manifest = load_manifest(options.store_dir);
  KVF_CHECK(manifest.find_stage("chunk"), options.store_dir, ": no chunks yet; run `kvprep chunk` first");
  if (options.mode == "similarity")
    KVF_CHECK(manifest.find_stage("neighbors") && manifest.find_stage("prefill-independent"), options.store_dir,
              ": similarity mode needs the neighbour lists and the independent KV; run `kvprep neighbors` and "
              "`kvprep prefill --mode independent` first");
  return manifest;
}

// The store's prefill settings must be this run's (recorded by the first run).
void require_prefill_settings(Manifest& manifest, const PrefillStageOptions& options, const std::string& system_text) {
  // Stores built before the fast compute mode existed were computed in f32.
  if (manifest.settings.contains("prefill") && !manifest.settings["prefill"].contains("compute"))
    manifest.settings["prefill"]["compute"] = "f32";
  require_settings(manifest, "prefill",
                   {{"system_prompt", system_text},
                    {"dtype", kv_dtype_name(options.dtype)},
                    {"compute", compute_mode_name(options.compute)}},
                   options.store_dir);
  if (options.mode != "similarity") return;
  // Recorded only when not the default, so stores made before the setting keep matching.
  nlohmann::json wanted = {{"top_n", options.top_n}};
  if (options.neighbor_order != NeighborOrder::BestFirst)
    wanted["neighbor_order"] = neighbor_order_name(options.neighbor_order);
  require_settings(manifest, "prefill_similarity", wanted, options.store_dir);
}

PrefillStore open_checked_store(const PrefillStageOptions& options) {
  PrefillStore store;
  store.manifest = load_manifest_for_mode(options);
  store.model_file = open_decoder_file(options.model_path);
  store.fingerprint = model_fingerprint(*store.model_file);
  require_same_model(store.manifest, store.fingerprint, fs::path(options.model_path).filename().string(),
                     options.store_dir);
  const std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_gguf(*store.model_file);
  store.system_text = rag_system_prefix(chat_template_from_gguf(*store.model_file), options.system_message);
  require_prefill_settings(store.manifest, options, store.system_text);
  store.system_tokens = tokenizer->encode(store.system_text, false, true);
  return store;
}

// Where the model runs and the model itself (the decoder released first).
struct PrefillModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
};

PrefillModel load_model(const PrefillStageOptions& options, PrefillStageResult& result) {
  const auto started = Clock::now();
  PrefillModel model;
  model.backend = make_backend(options.backend);
  model.decoder = Decoder::load(options.model_path, *model.backend, options.compute);
  result.load_seconds = seconds_since(started);
  return model;
}

// S: computed once per store (by the leader), stored as its own shard; the other ranks then read its commit.
void store_system_kv(const PrefillStageOptions& options, const Cluster& cluster, const PrefillModel& model,
                     PrefillStore& store) {
  const uint64_t system_id = chunk_id(store.system_tokens, store.fingerprint);
  if (KvModeReader(options.store_dir, store.manifest, kSystemKvMode, store.fingerprint).contains(system_id)) return;
  if (cluster.leader()) {
    ForwardRequest request;
    request.tokens = store.system_tokens;
    request.positions = iota((int64_t)store.system_tokens.size(), 0);
    request.return_kv = true;
    const Decoder& decoder = *model.decoder;
    ShardSink sink(options.store_dir, store.manifest,
                   layout_for(decoder, kSystemKvMode, store.fingerprint, options.dtype), 0);
    sink.add(system_id,
             segment_to_host(source_layers_of(decoder.forward(request).kv, decoder.kv_sources()), *model.backend));
    sink.flush();
  }
  cluster.barrier();
  if (!cluster.leader()) store.manifest = load_manifest(options.store_dir);  // the leader's commit of S
}

// Which chunks this run computes, in which of the fixed batches, and what it leaves as it is.
struct ChunkPlan {
  std::vector<bool> needed;                       // per row of the chunk table: computed by this run
  std::vector<std::pair<size_t, size_t>> groups;  // fixed batches with at least one chunk to compute
  size_t missing = 0;                             // chunks to compute
  size_t left_without_kv = 0;                     // by a limited run: chunks of other documents without KV
  uint64_t stale = 0;                             // kept with KV of another neighbour list (see the result)
};

ChunkPlan plan_chunks(const PrefillStageOptions& options, const ChunkTable& chunks, const KvModeReader& existing,
                      const PrecomputeView& view) {
  const bool limited = !options.only_docs.empty();
  const std::unordered_set<uint64_t> wanted = limited ? chunks_of_documents(options, chunks)
                                                      : std::unordered_set<uint64_t>();
  const auto changed = [&](size_t row, uint64_t id) { return existing.context(id) != view.context_hash(row); };
  const auto needs = [&](size_t row) {
    const uint64_t id = chunks.chunks()[row].id;
    if (limited && !wanted.count(id)) return false;
    return !existing.contains(id) || (options.refresh_changed_neighbors && changed(row, id));
  };
  ChunkPlan plan;
  std::unordered_set<uint64_t> left_without_kv;
  for (const ChunkRecord& chunk : chunks.chunks())
    if (limited && !wanted.count(chunk.id) && !existing.contains(chunk.id)) left_without_kv.insert(chunk.id);
  plan.left_without_kv = left_without_kv.size();
  if (!options.refresh_changed_neighbors)
    for (size_t row = 0; row < chunks.size(); ++row) {
      const uint64_t id = chunks.chunks()[row].id;
      plan.stale += existing.contains(id) && changed(row, id);
    }
  plan.needed.assign(chunks.size(), false);
  for (const auto& [begin, end] : fixed_chunk_batches(chunks, options.batch_tokens)) {
    size_t todo_here = 0;
    for (size_t row = begin; row < end; ++row) {
      plan.needed[row] = needs(row);
      todo_here += plan.needed[row];
    }
    if (todo_here) plan.groups.push_back({begin, end});
    plan.missing += todo_here;
  }
  return plan;
}

// Groups go round-robin to the ranks (alone: one round, the sink committing each full shard). With several ranks a
// round gives each about one shard's worth of groups, and ends with the leader committing every rank's shard of it.
size_t groups_per_round(const PrefillStageOptions& options, const Cluster& cluster, const KvShardLayout& layout,
                        size_t groups) {
  if (cluster.alone()) return groups;
  const uint64_t group_bytes = std::max<uint64_t>(1, (uint64_t)(options.batch_tokens * layout.bytes_per_row()));
  return (size_t)cluster.size() * std::max<uint64_t>(1, options.shard_bytes / group_bytes);
}

// The chunks of this rank's groups: the leader's progress shows its own share.
size_t chunks_of_rank(const Cluster& cluster, const ChunkPlan& plan) {
  size_t count = 0;
  for (size_t group = 0; group < plan.groups.size(); ++group)
    if ((int)(group % (size_t)cluster.size()) == cluster.rank())
      for (size_t row = plan.groups[group].first; row < plan.groups[group].second; ++row) count += plan.needed[row];
  return count;
}

// The chunk's anchor scores when its request probed them (probe_every_layer), else none.
std::vector<double> anchor_scores_of(const ForwardRequest& request, const ForwardResult& output, int64_t rows) {
  if (request.probe_layers.empty()) return {};
  int64_t view_rows = 0;
  for (const KvSegment* segment : request.view) view_rows += segment->rows();
  return received_attention(output.attn_colsum, view_rows, rows, AnchorScore::Sum);
}

// Computes one fixed group of chunks after their views and hands the planned chunks' KV (and anchor scores) to
// the sink, adding to the result's counts and times.
class GroupPrefill {
 public:
  GroupPrefill(const PrefillStageOptions& options, const PrefillModel& model, const ChunkTable& chunks,
               const PrecomputeView& view, const ChunkPlan& plan, ShardSink& sink, Progress& progress,
               PrefillStageResult& result)
      : options_(options),
        model_(model),
        chunks_(chunks),
        view_(view),
        plan_(plan),
        sink_(sink),
        progress_(progress),
        result_(result) {}

  void compute(size_t group) {
    const auto [begin, end] = plan_.groups[group];
    std::vector<size_t> rows;
    for (size_t row = begin; row < end; ++row) rows.push_back(row);
    std::vector<std::vector<KvSegment>> placed;
    std::vector<ForwardRequest> batch = requests(rows, placed);
    const std::vector<ForwardResult> outputs = forward(batch, placed);
    store_planned_chunks(begin, batch, outputs);
  }

 private:
  // The chunks' requests after their views (`placed` holds the segments they read), asking for KV and, when
  // recorded, anchor scores of chunks longer than kMaxUnscoredChunkTokens.
  std::vector<ForwardRequest> requests(const std::vector<size_t>& rows, std::vector<std::vector<KvSegment>>& placed) {
    const auto started = Clock::now();
    std::vector<ForwardRequest> batch = view_.chunk_requests(rows, placed);
    result_.view_seconds += seconds_since(started);
    for (ForwardRequest& request : batch) {
      request.return_kv = true;
      if (options_.record_anchor_scores && (int64_t)request.tokens.size() > kMaxUnscoredChunkTokens)
        probe_every_layer(request, model_.decoder->config().n_layers);
    }
    return batch;
  }

  // On a GPU the neighbours' keys are rotated once for every layer, so each layer reads them where they lie: a
  // launch per chunk instead of a gather and a rotation per neighbour, layer and sequence. The CPU gathers the
  // rows cheaply and keeps its memory for the batch.
  void rope_neighbor_keys(std::vector<std::vector<KvSegment>>& placed) const {
    if (model_.backend->device() == Device::Host) return;
    for (std::vector<KvSegment>& segments : placed) {
      std::vector<KvSegment> roped = model_.decoder->with_roped_keys(segments);
      for (size_t i = 0; i < segments.size(); ++i) segments[i] = std::move(roped[i]);  // in place: views point here
    }
  }

  std::vector<ForwardResult> forward(const std::vector<ForwardRequest>& batch,
                                     std::vector<std::vector<KvSegment>>& placed) {
    const auto started = Clock::now();
    rope_neighbor_keys(placed);
    std::vector<ForwardResult> outputs = model_.decoder->forward(batch);
    model_.backend->synchronize();
    result_.forward_seconds += seconds_since(started);
    return outputs;
  }

  // The planned chunks of the group (the others were computed only to keep the batch as it always is).
  void store_planned_chunks(size_t begin, const std::vector<ForwardRequest>& batch,
                            const std::vector<ForwardResult>& outputs) {
    const auto started = Clock::now();
    const double readback_before = result_.readback_seconds;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (plan_.needed[begin + i]) store_chunk(begin + i, batch[i], outputs[i]);
    result_.store_seconds += seconds_since(started) - (result_.readback_seconds - readback_before);
  }

  void store_chunk(size_t row, const ForwardRequest& request, const ForwardResult& output) {
    const auto readback_started = Clock::now();
    HostKv kv = segment_to_host(source_layers_of(output.kv, model_.decoder->kv_sources()), *model_.backend);
    result_.readback_seconds += seconds_since(readback_started);
    kv.positions = iota(kv.rows, 0);  // stored rows carry in-chunk positions
    const std::vector<double> scores = anchor_scores_of(request, output, kv.rows);
    result_.scored += !request.probe_layers.empty();
    sink_.add(chunks_.chunks()[row].id, kv, view_.context_hash(row), scores);
    result_.tokens += (uint64_t)kv.rows;
    result_.context_rows += (uint64_t)request.positions.front();
    ++result_.computed;
    progress_.advance(1);
  }

  const PrefillStageOptions& options_;
  const PrefillModel& model_;
  const ChunkTable& chunks_;
  const PrecomputeView& view_;
  const ChunkPlan& plan_;
  ShardSink& sink_;
  Progress& progress_;
  PrefillStageResult& result_;
};

// The counts every rank added, summed at the leader (the totals that the stage records).
void sum_counts_at_leader(const Cluster& cluster, PrefillStageResult& result) {
  const std::vector<uint64_t> totals = cluster.sum_at_leader(
      {result.computed, result.tokens, result.context_rows, result.shards_written, result.stored_bytes, result.scored});
  result.computed = totals[0], result.tokens = totals[1], result.context_rows = totals[2];
  result.shards_written = totals[3], result.stored_bytes = totals[4], result.scored = totals[5];
}

std::map<std::string, uint64_t> stage_counts(const PrefillStageResult& result, const ChunkPlan& plan) {
  std::map<std::string, uint64_t> counts = {{"chunks", result.chunks},
                                            {"computed", result.computed},
                                            {"tokens", result.tokens}};
  if (plan.left_without_kv) counts["missing"] = plan.left_without_kv;
  if (result.stale) counts["stale"] = result.stale;
  return counts;
}

// Every rank computes its groups of the plan into the mode's shards; then the stage is recorded with the totals.
void compute_planned_chunks(const PrefillStageOptions& options, const Cluster& cluster, const PrefillModel& model,
                            PrefillStore& store, const ChunkTable& chunks, const PrecomputeView& view,
                            const ChunkPlan& plan, PrefillStageResult& result) {
  remove_unlisted_shards(cluster, options.store_dir, options.mode);
  const KvShardLayout layout = layout_for(*model.decoder, options.mode, store.fingerprint, options.dtype);
  ShardSink sink(options.store_dir, store.manifest, layout, options.shard_bytes, options.entropy, cluster);
  Progress progress("prefill " + options.mode + (cluster.alone() ? "" : " (" + cluster.describe() + ")"), "chunks",
                    chunks_of_rank(cluster, plan), leader_progress(options.progress));
  GroupPrefill group_prefill(options, model, chunks, view, plan, sink, progress, result);
  run_in_rounds(
      cluster, plan.groups.size(), groups_per_round(options, cluster, layout, plan.groups.size()),
      [&](size_t group) { group_prefill.compute(group); }, [&](size_t round, bool) { sink.end_round(round); });
  progress.finish();
  if (cluster.alone()) sink.flush();  // the last shard, so that the counts below include it
  result.shards_written = sink.written();
  result.stored_bytes = sink.bytes();
  sum_counts_at_leader(cluster, result);
  sink.finish_stage("prefill-" + options.mode, stage_counts(result, plan));
}

}  // namespace

bool is_prefill_mode(const std::string& mode) { return mode == "independent" || mode == "similarity"; }

PrefillStageResult run_prefill_stage(const PrefillStageOptions& options) {
  const auto started = Clock::now();
  PrefillStore store = open_checked_store(options);
  PrefillStageResult result;
  const PrefillModel model = load_model(options, result);
  const ChunkTable chunks = ChunkTable::read((fs::path(options.store_dir) / kChunksFile).string());
  const Cluster& cluster = Cluster::world();
  store_system_kv(options, cluster, model, store);
  const PrecomputeView view(options.store_dir, store.manifest, chunks, options.mode, options.top_n,
                            options.neighbor_order, store.fingerprint, store.system_tokens,
                            model.decoder->config().context_length, *model.backend, options.neighbor_cache_bytes);
  const KvModeReader existing(options.store_dir, store.manifest, options.mode, store.fingerprint);
  const ChunkPlan plan = plan_chunks(options, chunks, existing, view);
  result.chunks = chunks.size();
  result.stale = plan.stale;
  if (plan.missing == 0 && store.manifest.find_stage("prefill-" + options.mode)) {
    result.unchanged = true;
  } else {
    compute_planned_chunks(options, cluster, model, store, chunks, view, plan, result);
    if (cluster.leader()) publish_store_generation(options.store_dir);  // when this KV completes the store
    cluster.barrier();
  }
  result.seconds = seconds_since(started);
  return result;
}

}  // namespace kvf
