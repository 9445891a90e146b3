// A Llama-family decoder and its one forward call (DESIGN.md §3): computed tokens with explicit positions
// against a KV view. A computed token at position p attends to every view row and every computed token whose
// position is <= p; a view row whose position equals a computed token's position is superseded by that token,
// and so is one whose position appears again in a later view segment (the latest writer of a position wins:
// after a sparse prefill, the query's own rows hide the stored rows they replaced while it decodes).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_segment.h"
#include "model/llama_config.h"
#include "model/llama_weights.h"

namespace kvf {

// The fast compute mode's attention reads keys in place (attention_blocks), a path without probes; a probed
// sequence takes the staged path, which gives the same outputs bit for bit only for more than this many query
// rows (fewer rows read in place are summed in f32). Callers that probe without wanting to change outputs probe
// only longer sequences.
inline constexpr int64_t kFewQueryRows = kBlockAttentionFewRows;

struct ForwardRequest {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;          // one per token, distinct
  std::vector<const KvSegment*> view;      // read in order; rows hold K without RoPE (and maybe k_roped)
  std::vector<int32_t> logit_rows;         // indices into tokens whose logits are returned
  bool return_kv = false;                  // return each layer's K (pre-RoPE) and V of the computed tokens
  std::vector<int> probe_layers;           // layers whose attention column sums are returned ...
  std::vector<int32_t> probe_rows;         // ... summed over these query rows (indices into tokens) and heads
  int run_layers = 0;                      // > 0: stop after this many layers (no logits; KV of those layers)
  bool return_hidden = false;              // return the last layer's output (before the final norm)
  int condensed_passes = 0;  // condensed-KV (LCKV) models: passes over the span (0: the model's; see condensed_kv.h)
};

struct ForwardResult {
  std::vector<float> logits;  // [logit_rows.size(), vocab], row-major
  KvSegment kv;               // when return_kv: rows = computed tokens, in request order; one entry per layer run
  // Per probe layer: one value per key, view rows first (segment order, superseded rows 0), then computed tokens.
  std::vector<std::vector<float>> attn_colsum;
  std::vector<float> hidden;  // when return_hidden: [tokens, hidden] of the last layer run, request order
};

class Decoder {
 public:
  // Loads a decoder from a GGUF file or a Hugging Face folder (io/hf_folder.h) onto the backend; throws
  // kvf::Error naming the file and the cause. The compute mode decides how weights are held and multiplied
  // (llama_weights.h); ComputeMode::F32 is the reference.
  static std::unique_ptr<Decoder> load(const std::string& path, Backend& backend,
                                            ComputeMode mode = ComputeMode::Fast);

  const LlamaConfig& config() const { return config_; }
  Backend& backend() const { return backend_; }
  const RopeSpec& rope() const { return rope_; }
  ComputeMode compute_mode() const { return mode_; }

  // The same weights run with a KV source map (KVSharer, DESIGN.md §3): layer i reads the K and V of layer
  // sources[i] (view rows and computed tokens alike) and skips its own K/V projection. sources[i] <= i, and a
  // source reads its own KV (sources[sources[i]] == sources[i]). Identity = the plain model.
  std::unique_ptr<Decoder> with_kv_sources(std::vector<int32_t> sources) const;
  const std::vector<int32_t>& kv_sources() const { return kv_sources_; }  // empty: every layer its own

  // `seg` with its keys rotated at its positions once (KvSegment::k_roped), for a segment that several forward
  // calls read (a query's placed chunks while it prefills and decodes). Forward results are the same bit for bit.
  // An encoded segment is returned as it is: its rows are decoded, then rotated, where each layer gathers them.
  KvSegment with_roped_keys(const KvSegment& seg) const;
  // The same for several segments at once (a query's placed chunks): one upload and one allocation for all.
  std::vector<KvSegment> with_roped_keys(const std::vector<KvSegment>& segs) const;

  // A ragged batch of independent sequences, each with its own view.
  std::vector<ForwardResult> forward(const std::vector<ForwardRequest>& batch) const;
  ForwardResult forward(const ForwardRequest& request) const { return std::move(forward(std::vector{request})[0]); }

 private:
  Decoder(LlamaConfig config, LlamaWeights weights, Backend& backend, ComputeMode mode);
  LlamaConfig config_;
  LlamaWeights weights_;
  Backend& backend_;
  RopeSpec rope_;
  ComputeMode mode_;
  std::vector<int32_t> kv_sources_;
};

}  // namespace kvf
