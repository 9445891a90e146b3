// The prefill stage of kvprep (DESIGN.md §5 steps 5-6): each chunk's KV, stored without RoPE in
// kv/<mode>-NNNNN.h5 shards.
//   independent: the chunk after the system prompt S alone (FusionRAG eq. 5).
//   similarity:  the view is S then the chunk's top-n neighbours' independent KV at consecutive positions, most
//                similar first (or last: neighbor_order); the chunk is computed after them (FusionRAG eq. 10).
//                Needs the independent KV.
// S's own KV is stored once (kv/system-00000.h5). Shards are committed as they fill and the manifest after each,
// so a killed run resumes from the last committed shard; a rerun computes only chunks without KV in the mode.
// A run may be limited to some documents' chunks (a store built as its questions need it, `kvrun eval`): the
// stage's record then counts the chunks still without KV ("missing"), and a later run computes them.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "core/progress.h"
#include "model/llama_weights.h"
#include "prep/precompute_view.h"
#include "store/kv_shard.h"

namespace kvf {

// Chunks of at most this many tokens get no stored anchor scores: probing so few rows would change their KV.
inline constexpr int64_t kMaxUnscoredChunkTokens = 16;

struct PrefillStageOptions {
  std::string store_dir;
  std::string model_path;           // the GGUF the store was chunked with
  std::string mode = "independent"; // independent | similarity
  int top_n = 10;                   // similarity: neighbours in the view (at most the store's top_n)
  NeighborOrder neighbor_order = NeighborOrder::BestFirst;  // similarity: most similar first or next to the chunk
  std::string system_message;       // empty: kRagSystemMessage (text/rag_prompt.h)
  KvDtype dtype = KvDtype::F16;
  ComputeMode compute = ComputeMode::Fast;  // recorded: a store's KV is computed in one mode
  std::string backend = "cpu";              // where the model runs: cpu | cuda (backend/backend.h)
  h5::Compression entropy;              // how the shards keep K and V (store/h5_compression.h); default: as they are
  uint64_t shard_bytes = 256ull << 20;  // a shard is committed once it holds this much KV
  int batch_tokens = 1024;              // chunks are computed in ragged batches of about this many tokens
  uint64_t neighbor_cache_bytes = 1ull << 30;  // similarity: independent KV kept in memory for reuse
  bool refresh_changed_neighbors = false;      // similarity: also recompute chunks whose neighbour list changed
  // Also record each token's received attention (every layer, from the chunk's own tokens) in the shards, so that
  // `kvprep compress --anchors` (select) reads it instead of computing the view again, for chunks longer than
  // kMaxUnscoredChunkTokens. Stored KV is unchanged.
  bool record_anchor_scores = false;
  // Non-empty: compute only the chunks of these corpus documents (doc ids). A chunk's KV is the same whichever
  // chunks are computed with it (fixed_chunk_batches), so a store completed in parts equals one built at once.
  std::set<std::string> only_docs;
  // independent, with only_docs: also the neighbours that a similarity run over the same documents reads (every
  // chunk of each similarity batch holding one of them, as that batch is computed whole).
  bool with_similarity_neighbors = false;
  ProgressOptions progress;
};

struct PrefillStageResult {
  bool unchanged = false;
  uint64_t chunks = 0;         // in the store
  uint64_t computed = 0;       // by this run
  uint64_t tokens = 0;         // chunk tokens computed by this run
  uint64_t context_rows = 0;   // view rows read by this run (S and neighbours)
  uint64_t shards_written = 0;
  uint64_t stored_bytes = 0;   // KV bytes written by this run
  uint64_t scored = 0;         // chunks whose anchor scores were recorded
  // similarity: chunks whose stored KV was computed with another neighbour list than the store's now (their
  // neighbours were added, edited or removed since), kept as they are unless refresh_changed_neighbors
  uint64_t stale = 0;
  double seconds = 0;
  // Where this rank's time went: loading the model, building requests (neighbour KV reads), the forward passes,
  // reading the KV back (to host memory, token-major), and converting, checking and storing it (shard files).
  double load_seconds = 0, view_seconds = 0, forward_seconds = 0, readback_seconds = 0, store_seconds = 0;
};

PrefillStageResult run_prefill_stage(const PrefillStageOptions& options);

// The KV modes prefill writes (independent, similarity), as opposed to the modes compress derives from them.
bool is_prefill_mode(const std::string& mode);

}  // namespace kvf
