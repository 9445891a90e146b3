// Query time over a store (DESIGN.md §6): a question's chunks (retrieved with the store's embedder and index, or
// given), their stored KV (through an in-memory cache that a background loader can fill ahead), a fused prefill
// by one of the methods, and greedy decoding; every phase timed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/profiling_backend.h"
#include "fusion/context_kv.h"
#include "fusion/fused_prefill.h"
#include "fusion/fusion_method.h"
#include "fusion/passage_chunks.h"
#include "io/model_paths.h"
#include "model/llama_config.h"
#include "store/chunk_kv_cache.h"

namespace kvf {

struct QueryEngineOptions {
  std::string store_dir;
  std::string model;  // the store's decoder: a preset, a GGUF file or a HF folder; "": the store's own
  std::string embedder = kDefaultEmbedder;  // the store's embedder, for retrieval
  std::string kv_mode = "independent";  // which stored KV: independent | similarity
  uint64_t cache_bytes = 1ull << 30;    // chunk KV kept in memory, least recently used out first
  // Low-bit KV (int4/int3/int2): false, held as stored and decoded by each forward pass where it gathers the
  // rows; true, decoded to f32 when read (8-16x the memory, no decoding per query). ChunkKvCache.
  bool decode_low_bit_at_load = false;
  std::string system_message;           // must match the store's S; empty: the store's own
  std::string backend = "cpu";          // where the decoder runs: cpu | cuda
  ComputeMode compute = ComputeMode::Fast;  // how: compact weights and fast kernels, or the f32 reference
  // Time every backend op (ProfilingBackend: each op waited for, so answers get slower); see op_stats().
  bool profile_ops = false;
  // With profile_ops: time only each op's call on the host, nothing waited for, and each stage's wall time
  // (ProfilingBackend's HostCalls); see stage_walls().
  bool profile_host_calls = false;
  // false: the engine opens no stored chunk KV (no shard of kv_mode, no cache, no background loader) and answers
  // only what reads none (reads_chunk_kv false: full, or a selector recomputing everything); the system prompt's
  // KV is still read. For a run by such a method alone (kvrun batch --method full).
  bool chunk_kv = true;
};

struct Query {
  std::string id;
  std::string question;
  std::vector<uint64_t> chunk_ids;  // the chunks in prompt order; empty: retrieve
  std::vector<Passage> contexts;    // or passages, mapped to the store's chunks of them (in order)
};

// A query whose chunks are settled (retrieved or given), ready to answer.
struct ResolvedQuery {
  std::string id, question;
  std::vector<uint64_t> chunk_ids;
  std::vector<float> scores;  // retrieval scores; empty for given chunks
  std::vector<int32_t> passage_of_chunk;  // for passages given: the index of each chunk's passage; else empty
  double retrieve_ms = 0;
};

// Where an exact first chunk's rows come from (AnswerOptions::exact_first_chunk): Stored, the store's independent
// KV; Recomputed, the answer pass computes them beside the selected tokens (no independent KV needed; its tokens
// are recomputed on top of the budget); Auto, stored where the store holds independent KV, else recomputed.
enum class FirstChunkKv { Auto, Stored, Recomputed };
const char* first_chunk_kv_name(FirstChunkKv source);          // "auto" | "stored" | "recompute"
FirstChunkKv first_chunk_kv_from_name(const std::string& name);  // throws kvf::Error naming the value

struct AnswerOptions {
  FusionMethod method = FusionMethod::Fusion;
  double recompute = 0.15;
  int top_k = 5;                   // chunks retrieved when a query has none given
  int link_tokens = 0;             // KVLink link tokens after each chunk
  int max_tokens = 64;             // generated tokens at most
  std::vector<std::string> stop;   // generation ends when the answer text contains one of these
  // For eval: tokens to score under teacher forcing after the prefill (a gold answer, see encode_answer) ...
  std::vector<int32_t> teacher_tokens;
  // ... a second sequence forced the same way (another run's answer: kvrun eval --reference-kv) ...
  std::vector<int32_t> reference_tokens;
  // ... whether, once decoded, this answer's own tokens are forced the same way over its prefill (the logits its
  // greedy steps saw, computed as reference_tokens' are, so two runs on equal KV give equal rows) ...
  bool force_own_answer = false;
  bool return_context_kv = false;  // ... and whether to return the context's K and V as decoding saw them
  bool mark_recomputed = false;    // fill QueryAnswer::marked_chunks
  // The first chunk follows S alone, exactly as its independent KV was computed: true, it takes that KV whatever
  // the KV mode (its rows are then what full attention computes, to f16 rounding) and the selectors leave it out,
  // spending the whole budget on the other chunks. Read from the store's independent KV (a mode keeping every
  // layer) or recomputed at query time (first_chunk_kv).
  bool exact_first_chunk = false;
  FirstChunkKv first_chunk_kv = FirstChunkKv::Auto;  // where that chunk's exact rows come from
};

// Whether answering by these options reads stored chunk KV: false for full and for a selector that recomputes every
// context token (recompute 1: it computes exactly full's tokens), true otherwise.
bool reads_chunk_kv(const AnswerOptions& options);

struct QueryTimings {
  double retrieve = 0, load = 0, select = 0, prefill = 0, ttft = 0, decode = 0;  // milliseconds
};

// A chunk's place in the corpus, so an answer can cite what it read.
struct ChunkSource {
  std::string doc_id, title, text;
};

struct QueryAnswer {
  std::string id, question, answer;
  FusionMethod method = FusionMethod::Full;
  double recompute = 0;
  std::string kv_mode;
  std::vector<uint64_t> chunk_ids;
  std::vector<float> scores;
  std::vector<ChunkSource> sources;  // per chunk (chunk_ids' order): its document, title and text
  int64_t n_context_tokens = 0, n_recomputed = 0, n_link_tokens = 0, n_question_tokens = 0, n_prompt_tokens = 0;
  std::vector<int64_t> chunk_tokens, recomputed_per_chunk;  // per chunk (chunk_ids' order): tokens, recomputed
  std::vector<int64_t> recomputed;  // the recomputed tokens' context indices (0 = the first chunk's first), ascending
  // When mark_recomputed: per chunk, its text with each run of recomputed tokens in [[ ]].
  std::vector<std::string> marked_chunks;
  std::vector<int32_t> tokens;  // generated ids, the end token excluded
  std::vector<float> first_logits;  // the prefill's logits for the first generated token (vocab entries)
  std::vector<float> teacher_logits;  // [teacher_tokens.size(), vocab]: the logits at each teacher token
  std::vector<float> reference_logits;  // [reference_tokens.size(), vocab]: likewise at each reference token
  std::vector<float> own_answer_logits;  // with force_own_answer: [tokens.size(), vocab], likewise at each own token
  HostKv context_kv;                  // when return_context_kv: at prompt positions
  std::string stopped_by;       // end_token | stop_string | max_tokens
  uint64_t cache_hits = 0, cache_misses = 0;  // chunk KV lookups of this query
  QueryTimings ms;
};

class QueryEngine;

// An answer decoded a step at a time beside others (kvrun serve): QueryEngine::begin prefills it, step decodes one
// more token of every unfinished answer together, finish makes its QueryAnswer: the answer answer() gives with the
// same options (on the CPU bit for bit, whichever answers step beside it).
class AnswerInProgress {
 public:
  ~AnswerInProgress();
  bool done() const;
  const QueryAnswer& prefilled() const;        // what the prefill settled: chunks, sources, counts, ttft
  const std::vector<int32_t>& tokens() const;  // generated so far (the end token excluded)

 private:
  friend class QueryEngine;
  struct Parts;
  explicit AnswerInProgress(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

class QueryEngine {
 public:
  // Loads the store's manifest, chunk table, decoder and S's KV; checks that the model and the KV mode match the
  // store. Throws kvf::Error naming the store and what is missing or different.
  explicit QueryEngine(const QueryEngineOptions& options);
  ~QueryEngine();
  QueryEngine(QueryEngine&&) noexcept;
  QueryEngine& operator=(QueryEngine&&) noexcept;

  // Settles a query's chunks: given ids are checked against the store, passages are chunked as the store chunks
  // and looked up, and otherwise the top_k chunks are retrieved (loading the embedder and index on first use).
  ResolvedQuery resolve(const Query& query, int top_k);
  // Starts loading these chunks' KV in the background (the next question's, while this one computes); nothing
  // without chunk KV (QueryEngineOptions::chunk_kv).
  void prefetch(const std::vector<uint64_t>& chunk_ids);
  void wait_prefetched();  // until the background loader is idle (tests, benchmarks)
  QueryAnswer answer(const ResolvedQuery& query, const AnswerOptions& options);
  // Several answers to one query: each prefill runs and is timed alone (a selector's scores, which no ratio
  // changes, are computed once and their time reported at every ratio), then all are decoded together (one
  // forward per step for all of them); each answer's decode time is the batch's.
  std::vector<QueryAnswer> answer_all(const ResolvedQuery& query, const std::vector<AnswerOptions>& options);
  // The step-wise form of answer() (AnswerInProgress): step returns false when no answer went on. An answer's
  // decode time is that of the steps it took part in.
  std::unique_ptr<AnswerInProgress> begin(const ResolvedQuery& query, const AnswerOptions& options);
  bool step(const std::vector<AnswerInProgress*>& answers);
  QueryAnswer finish(AnswerInProgress& answer);  // once done()
  // Generated tokens as the answer reads: decoded (a split character at the end left out), cut at the first stop
  // string, trimmed. What finish() puts in QueryAnswer::answer; a prefix of it while tokens are still coming,
  // less any whitespace or stop string still being written.
  std::string answer_text(const std::vector<int32_t>& tokens, const std::vector<std::string>& stop) const;

  ChunkSource chunk_source(uint64_t chunk_id) const;  // a chunk of the store's table; throws for another id
  std::string model_name() const;  // the decoder's file or folder name
  uint64_t generation() const;      // the store generation it answers from (0: the working tables; docs/store.md)
  const std::string& kv_mode() const;
  const LlamaConfig& model_config() const;
  ChunkKvCache::Stats cache_stats() const;  // the chunk KV cache's lookups and what it holds
  // With profile_ops: each backend op's time and calls since the last reset (empty without profile_ops), keyed
  // "stage/op" by the answer's stage: load, place, select, prefill (fused_prefill's), then after prefill.
  std::map<std::string, OpStats> op_stats() const;
  // With profile_host_calls: each stage's wall time since the last reset, keyed by stage; the stage still running
  // (after prefill) is waited for and counted first.
  std::map<std::string, OpStats> stage_walls();
  void reset_op_stats();
  std::vector<int32_t> link_token_ids(int count) const;  // the model's link tokens, `count` per chunk
  // An answer's tokens as the assistant would write them right after the prompt (no end token).
  std::vector<int32_t> encode_answer(const std::string& text) const;

 private:
  friend class AnswerInProgress;
  struct State;
  struct Pending;
  Pending prefill(const ResolvedQuery& query, const AnswerOptions& options, SelectionMemo* memo);
  std::unique_ptr<AnswerInProgress> begin_answer(const ResolvedQuery& query, const AnswerOptions& options,
                                                 SelectionMemo* memo);
  std::unique_ptr<State> s_;
};

}  // namespace kvf
