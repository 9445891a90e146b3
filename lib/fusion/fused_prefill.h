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
//               Q's rows on each stored context row, summed over Q's tokens and heads (FusionRAG §3.2; which rows
//               and layers: FusionScoring); final as above. With nothing to recompute the probe is the answer pass (it equals reuse).
// With nothing to recompute, cacheblend and a3 are reuse (no probe); with everything, every selector computes
// exactly full's tokens over exactly full's view.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fusion/fusion_method.h"
#include "fusion/rag_layout.h"
#include "model/decoder.h"

namespace kvf {

// Which attention drives fusion's selection (kvrun --fusion-rows, --fusion-layers): by default every row of Q at
// the last layer, as FusionRAG §3.2 describes it.
struct FusionScoring {
  enum class Rows {
    All,       // every token of Q: the fixed instruction, the question, the assistant turn's opening
    Question,  // from the question's own first token on (the instruction before it is the same for every question)
    Last,      // Q's last token only (the one the first answer token is predicted from)
  };
  Rows rows = Rows::All;
  std::vector<int> layers;  // layers whose attention is summed; negative counts from the end; empty: the last
  // Each token scored as the highest of the tokens up to `spread` either side of it in its chunk (0: its own), so
  // that a strongly attended token's neighbours (the rest of a word or number) are recomputed with it.
  int spread = 0;
  // Each chunk's scores divided by their sum, so that every chunk carries the same total and the budget follows
  // where attention peaks within chunks rather than which chunks sit nearest the question.
  bool per_chunk = false;
  // How the heads' attention is pooled into a token's score: summed (FusionRAG), or the highest head's, so that a
  // token one head reads sharply counts as much as one many heads read a little (per-head sums: CPU backend only).
  enum class Heads { Sum, Max };
  Heads heads = Heads::Sum;
  // 2: half the budget is chosen by the scores over the stored KV, the other half by scores taken again with those
  // tokens recomputed, so that what the first half brings in from other chunks can steer the rest (a multi-hop
  // question's later hops). The second probe depends on the ratio, so its time counts at every ratio.
  int rounds = 1;
};
const char* fusion_rows_name(FusionScoring::Rows rows);
FusionScoring::Rows fusion_rows_from_name(const std::string& name);  // throws kvf::Error naming the value
const char* fusion_heads_name(FusionScoring::Heads heads);             // "sum" | "max"
FusionScoring::Heads fusion_heads_from_name(const std::string& name);  // throws kvf::Error naming the value

struct FusionInputs {
  const KvSegment* system = nullptr;     // S's KV at positions [0, layout.system_rows)
  std::vector<const KvSegment*> chunks;  // each chunk's stored KV, its rows at in-chunk positions (full: unused)
  RagLayout layout;
  FusionScoring scoring;
  int64_t question_text_from = 0;  // index in layout.question_tokens of the question's own first token
  // Context tokens from the first on whose stored KV is what the prompt computes (the first chunk's, when it holds
  // its independent KV): the selectors recompute none of them.
  int64_t exact_context = 0;
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
