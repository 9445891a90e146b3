#include "fusion/query_engine.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <tuple>

#include "backend/backend.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/stopwatch.h"
#include "fusion/fused_prefill.h"
#include "fusion/passage_chunks.h"
#include "fusion/token_selection.h"
#include "io/gguf.h"
#include "io/hf_folder.h"
#include "io/model_paths.h"
#include "prep/store_model.h"
#include "model/decoder.h"
#include "model/fingerprint.h"
#include "model/generate.h"
#include "model/gguf_tokenizer.h"
#include "prep/store_search.h"
#include "store/chunk_kv.h"
#include "store/chunk_kv_cache.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "text/tokenizer.h"
#include "text/chat_template.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

// The chunk's text with each run of its tokens in [first, last) (ascending context indices within the chunk) in
// [[ ]]. Runs are decoded whole, so a character split over tokens stays whole unless a run boundary splits it.
using IndexIt = std::vector<int64_t>::const_iterator;
std::string marked_text(const Tokenizer& tokenizer, const std::vector<int32_t>& context_tokens,
                        const RagLayout::Chunk& span, IndexIt first, IndexIt last) {
  std::string text;
  auto next = first;
  for (int64_t i = span.first_index, end = span.first_index + span.tokens; i < end;) {
    const bool chosen = next != last && *next == i;
    std::vector<int32_t> run;
    while (i < end && (next != last && *next == i) == chosen) {
      run.push_back(context_tokens[(size_t)i++]);
      if (chosen) ++next;
    }
    const std::string piece = tokenizer.decode(run);
    text += chosen ? "[[" + piece + "]]" : piece;
  }
  return text;
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Background loads side by side with a device backend (BackgroundLoader): on an H100 host one thread delivered a
// 7B-shape chunk in about 25 ms against a question's compute of 16 chunks in about 400 ms, too slow to keep up.
constexpr int kDeviceLoaderThreads = 4;


Manifest load_store_manifest(const QueryEngineOptions& o) {
  KVF_CHECK(has_manifest(o.store_dir), o.store_dir, ": not a kvfuse store (no manifest.json); build one with `kvprep run`");
  Manifest m = load_manifest(o.store_dir);
  KVF_CHECK(!o.chunk_kv || kv_mode_completed(m, o.kv_mode), o.store_dir, ": no '", o.kv_mode,
            "' KV in this store; run `kvprep prefill --mode ", o.kv_mode,
            "` or `kvprep compress --to ", o.kv_mode, "` (stored modes are listed by `kvprep inspect`)");
  return m;
}

// One commit of the store: its manifest, the chunk table it names (the published generation's, reader_table_file)
// and the KV shards of the system prompt and of the asked mode (unless the engine reads no chunk KV), opened. A
// writer may replace or reclaim those files between the manifest's load and their open (a publication, `kvprep
// prune`); the open then fails and is tried again with the newer manifest. A failure under an unchanged manifest is the store's own problem (damage),
// reported as it is. Shards stay readable once open, whatever a writer does to their names.
struct StoreCommit {
  Manifest manifest;
  ChunkTable chunks;
  std::unique_ptr<KvModeReader> system_kv, kv;
};
StoreCommit load_store_commit(const QueryEngineOptions& o) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    Manifest m = load_store_manifest(o);
    try {
      ChunkTable chunks = ChunkTable::read(reader_table_file(o.store_dir, m, kChunksFile));
      auto system_kv = std::make_unique<KvModeReader>(o.store_dir, m, kSystemKvMode, m.model_fingerprint);
      std::unique_ptr<KvModeReader> kv;
      if (o.chunk_kv) kv = std::make_unique<KvModeReader>(o.store_dir, m, o.kv_mode, m.model_fingerprint);
      return {std::move(m), std::move(chunks), std::move(system_kv), std::move(kv)};
    } catch (const Error&) {
      if (attempt == kAttempts || same_commit(m, load_store_manifest(o))) throw;
    }
  }
}

}  // namespace

struct QueryEngine::State {
  QueryEngineOptions options;
  Manifest manifest;
  std::string model_path;  // --model, or the store's own (prep/store_model.h)
  std::shared_ptr<const gguf::File> file;
  uint64_t fingerprint = 0;
  std::unique_ptr<Tokenizer> tokenizer;
  ChatTemplate chat;
  std::string system_text;
  std::unique_ptr<Backend> device_backend;  // where the decoder runs
  std::unique_ptr<ProfilingBackend> profiler;  // with profile_ops, in front of device_backend
  Backend* backend = nullptr;  // what the engine calls: the profiler when there is one
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<Decoder> stored_decoder;  // a layer-shared mode's model (KVSharer); null: the plain one
  ChunkTable chunks;
  KvSegment system_kv;
  std::unique_ptr<KvModeReader> kv;  // null, with cache and loader, when the engine reads no chunk KV
  std::unique_ptr<ChunkKvCache> cache;
  std::unique_ptr<BackgroundLoader> loader;
  std::unique_ptr<StoreSearcher> searcher;  // loaded on the first retrieval
  // The independent KV of first chunks (AnswerOptions::exact_first_chunk) when the mode is another: opened on
  // first use, holding a few chunks (one per question).
  std::unique_ptr<KvModeReader> independent_kv;
  std::unique_ptr<ChunkKvCache> independent_cache;

  explicit State(const QueryEngineOptions& o) : State(o, load_store_commit(o)) {}
  State(const QueryEngineOptions& o, StoreCommit commit)
      : options(o),
        manifest(std::move(commit.manifest)),
        model_path(resolve_model(model_for_store(o.model, o.store_dir))),
        file(open_decoder_file(model_path)),
        fingerprint(model_fingerprint(*file)),
        tokenizer(tokenizer_from_gguf(*file)),
        chat(chat_template_from_gguf(*file)),
        chunks(std::move(commit.chunks)),
        kv(std::move(commit.kv)) {
    require_same_model(manifest, fingerprint, fs::path(model_path).filename().string(), o.store_dir);
    system_text = manifest.settings.at("prefill").at("system_prompt").get<std::string>();
    if (!o.system_message.empty()) {
      const std::string wanted = rag_system_prefix(chat, o.system_message);
      KVF_CHECK(wanted == system_text, o.store_dir, ": the store's KV was computed after another system prompt; "
                "build a store with this system message or leave --system out");
    }
    device_backend = make_backend(o.backend);
    backend = device_backend.get();
    KVF_CHECK(o.profile_ops || !o.profile_host_calls, "profile_host_calls needs profile_ops");
    using Timing = ProfilingBackend::Timing;
    const Timing timing = o.profile_host_calls ? Timing::HostCalls : Timing::OpsWaited;
    if (o.profile_ops) backend = (profiler = std::make_unique<ProfilingBackend>(*device_backend, timing)).get();
    decoder = Decoder::load(model_path, *backend, o.compute);
    const std::vector<int32_t> s_tokens = tokenizer->encode(system_text, false, true);
    const uint64_t s_id = chunk_id(s_tokens, fingerprint);
    const KvModeReader& system_store = *commit.system_kv;
    KVF_CHECK(system_store.contains(s_id), o.store_dir, ": the system prompt's KV is missing; run `kvprep prefill`");
    std::vector<int32_t> positions(s_tokens.size());
    for (size_t i = 0; i < positions.size(); ++i) positions[i] = (int32_t)i;
    // Every question reads the system prefix: its keys are rotated once here.
    system_kv = decoder->with_roped_keys(
        host_to_segment(system_store.read(s_id), system_store.layout(), *backend, positions));
    if (!kv) return;  // full's answers need neither the stored KV's model nor a cache
    if (kv->shards()) {
      const std::vector<int32_t> sources = kv_sources_of_layout(kv->layout(), decoder->kv_sources());
      for (int l = 0; l < (int)sources.size() && !stored_decoder; ++l)
        if (sources[l] != l) stored_decoder = decoder->with_kv_sources(sources);
    }
    cache = std::make_unique<ChunkKvCache>(*kv, *backend, o.cache_bytes, o.decode_low_bit_at_load);
    // A GPU's host cores are idle while a question computes: loads of the next ones run side by side there.
    loader = std::make_unique<BackgroundLoader>(*cache, backend->device() == Device::Host ? 1 : kDeviceLoaderThreads);
  }

  // Whether an answer's exact first chunk reads the store's independent KV; false: it reads its KV mode's, and the
  // answer pass recomputes it. Auto reads it where the store holds it for that chunk (a store may keep only the
  // similarity KV, docs/store.md) and the mode keeps every layer.
  bool first_chunk_reads_independent(const AnswerOptions& o, uint64_t first_chunk) {
    if (!o.exact_first_chunk || o.first_chunk_kv == FirstChunkKv::Recomputed) return false;
    if (o.first_chunk_kv == FirstChunkKv::Stored || options.kv_mode == "independent") return true;
    if (stored_decoder || !kv_mode_completed(manifest, "independent")) return false;
    first_chunk_cache();  // opens independent_kv
    return independent_kv->contains(first_chunk);
  }

  // Where a first chunk's exact (independent) KV comes from: the mode's own cache, or one opened for it.
  ChunkKvCache& first_chunk_cache() {
    if (options.kv_mode == "independent") return *cache;
    if (!independent_cache) {
      KVF_CHECK(kv_mode_completed(manifest, "independent"), options.store_dir,
                ": the exact first chunk's stored KV needs the store's independent KV; run `kvprep prefill --mode "
                "independent`, or recompute it (--first-chunk-kv recompute)");
      KVF_CHECK(!stored_decoder, "exact first chunk: the '", options.kv_mode,
                "' KV shares layers, so its chunks cannot sit beside independent KV (--first-chunk-kv recompute)");
      independent_kv = std::make_unique<KvModeReader>(options.store_dir, manifest, "independent", fingerprint);
      independent_cache = std::make_unique<ChunkKvCache>(*independent_kv, *backend, options.cache_bytes / 16,
                                                         options.decode_low_bit_at_load);
    }
    return *independent_cache;
  }

  // The store's chunks of a query's passages in order, and the passage each chunk comes from.
  std::pair<std::vector<uint64_t>, std::vector<int32_t>> chunks_of_passages(const Query& q) const {
    PassageChunks pc = chunk_passages(q.contexts, manifest.settings.at("chunking"), *tokenizer, fingerprint);
    for (size_t c = 0; c < pc.ids.size(); ++c) {
      const Passage& p = q.contexts[(size_t)pc.passage[c]];
      KVF_CHECK(chunks.contains(pc.ids[c]), "question '", q.id, "': passage ", pc.passage[c], " ('",
                p.title.substr(0, 60), "') is not in the store ", options.store_dir, " (chunk ", hex64(pc.ids[c]),
                "); build the store from the data set's passages");
    }
    return {std::move(pc.ids), std::move(pc.passage)};
  }

  // The steps of QueryEngine::prefill that read the engine's state, in order.
  FusionInputs prompt_inputs(const ResolvedQuery& query, const std::vector<int32_t>& link_tokens,
                             QueryAnswer& answer) const;
  // independent_first: the first chunk reads the independent KV (first_chunk_reads_independent).
  void load_chunk_kv(const ResolvedQuery& query, bool reads_stored, bool independent_first, FusionInputs& inputs,
                     Pending& pending);
  void run_fused_prefill(const AnswerOptions& answer_options, bool reads_stored, bool independent_first,
                         SelectionMemo* memo, FusionInputs& inputs, Pending& pending);
  void add_eval_outputs(const AnswerOptions& answer_options, const RagLayout& layout, Pending& pending) const;
  std::unique_ptr<KvBuffer> decoding_kv(const Pending& pending, int max_tokens) const;
};

QueryEngine::QueryEngine(const QueryEngineOptions& options) : s_(std::make_unique<State>(options)) {}
QueryEngine::~QueryEngine() = default;
QueryEngine::QueryEngine(QueryEngine&&) noexcept = default;
QueryEngine& QueryEngine::operator=(QueryEngine&&) noexcept = default;

const std::string& QueryEngine::kv_mode() const { return s_->options.kv_mode; }
const LlamaConfig& QueryEngine::model_config() const { return s_->decoder->config(); }
ChunkKvCache::Stats QueryEngine::cache_stats() const {
  return s_->cache ? s_->cache->stats() : ChunkKvCache::Stats{};
}

std::map<std::string, OpStats> QueryEngine::op_stats() const {
  return s_->profiler ? s_->profiler->stats() : std::map<std::string, OpStats>{};
}

std::map<std::string, OpStats> QueryEngine::stage_walls() {
  if (!s_->profiler) return {};
  s_->profiler->close_stage();
  return s_->profiler->stage_walls();
}

void QueryEngine::reset_op_stats() {
  if (s_->profiler) s_->profiler->reset();
}

std::vector<int32_t> QueryEngine::link_token_ids(int count) const {
  return preset_token_ids(*s_->file, kLinkTokensKey, *s_->tokenizer, count);
}

std::vector<int32_t> QueryEngine::encode_answer(const std::string& text) const {
  return s_->tokenizer->encode(text, false, false);
}

ResolvedQuery QueryEngine::resolve(const Query& q, int top_k) {
  KVF_CHECK(!q.question.empty(), "question '", q.id, "' is empty");
  ResolvedQuery r{q.id, q.question, {}, {}, {}, 0};
  const auto t0 = Clock::now();
  if (!q.chunk_ids.empty()) {
    for (uint64_t id : q.chunk_ids)
      KVF_CHECK(s_->chunks.contains(id), "question '", q.id, "': chunk ", hex64(id), " is not in the store ",
                s_->options.store_dir);
    r.chunk_ids = q.chunk_ids;
  } else if (!q.contexts.empty()) {
    std::tie(r.chunk_ids, r.passage_of_chunk) = s_->chunks_of_passages(q);
  } else {
    KVF_CHECK(top_k > 0, "--top-k must be positive, got ", top_k);
    // The searcher opens the same commit as the engine (its manifest): a chunk it finds is in the engine's table.
    if (!s_->searcher)
      s_->searcher = std::make_unique<StoreSearcher>(s_->options.store_dir, s_->manifest,
                                                     resolve_model(s_->options.embedder));
    for (const RetrievedChunk& hit : s_->searcher->search(q.question, top_k)) {
      KVF_CHECK(s_->chunks.contains(hit.chunk->id), "question '", q.id, "': retrieved chunk ", hex64(hit.chunk->id),
                " is not in the chunk table of ", s_->options.store_dir);
      r.chunk_ids.push_back(hit.chunk->id);
      r.scores.push_back(hit.score);
    }
    r.retrieve_ms = ms_since(t0);
  }
  return r;
}

ChunkSource QueryEngine::chunk_source(uint64_t chunk_id) const {
  const ChunkRecord* c = s_->chunks.find(chunk_id);
  KVF_CHECK(c, "chunk ", hex64(chunk_id), " is not in the store ", s_->options.store_dir);
  return {c->doc_id, c->title, c->text};
}

uint64_t QueryEngine::generation() const { return s_->manifest.published.number; }

std::string QueryEngine::model_name() const { return fs::path(s_->model_path).filename().string(); }

void QueryEngine::prefetch(const std::vector<uint64_t>& chunk_ids) {
  if (s_->loader) s_->loader->enqueue(chunk_ids);
}
void QueryEngine::wait_prefetched() {
  if (s_->loader) s_->loader->wait_idle();
}

const char* first_chunk_kv_name(FirstChunkKv source) {
  switch (source) {
    case FirstChunkKv::Auto: return "auto";
    case FirstChunkKv::Stored: return "stored";
    case FirstChunkKv::Recomputed: return "recompute";
  }
  return "?";
}

FirstChunkKv first_chunk_kv_from_name(const std::string& name) {
  for (FirstChunkKv source : {FirstChunkKv::Auto, FirstChunkKv::Stored, FirstChunkKv::Recomputed})
    if (name == first_chunk_kv_name(source)) return source;
  fail("first chunk KV must be auto, stored or recompute, got '", name, "'");
}

bool reads_chunk_kv(const AnswerOptions& o) {
  return o.method == FusionMethod::Reuse || (o.method != FusionMethod::Full && o.recompute < 1.0);
}

// One answer between its prefill and its decoding: what decoding reads must stay alive until then.
struct QueryEngine::Pending {
  QueryAnswer answer;
  std::vector<std::shared_ptr<const KvSegment>> held;  // each chunk's KV, alive while it is read
  FusedPrefill fused;
  std::unique_ptr<KvBuffer> own;
  const Decoder* decoder = nullptr;  // the model that decodes it: the stored KV's own, or the plain one for full
  int32_t first = 0, end = 0;
  bool stopped_by_string = false;
};

namespace {

// What an answer records of its query and method before anything is computed.
QueryAnswer answer_to(const ResolvedQuery& query, const AnswerOptions& options, const std::string& kv_mode) {
  QueryAnswer answer;
  answer.id = query.id;
  answer.question = query.question;
  answer.method = options.method;
  answer.recompute = options.method == FusionMethod::Full    ? 1.0
                     : options.method == FusionMethod::Reuse ? 0.0
                                                             : options.recompute;
  answer.kv_mode = kv_mode;
  answer.chunk_ids = query.chunk_ids;
  answer.scores = query.scores;
  answer.ms.retrieve = query.retrieve_ms;
  return answer;
}

// Whether the prefill reads stored chunk KV: a method that recomputes every context token computes exactly full
// attention, so it need not load chunk KV it would supersede entirely.
bool reads_stored_kv(FusionMethod method, double recompute, int64_t context_tokens) {
  return method == FusionMethod::Reuse ||
         (method != FusionMethod::Full && recompute_count(recompute, context_tokens) < context_tokens);
}

// The prompt's counts and the tokens the prefill recomputed, in all and per chunk (marked in its text when asked).
void record_recomputed(const FusedPrefill& fused, const RagLayout& layout, const Tokenizer& tokenizer,
                       bool mark_recomputed, QueryAnswer& answer) {
  answer.n_context_tokens = layout.n_context();
  answer.n_recomputed = (int64_t)fused.selected.size();
  answer.recomputed = fused.selected;
  for (const RagLayout::Chunk& span : layout.chunks) {  // selected is ascending, chunks in context order
    const auto from = std::lower_bound(fused.selected.begin(), fused.selected.end(), span.first_index);
    const auto to = std::lower_bound(from, fused.selected.end(), span.first_index + span.tokens);
    answer.chunk_tokens.push_back(span.tokens);
    answer.recomputed_per_chunk.push_back(to - from);
    if (mark_recomputed) answer.marked_chunks.push_back(marked_text(tokenizer, layout.context_tokens, span, from, to));
  }
  answer.n_link_tokens = (int64_t)layout.link_tokens.size();
  answer.n_prompt_tokens = layout.end;
}

}  // namespace

// The prompt: S's KV, then the chunks' tokens (each followed by its link tokens) and the question. The answer
// records the chunks' sources and the question's length.
FusionInputs QueryEngine::State::prompt_inputs(const ResolvedQuery& query, const std::vector<int32_t>& link_tokens,
                                               QueryAnswer& answer) const {
  FusionInputs inputs;
  inputs.system = &system_kv;
  std::vector<std::vector<int32_t>> chunk_tokens;
  for (uint64_t id : query.chunk_ids) {
    const ChunkRecord* chunk = chunks.find(id);
    chunk_tokens.push_back(chunk->tokens);
    answer.sources.push_back({chunk->doc_id, chunk->title, chunk->text});
  }
  const std::vector<int32_t> question = tokenizer->encode(rag_question_suffix(chat, "", query.question), false, true);
  inputs.layout = make_rag_layout(system_kv.rows(), chunk_tokens, link_tokens, question,
                                  decoder->config().context_length);
  answer.n_question_tokens = (int64_t)question.size();
  return inputs;
}

// The chunks' stored KV when the prefill reads it, held by `pending` while it is read; timed as the answer's load.
void QueryEngine::State::load_chunk_kv(const ResolvedQuery& query, bool reads_stored, bool independent_first,
                                       FusionInputs& inputs, Pending& pending) {
  const auto started = Clock::now();
  if (reads_stored) {
    KVF_CHECK(cache, "method ", method_name(pending.answer.method),
              " reads stored chunk KV, but this engine was opened without it");
    // Chunks load side by side: the store reads one at a time, converting and checking them runs in parallel.
    std::vector<ChunkKvCache::Lookup> looked(query.chunk_ids.size());
    ChunkKvCache& first_cache = independent_first ? first_chunk_cache() : *cache;
    tbb::parallel_for(size_t{0}, looked.size(),
                      [&](size_t i) { looked[i] = (i == 0 ? first_cache : *cache).get(query.chunk_ids[i]); });
    for (ChunkKvCache::Lookup& lookup : looked) {
      (lookup.hit ? pending.answer.cache_hits : pending.answer.cache_misses)++;
      pending.held.push_back(lookup.kv);
      inputs.chunks.push_back(pending.held.back().get());
    }
  }
  pending.answer.ms.load = ms_since(started);
}

// The fused prefill by the answer's method (full when it reads no stored KV), on the model that then decodes.
void QueryEngine::State::run_fused_prefill(const AnswerOptions& answer_options, bool reads_stored,
                                           bool independent_first, SelectionMemo* memo, FusionInputs& inputs,
                                           Pending& pending) {
  if (answer_options.exact_first_chunk && !inputs.layout.chunks.empty()) {
    inputs.exact_context = inputs.layout.chunks[0].tokens;
    inputs.recompute_exact_context = reads_stored && !independent_first;
  }
  pending.decoder = reads_stored && stored_decoder ? stored_decoder.get() : decoder.get();
  if (profiler) inputs.on_stage = [this](const char* stage) { profiler->set_stage(stage); };
  pending.fused = fused_prefill(*pending.decoder, inputs, reads_stored ? answer_options.method : FusionMethod::Full,
                                pending.answer.recompute, memo);
  if (profiler) profiler->set_stage("after prefill");  // the KV kept for decoding, and the decoding
  pending.answer.ms.select = pending.fused.select_ms;
  pending.answer.ms.prefill = pending.fused.prefill_ms;
}

// What an evaluation asks beyond the answer: the context's K and V as decoding sees them, and the logits at each
// teacher token.
void QueryEngine::State::add_eval_outputs(const AnswerOptions& answer_options, const RagLayout& layout,
                                          Pending& pending) const {
  if (answer_options.return_context_kv) pending.answer.context_kv = gather_context_kv(*backend, pending.fused, layout);
  if (!answer_options.teacher_tokens.empty())
    pending.answer.teacher_logits = forced_logits(*pending.decoder, pending.fused.base_view(), pending.fused.computed,
                                                  pending.fused.logits, pending.end, answer_options.teacher_tokens);
  if (!answer_options.reference_tokens.empty())
    pending.answer.reference_logits = forced_logits(*pending.decoder, pending.fused.base_view(), pending.fused.computed,
                                                    pending.fused.logits, pending.end, answer_options.reference_tokens);
}

// The KV that decoding appends to: the prefill's computed rows, with room for `max_tokens` more.
std::unique_ptr<KvBuffer> QueryEngine::State::decoding_kv(const Pending& pending, int max_tokens) const {
  const LlamaConfig& config = decoder->config();
  auto own = std::make_unique<KvBuffer>(*backend, config.n_layers, config.n_kv_heads, config.head_dim,
                                        pending.fused.computed.rows() + max_tokens, &pending.decoder->rope());
  own->append(pending.fused.computed);
  return own;
}

QueryEngine::Pending QueryEngine::prefill(const ResolvedQuery& query, const AnswerOptions& options,
                                          SelectionMemo* memo) {
  State& state = *s_;
  Pending pending;
  if (state.profiler) state.profiler->set_stage("load");
  pending.answer = answer_to(query, options, state.options.kv_mode);
  KVF_CHECK(options.link_tokens >= 0, "--link-tokens must be >= 0, got ", options.link_tokens);
  const auto started = Clock::now();
  FusionInputs inputs = state.prompt_inputs(query, link_token_ids(options.link_tokens), pending.answer);
  const bool reads_stored = reads_stored_kv(options.method, pending.answer.recompute, inputs.layout.n_context());
  const bool independent_first =
      reads_stored && !query.chunk_ids.empty() && state.first_chunk_reads_independent(options, query.chunk_ids[0]);
  state.load_chunk_kv(query, reads_stored, independent_first, inputs, pending);
  state.run_fused_prefill(options, reads_stored, independent_first, memo, inputs, pending);
  // Scores shared with an earlier ratio were not computed again here; a query alone would have spent that time.
  pending.answer.ms.ttft = query.retrieve_ms + ms_since(started) + pending.fused.shared_select_ms;
  record_recomputed(pending.fused, inputs.layout, *state.tokenizer, options.mark_recomputed, pending.answer);
  pending.answer.first_logits = pending.fused.logits;
  pending.first = argmax(pending.fused.logits.data(), state.decoder->config().vocab);
  pending.end = inputs.layout.end;
  state.add_eval_outputs(options, inputs.layout, pending);
  pending.own = state.decoding_kv(pending, options.max_tokens);
  return pending;
}

struct AnswerInProgress::Parts {
  QueryEngine::Pending pending;
  DecodeJob job;
  std::vector<std::string> stop;
  bool force_own_answer = false;
  double decode_ms = 0;
};

AnswerInProgress::AnswerInProgress(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}
AnswerInProgress::~AnswerInProgress() = default;
bool AnswerInProgress::done() const { return parts_->job.done; }
const QueryAnswer& AnswerInProgress::prefilled() const { return parts_->pending.answer; }
const std::vector<int32_t>& AnswerInProgress::tokens() const { return parts_->job.result.tokens; }

std::unique_ptr<AnswerInProgress> QueryEngine::begin_answer(const ResolvedQuery& q, const AnswerOptions& o,
                                                            SelectionMemo* memo) {
  State& s = *s_;
  auto parts = std::make_unique<AnswerInProgress::Parts>();
  parts->pending = prefill(q, o, memo);
  parts->stop = o.stop;
  parts->force_own_answer = o.force_own_answer;
  Pending& p = parts->pending;
  DecodeJob& job = parts->job;
  job.base_view = p.fused.base_view();
  job.own = p.own.get();
  job.first = p.first;
  job.next_position = p.end;
  job.options.max_new_tokens = o.max_tokens;
  job.options.is_end_token = [&s](int32_t id) { return s.tokenizer->is_eog(id); };
  if (!o.stop.empty())
    job.options.should_stop = [&s, &p, stops = o.stop](const std::vector<int32_t>& tokens) {
      // A stop string appears when the newest token ends it, so only a tail of the answer is decoded at each
      // step: enough tokens to hold the longest stop string and a character split at the cut.
      size_t longest = 0;
      for (const std::string& stop : stops) longest = std::max(longest, stop.size());
      std::string text;
      for (size_t tail = longest + 1;; tail *= 2) {
        tail = std::min(tail, tokens.size());
        text = s.tokenizer->decode(std::vector<int32_t>(tokens.end() - (long)tail, tokens.end()));
        if (text.size() >= longest + 4 || tail == tokens.size()) break;
      }
      for (const std::string& stop : stops)
        if (!stop.empty() && text.find(stop) != std::string::npos) return p.stopped_by_string = true;
      return false;
    };
  begin_decode(*p.decoder, job);
  return std::unique_ptr<AnswerInProgress>(new AnswerInProgress(std::move(parts)));
}

std::unique_ptr<AnswerInProgress> QueryEngine::begin(const ResolvedQuery& q, const AnswerOptions& o) {
  SelectionMemo memo;
  return begin_answer(q, o, &memo);
}

bool QueryEngine::step(const std::vector<AnswerInProgress*>& answers) {
  State& s = *s_;
  bool went_on = false;
  // One batched step per model (answers over layer-shared KV run the shared model; full runs the plain one).
  for (const Decoder* d : {s.decoder.get(), s.stored_decoder.get()}) {
    std::vector<DecodeJob*> group;
    std::vector<AnswerInProgress*> members;
    for (AnswerInProgress* a : answers)
      if (a->parts_->pending.decoder == d && !a->done()) {
        group.push_back(&a->parts_->job);
        members.push_back(a);
      }
    if (group.empty()) continue;
    const auto t0 = Clock::now();
    went_on = decode_step(*d, group) || went_on;
    const double ms = ms_since(t0);
    for (AnswerInProgress* a : members) a->parts_->decode_ms += ms;
  }
  return went_on;
}

std::string QueryEngine::answer_text(const std::vector<int32_t>& tokens, const std::vector<std::string>& stop) const {
  std::string text = without_partial_utf8_tail(s_->tokenizer->decode(tokens));
  for (const std::string& cut : stop)
    if (!cut.empty() && text.find(cut) != std::string::npos) text.resize(text.find(cut));
  const size_t b = text.find_first_not_of(" \t\n\r"), e = text.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : text.substr(b, e - b + 1);
}

QueryAnswer QueryEngine::finish(AnswerInProgress& answer) {
  KVF_CHECK(answer.done(), "finish: the answer is still decoding");
  AnswerInProgress::Parts& parts = *answer.parts_;
  QueryAnswer a = std::move(parts.pending.answer);
  const GreedyResult& gen = parts.job.result;
  a.ms.decode = parts.decode_ms;
  a.tokens = gen.tokens;
  a.answer = answer_text(gen.tokens, parts.stop);
  a.stopped_by = parts.pending.stopped_by_string ? "stop_string" : gen.ended ? "end_token" : "max_tokens";
  // The prefill's rows are still as it left them: decoding appended to its own copy (decoding_kv).
  if (parts.force_own_answer)
    a.own_answer_logits = forced_logits(*parts.pending.decoder, parts.pending.fused.base_view(),
                                        parts.pending.fused.computed, a.first_logits, parts.pending.end, a.tokens);
  return a;
}

QueryAnswer QueryEngine::answer(const ResolvedQuery& q, const AnswerOptions& o) {
  return std::move(answer_all(q, {o})[0]);
}

std::vector<QueryAnswer> QueryEngine::answer_all(const ResolvedQuery& q, const std::vector<AnswerOptions>& options) {
  // Every prefill runs (and is timed) alone, except that a selector's scores are computed once per prompt and
  // stored KV (link tokens and the first chunk's KV change them) and reported at every ratio; then the answers are
  // decoded together.
  std::vector<std::unique_ptr<AnswerInProgress>> running;
  std::vector<AnswerInProgress*> all;
  std::map<std::pair<int, bool>, SelectionMemo> memo_by_prompt;  // link tokens, and where the first chunk's KV is from
  for (const AnswerOptions& o : options) {
    // Asked only of answers that read stored KV: a full answer opens no independent KV.
    const bool independent_first =
        reads_chunk_kv(o) && !q.chunk_ids.empty() && s_->first_chunk_reads_independent(o, q.chunk_ids[0]);
    running.push_back(begin_answer(q, o, &memo_by_prompt[{o.link_tokens, independent_first}]));
    all.push_back(running.back().get());
  }
  const auto t0 = Clock::now();
  while (step(all)) {
  }
  const double decode_ms = ms_since(t0);  // each answer's decode time is the batch's
  std::vector<QueryAnswer> answers;
  for (const auto& r : running) {
    answers.push_back(finish(*r));
    answers.back().ms.decode = decode_ms;
  }
  return answers;
}

}  // namespace kvf
