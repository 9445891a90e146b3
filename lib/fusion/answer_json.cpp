#include "fusion/answer_json.h"

#include "core/hex.h"

namespace kvf {

nlohmann::json answer_json(const QueryAnswer& a) {
  std::vector<std::string> ids;
  for (uint64_t id : a.chunk_ids) ids.push_back(hex64(id));
  nlohmann::json sources = nlohmann::json::array();
  for (size_t c = 0; c < a.sources.size(); ++c)
    sources.push_back({{"chunk_id", ids[c]}, {"doc_id", a.sources[c].doc_id}, {"title", a.sources[c].title},
                       {"text", a.sources[c].text}});
  return {{"id", a.id},
          {"question", a.question},
          {"answer", a.answer},
          {"method", method_name(a.method)},
          {"recompute", a.recompute},
          {"kv_mode", a.kv_mode},
          {"chunk_ids", ids},
          {"retrieval_scores", a.scores},
          {"sources", sources},
          {"n_context_tokens", a.n_context_tokens},
          {"n_recomputed", a.n_recomputed},
          {"chunk_tokens", a.chunk_tokens},
          {"recomputed_per_chunk", a.recomputed_per_chunk},
          {"marked_chunks", a.marked_chunks},
          {"n_link_tokens", a.n_link_tokens},
          {"n_question_tokens", a.n_question_tokens},
          {"n_prompt_tokens", a.n_prompt_tokens},
          {"generated_tokens", a.tokens.size()},
          {"stopped_by", a.stopped_by},
          {"cache", {{"hits", a.cache_hits}, {"misses", a.cache_misses}}},
          {"timings_ms",
           {{"retrieve", a.ms.retrieve},
            {"load", a.ms.load},
            {"select", a.ms.select},
            {"prefill", a.ms.prefill},
            {"ttft", a.ms.ttft},
            {"decode", a.ms.decode}}},
          {"tokens_per_s", {{"decode", decode_tokens_per_s(a.tokens.size(), a.ms.decode)}}}};
}

}  // namespace kvf
