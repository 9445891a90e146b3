// The prefill of a RAG prompt from stored chunk KV by one of kvrun's methods (DESIGN.md §6), every step through
// the one forward rule of DESIGN.md §3. The stored KV is only read: a chunk is placed at its prompt positions by
// sharing its tensors under new positions, and recomputed rows live in the result's own segment, which
// supersedes the stored rows at the same positions (Decoder::forward's rule) while the answer is decoded.
//
//   full        one pass: every context token, link and question token over S.
//   reuse       one pass: links and Q over S and the placed chunks.
//   cacheblend  probe: context (and links) over S for layers 0-1; score = |V_fresh - V_stored| at layer 1
//               (FusionRAG eq. 8); final: the top r*N with links and Q over S and the placed chunks (eq. 9).
//   a3          probe: context, links and Q over S for layers 0-1; score = layer-1 attention of Q's rows on each
//               context token, summed over Q's tokens and heads (A3 eq. 3); final as cacheblend (A3 eq. 4-5).
//               In a condensed-KV (LCKV) model both look at its lowest layer above 0 that computes its own KV.
//   fusion      probe: links and Q over S and the placed chunks, all layers; score = last-layer attention of
//               Q's rows on each stored context row, summed over Q's tokens and heads (FusionRAG §3.2); final as
//               above. With nothing to recompute the probe is the answer pass (it equals reuse).
// With nothing to recompute, cacheblend and a3 are reuse (no probe); with everything, every selector computes
// exactly full's tokens over exactly full's view.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "fusion/fusion_method.h"
#include "fusion/rag_layout.h"
#include "model/decoder.h"

namespace kvf {

struct FusionInputs {
  const KvSegment* system = nullptr;     // S's KV at positions [0, layout.system_rows)
  std::vector<const KvSegment*> chunks;  // each chunk's stored KV, its rows at in-chunk positions (full: unused)
  RagLayout layout;
  // Context tokens from the first on whose stored KV is what the prompt computes (the first chunk's, when it holds
  // its independent KV): the selectors recompute none of them.
  int64_t exact_context = 0;
  // true: those tokens' stored rows are not their exact KV (the store keeps no independent KV, or it was not asked
  // for), so the answer pass recomputes them beside the selected ones; the budget still goes to the others.
  bool recompute_exact_context = false;
  // Told "place", "select" and "prefill" as each stage starts (a profiler's labels; unset: nothing is told).
  std::function<void(const char* stage)> on_stage;
};

struct FusedPrefill {
  std::vector<float> logits;           // of Q's last token
  const KvSegment* system = nullptr;
  std::vector<KvSegment> placed;       // the chunks' stored KV at their prompt positions, keys also rotated
  KvSegment computed;                  // K, V of every token the answer pass computed, in position order
  std::vector<int64_t> selected;       // recomputed context tokens (indices into layout.context_tokens), ascending
  double select_ms = 0, prefill_ms = 0;  // prefill includes placing the chunks (rotating their keys)
  // Of select_ms, the time an earlier call spent on the scores this one read from a SelectionMemo (0: none): a query
  // alone would have spent it here.
  double shared_select_ms = 0;
  // What decoding attends to before the query's own rows: S, then the placed chunks (none for full).
  std::vector<const KvSegment*> base_view() const;
};

// A selector's scores do not depend on the recompute ratio: answers to one prompt over the same stored KV at
// several ratios (kvrun eval, answer_all) compute them once. Each entry keeps the time its computation took, which
// every answer that reads it reports as its select time (what the answer alone would have spent).
struct SelectionMemo {
  struct Scores {
    std::vector<float> scores;  // per context token
    double ms = 0;
  };
  std::map<FusionMethod, Scores> by_method;
};

// `memo`: scores of earlier calls with the same decoder and inputs, filled by this call (nullptr: none).
FusedPrefill fused_prefill(const Decoder& decoder, const FusionInputs& inputs, FusionMethod method,
                           double recompute, SelectionMemo* memo = nullptr);

}  // namespace kvf
