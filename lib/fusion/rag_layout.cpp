#include "fusion/rag_layout.h"

#include "core/error.h"

namespace kvf {

RagLayout make_rag_layout(int32_t system_rows, const std::vector<std::vector<int32_t>>& chunk_tokens,
                          const std::vector<int32_t>& link_tokens_per_chunk, const std::vector<int32_t>& question,
                          int32_t context_length) {
  KVF_CHECK(!question.empty(), "the question has no tokens");
  int64_t total = system_rows + (int64_t)question.size();
  for (const auto& c : chunk_tokens) total += (int64_t)c.size() + (int64_t)link_tokens_per_chunk.size();
  KVF_CHECK(total <= context_length, "the prompt takes ", total, " tokens (S ", system_rows, ", ",
            chunk_tokens.size(), " chunks, question ", question.size(), "), more than the model context of ",
            context_length, "; use fewer or shorter chunks");

  RagLayout l;
  l.system_rows = system_rows;
  int32_t at = system_rows;
  for (const auto& c : chunk_tokens) {
    l.chunks.push_back({at, (int32_t)c.size(), l.n_context()});
    for (int32_t id : c) {
      l.context_tokens.push_back(id);
      l.context_positions.push_back(at++);
    }
    for (int32_t id : link_tokens_per_chunk) {
      l.link_tokens.push_back(id);
      l.link_positions.push_back(at++);
    }
  }
  for (int32_t id : question) {
    l.question_tokens.push_back(id);
    l.question_positions.push_back(at++);
  }
  l.end = at;
  return l;
}

}  // namespace kvf
